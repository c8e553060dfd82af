//! Which server a client command talks to (a URL or a stdio command), and how: the flags
//! every client command shares, the connection, and where notifications go (progress bars
//! and logs on stderr, never on stdout).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use vellum::client::{Client, ProtocolChoice, ServerNotification, Transport};
use vellum::protocol::{LoggingLevel, ProgressParams};
use vellum::transport::http_client::{HttpClientOptions, StreamableHttpClientTransport};
use vellum::transport::stdio::ChildProcessTransport;

use crate::login::{OAuthArgs, login_hint};

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Protocol {
    /// Try 2026-07-28 (`server/discover`), fall back to the `initialize` handshake.
    Auto,
    /// The session-based handshake (up to 2025-11-25).
    Legacy,
    /// Stateless 2026-07-28 only.
    Modern,
}

/// The server to talk to and how (shared by every client command).
#[derive(Debug, Args)]
pub(crate) struct Target {
    /// The server's Streamable HTTP endpoint (a positional argument of each command).
    #[arg(skip)]
    pub(crate) url: Option<String>,
    /// Run this command and talk to it over stdio instead of HTTP (then leave out the URL);
    /// one argument, split shell-style, e.g. --stdio "vellum serve --stdio".
    #[arg(long, value_name = "COMMAND")]
    pub(crate) stdio: Option<String>,
    /// An extra HTTP header for every request, e.g. -H "Authorization: Bearer TOKEN".
    /// Repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Protocol era.
    #[arg(long, value_enum, default_value = "auto")]
    protocol: Protocol,
    /// How long to wait for each answer (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    timeout: Duration,
    /// Server log messages shown on stderr, from this level up (debug, info, notice,
    /// warning, error, critical, alert, emergency), or `off`.
    #[arg(long, value_name = "LEVEL|off", default_value = "info")]
    log_level: String,
    /// Print the server's answer as exact JSON instead of a readable summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// Stored OAuth tokens (from `vellum login`), used and refreshed for HTTP servers.
    #[command(flatten)]
    oauth: OAuthArgs,
}

/// Draws progress notifications on stderr (only on a terminal) and prints logs around it.
#[derive(Clone)]
pub(crate) struct Feedback {
    bar: Arc<Mutex<Option<ProgressBar>>>,
}

impl Feedback {
    fn new() -> Self {
        Feedback {
            bar: Arc::new(Mutex::new(None)),
        }
    }

    /// Shows one progress notification.
    pub(crate) fn progress(&self, p: &ProgressParams) {
        let mut slot = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let bar = slot.get_or_insert_with(|| {
            let bar = ProgressBar::new(0);
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        // Progress may be fractional; the bar counts in thousandths when it is.
        let scale = if p.progress.fract() != 0.0 || p.total.is_some_and(|t| t.fract() != 0.0) {
            1000.0
        } else {
            1.0
        };
        if let Some(total) = p.total {
            bar.set_length((total * scale).max(0.0) as u64);
        }
        bar.set_position((p.progress * scale).max(0.0) as u64);
        if let Some(m) = &p.message {
            bar.set_message(m.clone());
        }
    }

    /// Prints a line on stderr without tearing the progress bar.
    pub(crate) fn eprint(&self, line: &str) {
        let slot = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar (before the answer is printed).
    pub(crate) fn finish(&self) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }
}

fn parse_level(s: &str) -> anyhow::Result<Option<LoggingLevel>> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    LoggingLevel::parse(&s.to_ascii_lowercase())
        .map(Some)
        .with_context(|| format!("--log-level: unknown level {s:?}"))
}

impl Protocol {
    /// The client's name for it.
    pub(crate) fn choice(self) -> ProtocolChoice {
        match self {
            Protocol::Auto => ProtocolChoice::Auto,
            Protocol::Legacy => ProtocolChoice::Legacy,
            Protocol::Modern => ProtocolChoice::Modern,
        }
    }
}

/// HTTP client options with these `Name: value` headers.
pub(crate) fn http_options(headers: &[String]) -> anyhow::Result<HttpClientOptions> {
    let mut options = HttpClientOptions::default();
    for h in headers {
        let Some((name, value)) = h.split_once(':') else {
            bail!("--header {h:?}: expected \"Name: value\"");
        };
        let name = http::HeaderName::from_bytes(name.trim().as_bytes())
            .with_context(|| format!("--header {h:?}: invalid header name"))?;
        let value = http::HeaderValue::from_str(value.trim())
            .with_context(|| format!("--header {h:?}: invalid header value"))?;
        options.headers.append(name, value);
    }
    Ok(options)
}

impl Target {
    /// What the commands say they are talking to.
    pub(crate) fn describe(&self) -> String {
        match (&self.url, &self.stdio) {
            (_, Some(cmd)) => format!("stdio command {cmd:?}"),
            (Some(url), None) => url.clone(),
            (None, None) => "?".into(),
        }
    }

    /// Takes the URL from the front of the positional words unless `--stdio` names the
    /// server; returns the remaining words.
    pub(crate) fn take_url(&mut self, mut words: Vec<String>) -> anyhow::Result<Vec<String>> {
        if self.stdio.is_none() {
            if words.is_empty() {
                bail!("give the server's URL first (or --stdio \"COMMAND\")");
            }
            self.url = Some(words.remove(0));
        }
        Ok(words)
    }

    /// Connects: probes the era and completes the handshake.
    pub(crate) async fn connect(&self) -> anyhow::Result<(Client, Feedback)> {
        let feedback = Feedback::new();
        let transport: Arc<dyn Transport> = match (&self.url, &self.stdio) {
            (_, Some(cmd)) => Arc::new(ChildProcessTransport::from_command_line(cmd)?),
            (Some(url), None) => {
                let mut options = http_options(&self.headers)?;
                // A header given by hand replaces the stored tokens.
                if !options.headers.contains_key(http::header::AUTHORIZATION) {
                    options.auth = Some(self.oauth.client(url)?);
                }
                Arc::new(StreamableHttpClientTransport::with_options(url, options)?)
            }
            (None, None) => bail!("give a server URL or --stdio \"COMMAND\""),
        };
        let fb = feedback.clone();
        let mut builder = Client::builder()
            .name("vellum-cli", env!("CARGO_PKG_VERSION"))
            .request_timeout(self.timeout)
            .probe_timeout(self.timeout.min(Duration::from_secs(10)))
            .protocol(self.protocol.choice())
            .on_notification(move |n| {
                if let ServerNotification::Log(l) = n {
                    let data = match &l.data {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let logger = l.logger.map(|s| format!(" {s}:")).unwrap_or_default();
                    fb.eprint(&format!("[{}]{logger} {data}", l.level));
                }
            });
        if let Some(level) = parse_level(&self.log_level)? {
            builder = builder.log_level(level);
        }
        let client = match builder.connect_arc(transport).await {
            Ok(c) => c,
            Err(e) => {
                let e = anyhow::Error::new(e);
                if let Some(line) = self.url.as_deref().and_then(|u| login_hint(&e, u)) {
                    bail!(line);
                }
                return Err(e.context(format!("cannot connect to {}", self.describe())));
            }
        };
        Ok((client, feedback))
    }
}
