//! What a client is configured with: its identity, the callbacks that answer the server,
//! timeouts and the protocol era. [`ClientBuilder`](super::ClientBuilder) fills it in; the
//! running client reads it.

use std::time::Duration;

use super::callbacks::{ElicitationHandler, NotificationHandler, RootsHandler, SamplingHandler};
use crate::protocol::{
    ClientCapabilities, ElicitationCapability, Implementation, JsonObject, LoggingLevel,
    ProtocolVersion, RootsCapability, SamplingCapability,
};

/// Which protocol era a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Probe with `server/discover` (2026-07-28) and fall back to the legacy `initialize`
    /// handshake when the server does not speak the modern era (the spec's era detection).
    #[default]
    Auto,
    /// Only the legacy handshake (`initialize`, newest 2025-11-25).
    Legacy,
    /// Only the stateless 2026-07-28 era; a server that does not speak it is an error.
    Modern,
}

/// How long a call waits for its answer by default.
pub(super) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the `server/discover` probe waits by default.
pub(super) const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How many input rounds one call may take by default.
pub(super) const DEFAULT_MAX_INPUT_ROUNDS: u32 = 8;

/// The settings of one client (see the setters of `ClientBuilder` for each one's meaning).
#[derive(Clone)]
pub(super) struct Config {
    pub(super) info: Implementation,
    pub(super) experimental: Option<JsonObject>,
    pub(super) sampling: Option<SamplingHandler>,
    pub(super) sampling_tools: bool,
    pub(super) elicitation: Option<ElicitationHandler>,
    pub(super) elicitation_url: bool,
    pub(super) roots: Option<RootsHandler>,
    pub(super) notifications: Option<NotificationHandler>,
    pub(super) request_timeout: Duration,
    pub(super) probe_timeout: Duration,
    pub(super) protocol: ProtocolChoice,
    pub(super) log_level: Option<LoggingLevel>,
    pub(super) max_input_rounds: u32,
    /// Capabilities declared as given instead of those the callbacks imply.
    pub(super) declared: Option<ClientCapabilities>,
    /// The version asked for in `initialize` (default: the newest legacy one).
    pub(super) initialize_version: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            info: Implementation::new("vellum-client", env!("CARGO_PKG_VERSION")),
            experimental: None,
            sampling: None,
            sampling_tools: false,
            elicitation: None,
            elicitation_url: false,
            roots: None,
            notifications: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            protocol: ProtocolChoice::Auto,
            log_level: None,
            max_input_rounds: DEFAULT_MAX_INPUT_ROUNDS,
            declared: None,
            initialize_version: None,
        }
    }
}

impl Config {
    /// The capabilities the callbacks declare, for a request of `version`.
    pub(super) fn capabilities(&self, version: Option<ProtocolVersion>) -> ClientCapabilities {
        if let Some(c) = &self.declared {
            return c.clone();
        }
        let legacy = version.is_none_or(|v| !v.is_modern());
        ClientCapabilities {
            experimental: self.experimental.clone(),
            roots: self.roots.as_ref().map(|_| RootsCapability {
                list_changed: legacy.then_some(true),
            }),
            sampling: self.sampling.as_ref().map(|_| SamplingCapability {
                context: None,
                tools: self.sampling_tools.then(JsonObject::new),
            }),
            elicitation: self.elicitation.as_ref().map(|_| ElicitationCapability {
                form: Some(JsonObject::new()),
                url: self.elicitation_url.then(JsonObject::new),
            }),
            tasks: None,
            extensions: None,
        }
    }
}
