//! The handler context: what a tool, resource or prompt handler knows about the request it
//! serves, and how it talks back (progress, logs, questions to the client).
//!
//! One [`RequestContext`] exists per request. The same handler code works in both eras:
//! in a legacy session a question to the client ([`RequestContext::elicit`] and friends)
//! is a JSON-RPC request on the request's stream; in the modern era it becomes a multi
//! round-trip request (the handler returns, the client retries with the answer).
//!
//! Not here: the request's shared state itself (`request.rs`), and the session's bookkeeping
//! of questions in flight (`session.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::elicit::Elicited;
use super::request::{RequestShared, Scope};
use crate::error::{Error, Unsupported};
use crate::protocol::encode_notification;
use crate::protocol::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitFormParams, ElicitParams,
    ElicitResult, Implementation, InputRequest, InputRequiredResult, ListRootsResult, LoggingLevel,
    LoggingMessageParams, Meta, ProgressParams, ProgressToken, ProtocolVersion, RequestId, methods,
};
use crate::server::Server;
use crate::server::caller::Caller;
use crate::server::handler_error::HandlerError;
use crate::server::mrtr::NextAnswer;
use crate::server::session_ref::SessionRef;
use crate::sync::lock;

/// The context of one request, given to every handler.
///
/// Cheap to clone; clones refer to the same request.
///
/// # Asking the client, in each era
///
/// [`elicit`](Self::elicit), [`create_message`](Self::create_message) and
/// [`list_roots`](Self::list_roots) look the same in both eras but run differently:
/// - in a legacy (2025) session the question is a request on the stream and the call
///   waits for its answer: the handler runs once;
/// - in 2026-07-28 (multi round-trip) a question without an answer yet returns
///   an error that [`is_input_required`](Error::is_input_required) at once, the request answers with the question, and the
///   client sends the request again with the answer: **the handler runs again from the
///   start on every round**, and this time the same question returns the answer. Work
///   done before a question (writes, payments, messages) is therefore done once per round:
///   put it after the questions, or make it idempotent. (A task's rounds are runs of the
///   handler in the same way.)
///
/// A question left without an answer decides the round whatever the handler returns:
/// passing the error on with `?`, wrapping it in another error type (anyhow, your own), or
/// catching it and going on all answer with the question; an answer of the wrong shape is
/// the client's error (-32602) in the same way.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) shared: Arc<RequestShared>,
    /// How long questions to the client wait, when the handler chose (see
    /// [`RequestContext::with_timeout`]).
    timeout: Option<Duration>,
    /// The key of this context's questions in a 2026-07-28 `InputRequiredResult`, when the
    /// handler named it (see [`RequestContext::with_input_key`]).
    input_key: Option<Arc<str>>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.shared.id)
            .field("method", &self.shared.method)
            .field("protocol_version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    pub(crate) fn new(shared: Arc<RequestShared>) -> Self {
        RequestContext {
            shared,
            timeout: None,
            input_key: None,
        }
    }

    /// This context with another timeout for its questions to the client (sampling,
    /// elicitation, roots, [`send_request`](Self::send_request)); the default is
    /// [`ServerOptions::client_request_timeout`](crate::server::ServerOptions::client_request_timeout).
    /// On expiry a legacy session sends `notifications/cancelled` for the question and the
    /// call fails with an error that [`is_timeout`](Error::is_timeout). (In the 2026-07-28 era the client answers by
    /// retrying, so there is nothing to wait for.)
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// A copy of this context that names its questions to the client: in the 2026-07-28 era the
    /// question goes into `inputRequests` under `key`, and the client's answer comes back
    /// under it. Unnamed questions are numbered (`"1"`, `"2"`, … in the order the handler
    /// asks them), which is enough unless the client or the protocol expects a particular
    /// key. Give each question of a request its own key, and none that is a plain number.
    /// Legacy sessions ask by JSON-RPC requests, which have no key: there it changes nothing.
    ///
    /// ```no_run
    /// # use vellum::prelude::*;
    /// # use vellum::protocol::ElicitParams;
    /// # async fn h(ctx: RequestContext, form: ElicitParams) -> Result<(), vellum::Error> {
    /// let answer = ctx.with_input_key("user_name").elicit(form).await?;
    /// # let _ = answer; Ok(()) }
    /// ```
    ///
    /// Questions asked concurrently (`tokio::join!` of several copies) go to the client in one
    /// round.
    #[must_use]
    pub fn with_input_key(&self, key: impl Into<String>) -> Self {
        RequestContext {
            input_key: Some(Arc::from(key.into())),
            ..self.clone()
        }
    }

    /// The timeout of this context's questions to the client.
    pub fn timeout(&self) -> Duration {
        self.timeout
            .unwrap_or(self.shared.server.inner.options.client_request_timeout)
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.shared.id
    }

    /// The method being served.
    pub fn method(&self) -> &str {
        &self.shared.method
    }

    /// The server serving it.
    pub fn server(&self) -> &Server {
        &self.shared.server
    }

    /// The protocol version of this request (the session's, or the request's own).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.shared.version()
    }

    /// The client's capabilities as they apply to this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.shared.client_capabilities()
    }

    /// The client's self-reported identity, if known. Never base security decisions on it.
    pub fn client_info(&self) -> Option<&Implementation> {
        match &self.shared.scope {
            Scope::Legacy(s) => s.client_info(),
            Scope::Modern(m) => m.client.client_info.as_ref(),
        }
    }

    /// The legacy session id (`Mcp-Session-Id`), if this request belongs to one.
    pub fn session_id(&self) -> Option<&str> {
        match &self.shared.scope {
            Scope::Legacy(s) => s.id(),
            Scope::Modern(_) => None,
        }
    }

    /// The legacy session this request belongs to, as a handle an
    /// [`Upstream`](crate::server::Upstream) keeps; `None` for a 2026-07-28 request and for a
    /// stateless server's throwaway sessions.
    pub fn session(&self) -> Option<SessionRef> {
        match &self.shared.scope {
            Scope::Legacy(s) if !s.is_temporary() => Some(SessionRef::of(s)),
            _ => None,
        }
    }

    /// The request's `_meta`, if it carried one.
    pub fn meta(&self) -> Option<&Meta> {
        self.shared.meta.get()
    }

    /// The request's progress token, if the client asked for progress.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.meta().and_then(Meta::progress_token)
    }

    /// The HTTP request this MCP request arrived in (method, URI, headers, extensions), when
    /// it came over HTTP. Auth layers put the verified principal into its extensions.
    pub fn http(&self) -> Option<&http::request::Parts> {
        self.shared.http.as_ref()
    }

    /// The authenticated caller, when an authentication layer in front of the transport
    /// identified one (see [`Caller`]).
    pub fn caller(&self) -> Option<&Caller> {
        self.shared.caller()
    }

    /// Refuses the request unless its caller holds `scope`: for checks that depend on the
    /// arguments (a tool that writes only some calendars needs `calendar:write` only for
    /// those). `?` it in a handler; the error is a JSON-RPC invalid-request error whose
    /// `data` is `{"error": "insufficient_scope", "scope": "<scope>"}`, so a client can step
    /// up and call again. Without a caller every scope is missing.
    ///
    /// Scopes known before the handler runs are better declared
    /// ([`Tool::requires_scope`](crate::protocol::Tool::requires_scope)): those are refused
    /// with HTTP 403 and a `WWW-Authenticate` step-up challenge, which OAuth clients follow
    /// on their own.
    pub fn require_scope(&self, scope: &str) -> Result<(), HandlerError> {
        crate::server::scopes::check(self.caller(), vec![scope.to_owned()])
            .map_err(|refusal| HandlerError::Protocol(refusal.to_error()))
    }

    /// A typed value from the HTTP request's extensions (e.g. an authenticated principal).
    pub fn extension<T: Clone + Send + Sync + 'static>(&self) -> Option<&T> {
        self.http().and_then(|p| p.extensions.get::<T>())
    }

    /// True once the client cancelled the request. The handler's future is dropped soon
    /// after; long synchronous work can poll this to stop early.
    pub fn is_cancelled(&self) -> bool {
        self.shared.is_cancelled()
    }

    /// Sends a notification related to this request, on its stream.
    pub async fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), Error> {
        let msg = encode_notification(method, Some(params))?;
        self.shared
            .send(msg)
            .await
            .map_err(|_| Error::request_finished())
    }

    /// Reports progress, if the client asked for it (sent a progress token); otherwise does
    /// nothing. `progress` must increase with every call.
    pub async fn notify_progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Result<(), Error> {
        let Some(token) = self.progress_token() else {
            return Ok(());
        };
        let last = f64::from_bits(self.shared.last_progress.load(Ordering::Acquire));
        if !last.is_nan() && progress <= last {
            return Err(Error::unsupported(Unsupported::ProgressNotIncreasing {
                progress,
                last,
            }));
        }
        self.shared
            .last_progress
            .store(progress.to_bits(), Ordering::Release);
        let params = ProgressParams {
            progress_token: token,
            progress,
            total,
            message,
            meta: None,
        };
        self.notify(methods::PROGRESS, &params).await
    }

    /// The least severe level the client wants to see for this request, if any: the
    /// session's `logging/setLevel` (legacy) or the request's `_meta` level (modern).
    pub fn log_level(&self) -> Option<LoggingLevel> {
        match &self.shared.scope {
            Scope::Legacy(s) => s.log_level(),
            Scope::Modern(m) => m.log_level,
        }
    }

    /// Sends a log message to the client, if it asked for this level or a lower one.
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: impl Into<Value>,
    ) -> Result<(), Error> {
        match self.log_level() {
            Some(min) if level >= min => {}
            _ => return Ok(()),
        }
        let params = LoggingMessageParams {
            level,
            logger: logger.map(str::to_owned),
            data: data.into(),
            meta: None,
        };
        self.notify(methods::MESSAGE, &params).await
    }

    /// Ends this request's SSE stream now, asking the client to reconnect (with
    /// `Last-Event-ID`) after `retry`; the handler keeps running and its later messages are
    /// delivered on the resumed stream (SSE polling, SEP-1699). Needs an event store; without
    /// one, or on a JSON response, it does nothing.
    pub fn close_sse_stream(&self, retry: Duration) {
        let ms = retry.as_millis().clamp(1, u128::from(u32::MAX)) as u64;
        self.shared.close_stream.store(ms, Ordering::Release);
        self.shared.outbox.wake_reader();
    }

    /// The error for a capability the client did not declare: in the 2026-07-28 era the
    /// request fails with -32021 (naming the capability); in a legacy session the handler
    /// gets an error naming it ([`Error::missing_capability_name`]) (a tool reports it as a tool error).
    fn missing(&self, capability: &'static str) -> Error {
        if !matches!(self.shared.scope, Scope::Modern(_)) {
            return Error::missing_capability(capability);
        }
        let required = match capability {
            "sampling.tools" => serde_json::json!({ "sampling": { "tools": {} } }),
            "elicitation.form" => serde_json::json!({ "elicitation": { "form": {} } }),
            "elicitation.url" => serde_json::json!({ "elicitation": { "url": {} } }),
            other => serde_json::json!({ other: {} }),
        };
        Error::rpc(
            crate::protocol::ErrorObject::new(
                crate::protocol::code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: {capability}"),
            )
            .with_data(serde_json::json!({ "requiredCapabilities": required })),
        )
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn create_message(
        &self,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, Error> {
        if !self.client_capabilities().supports_sampling() {
            return Err(self.missing("sampling"));
        }
        if params.tools.is_some() && !self.client_capabilities().supports_sampling_tools() {
            return Err(self.missing("sampling.tools"));
        }
        self.ask(
            methods::SAMPLING_CREATE_MESSAGE,
            InputRequest::CreateMessage(params),
        )
        .await
    }

    /// Asks the user for input (`elicitation/create`), in form or URL mode.
    ///
    /// A form's schema must be the flat object of primitive properties the spec allows
    /// (checked before asking). When the user accepts, missing properties get their schema
    /// `default`, and the content is validated against the schema: an answer that does not
    /// match is an error that [`is_protocol`](Error::is_protocol), so the handler never sees it.
    pub async fn elicit(&self, params: ElicitParams) -> Result<ElicitResult, Error> {
        let caps = self.client_capabilities();
        match &params {
            ElicitParams::Form(_) if !caps.supports_form_elicitation() => {
                return Err(self.missing("elicitation.form"));
            }
            ElicitParams::Url(_) if !caps.supports_url_elicitation() => {
                return Err(self.missing("elicitation.url"));
            }
            _ => {}
        }
        let schema = match &params {
            ElicitParams::Form(f) => Some(super::elicit::check_schema(&f.requested_schema)?),
            ElicitParams::Url(_) => None,
        };
        let mut answer: ElicitResult = self
            .ask(methods::ELICITATION_CREATE, InputRequest::Elicit(params))
            .await?;
        if let Some(schema) = schema {
            super::elicit::accept_content(&schema, &mut answer)?;
        }
        Ok(answer)
    }

    /// Asks the user to fill in a form made from `T`, and returns their answer as a `T`.
    ///
    /// `T`'s schema (its `JsonSchema` derive: doc comments become descriptions) must fit
    /// what a form may ask: a struct of strings (with `email`, `uri`, `date`, `date-time`
    /// formats), numbers, integers, booleans, unit enums (variant docs become titles) and
    /// `Vec`s of unit enums (multi-select); `Option` fields are optional properties. Another
    /// `T` (a nested struct, a free list, a recursive type) is refused with
    /// an error ([`Error::is_unsupported`]) naming the property, before anything is asked. The schema is
    /// made once per type.
    ///
    /// Asked like [`elicit`](Self::elicit), in both eras (so in 2026-07-28 the handler
    /// runs again for the answer, see above).
    ///
    /// ```no_run
    /// use vellum::prelude::*;
    /// use vellum::server::Elicited;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Booking {
    ///     /// Number of guests.
    ///     guests: u32,
    ///     /// Anything we should know.
    ///     note: Option<String>,
    /// }
    ///
    /// async fn book(ctx: &RequestContext) -> Result<String, vellum::Error> {
    ///     Ok(match ctx.elicit_form::<Booking>("Book a table").await? {
    ///         Elicited::Accept(b) => format!("{} guests", b.guests),
    ///         Elicited::Decline | Elicited::Cancel => "not booked".to_owned(),
    ///     })
    /// }
    /// ```
    pub async fn elicit_form<T>(&self, message: impl Into<String>) -> Result<Elicited<T>, Error>
    where
        T: schemars::JsonSchema + DeserializeOwned + 'static,
    {
        let schema = super::elicit::form_schema_of::<T>()?;
        let params = ElicitFormParams::new(message, (*schema).clone());
        let answer = self.elicit(ElicitParams::Form(params)).await?;
        super::elicit::typed_answer(answer)
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<ListRootsResult, Error> {
        if !self.client_capabilities().supports_roots() {
            return Err(self.missing("roots"));
        }
        self.ask(methods::ROOTS_LIST, InputRequest::ListRoots).await
    }

    /// One question to the client, in whichever way this era asks.
    async fn ask<R: DeserializeOwned>(
        &self,
        method: &str,
        request: InputRequest,
    ) -> Result<R, Error> {
        match &self.shared.scope {
            Scope::Legacy(session) => {
                let params = match &request {
                    InputRequest::Elicit(p) => serde_json::to_value(p)?,
                    InputRequest::CreateMessage(p) => serde_json::to_value(p)?,
                    InputRequest::ListRoots => Value::Object(Default::default()),
                };
                let raw = session
                    .request_client(method, &params, Some(&self.shared.outbox), self.timeout())
                    .await?;
                Ok(raw.parse()?)
            }
            Scope::Modern(_) => {
                let next = lock(&self.shared.attempt).next(self.input_key.as_deref(), &request);
                match next {
                    // An answer of the wrong shape is the client's protocol error (-32602),
                    // not a failure of the tool.
                    // Recorded as well, so that it decides the answer whatever the handler
                    // makes of this error.
                    NextAnswer::Answered(v) => serde_json::from_value(v).map_err(|e| {
                        let refused = crate::protocol::ErrorObject::invalid_params(format!(
                            "inputResponses: not an answer to {method}: {e}"
                        ));
                        self.shared.refuse_answer(refused.clone());
                        Error::rpc(refused)
                    }),
                    // Pending now: when the handler ends, the request's answer asks every
                    // pending question at once (`RequestShared::input_required`). This
                    // error carries the one question, for a handler that looks at it.
                    NextAnswer::Ask(key) => {
                        let mut requests = std::collections::BTreeMap::new();
                        requests.insert(key, request);
                        Err(Error::input_required(InputRequiredResult {
                            input_requests: Some(requests),
                            request_state: None,
                            meta: None,
                        }))
                    }
                }
            }
        }
    }

    /// The point where a tool call becomes a task: for a tool registered
    /// [`with_input_before_task`](crate::protocol::Tool::with_input_before_task) and a
    /// 2026-07-28 client that declared the tasks extension, the handler gathers input by
    /// multi round-trip first (its questions end each round as usual), then awaits this: the
    /// request answers with the new task (`resultType: "task"`) and the handler goes on as
    /// that task's first round, from right here, with the answers it got so far (nothing
    /// runs it again). From then on its messages (progress, logs) have no stream and are
    /// dropped, and a question it asks turns the task to `input_required`. Everywhere else (a
    /// call that already is a task, a client without the extension, a legacy session) it
    /// returns at once and the handler just goes on.
    ///
    /// ```no_run
    /// # use vellum::prelude::*;
    /// # async fn handler(ctx: RequestContext, form: vellum::protocol::ElicitParams) -> Result<CallToolResult, HandlerError> {
    /// let name = ctx.with_input_key("user_name").elicit(form).await?;
    /// ctx.become_task().await; // From here on, a task the client polls.
    /// # let _ = name; Ok(CallToolResult::text("done")) }
    /// ```
    pub async fn become_task(&self) {
        if !self.shared.begin_becoming_task() {
            return;
        }
        // Suspends once: whoever serves the call sees it is becoming a task, answers with
        // the task and moves this very handler into it, where it resumes.
        let mut suspended = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut suspended, true) {
                std::task::Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await;
    }

    /// Sends an arbitrary request to the client on this request's stream and waits for the
    /// answer (legacy sessions only).
    pub async fn send_request<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<R, Error> {
        match &self.shared.scope {
            Scope::Legacy(session) => {
                let raw = session
                    .request_client(method, params, Some(&self.shared.outbox), timeout)
                    .await?;
                Ok(raw.parse()?)
            }
            Scope::Modern(_) => Err(Error::unsupported(Unsupported::ModernServerRequest)),
        }
    }
}
