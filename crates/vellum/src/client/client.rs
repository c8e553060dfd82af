//! [`Client`]: one connection to one MCP server, in whichever era the server speaks.
//!
//! The client owns the JSON-RPC bookkeeping (ids, waiting calls, progress tokens, the
//! server's requests), the handshake (the `server/discover` probe, then the legacy
//! `initialize` fallback), MRTR retries, and re-initialisation after an expired session.
//! Transports only move messages (see [`Transport`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, oneshot};

use super::builder::{ClientBuilder, ProtocolChoice};
use super::handler::{ProgressHandler, ServerNotification};
use super::mirror::{ParamHeader, mirror_values, param_headers};
use super::transport::{Incoming, OutgoingKind, OutgoingMessage, Transport, TransportError};
use crate::error::Error;
use crate::protocol::{
    CallToolParams, CallToolResult, CancelledParams, CompleteParams, CompleteResult,
    CompletionArgument, CompletionReference, DiscoverResult, ElicitParams, ErrorObject,
    GetPromptParams, GetPromptResult, Implementation, InitializeParams, InitializeResult,
    InputRequest, InputRequests, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, Message, Meta, PaginatedParams, Prompt,
    ProtocolVersion, RawJson, ReadResourceParams, ReadResourceResult, Request, RequestId, Resource,
    ResourceTemplate, Response, ResultType, ServerCapabilities, SetLevelParams, SubscribeParams,
    SubscriptionFilter, Tool, code, meta_keys, methods,
};
use crate::protocol::{encode_error, encode_notification, encode_request, encode_response};
use crate::sync::{lock, read, write};

/// Options of one call.
#[derive(Clone, Default)]
#[must_use]
pub struct CallOptions {
    /// How long to wait for the answer (progress restarts the wait). Default: the client's.
    pub timeout: Option<Duration>,
    /// Receives the call's progress notifications; setting it sends a progress token.
    pub progress: Option<ProgressHandler>,
    /// Extra `_meta` entries for the request.
    pub meta: Option<Meta>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("meta", &self.meta)
            .finish()
    }
}

impl CallOptions {
    /// Waits at most `timeout` for the answer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls `f` with every progress notification of the call.
    pub fn on_progress<F>(mut self, f: F) -> Self
    where
        F: Fn(&crate::protocol::ProgressParams) + Send + Sync + 'static,
    {
        self.progress = Some(Arc::new(f));
        self
    }
}

/// Why a call ended without a result, before it becomes an [`Error`].
#[derive(Debug)]
enum Failure {
    Remote(ErrorObject),
    Transport(TransportError),
    Closed,
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Error {
        match f {
            Failure::Remote(e) => Error::Remote(e),
            Failure::Transport(e) => Error::Transport(e.to_string()),
            Failure::Closed => Error::SessionClosed,
        }
    }
}

/// What one attempt of a call ended with: an answer-level failure (which the retry logic
/// inspects) or a local error.
#[derive(Debug)]
enum CallError {
    Failure(Failure),
    Local(Error),
}

impl From<Error> for CallError {
    fn from(e: Error) -> CallError {
        CallError::Local(e)
    }
}

impl From<serde_json::Error> for CallError {
    fn from(e: serde_json::Error) -> CallError {
        CallError::Local(e.into())
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Error {
        match e {
            CallError::Failure(f) => f.into(),
            CallError::Local(e) => e,
        }
    }
}

struct Waiting {
    answer: oneshot::Sender<Result<RawJson, Failure>>,
    /// Restarts the caller's timeout (a progress notification arrived).
    alive: Arc<Notify>,
}

/// What the handshake established.
#[derive(Debug, Clone)]
struct SessionState {
    modern: bool,
    /// The negotiated (legacy) or requested (modern) version string.
    version: String,
    server_info: Option<Implementation>,
    capabilities: ServerCapabilities,
    instructions: Option<String>,
    supported_versions: Vec<String>,
    /// `x-mcp-header` annotations of the tools seen in `tools/list`, by tool name.
    tool_headers: HashMap<String, Vec<ParamHeader>>,
}

struct Inner {
    transport: Arc<dyn Transport>,
    config: ClientBuilder,
    next_id: AtomicI64,
    waiting: Mutex<HashMap<RequestId, Waiting>>,
    progress: Mutex<HashMap<RequestId, (ProgressHandler, Arc<Notify>)>>,
    /// The server's requests being answered (legacy), for its cancellations.
    serving: Mutex<HashMap<RequestId, tokio::task::AbortHandle>>,
    state: RwLock<Option<SessionState>>,
    log_level: RwLock<Option<LoggingLevel>>,
    /// Serialises re-initialisations; the number counts finished handshakes.
    reinit: tokio::sync::Mutex<()>,
    /// `subscriptions/listen` requests waiting for their acknowledgement.
    listen_acks: Mutex<HashMap<RequestId, oneshot::Sender<SubscriptionFilter>>>,
    generation: AtomicU64,
    closed: AtomicBool,
    /// Cancelled when the last `Client` handle is dropped: the reader then stops and lets go
    /// of the transport (a child process is killed, connections close).
    dropped: tokio_util::sync::CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

/// A connection to an MCP server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("Client")
            .field(
                "protocol_version",
                &state.as_ref().map(|s| s.version.clone()),
            )
            .field("server", &state.and_then(|s| s.server_info))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder: identity, handlers, timeouts, era.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects with default settings (no sampling, elicitation or roots).
    pub async fn connect(transport: impl Transport) -> Result<Client, Error> {
        ClientBuilder::default().connect(transport).await
    }

    pub(crate) async fn start(
        config: ClientBuilder,
        transport: Arc<dyn Transport>,
    ) -> Result<Client, Error> {
        let inner = Arc::new(Inner {
            transport,
            log_level: RwLock::new(config.log_level),
            config,
            next_id: AtomicI64::new(0),
            waiting: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            serving: Mutex::new(HashMap::new()),
            state: RwLock::new(None),
            reinit: tokio::sync::Mutex::new(()),
            listen_acks: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            dropped: tokio_util::sync::CancellationToken::new(),
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

    // ---- what the handshake established ----------------------------------------------------

    fn state(&self) -> Option<SessionState> {
        read(&self.inner.state).clone()
    }

    /// The protocol version in use (`"2026-07-28"` for the modern era).
    pub fn protocol_version(&self) -> Option<String> {
        self.state().map(|s| s.version)
    }

    /// True when the client speaks the stateless 2026-07-28 era with this server.
    pub fn is_modern(&self) -> bool {
        self.state().is_some_and(|s| s.modern)
    }

    /// The server's identity, when it told it (`initialize`, or `server/discover`'s `_meta`).
    pub fn server_info(&self) -> Option<Implementation> {
        self.state().and_then(|s| s.server_info)
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.state().map(|s| s.capabilities).unwrap_or_default()
    }

    /// The server's instructions for the model, if any.
    pub fn instructions(&self) -> Option<String> {
        self.state().and_then(|s| s.instructions)
    }

    /// The versions a modern server listed in `server/discover`.
    pub fn supported_versions(&self) -> Vec<String> {
        self.state()
            .map(|s| s.supported_versions)
            .unwrap_or_default()
    }

    // ---- handshake ----------------------------------------------------------------------------

    async fn handshake(&self) -> Result<(), Error> {
        match self.inner.config.protocol {
            ProtocolChoice::Legacy => self.initialize().await,
            ProtocolChoice::Modern => self.discover(ProtocolVersion::LATEST.as_str()).await,
            ProtocolChoice::Auto => match self.discover(ProtocolVersion::LATEST.as_str()).await {
                Ok(()) => Ok(()),
                Err(Error::Remote(e)) if is_modern_error(&e) => {
                    // A modern server that wants another version: take the newest both speak.
                    let Some(v) = pick_version(&e) else {
                        return Err(Error::Remote(e));
                    };
                    if ProtocolVersion::parse(&v).is_some_and(|v| v.is_modern()) {
                        self.discover(&v).await
                    } else {
                        self.initialize().await
                    }
                }
                Err(e) => {
                    tracing::debug!("server/discover failed ({e}); trying the legacy handshake");
                    self.initialize().await
                }
            },
        }
    }

    /// The modern handshake: `server/discover`.
    async fn discover(&self, version: &str) -> Result<(), Error> {
        let opts = CallOptions {
            timeout: Some(self.inner.config.probe_timeout),
            ..Default::default()
        };
        let raw = self
            .call_raw_in(
                methods::DISCOVER,
                Map::new(),
                &opts,
                Some((true, version)),
                None,
            )
            .await?;
        let result: DiscoverResult = complete_result(&raw)?;
        if !result.supported_versions.iter().any(|v| v == version) {
            return Err(Error::Protocol(format!(
                "the server's server/discover does not list {version} (it lists {:?})",
                result.supported_versions
            )));
        }
        let server_info = result
            .meta
            .as_ref()
            .and_then(|m| m.get_as::<Implementation>(meta_keys::SERVER_INFO))
            .and_then(Result::ok);
        self.set_state(SessionState {
            modern: true,
            version: version.to_owned(),
            server_info,
            capabilities: result.capabilities,
            instructions: result.instructions,
            supported_versions: result.supported_versions,
            tool_headers: HashMap::new(),
        });
        Ok(())
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    async fn initialize(&self) -> Result<(), Error> {
        let config = &self.inner.config;
        let params = InitializeParams {
            protocol_version: ProtocolVersion::LATEST_LEGACY.as_str().to_owned(),
            capabilities: config.capabilities(Some(ProtocolVersion::LATEST_LEGACY)),
            client_info: config.info.clone(),
            meta: None,
        };
        let opts = CallOptions::default();
        let raw = self
            .call_raw_in(
                methods::INITIALIZE,
                to_object(&params)?,
                &opts,
                Some((false, "")),
                None,
            )
            .await?;
        let result: InitializeResult = raw.parse()?;
        let version = result.protocol_version;
        let known = ProtocolVersion::parse(&version).is_some_and(|v| !v.is_modern())
            || version == "2024-11-05";
        if !known {
            return Err(Error::Protocol(format!(
                "the server chose protocol version {version:?}, which this client does not speak"
            )));
        }
        self.set_state(SessionState {
            modern: false,
            version: version.clone(),
            server_info: Some(result.server_info),
            capabilities: result.capabilities,
            instructions: result.instructions,
            supported_versions: Vec::new(),
            tool_headers: HashMap::new(),
        });
        self.notify(methods::INITIALIZED, None).await?;
        self.inner.transport.session_started(&version);
        let level = *read(&self.inner.log_level);
        if let Some(level) = level
            && self.server_capabilities().logging.is_some()
        {
            // Straight to one attempt: a failure here must not start another handshake.
            let params = SetLevelParams { level, meta: None };
            let opts = CallOptions::default();
            self.call_raw_in(
                methods::LOGGING_SET_LEVEL,
                to_object(&params)?,
                &opts,
                None,
                None,
            )
            .await?;
        }
        Ok(())
    }

    fn set_state(&self, state: SessionState) {
        *write(&self.inner.state) = Some(state);
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Starts a new legacy session after the server forgot ours (HTTP 404), once for all the
    /// calls that noticed it at the same time.
    fn reinitialize(
        &self,
        seen_generation: u64,
    ) -> futures_util::future::BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let _one = self.inner.reinit.lock().await;
            if self.inner.generation.load(Ordering::Acquire) != seen_generation {
                return Ok(()); // Another call already did it.
            }
            tracing::debug!("the server ended the session; initializing a new one");
            self.inner.transport.session_reset();
            self.initialize().await
        })
    }

    // ---- the request engine ---------------------------------------------------------------------

    /// Sends a request with the era's `_meta` and waits for its raw result. Retries once on
    /// a new session when the server forgot ours.
    async fn call_raw(
        &self,
        method: &str,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<RawJson, Error> {
        let generation = self.inner.generation.load(Ordering::Acquire);
        match self
            .call_raw_in(method, params.clone(), opts, None, None)
            .await
        {
            Err(CallError::Failure(Failure::Transport(TransportError::SessionExpired)))
                if !self.is_modern() =>
            {
                self.reinitialize(generation).await?;
                Ok(self.call_raw_in(method, params, opts, None, None).await?)
            }
            other => Ok(other?),
        }
    }

    /// One attempt. `era` overrides the session's era (during the handshake): `(modern,
    /// version)`; `id` is a pre-allocated request id.
    async fn call_raw_in(
        &self,
        method: &str,
        mut params: Map<String, Value>,
        opts: &CallOptions,
        era: Option<(bool, &str)>,
        id: Option<RequestId>,
    ) -> Result<RawJson, CallError> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::Acquire) {
            return Err(Error::SessionClosed.into());
        }
        let (modern, version) = match era {
            Some((m, v)) => (m, (!v.is_empty()).then(|| v.to_owned())),
            None => match self.state() {
                Some(s) => (s.modern, Some(s.version)),
                None => (false, None),
            },
        };
        let id = id.unwrap_or_else(|| self.next_id());

        // `_meta`: the caller's entries, a progress token, and the modern era's context.
        let mut meta = opts.meta.clone().unwrap_or_default();
        let alive = Arc::new(Notify::new());
        if let Some(p) = &opts.progress {
            meta.insert(meta_keys::PROGRESS_TOKEN, &id);
            lock(&inner.progress).insert(id.clone(), (p.clone(), alive.clone()));
        }
        if modern && let Some(v) = &version {
            meta.insert(meta_keys::PROTOCOL_VERSION, v);
            let caps = inner.config.capabilities(ProtocolVersion::parse(v));
            meta.insert(meta_keys::CLIENT_CAPABILITIES, caps);
            meta.insert(meta_keys::CLIENT_INFO, &inner.config.info);
            let level = *read(&inner.log_level);
            if let Some(level) = level {
                meta.insert(meta_keys::LOG_LEVEL, level);
            }
        }
        if !meta.is_empty() {
            params.insert("_meta".to_owned(), Value::Object(meta.0));
        }
        let mirrors = if modern {
            self.mirrors(method, &params)
        } else {
            Vec::new()
        };
        let bytes = if params.is_empty() && method != methods::DISCOVER {
            encode_request::<()>(&id, method, None)?
        } else {
            encode_request(&id, method, Some(&params))?
        };

        let (tx, rx) = oneshot::channel();
        lock(&inner.waiting).insert(
            id.clone(),
            Waiting {
                answer: tx,
                alive: alive.clone(),
            },
        );
        let mut guard = CallGuard {
            client: self,
            id: id.clone(),
            modern,
            version: version.clone(),
            done: false,
        };
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Request(id.clone()),
            method: Some(method.to_owned()),
            protocol_version: version,
            modern,
            mirrors,
        };
        if let Err(e) = inner.transport.send(message).await {
            guard.done = true;
            self.forget(&id);
            return Err(CallError::Failure(Failure::Transport(e)));
        }

        let timeout = opts.timeout.unwrap_or(inner.config.request_timeout);
        let mut rx = rx;
        let outcome = loop {
            tokio::select! {
                r = &mut rx => break r.map_err(|_| Error::SessionClosed),
                () = alive.notified() => continue,
                () = tokio::time::sleep(timeout) => {
                    break Err(Error::Timeout(timeout));
                }
            }
        };
        guard.done = !matches!(outcome, Err(Error::Timeout(_)));
        lock(&inner.progress).remove(&id);
        match outcome {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(f)) => Err(CallError::Failure(f)),
            Err(e) => Err(e.into()),
        }
    }

    fn next_id(&self) -> RequestId {
        RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::AcqRel))
    }

    fn forget(&self, id: &RequestId) {
        lock(&self.inner.waiting).remove(id);
        lock(&self.inner.progress).remove(id);
    }

    /// The values a modern HTTP request mirrors into headers.
    fn mirrors(&self, method: &str, params: &Map<String, Value>) -> Vec<(String, String)> {
        let field = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
            methods::RESOURCES_READ => "uri",
            // SEP-2663: the task methods route by their taskId.
            methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => "taskId",
            _ => return Vec::new(),
        };
        let mut out = Vec::new();
        if let Some(Value::String(name)) = params.get(field) {
            out.push(("Mcp-Name".to_owned(), name.clone()));
            if method == methods::TOOLS_CALL
                && let Some(state) = self.state()
                && let Some(headers) = state.tool_headers.get(name)
            {
                let args = params.get("arguments").and_then(Value::as_object);
                out.extend(mirror_values(headers, args));
            }
        }
        out
    }

    /// Sends a notification in the session's era.
    async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let state = self.state();
        let bytes = encode_notification(method, params.as_ref())?;
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Notification,
            method: Some(method.to_owned()),
            protocol_version: state.as_ref().map(|s| s.version.clone()),
            modern: state.as_ref().is_some_and(|s| s.modern),
            mirrors: Vec::new(),
        };
        self.inner
            .transport
            .send(message)
            .await
            .map_err(|e| Failure::Transport(e).into())
    }

    /// Sends a request and decodes its complete result (`resultType` checked), running the
    /// MRTR rounds of a modern server that needs input.
    async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        mut params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<R, Error> {
        let rounds = self.inner.config.max_input_rounds;
        for _ in 0..=rounds {
            let raw = self.call_raw(method, params.clone(), opts).await?;
            let head: ResultHead = raw.parse()?;
            match head.result_type.unwrap_or_default() {
                ResultType::Complete => return Ok(raw.parse()?),
                ResultType::InputRequired => {
                    let responses = self
                        .answer_inputs(head.input_requests.unwrap_or_default())
                        .await?;
                    if responses.is_empty() {
                        params.remove("inputResponses");
                    } else {
                        params.insert("inputResponses".to_owned(), Value::Object(responses));
                    }
                    match head.request_state {
                        Some(s) => params.insert("requestState".to_owned(), Value::String(s)),
                        None => params.remove("requestState"),
                    };
                }
                ResultType::Task => {
                    return Err(Error::Unsupported(
                        "the server answered with a task, which this client did not ask for".into(),
                    ));
                }
                ResultType::Other(t) => {
                    return Err(Error::Protocol(format!("unknown resultType {t:?}")));
                }
            }
        }
        Err(Error::Protocol(format!(
            "the server still needed input after {rounds} rounds"
        )))
    }

    /// Answers a modern server's input requests with the client's handlers.
    async fn answer_inputs(&self, requests: InputRequests) -> Result<Map<String, Value>, Error> {
        let mut out = Map::new();
        for (key, request) in requests {
            let answer = answer_input(&self.inner.config, request)
                .await
                .map_err(Error::Remote)?;
            out.insert(key, answer);
        }
        Ok(out)
    }

    // ---- typed calls ----------------------------------------------------------------------------

    /// Sends any request and decodes its result (an escape hatch for methods without a typed
    /// call). The era's `_meta` is added; MRTR rounds run for the three methods that have them.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        opts: CallOptions,
    ) -> Result<R, Error> {
        let params = to_object(params)?;
        self.call(method, params, &opts).await
    }

    /// Checks that the server answers: `ping` (legacy) or `server/discover` (2026-07-28 has
    /// no `ping`).
    pub async fn ping(&self) -> Result<(), Error> {
        if self.is_modern() {
            let _: DiscoverResult = self
                .call(methods::DISCOVER, Map::new(), &CallOptions::default())
                .await?;
        } else {
            let _: Value = self
                .call(methods::PING, Map::new(), &CallOptions::default())
                .await?;
        }
        Ok(())
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        let mut result: ListToolsResult = self.list(methods::TOOLS_LIST, cursor).await?;
        if self.is_modern() {
            self.learn_tool_headers(&mut result.tools);
        }
        Ok(result)
    }

    /// Remembers the `x-mcp-header` annotations of listed tools and drops tools whose
    /// annotations are invalid (the spec's rule for HTTP clients).
    fn learn_tool_headers(&self, tools: &mut Vec<Tool>) {
        let mut learned = Vec::new();
        tools.retain(|t| match param_headers(t) {
            Ok(h) => {
                learned.push((t.name.clone(), h));
                true
            }
            Err(why) => {
                tracing::warn!(tool = %t.name, "dropping a tool with an invalid x-mcp-header: {why}");
                false
            }
        });
        let mut state = write(&self.inner.state);
        if let Some(s) = state.as_mut() {
            for (name, h) in learned {
                if h.is_empty() {
                    s.tool_headers.remove(&name);
                } else {
                    s.tool_headers.insert(name, h);
                }
            }
        }
    }

    /// Every tool, following `nextCursor` to the end.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_tools(cursor).await?;
            Ok((page.tools, page.next_cursor))
        })
        .await
    }

    /// Calls a tool with JSON-object arguments (`serde_json::json!({...})`, a struct, or
    /// `()` for none).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, Error> {
        let arguments = match serde_json::to_value(arguments)? {
            Value::Object(m) => Some(m),
            Value::Null => None,
            _ => {
                return Err(Error::Unsupported(
                    "tool arguments must be a JSON object".into(),
                ));
            }
        };
        let params = CallToolParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        };
        self.call_tool_with(params, CallOptions::default()).await
    }

    /// Calls a tool with full control over the params and the call's options.
    pub async fn call_tool_with(
        &self,
        params: CallToolParams,
        opts: CallOptions,
    ) -> Result<CallToolResult, Error> {
        self.call(methods::TOOLS_CALL, to_object(&params)?, &opts)
            .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, Error> {
        self.list(methods::RESOURCES_LIST, cursor).await
    }

    /// Every resource, following `nextCursor` to the end.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_resources(cursor).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.list(methods::RESOURCES_TEMPLATES_LIST, cursor).await
    }

    /// Every resource template, following `nextCursor` to the end.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_resource_templates(cursor).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let params = ReadResourceParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.call(
            methods::RESOURCES_READ,
            to_object(&params)?,
            &CallOptions::default(),
        )
        .await
    }

    /// Subscribes to a resource's updates (legacy `resources/subscribe`; in the modern era use
    /// [`listen`](Self::listen)).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.subscription(methods::RESOURCES_SUBSCRIBE, uri).await
    }

    /// Ends a resource subscription (legacy `resources/unsubscribe`).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.subscription(methods::RESOURCES_UNSUBSCRIBE, uri).await
    }

    async fn subscription(&self, method: &str, uri: &str) -> Result<(), Error> {
        if self.is_modern() {
            return Err(Error::Unsupported(format!(
                "{method} does not exist in 2026-07-28; use Client::listen"
            )));
        }
        let params = SubscribeParams {
            uri: uri.to_owned(),
            meta: None,
        };
        let _: Value = self
            .call(method, to_object(&params)?, &CallOptions::default())
            .await?;
        Ok(())
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28): the notifications it asks for arrive
    /// at the client's notification handler until the returned [`Listen`] is dropped or
    /// [`closed`](Listen::close). Waits for the server's acknowledgement and returns the
    /// filter the server honours.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Listen, Error> {
        if !self.is_modern() {
            return Err(Error::Unsupported(
                "subscriptions/listen needs the 2026-07-28 era; use subscribe_resource".into(),
            ));
        }
        let id = self.next_id();
        let (ack_tx, ack_rx) = oneshot::channel();
        lock(&self.inner.listen_acks).insert(id.clone(), ack_tx);
        let mut params = Map::new();
        params.insert("notifications".to_owned(), serde_json::to_value(&filter)?);
        let client = self.clone();
        let listen_id = id.clone();
        let (end_tx, end_rx) = oneshot::channel::<Error>();
        let task = tokio::spawn(async move {
            let opts = CallOptions {
                // The stream lives until the client closes it.
                timeout: Some(Duration::from_secs(60 * 60 * 24 * 365)),
                ..Default::default()
            };
            let r = client
                .call_raw_in(
                    methods::SUBSCRIPTIONS_LISTEN,
                    params,
                    &opts,
                    None,
                    Some(listen_id),
                )
                .await;
            let e = match r {
                Ok(_) => Error::SessionClosed,
                Err(e) => e.into(),
            };
            let _ = end_tx.send(e);
        });
        let timeout = self.inner.config.request_timeout;
        let outcome = tokio::select! {
            r = ack_rx => r.map_err(|_| Error::SessionClosed),
            r = end_rx => Err(r.unwrap_or(Error::SessionClosed)),
            () = tokio::time::sleep(timeout) => Err(Error::Timeout(timeout)),
        };
        lock(&self.inner.listen_acks).remove(&id);
        match outcome {
            Ok(honoured) => Ok(Listen {
                honoured,
                task: Some(task),
            }),
            Err(e) => {
                task.abort();
                Err(e)
            }
        }
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult, Error> {
        self.list(methods::PROMPTS_LIST, cursor).await
    }

    /// Every prompt, following `nextCursor` to the end.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_prompts(cursor).await?;
            Ok((page.prompts, page.next_cursor))
        })
        .await
    }

    /// Gets a prompt with string arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (String, String)>,
    ) -> Result<GetPromptResult, Error> {
        let arguments: std::collections::BTreeMap<String, String> = arguments.into_iter().collect();
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: (!arguments.is_empty()).then_some(arguments),
            ..Default::default()
        };
        self.call(
            methods::PROMPTS_GET,
            to_object(&params)?,
            &CallOptions::default(),
        )
        .await
    }

    /// Asks for completions of a prompt's or resource template's argument.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
    ) -> Result<CompleteResult, Error> {
        let params = CompleteParams {
            reference,
            argument: CompletionArgument {
                name: argument.to_owned(),
                value: value.to_owned(),
            },
            context: None,
            meta: None,
        };
        self.complete_with(params).await
    }

    /// `completion/complete` with full params.
    pub async fn complete_with(&self, params: CompleteParams) -> Result<CompleteResult, Error> {
        self.call(
            methods::COMPLETION_COMPLETE,
            to_object(&params)?,
            &CallOptions::default(),
        )
        .await
    }

    /// Sets the least severe log level the client wants: `logging/setLevel` in a legacy
    /// session; in the modern era every later request carries it in its `_meta`.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), Error> {
        *write(&self.inner.log_level) = Some(level);
        if !self.is_modern() {
            let params = SetLevelParams { level, meta: None };
            let _: Value = self
                .call(
                    methods::LOGGING_SET_LEVEL,
                    to_object(&params)?,
                    &CallOptions::default(),
                )
                .await?;
        }
        Ok(())
    }

    /// Tells a legacy server that the client's roots changed (`notifications/roots/list_changed`).
    pub async fn notify_roots_changed(&self) -> Result<(), Error> {
        if self.is_modern() {
            return Ok(()); // 2026-07-28 has no such notification; servers ask each time.
        }
        self.notify(methods::ROOTS_LIST_CHANGED, None).await
    }

    async fn list<R: DeserializeOwned>(
        &self,
        method: &str,
        cursor: Option<String>,
    ) -> Result<R, Error> {
        let params = PaginatedParams { cursor, meta: None };
        self.call(method, to_object(&params)?, &CallOptions::default())
            .await
    }

    /// Closes the connection: cancels what is waiting and ends the session (HTTP DELETE, or
    /// the child process), bounded in time.
    pub async fn close(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inner.transport.close().await;
        fail_all(&self.inner);
    }
}

/// Every item of a paginated list: pages are fetched until one has no `nextCursor`.
async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, Error>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), Error>>,
{
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (items, next) = page(cursor).await?;
        out.extend(items);
        match next {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// The parts of any result the client checks before decoding it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultHead {
    #[serde(default)]
    result_type: Option<ResultType>,
    #[serde(default)]
    input_requests: Option<InputRequests>,
    #[serde(default)]
    request_state: Option<String>,
}

fn complete_result<R: DeserializeOwned>(raw: &RawJson) -> Result<R, Error> {
    let head: ResultHead = raw.parse()?;
    match head.result_type.unwrap_or_default() {
        ResultType::Complete => Ok(raw.parse()?),
        other => Err(Error::Protocol(format!(
            "unexpected resultType {:?}",
            other.as_str()
        ))),
    }
}

fn to_object<P: Serialize + ?Sized>(params: &P) -> Result<Map<String, Value>, Error> {
    match serde_json::to_value(params)? {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(Error::Unsupported("params must be a JSON object".into())),
    }
}

/// True for the errors only a modern server sends (the spec's era-detection markers).
fn is_modern_error(e: &ErrorObject) -> bool {
    matches!(
        e.code,
        code::UNSUPPORTED_PROTOCOL_VERSION
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::HEADER_MISMATCH
    )
}

/// The newest version in an `UnsupportedProtocolVersion` error's `supported` list that this
/// client speaks.
fn pick_version(e: &ErrorObject) -> Option<String> {
    let supported = e.data.as_ref()?.get("supported")?.as_array()?;
    let mut ours: Vec<ProtocolVersion> = supported
        .iter()
        .filter_map(Value::as_str)
        .filter_map(ProtocolVersion::parse)
        .collect();
    ours.sort();
    ours.last().map(|v| v.as_str().to_owned())
}

/// Sends `notifications/cancelled` when a call is abandoned (dropped or timed out).
struct CallGuard<'a> {
    client: &'a Client,
    id: RequestId,
    modern: bool,
    version: Option<String>,
    done: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.client.forget(&self.id);
        let params = CancelledParams {
            request_id: self.id.clone(),
            reason: Some("the client stopped waiting".into()),
            meta: None,
        };
        let Ok(bytes) = encode_notification(methods::CANCELLED, Some(&params)) else {
            return;
        };
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Notification,
            method: Some(methods::CANCELLED.to_owned()),
            protocol_version: self.version.clone(),
            modern: self.modern,
            mirrors: Vec::new(),
        };
        let transport = self.client.inner.transport.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = transport.send(message).await;
            });
        }
    }
}

// ---- listen streams ------------------------------------------------------------------------

/// An open `subscriptions/listen` stream; dropping it ends the subscription.
#[derive(Debug)]
pub struct Listen {
    honoured: SubscriptionFilter,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Listen {
    /// The notifications the server agreed to send (its acknowledgement).
    pub fn honoured(&self) -> &SubscriptionFilter {
        &self.honoured
    }

    /// Ends the subscription (the client closes the stream, which cancels it).
    pub fn close(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

// ---- incoming messages ---------------------------------------------------------------------------

async fn read_loop(
    inner: std::sync::Weak<Inner>,
    transport: Arc<dyn Transport>,
    dropped: tokio_util::sync::CancellationToken,
) {
    loop {
        let incoming = tokio::select! {
            i = transport.recv() => i,
            () = dropped.cancelled() => return,
        };
        let Some(incoming) = incoming else { break };
        let Some(inner) = inner.upgrade() else { return };
        match incoming {
            Incoming::Message(Message::Response(r)) => deliver(&inner, r),
            Incoming::Failed { id, error } => {
                if let Some(w) = lock(&inner.waiting).remove(&id) {
                    let _ = w.answer.send(Err(Failure::Transport(error)));
                }
            }
            Incoming::Message(Message::Notification(n)) => on_notification(&inner, n),
            Incoming::Message(Message::Request(r)) => serve_request(&inner, r),
        }
    }
    if let Some(inner) = inner.upgrade() {
        fail_all(&inner);
    }
}

fn fail_all(inner: &Inner) {
    let waiting: Vec<Waiting> = lock(&inner.waiting).drain().map(|(_, w)| w).collect();
    for w in waiting {
        let _ = w.answer.send(Err(Failure::Closed));
    }
    for (_, h) in lock(&inner.serving).drain() {
        h.abort();
    }
}

fn deliver(inner: &Inner, r: Response) {
    let Some(id) = r.id else {
        tracing::warn!(
            "the server sent an error without an id: {:?}",
            r.outcome.err()
        );
        return;
    };
    let Some(w) = lock(&inner.waiting).remove(&id) else {
        tracing::debug!(%id, "a response to no waiting call (late or duplicate); ignored");
        return;
    };
    let _ = w.answer.send(r.outcome.map_err(Failure::Remote));
}

fn on_notification(inner: &Arc<Inner>, n: crate::protocol::Notification) {
    let decoded = ServerNotification::decode(n);
    match &decoded {
        ServerNotification::Progress(p) => {
            let target = lock(&inner.progress).get(&p.progress_token).cloned();
            if let Some((f, alive)) = target {
                alive.notify_one();
                f(p);
            }
            // Progress restarts the wait of the call it belongs to.
            if let Some(w) = lock(&inner.waiting).get(&p.progress_token) {
                w.alive.notify_one();
            }
        }
        ServerNotification::Cancelled(c) => {
            if let Some(h) = lock(&inner.serving).remove(&c.request_id) {
                h.abort();
            }
        }
        ServerNotification::SubscriptionsAcknowledged(a) => {
            let id = a
                .meta
                .as_ref()
                .and_then(|m| m.get_as::<RequestId>(meta_keys::SUBSCRIPTION_ID))
                .and_then(Result::ok);
            if let Some(id) = id
                && let Some(tx) = lock(&inner.listen_acks).remove(&id)
            {
                let _ = tx.send(a.notifications.clone());
            }
        }
        _ => {}
    }
    if let Some(f) = &inner.config.notifications {
        f(decoded);
    }
}

/// Answers a legacy server's request (ping, sampling, elicitation, roots).
fn serve_request(inner: &Arc<Inner>, r: Request) {
    let inner2 = inner.clone();
    let id = r.id.clone();
    let task = tokio::spawn(async move {
        let outcome = answer_request(&inner2.config, &r).await;
        lock(&inner2.serving).remove(&r.id);
        let bytes = match outcome {
            Ok(v) => match encode_response(&r.id, &v) {
                Ok(b) => b,
                Err(e) => encode_error(
                    Some(&r.id),
                    &ErrorObject::internal(format!("the answer could not be encoded: {e}")),
                ),
            },
            Err(e) => encode_error(Some(&r.id), &e),
        };
        let state = read(&inner2.state).clone();
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Response,
            method: None,
            protocol_version: state.map(|s| s.version),
            modern: false,
            mirrors: Vec::new(),
        };
        if let Err(e) = inner2.transport.send(message).await {
            tracing::warn!(
                "the answer to the server's {} could not be sent: {e}",
                r.method
            );
        }
    });
    lock(&inner.serving).insert(id, task.abort_handle());
}

async fn answer_request(config: &ClientBuilder, r: &Request) -> Result<Value, ErrorObject> {
    fn params<T: DeserializeOwned>(r: &Request) -> Result<T, ErrorObject> {
        let raw = r
            .params
            .as_ref()
            .ok_or_else(|| ErrorObject::invalid_params("Invalid params: missing params"))?;
        raw.parse()
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
    }
    let request = match r.method.as_str() {
        methods::PING => return Ok(json!({})),
        methods::SAMPLING_CREATE_MESSAGE => InputRequest::CreateMessage(params(r)?),
        methods::ELICITATION_CREATE => InputRequest::Elicit(params(r)?),
        methods::ROOTS_LIST => InputRequest::ListRoots,
        other => return Err(ErrorObject::method_not_found(other)),
    };
    answer_input(config, request).await
}

/// Runs the handler for one question of the server (either era).
async fn answer_input(config: &ClientBuilder, request: InputRequest) -> Result<Value, ErrorObject> {
    fn encode<T: Serialize>(v: T) -> Result<Value, ErrorObject> {
        serde_json::to_value(v).map_err(|e| ErrorObject::internal(e.to_string()))
    }
    match request {
        InputRequest::CreateMessage(p) => match &config.sampling {
            Some(f) => encode(f(p).await?),
            None => Err(ErrorObject::method_not_found(
                methods::SAMPLING_CREATE_MESSAGE,
            )),
        },
        InputRequest::Elicit(p) => match (&config.elicitation, &p) {
            (None, _) => Err(ErrorObject::method_not_found(methods::ELICITATION_CREATE)),
            (Some(_), ElicitParams::Url(_)) if !config.elicitation_url => {
                Err(ErrorObject::invalid_params(
                    "Invalid params: this client does not support URL elicitation",
                ))
            }
            (Some(f), _) => encode(f(p).await?),
        },
        InputRequest::ListRoots => match &config.roots {
            Some(f) => encode(f().await?),
            None => Err(ErrorObject::method_not_found(methods::ROOTS_LIST)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_newest_supported_version() {
        let e = ErrorObject::new(code::UNSUPPORTED_PROTOCOL_VERSION, "no").with_data(
            json!({"supported": ["2025-06-18", "2026-07-28", "2099-01-01"], "requested": "x"}),
        );
        assert_eq!(pick_version(&e).as_deref(), Some("2026-07-28"));
        let e = ErrorObject::new(code::UNSUPPORTED_PROTOCOL_VERSION, "no")
            .with_data(json!({"supported": ["2099-01-01"]}));
        assert_eq!(pick_version(&e), None);
        assert!(is_modern_error(&ErrorObject::new(
            code::HEADER_MISMATCH,
            "x"
        )));
        assert!(!is_modern_error(&ErrorObject::invalid_params("x")));
    }
}
