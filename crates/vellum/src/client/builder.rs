//! [`ClientBuilder`]: who the client is, what it can do for the server, and how long it waits;
//! and the two ways in, [`Client::builder`] and [`Client::connect`].
//!
//! The builder only fills in a [`Config`]; connecting assembles the client's state, starts
//! its reader and runs the handshake. The handle ([`Client`]) never looks back at the
//! builder, so the imports run one way (builder → reader → handle → config).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::callbacks::ServerNotification;
use super::config::{self, Config, ProtocolChoice};
use super::handle::{Client, Inner};
use super::reader::read_loop;
use crate::client::transport::Transport;
use crate::error::Error;
use crate::peer::{InflightRequests, PendingAnswers, RequestIds};
use crate::protocol::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    ErrorObject, Implementation, JsonObject, ListRootsResult, LoggingLevel,
};

impl Client {
    /// Starts the reader and runs the handshake; closes again if the handshake fails.
    async fn start(config: Config, transport: Arc<dyn Transport>) -> Result<Client, Error> {
        let inner = Arc::new(Inner {
            transport,
            log_level: RwLock::new(config.log_level),
            config,
            ids: RequestIds::new(),
            pending: PendingAnswers::new(),
            listen_acks: PendingAnswers::new(),
            serving: Arc::new(InflightRequests::new()),
            state: RwLock::new(None),
            reinit: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            ended: OnceLock::new(),
            dropped: CancellationToken::new(),
            gone: CancellationToken::new(),
        });
        tokio::spawn(read_loop(
            Arc::downgrade(&inner),
            inner.transport.clone(),
            inner.dropped.clone(),
        ));
        let client = Client { inner };
        if let Err(e) = client.handshake().await {
            client.close().await;
            return Err(e);
        }
        Ok(client)
    }

    /// A builder: identity, handlers, timeouts, era.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects with default settings (no sampling, elicitation or roots).
    pub async fn connect(transport: impl Transport) -> Result<Client, Error> {
        ClientBuilder::default().connect(transport).await
    }
}

/// The defaults of [`ClientBuilder`].
impl ClientBuilder {
    /// How long a call waits for its answer, unless the call says otherwise: 60 s. Progress
    /// notifications restart the wait.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = config::DEFAULT_REQUEST_TIMEOUT;
    /// How long the `server/discover` probe waits before the client assumes a legacy server:
    /// 10 s (a silent legacy server is legal).
    pub const DEFAULT_PROBE_TIMEOUT: Duration = config::DEFAULT_PROBE_TIMEOUT;
    /// How many input rounds (MRTR retries) one call may take: 8.
    pub const DEFAULT_MAX_INPUT_ROUNDS: u32 = config::DEFAULT_MAX_INPUT_ROUNDS;
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
#[derive(Clone, Default)]
#[must_use]
pub struct ClientBuilder {
    config: Config,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.config.info)
            .field("protocol", &self.config.protocol)
            .field("request_timeout", &self.config.request_timeout)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// The client's identity (`clientInfo`). Default: `vellum-client` and this crate's version.
    pub fn info(mut self, info: Implementation) -> Self {
        self.config.info = info;
        self
    }

    /// Shorthand for [`info`](Self::info) with a name and a version.
    pub fn name(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info(Implementation::new(name, version))
    }

    /// Non-standard capabilities to declare (`capabilities.experimental`).
    pub fn experimental(mut self, capabilities: JsonObject) -> Self {
        self.config.experimental = Some(capabilities);
        self
    }

    /// Answers `sampling/createMessage` and declares the `sampling` capability.
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.config.sampling = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Also declares `sampling.tools` (the sampling handler accepts tools). Default: off.
    pub fn sampling_with_tools(mut self, on: bool) -> Self {
        self.config.sampling_tools = on;
        self
    }

    /// Answers `elicitation/create` and declares the `elicitation` capability (form mode).
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.config.elicitation = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Also declares URL-mode elicitation (the handler opens URLs). Default: form mode only.
    pub fn elicitation_url_mode(mut self, on: bool) -> Self {
        self.config.elicitation_url = on;
        self
    }

    /// Answers `roots/list` and declares the `roots` capability.
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.config.roots = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// Receives every notification (progress, logs, list changes, resource updates).
    pub fn on_notification<F>(mut self, f: F) -> Self
    where
        F: Fn(ServerNotification) + Send + Sync + 'static,
    {
        self.config.notifications = Some(Arc::new(f));
        self
    }

    /// How long a call waits for its answer (progress restarts the wait). Default
    /// [`DEFAULT_REQUEST_TIMEOUT`](Self::DEFAULT_REQUEST_TIMEOUT).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// How long the era probe waits. Default [`DEFAULT_PROBE_TIMEOUT`](Self::DEFAULT_PROBE_TIMEOUT).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.probe_timeout = timeout;
        self
    }

    /// Which era to speak. Default [`ProtocolChoice::Auto`].
    pub fn protocol(mut self, choice: ProtocolChoice) -> Self {
        self.config.protocol = choice;
        self
    }

    /// The least severe log level wanted from the server: sent with `logging/setLevel` after a
    /// legacy handshake, and in every modern request's `_meta` (without it a modern server
    /// sends no logs). Default: none.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.config.log_level = Some(level);
        self
    }

    /// How many input rounds (MRTR retries) one call may take. Default
    /// [`DEFAULT_MAX_INPUT_ROUNDS`](Self::DEFAULT_MAX_INPUT_ROUNDS).
    pub fn max_input_rounds(mut self, rounds: u32) -> Self {
        self.config.max_input_rounds = rounds.max(1);
        self
    }

    /// Declares exactly these capabilities (`initialize`, and the `_meta` of 2026-07-28
    /// requests) instead of the ones the handlers set here imply: for a client that speaks
    /// for another one (a gateway declares its own client's). A question the server asks is
    /// still answered only by a handler set here.
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.config.declared = Some(capabilities);
        self
    }

    /// The protocol version asked for in the legacy `initialize` (default: the newest legacy
    /// version this client speaks). The server may choose another; the client accepts any
    /// legacy version it speaks.
    pub fn initialize_version(mut self, version: impl Into<String>) -> Self {
        self.config.initialize_version = Some(version.into());
        self
    }

    /// Connects over `transport`: probes the era and completes the handshake.
    pub async fn connect(self, transport: impl Transport) -> Result<Client, Error> {
        Client::start(self.config, Arc::new(transport)).await
    }

    /// Like [`connect`](Self::connect), for a transport already behind an `Arc`.
    pub async fn connect_arc(self, transport: Arc<dyn Transport>) -> Result<Client, Error> {
        Client::start(self.config, transport).await
    }
}
