//! What a gateway forwards to ([`Backend`]: a stdio server it runs, or a remote Streamable
//! HTTP server), and how one backend connection is opened: the client, its callbacks bound to
//! the [`Link`], the child's stderr to the log.
//!
//! Not here: when backends open and close (`backends.rs`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::GatewayOptions;
use super::link::Link;
use crate::client::{Client, ClientBuilder, Transport};
use crate::error::{ConfigError, Error};
use crate::protocol::{
    ClientCapabilities, ElicitationCapability, ErrorObject, Implementation, InitializeParams,
    InitializeResult, JsonObject, LoggingLevel, RootsCapability, SamplingCapability,
};
use crate::transport::http_client::{HttpClientOptions, StreamableHttpClientTransport};
use crate::transport::stdio::{ChildProcessTransport, LineOptions, split_command_line};

/// The longest line of a child's stderr logged whole (the rest of a longer one is cut).
const MAX_STDERR_LINE: usize = 16 * 1024;

/// What a gateway forwards to.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Backend {
    /// A stdio MCP server the gateway runs: one process per backend connection.
    Stdio(ChildCommand),
    /// A remote MCP server over Streamable HTTP (or the legacy HTTP+SSE transport, which the
    /// client falls back to), one client session per backend connection.
    Http {
        /// The server's endpoint.
        url: String,
        /// Headers, OAuth (feature `client-auth`), timeouts, resumption.
        options: HttpClientOptions,
    },
}

/// The command line of a stdio server: program, arguments, environment, directory. No shell
/// runs it: no variables, globs or pipes.
#[derive(Clone, Debug)]
pub struct ChildCommand {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
}

impl ChildCommand {
    /// Runs `program` (looked up in `PATH`), with no arguments yet.
    pub fn new(program: impl Into<String>) -> Self {
        ChildCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }
    }

    /// A command line split shell-style (`"npx -y server --flag 'a b'"`).
    pub fn from_command_line(line: &str) -> Result<Self, ConfigError> {
        let (program, args) = split_command_line(line)?;
        Ok(ChildCommand::new(program).args(args))
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable of the child (beside those it inherits).
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the child in this directory.
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The program.
    pub fn program(&self) -> &str {
        &self.program
    }

    fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.program);
        c.args(&self.args).stderr(Stdio::piped());
        for (k, v) in &self.env {
            c.env(k, v);
        }
        if let Some(d) = &self.cwd {
            c.current_dir(d);
        }
        c
    }
}

/// The capabilities a shared backend connection declares: every question a client may be
/// asked (each front request's own capabilities decide whether it is asked).
fn every_capability() -> ClientCapabilities {
    ClientCapabilities {
        sampling: Some(SamplingCapability {
            context: None,
            tools: Some(JsonObject::new()),
        }),
        elicitation: Some(ElicitationCapability {
            form: Some(JsonObject::new()),
            url: Some(JsonObject::new()),
        }),
        roots: Some(RootsCapability { list_changed: None }),
        ..Default::default()
    }
}

/// A client whose questions and notifications go through `link`.
fn builder(link: &Arc<Link>) -> ClientBuilder {
    let gone = || ErrorObject::internal("the gateway's backend connection has ended");
    let (s, e, r, n) = (
        Arc::downgrade(link),
        Arc::downgrade(link),
        Arc::downgrade(link),
        Arc::downgrade(link),
    );
    Client::builder()
        .on_sampling(move |p| {
            let link = s.upgrade();
            async move {
                match link {
                    Some(l) => l.ask_sampling(p).await,
                    None => Err(gone()),
                }
            }
        })
        .sampling_with_tools(true)
        .on_elicitation(move |p| {
            let link = e.upgrade();
            async move {
                match link {
                    Some(l) => l.ask_elicitation(p).await,
                    None => Err(gone()),
                }
            }
        })
        .elicitation_url_mode(true)
        .on_roots(move || {
            let link = r.upgrade();
            async move {
                match link {
                    Some(l) => l.ask_roots().await,
                    None => Err(gone()),
                }
            }
        })
        .on_notification(move |notification| {
            if let Some(l) = n.upgrade() {
                l.on_notification(notification);
            }
        })
}

/// Opens one backend connection for `link`: initialized with `init` (a front session's own
/// `initialize` params), or as a shared one with the gateway's identity. Returns the client,
/// what the backend is, and how to name it.
pub(super) async fn open(
    backend: &Backend,
    link: &Arc<Link>,
    init: Option<InitializeParams>,
    options: &GatewayOptions,
) -> Result<(Client, InitializeResult, String), Error> {
    // A stdio server that ignores `server/discover` is legal and must not cost the whole
    // start; over HTTP every server answers, though a login may come first.
    let probe = match backend {
        Backend::Stdio(_) => options
            .start_timeout
            .min(ClientBuilder::DEFAULT_PROBE_TIMEOUT),
        Backend::Http { .. } => options.start_timeout,
    };
    let mut b = builder(link)
        .protocol(options.protocol)
        .request_timeout(options.call_timeout)
        .probe_timeout(probe);
    b = match init {
        Some(p) => b
            .info(p.client_info)
            .capabilities(p.capabilities)
            .initialize_version(p.protocol_version),
        // Every log line: each front request filters by its own level.
        None => b
            .info(options.client_info.clone())
            .capabilities(every_capability())
            .log_level(LoggingLevel::Debug),
    };
    let (transport, label): (Arc<dyn Transport>, String) = match backend {
        Backend::Stdio(cmd) => {
            let lines = LineOptions {
                max_line_bytes: options.max_line_bytes,
                strict: true,
            };
            let t = ChildProcessTransport::spawn_with(cmd.command(), lines)?;
            let label = match t.pid().await {
                Some(pid) => format!("child {pid} ({})", cmd.program),
                None => format!("child ({})", cmd.program),
            };
            if let Some(stderr) = t.take_stderr().await {
                tokio::spawn(log_stderr(stderr, label.clone()));
            }
            (Arc::new(t), label)
        }
        Backend::Http { url, options } => {
            let t = StreamableHttpClientTransport::with_options(url, options.clone())?;
            let label = format!(
                "upstream {}",
                crate::transport::http_client::redact_url(url)
            );
            (Arc::new(t), label)
        }
    };
    let client = b.connect_arc(transport).await?;
    let info = InitializeResult {
        protocol_version: client.protocol_version().unwrap_or_default(),
        capabilities: client.server_capabilities(),
        server_info: client
            .server_info()
            .unwrap_or_else(|| Implementation::new("unknown", "0")),
        instructions: client.instructions(),
        meta: None,
    };
    Ok((client, info, label))
}

/// Logs each line of a child's stderr with the child's name in front (lines cut at
/// [`MAX_STDERR_LINE`]), until the child closes it.
async fn log_stderr(stderr: tokio::process::ChildStderr, label: String) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = match (&mut reader)
            .take(MAX_STDERR_LINE as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(n) => n,
            Err(_) => return,
        };
        if n == 0 {
            return;
        }
        if line.last() != Some(&b'\n') && line.len() >= MAX_STDERR_LINE {
            // Skip the rest of an overlong line, a bounded piece at a time.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut reader)
                    .take(MAX_STDERR_LINE as u64)
                    .read_until(b'\n', &mut rest)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        if !text.is_empty() {
            tracing::info!(target: "vellum::gateway", "[{label}] {text}");
        }
    }
}
