//! `vellum proxy`: a stdio MCP server (`--stdio "CMD ARGS"`) or a remote one (`--upstream
//! URL`) served over Streamable HTTP with every option of `vellum serve` (the same
//! `HttpArgs`, served by the same `http_serve::run`), through `vellum::gateway`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use clap::builder::ArgGroup;
use vellum::gateway::{Backend, ChildCommand, Gateway, GatewayOptions};
use vellum::protocol::Implementation;
use vellum::server::ServerOptions;
use vellum::transport::stdio::DEFAULT_MAX_LINE_BYTES;

use crate::http_args::HttpArgs;
use crate::http_serve::Serving;
use crate::login::OAuthArgs;
use crate::target::{Protocol, http_options};

/// Flags of `vellum proxy`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("backend").required(true).args(["stdio", "upstream"])))]
pub(crate) struct ProxyArgs {
    /// Serve this stdio MCP server: one argument, split shell-style (no shell runs it), e.g.
    /// --stdio "npx -y @modelcontextprotocol/server-everything". One process per session,
    /// initialized with the session's own `initialize`, unless --shared-children.
    #[arg(long, value_name = "COMMAND")]
    stdio: Option<String>,
    /// Serve the remote MCP server at this Streamable HTTP (or legacy HTTP+SSE) endpoint,
    /// one upstream session per session, in the era it speaks; OAuth to it with the tokens
    /// of `vellum login URL`.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// An environment variable of the child (repeatable).
    #[arg(long = "env", value_name = "K=V", requires = "stdio", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// The child's working directory.
    #[arg(long, value_name = "DIR", requires = "stdio")]
    cwd: Option<PathBuf>,
    /// Keep a pool of N initialized children (or upstream sessions) that every request
    /// shares, for servers that keep no per-client state.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    shared_children: Option<u16>,
    /// The most children (or upstream sessions) at once; sessions beyond it are refused.
    #[arg(long, value_name = "N", default_value_t = GatewayOptions::DEFAULT_MAX_BACKENDS)]
    max_children: usize,
    /// How long a child (or upstream session) may take to start and initialize.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    child_start_timeout: Duration,
    /// How long a forwarded call waits for its answer (progress restarts the wait).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "300s")]
    call_timeout: Duration,
    /// The longest line a child may write on stdout; a longer one (or one that is not
    /// JSON-RPC) ends that child and fails its session.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// The era spoken to the child or upstream.
    #[arg(long, value_enum, default_value = "auto")]
    upstream_protocol: Protocol,
    /// An HTTP header for every request to the upstream, e.g. --upstream-header
    /// "Authorization: Bearer TOKEN" (repeatable; an Authorization header replaces the
    /// stored OAuth tokens).
    #[arg(
        long = "upstream-header",
        value_name = "NAME: VALUE",
        requires = "upstream"
    )]
    upstream_headers: Vec<String>,
    /// What the proxy logs on stderr about its children: each child's stderr line (prefixed
    /// with the child), starts and ends; a level (error, warn, info, debug, trace) or `off`.
    #[arg(long, value_name = "LEVEL|off", default_value = "info")]
    child_log: String,
    #[command(flatten)]
    oauth: OAuthArgs,
    #[command(flatten)]
    http: HttpArgs,
}

/// `K=V` of `--env`.
fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{s:?}: expected K=V")),
    }
}

impl ProxyArgs {
    fn backend(&self) -> anyhow::Result<Backend> {
        match (&self.stdio, &self.upstream) {
            (Some(line), None) => {
                let mut cmd = ChildCommand::from_command_line(line).context("--stdio")?;
                for (k, v) in &self.env {
                    cmd = cmd.env(k, v);
                }
                if let Some(dir) = &self.cwd {
                    cmd = cmd.current_dir(dir);
                }
                Ok(Backend::Stdio(cmd))
            }
            (None, Some(url)) => {
                let mut options = http_options(&self.upstream_headers)?;
                if !options.headers.contains_key(http::header::AUTHORIZATION) {
                    options.auth = Some(self.oauth.client(url)?);
                }
                Ok(Backend::Http {
                    url: url.clone(),
                    options,
                })
            }
            _ => bail!("give --stdio \"COMMAND\" or --upstream URL"),
        }
    }

    fn options(&self) -> GatewayOptions {
        let mut o = GatewayOptions::default();
        o.shared_backends = self.shared_children.map(usize::from);
        o.max_backends = self.max_children;
        o.start_timeout = self.child_start_timeout;
        o.call_timeout = self.call_timeout;
        o.protocol = self.upstream_protocol.choice();
        o.max_line_bytes = self.max_line_bytes;
        o.client_info = Implementation::new("vellum-proxy", env!("CARGO_PKG_VERSION"));
        o
    }
}

pub(crate) async fn run(args: ProxyArgs) -> anyhow::Result<()> {
    crate::telemetry::gateway_log(&args.child_log)?;
    args.http.announce_config();
    let options = args.options();
    let shared = options.shared_backends.is_some();
    let gateway = Gateway::new(args.backend()?, options);
    let server = gateway.server(
        Implementation::new("vellum-proxy", env!("CARGO_PKG_VERSION")),
        ServerOptions::default(),
    );
    // A pool starts now: a server that cannot start is reported before anyone connects.
    gateway
        .start()
        .await
        .context("cannot start the shared children")?;
    let serving = Serving {
        server,
        // A process (or upstream session) per session: no more sessions than those.
        session_cap: (!shared).then_some(args.max_children),
    };
    let served = crate::http_serve::run(serving, &args.http).await;
    gateway.shutdown().await;
    served
}
