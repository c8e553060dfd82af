//! [`ClientBuilder`]: who the client is, what it can do for the server, and how long it waits.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::client::Client;
use super::handler::{
    ElicitationHandler, NotificationHandler, RootsHandler, SamplingHandler, ServerNotification,
};
use super::transport::Transport;
use crate::error::Error;
use crate::protocol::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    ElicitationCapability, ErrorObject, Implementation, JsonObject, ListRootsResult, LoggingLevel,
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

/// The defaults of [`ClientBuilder`].
impl ClientBuilder {
    /// How long a call waits for its answer, unless the call says otherwise: 60 s. Progress
    /// notifications restart the wait.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
    /// How long the `server/discover` probe waits before the client assumes a legacy server:
    /// 10 s (a silent legacy server is legal).
    pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
    /// How many input rounds (MRTR retries) one call may take: 8.
    pub const DEFAULT_MAX_INPUT_ROUNDS: u32 = 8;
}

/// Builds a [`Client`]: identity, capabilities (declared by the handlers you set), timeouts,
/// protocol era.
///
/// ```no_run
/// # async fn run() -> Result<(), vellum::Error> {
/// use vellum::client::Client;
/// use vellum::transport::http_client::StreamableHttpClientTransport;
///
/// let transport = StreamableHttpClientTransport::new("http://127.0.0.1:8000/mcp")?;
/// let client = Client::builder().name("my-agent", "1.0.0").connect(transport).await?;
/// let result = client
///     .call_tool("hello_world", serde_json::json!({ "user_name": "Alice" }))
///     .await?;
/// println!("{}", result.content[0].as_text().unwrap_or_default());
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use]
pub struct ClientBuilder {
    pub(crate) info: Implementation,
    pub(crate) experimental: Option<JsonObject>,
    pub(crate) sampling: Option<SamplingHandler>,
    pub(crate) sampling_tools: bool,
    pub(crate) elicitation: Option<ElicitationHandler>,
    pub(crate) elicitation_url: bool,
    pub(crate) roots: Option<RootsHandler>,
    pub(crate) notifications: Option<NotificationHandler>,
    pub(crate) request_timeout: Duration,
    pub(crate) probe_timeout: Duration,
    pub(crate) protocol: ProtocolChoice,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) max_input_rounds: u32,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("protocol", &self.protocol)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            info: Implementation::new("vellum-client", env!("CARGO_PKG_VERSION")),
            experimental: None,
            sampling: None,
            sampling_tools: false,
            elicitation: None,
            elicitation_url: false,
            roots: None,
            notifications: None,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            probe_timeout: Self::DEFAULT_PROBE_TIMEOUT,
            protocol: ProtocolChoice::Auto,
            log_level: None,
            max_input_rounds: Self::DEFAULT_MAX_INPUT_ROUNDS,
        }
    }
}

impl ClientBuilder {
    /// The client's identity (`clientInfo`). Default: `vellum-client` and this crate's version.
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Shorthand for [`info`](Self::info) with a name and a version.
    pub fn name(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info(Implementation::new(name, version))
    }

    /// Non-standard capabilities to declare (`capabilities.experimental`).
    pub fn experimental(mut self, capabilities: JsonObject) -> Self {
        self.experimental = Some(capabilities);
        self
    }

    /// Answers `sampling/createMessage` and declares the `sampling` capability.
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Also declares `sampling.tools` (the sampling handler accepts tools). Default: off.
    pub fn sampling_with_tools(mut self, on: bool) -> Self {
        self.sampling_tools = on;
        self
    }

    /// Answers `elicitation/create` and declares the `elicitation` capability (form mode).
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Also declares URL-mode elicitation (the handler opens URLs). Default: form mode only.
    pub fn elicitation_url_mode(mut self, on: bool) -> Self {
        self.elicitation_url = on;
        self
    }

    /// Answers `roots/list` and declares the `roots` capability.
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// Receives every notification (progress, logs, list changes, resource updates).
    pub fn on_notification<F>(mut self, f: F) -> Self
    where
        F: Fn(ServerNotification) + Send + Sync + 'static,
    {
        self.notifications = Some(Arc::new(f));
        self
    }

    /// How long a call waits for its answer (progress restarts the wait). Default
    /// [`DEFAULT_REQUEST_TIMEOUT`](Self::DEFAULT_REQUEST_TIMEOUT).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long the era probe waits. Default [`DEFAULT_PROBE_TIMEOUT`](Self::DEFAULT_PROBE_TIMEOUT).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Which era to speak. Default [`ProtocolChoice::Auto`].
    pub fn protocol(mut self, choice: ProtocolChoice) -> Self {
        self.protocol = choice;
        self
    }

    /// The least severe log level wanted from the server: sent with `logging/setLevel` after a
    /// legacy handshake, and in every modern request's `_meta` (without it a modern server
    /// sends no logs). Default: none.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// How many input rounds (MRTR retries) one call may take. Default
    /// [`DEFAULT_MAX_INPUT_ROUNDS`](Self::DEFAULT_MAX_INPUT_ROUNDS).
    pub fn max_input_rounds(mut self, rounds: u32) -> Self {
        self.max_input_rounds = rounds.max(1);
        self
    }

    /// Connects over `transport`: probes the era and completes the handshake.
    pub async fn connect(self, transport: impl Transport) -> Result<Client, Error> {
        Client::start(self, Arc::new(transport)).await
    }

    /// Like [`connect`](Self::connect), for a transport already behind an `Arc`.
    pub async fn connect_arc(self, transport: Arc<dyn Transport>) -> Result<Client, Error> {
        Client::start(self, transport).await
    }

    /// The capabilities the handlers declare, for a request of `version`.
    pub(crate) fn capabilities(&self, version: Option<ProtocolVersion>) -> ClientCapabilities {
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
