//! `vellum connect URL`: a remote MCP server for a host that only speaks stdio (desktop
//! apps). The host's session is served on stdin/stdout by a server whose requests go, through
//! `vellum::gateway`, to a client of URL: either era (probed), static `--header`s or the OAuth
//! tokens of `vellum login` (a browser login on the first 401 when none are stored), streams
//! resumed with `Last-Event-ID`, a new session when the server loses ours. stdout carries
//! protocol messages only; everything else goes to stderr.

use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use vellum::client::auth::{LoopbackRedirect, PrintUrl, SystemBrowser};
use vellum::gateway::{Backend, Gateway, GatewayOptions};
use vellum::protocol::Implementation;
use vellum::server::ServerOptions;

use crate::login::{OAuthArgs, has_desktop};
use crate::target::{Protocol, http_options};

/// Flags of `vellum connect`.
#[derive(Debug, Args)]
pub(crate) struct ConnectArgs {
    /// The MCP server's Streamable HTTP endpoint.
    url: String,
    /// An HTTP header for every request, e.g. --header "Authorization: Bearer TOKEN"
    /// (repeatable; an Authorization header replaces OAuth).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// The era spoken to the server (`auto` probes it as the client does).
    #[arg(long, value_enum, default_value = "auto")]
    protocol: Protocol,
    /// When the server needs a login and no token is stored: print the authorization URL on
    /// stderr instead of opening a browser.
    #[arg(long)]
    no_browser: bool,
    /// Never start a login: use the stored tokens only (`vellum login URL` first).
    #[arg(long, conflicts_with = "no_browser")]
    no_login: bool,
    /// The loopback port the login's redirect comes back to (default: any free port).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    port: u16,
    /// Ask for these scopes when logging in (repeatable; default: what the server names).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// How long a call waits for its answer (progress restarts the wait).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "300s")]
    timeout: Duration,
    /// What `connect` logs on stderr: a level (error, warn, info, debug, trace) or `off`.
    #[arg(long, value_name = "LEVEL|off", default_value = "warn")]
    log: String,
    #[command(flatten)]
    oauth: OAuthArgs,
}

/// How long connecting may take when a login may have to happen in the browser.
const LOGIN_TIME: Duration = Duration::from_secs(300);

pub(crate) async fn run(args: ConnectArgs) -> anyhow::Result<()> {
    crate::telemetry::gateway_log(&args.log)?;
    let url = &args.url;
    let mut options = http_options(&args.headers)?;
    let mut start_timeout = Duration::from_secs(60);
    if !options.headers.contains_key(http::header::AUTHORIZATION) {
        let mut b = args.oauth.builder(url)?;
        if !args.no_login {
            let redirect = if args.no_browser || !has_desktop() {
                LoopbackRedirect::new(PrintUrl)
            } else {
                LoopbackRedirect::new(SystemBrowser)
            }
            .port(args.port);
            b = b.redirect(redirect);
            // The user's time in the browser counts against connecting.
            start_timeout = LOGIN_TIME;
        }
        if !args.scopes.is_empty() {
            b = b.scopes(args.scopes.iter().cloned());
        }
        options.auth = Some(b.build().with_context(|| format!("OAuth for {url}"))?);
    }
    let mut o = GatewayOptions::default();
    // The host's session and, for a host speaking 2026-07-28, one shared client.
    o.max_backends = 2;
    o.start_timeout = start_timeout;
    o.call_timeout = args.timeout;
    o.protocol = args.protocol.choice();
    o.client_info = Implementation::new("vellum-connect", env!("CARGO_PKG_VERSION"));
    let gateway = Gateway::new(
        Backend::Http {
            url: url.clone(),
            options,
        },
        o,
    );
    let server = gateway.server(
        Implementation::new("vellum-connect", env!("CARGO_PKG_VERSION")),
        ServerOptions::default(),
    );
    let served = vellum::transport::stdio::serve_stdio(server)
        .await
        .context("serving on stdio failed");
    gateway.shutdown().await;
    served
}
