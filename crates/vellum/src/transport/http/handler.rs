//! [`StreamableHttpHandler`]: the Streamable HTTP endpoint as a tower `Service`.
//!
//! One request flows one way: security checks → method → body → era routing (session,
//! `initialize`, modern `_meta`) → the server's dispatch → one response writer (JSON or
//! SSE). Rejections are values ([`Rejection`]) turned into responses in one place.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::BodyExt;
use tokio_util::sync::CancellationToken;

use crate::protocol::{
    Message, Payload, ProtocolVersion, Request as RpcRequest, decode, encode_error, methods,
};
use crate::server::dispatch::{handle_notification, handle_response};
use crate::server::exchange::Exchange;
use crate::server::session::Session;
use crate::server::{RequestShared, Scope, Server};
use crate::store::{EventId, StreamId};

use super::body::ResponseBody;
use super::cluster::Cluster;
use super::cors;
use super::headers::{Accepts, is_json_content_type, names, text};
use super::modern;
use super::options::StreamableHttpOptions;
use super::rejection::{Rejection, modern_error_status};
use super::security::{ConnectionInfo, RequestChecks};
use super::sessions::{
    ActivityGuard, Expiry, HttpSession, SessionTable, StreamBusy, new_session_id,
};

/// How long a stored session lives without activity when `session_timeout` is unset.
const DEFAULT_STORED_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// How long a resuming GET waits for the POST response still writing its stream to notice
/// that its connection is gone, before a 409.
const RESUME_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);
use super::sse::{self, SseStream, Stops, push_event};
use super::streams::{Live, PostEvent, PostEvents, ResumeStream, StoredStream};
use super::trace::{RequestInfo, RequestTrace, log_event};
use crate::auth::Principal;
use crate::transport::redact_session_id;

type Factory = dyn Fn(&http::request::Parts) -> Option<Server> + Send + Sync;

/// The Streamable HTTP handler, built like the Go SDK's
/// `NewStreamableHTTPHandler(getServer, opts)`: a factory from the HTTP request to the
/// [`Server`] that serves it, and [`StreamableHttpOptions`].
///
/// The factory is called for every new session (stateful mode) and for every request
/// otherwise; returning `None` answers 400. The handler answers on whatever path it is
/// mounted at. It is a `tower::Service`, so it serves from hyper, axum (`Router::route_service`)
/// or [`serve`](super::serve).
#[derive(Clone)]
pub struct StreamableHttpHandler {
    inner: Arc<Inner>,
}

struct Inner {
    factory: Box<Factory>,
    options: StreamableHttpOptions,
    checks: RequestChecks,
    sessions: Arc<SessionTable>,
    shutdown: CancellationToken,
    /// Whether the bus listener runs.
    listening: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for StreamableHttpHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpHandler")
            .field("options", &self.inner.options)
            .field("sessions", &self.inner.sessions.len())
            .finish()
    }
}

/// What a POST turned out to be, after routing.
enum Route {
    /// A legacy request for an existing or new session (or a stateless throwaway session).
    Legacy {
        session: Arc<Session>,
        http: Option<Arc<HttpSession>>,
        activity: Option<ActivityGuard>,
        /// A new session: insert on success and send its id.
        new: bool,
    },
    /// A modern request: its own `_meta` is its context.
    Modern(Box<crate::server::ModernMeta>),
}

impl StreamableHttpHandler {
    /// A handler serving the server `factory` returns for each request (or session).
    pub fn new<F>(factory: F, options: StreamableHttpOptions) -> Self
    where
        F: Fn(&http::request::Parts) -> Option<Server> + Send + Sync + 'static,
    {
        let checks = RequestChecks::of(&options);
        let cluster = Arc::new(Cluster {
            events: options.event_store.clone(),
            sessions: options.session_store.clone(),
            bus: options.bus.clone(),
            ttl: options
                .session_timeout
                .unwrap_or(DEFAULT_STORED_SESSION_TTL),
        });
        StreamableHttpHandler {
            inner: Arc::new(Inner {
                factory: Box::new(factory),
                options,
                checks,
                sessions: Arc::new(SessionTable::new(cluster)),
                shutdown: CancellationToken::new(),
                listening: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// A handler that serves the same server to everyone.
    pub fn for_server(server: Server, options: StreamableHttpOptions) -> Self {
        Self::new(move |_| Some(server.clone()), options)
    }

    /// The options.
    pub fn options(&self) -> &StreamableHttpOptions {
        &self.inner.options
    }

    /// How many sessions are live.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Begins a graceful shutdown: streams that answer no running request (GET streams,
    /// `subscriptions/listen`) end with a `retry` hint; requests in flight run to their end.
    /// Call [`close_sessions`](Self::close_sessions) when the grace period is over (the
    /// serve loops do).
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Ends every session here (with a session store they live on in the store; without
    /// one they end): whatever still runs is cancelled.
    pub fn close_sessions(&self) {
        self.inner.sessions.close_all();
    }

    /// Starts the task that receives the other instances' messages (once, with a bus).
    fn listen_to_bus(&self) {
        let Some(bus) = &self.inner.options.bus else {
            return;
        };
        if self
            .inner
            .listening
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        let mut rx = bus.subscribe();
        let table = Arc::downgrade(&self.inner.sessions);
        tokio::spawn(async move {
            loop {
                let message = match rx.recv().await {
                    Ok(m) => m,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(table) = table.upgrade() else { return };
                table.on_bus(message);
            }
        });
    }

    /// Serves one request. The connection it came on is read from its extensions
    /// ([`ConnectionInfo`]; assumed loopback when absent).
    pub async fn handle<B>(&self, req: Request<B>) -> Response<ResponseBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let info = req.extensions().get::<ConnectionInfo>().copied();
        self.handle_on(req, info).await
    }

    /// Serves one request that arrived on a known connection (the accept loops call this,
    /// saving an extensions map per request).
    pub(crate) async fn handle_on<B>(
        &self,
        req: Request<B>,
        connection: Option<ConnectionInfo>,
    ) -> Response<ResponseBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.listen_to_bus();
        let inner = &self.inner;
        let (parts, body) = req.into_parts();
        let method = parts.method.clone();
        let cors_origin = inner.checks.cors_origin(&parts.headers);
        let result = async {
            inner.checks.check(
                &parts.method,
                &parts.uri,
                &parts.headers,
                connection.as_ref(),
            )?;
            match parts.method {
                Method::POST => inner.post(parts, body).await,
                Method::GET => inner.get(parts).await,
                Method::DELETE => inner.delete(&parts).await,
                Method::OPTIONS if cors_origin.is_some() => Ok(cors::preflight(
                    &parts.headers,
                    cors_origin
                        .as_ref()
                        .unwrap_or(&HeaderValue::from_static("null")),
                )),
                _ => Err(Rejection::MethodNotAllowed {
                    allow: inner.allow(),
                }),
            }
        }
        .await;
        let mut resp = result.unwrap_or_else(|r| {
            log_event!(inner.options.logger.as_ref(), debug, method = %method, rejection = ?r, "request rejected");
            r.into_response()
        });
        if let Some(o) = &cors_origin {
            cors::decorate(resp.headers_mut(), o);
        }
        resp
    }
}

impl Inner {
    fn allow(&self) -> &'static str {
        if self.options.stateless {
            "POST"
        } else {
            "GET, POST, DELETE"
        }
    }

    fn store(&self) -> Option<&Arc<dyn crate::store::EventStore>> {
        self.options.event_store.as_ref()
    }

    fn stops(&self, session: Option<&HttpSession>) -> Stops {
        Stops {
            shutdown: self.shutdown.clone(),
            session: session.map(|s| s.closed.clone()),
        }
    }

    /// Finds the live session a request names: 404 when unknown or closed, 403 when it
    /// belongs to another principal.
    async fn session(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<Arc<HttpSession>>, Rejection> {
        let Some(id) = text(&parts.headers, &names::SESSION_ID) else {
            return Ok(None);
        };
        let s = match self.sessions.get(id) {
            Some(s) if !s.closed.is_cancelled() => s,
            Some(_) => return Err(Rejection::UnknownSession),
            None => self.restore(parts, id).await?,
        };
        if let Some(owner) = &s.owner {
            let caller = parts.extensions.get::<Principal>();
            if !caller.is_some_and(|p| p.issuer == owner.0 && p.subject == owner.1) {
                return Err(Rejection::WrongPrincipal);
            }
        }
        Ok(Some(s))
    }

    /// Serves a session this instance does not have: load it from the session store.
    async fn restore(
        &self,
        parts: &http::request::Parts,
        id: &str,
    ) -> Result<Arc<HttpSession>, Rejection> {
        let record = match self.sessions.cluster.load(id).await {
            Ok(Some(r)) => r,
            Ok(None) => return Err(Rejection::UnknownSession),
            Err(_) => return Err(Rejection::StoreUnavailable),
        };
        let server = (self.factory)(parts).ok_or(Rejection::NoServer)?;
        let id: Arc<str> = Arc::from(id);
        let core = Session::restore(server, id.clone(), &record);
        let http = self.sessions.make(id, core, record.owner.clone());
        self.sessions.start_sweeper(self.expiry());
        // Serving it here is activity: renew its time to live at once.
        self.sessions.cluster.touch(&http.id).await;
        Ok(self.sessions.insert(http))
    }

    fn expiry(&self) -> Expiry {
        Expiry {
            idle: self.options.session_timeout,
            handshake: self.options.initialize_timeout,
        }
    }

    // ---- POST ---------------------------------------------------------------------------

    async fn post<B>(
        &self,
        parts: http::request::Parts,
        body: B,
    ) -> Result<Response<ResponseBody>, Rejection>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if !is_json_content_type(&parts.headers) {
            return Err(Rejection::UnsupportedMediaType);
        }
        let accepts = Accepts::from_headers(&parts.headers);
        if !accepts.json && !accepts.sse {
            return Err(Rejection::NotAcceptable(
                "Not Acceptable: Accept must allow application/json or text/event-stream",
            ));
        }
        let bytes = read_body(body, self.options.max_body_bytes).await?;
        let payload = decode(&bytes).map_err(Rejection::Decode)?;
        let header_version = text(&parts.headers, &names::PROTOCOL_VERSION);

        // Era routing (the spec's dual-era order): a modern version header, then a session,
        // then `initialize`, then a modern `_meta`, else legacy (stateless) or 400.
        // (A request of a legacy session, or with a legacy version header, is legacy: only
        // a header-less request without a session may be a modern one in disguise.)
        let ambiguous = header_version.is_none() && !parts.headers.contains_key(names::SESSION_ID);
        if header_version.is_some_and(ProtocolVersion::looks_modern)
            || (ambiguous && modern::carries_modern_meta(&payload))
        {
            let meta = modern::validate(&parts.headers, &payload)?;
            return self
                .serve_payload(parts, payload, accepts, Route::Modern(Box::new(meta)))
                .await;
        }
        let version = match header_version {
            None => None,
            Some(v) => Some(
                ProtocolVersion::parse(v)
                    .ok_or_else(|| Rejection::UnsupportedLegacyVersion(v.to_owned()))?,
            ),
        };
        if let Payload::Batch(_) = &payload
            && !version
                .unwrap_or(ProtocolVersion::DEFAULT_LEGACY)
                .allows_batches()
        {
            return Err(Rejection::BadRequest {
                id: None,
                message: "Invalid request: batches are only allowed in protocol version 2025-03-26"
                    .into(),
            });
        }
        let route = if self.options.stateless {
            self.stateless_route(&parts, &payload, version)?
        } else if let Some(http) = self.session(&parts).await? {
            if let Some(max) = self.options.max_in_flight_per_session
                && has_request(&payload)
                && http.core.inflight_count() >= max
            {
                return Err(Rejection::TooManyRequests);
            }
            let activity = http.activity(&self.sessions);
            Route::Legacy {
                session: http.core.clone(),
                http: Some(http),
                activity: Some(activity),
                new: false,
            }
        } else if is_initialize(&payload) {
            self.new_session_route(&parts)?
        } else {
            return Err(Rejection::MissingSession);
        };
        self.serve_payload(parts, payload, accepts, route).await
    }

    fn stateless_route(
        &self,
        parts: &http::request::Parts,
        payload: &Payload,
        version: Option<ProtocolVersion>,
    ) -> Result<Route, Rejection> {
        let server = (self.factory)(parts).ok_or(Rejection::NoServer)?;
        let session = if is_initialize(payload) {
            // A stateless `initialize` still negotiates (no session id is sent back).
            Session::temporary_uninitialized(server)
        } else {
            Session::temporary(server, version.unwrap_or(ProtocolVersion::DEFAULT_LEGACY))
        };
        Ok(Route::Legacy {
            session,
            http: None,
            activity: None,
            new: false,
        })
    }

    fn new_session_route(&self, parts: &http::request::Parts) -> Result<Route, Rejection> {
        if let Some(max) = self.options.max_sessions
            && self.sessions.len() >= max
        {
            return Err(Rejection::TooManySessions);
        }
        let owner = parts
            .extensions
            .get::<Principal>()
            .map(|p| (p.issuer.clone(), p.subject.clone()));
        if let (Some(max), Some(o)) = (self.options.max_sessions_per_principal, &owner)
            && self.sessions.owned_by(o) >= max
        {
            return Err(Rejection::TooManySessions);
        }
        let server = (self.factory)(parts).ok_or(Rejection::NoServer)?;
        let id = new_session_id().map_err(|_| Rejection::TooManySessions)?;
        let core = Session::new(server, Some(id.clone()));
        let http = self.sessions.make(id, core.clone(), owner);
        let activity = http.activity(&self.sessions);
        self.sessions.start_sweeper(self.expiry());
        Ok(Route::Legacy {
            session: core,
            http: Some(http),
            activity: Some(activity),
            new: true,
        })
    }

    /// Serves the messages of a POST: answers, notifications, then requests.
    async fn serve_payload(
        &self,
        parts: http::request::Parts,
        payload: Payload,
        accepts: Accepts,
        route: Route,
    ) -> Result<Response<ResponseBody>, Rejection> {
        let messages = match payload {
            Payload::Single(m) => vec![m],
            Payload::Batch(v) => v,
        };
        let legacy_session = match &route {
            Route::Legacy { session, .. } => Some(session.clone()),
            Route::Modern(_) => None,
        };
        let mut requests = Vec::new();
        for m in messages {
            match m {
                Message::Request(r) => requests.push(r),
                Message::Notification(n) => handle_notification(legacy_session.as_ref(), &n),
                Message::Response(r) => {
                    if let Some(s) = &legacy_session {
                        handle_response(s, r);
                    }
                }
            }
        }
        if requests.is_empty() {
            return Ok(status_only(StatusCode::ACCEPTED));
        }
        if requests.len() > 1 && requests.iter().any(|r| r.method == methods::INITIALIZE) {
            return Err(Rejection::BadRequest {
                id: None,
                message: "Invalid request: initialize must not be part of a batch".into(),
            });
        }
        self.respond(parts, requests, accepts, route).await
    }

    /// Runs the requests and writes the response: JSON, a finished SSE body, or a live stream.
    async fn respond(
        &self,
        parts: http::request::Parts,
        requests: Vec<RpcRequest>,
        accepts: Accepts,
        route: Route,
    ) -> Result<Response<ResponseBody>, Rejection> {
        let batch = requests.len() > 1;
        let (server, scope, http, activity, new) = match route {
            Route::Legacy {
                session,
                http,
                activity,
                new,
            } => (
                session.server().clone(),
                ScopeOf::Legacy(session),
                http,
                activity,
                new,
            ),
            Route::Modern(meta) => {
                let server = (self.factory)(&parts).ok_or(Rejection::NoServer)?;
                (server, ScopeOf::Modern(meta), None, None, false)
            }
        };
        let modern = matches!(scope, ScopeOf::Modern(_));

        // `subscriptions/listen` is a stream by nature: never a JSON body.
        let listen = requests
            .iter()
            .any(|r| r.method == methods::SUBSCRIPTIONS_LISTEN);
        let logger = self.options.logger.as_ref();

        // Start every request.
        let mut exchanges = Vec::with_capacity(requests.len());
        let mut early = Vec::new();
        let n = requests.len();
        let mut parts_slot = Some(parts);
        for (i, r) in requests.into_iter().enumerate() {
            let http_parts = if i + 1 == n {
                parts_slot.take()
            } else {
                parts_slot.clone()
            };
            let shared = Arc::new(RequestShared::new(
                r.id.clone(),
                r.method,
                scope.make(),
                server.clone(),
                http_parts,
            ));
            let guard = match &shared.scope {
                Scope::Legacy(s) => match s.register_inflight(&shared) {
                    Ok(g) => Some(g),
                    Err(()) => {
                        early.push(encode_error(
                            Some(&r.id),
                            &crate::protocol::ErrorObject::invalid_request(
                                "Invalid request: a request with this id is already in progress",
                            ),
                        ));
                        continue;
                    }
                },
                Scope::Modern(_) => None,
            };
            let trace = logger.map(|d| {
                let target = request_target(&shared.method, r.params.as_ref());
                RequestTrace::start(
                    d,
                    RequestInfo {
                        method: &shared.method,
                        id: &shared.id,
                        target: target.as_deref(),
                        session: http.as_ref().map(|h| &*h.id),
                        version: shared.version().as_str(),
                    },
                )
            });
            exchanges.push((Exchange::new(shared, r.params, guard), trace));
        }

        let mut events = PostEvents::new(exchanges, activity);

        // Poll once: most requests finish at once, and then the whole answer is written in
        // one go (nothing to resume: no event ids, nothing stored). In JSON mode, wait for
        // the result unless a notification (or a handler closing its stream) comes first.
        // JSON when the client takes nothing else, or when asked for and the request is not a
        // stream by nature.
        let json_mode = !accepts.sse || (self.options.json_response && accepts.json && !listen);
        let mut buffered: Vec<PostEvent> = Vec::new();
        let mut upgraded = false;
        let complete = poll_fn(|cx| {
            loop {
                match events.poll_post_event(cx) {
                    Poll::Ready(Some(ev)) => {
                        let notification = ev.fin.is_none();
                        if notification && json_mode && !accepts.sse {
                            continue; // The client cannot take a stream: drop it.
                        }
                        buffered.push(ev);
                        if notification && json_mode {
                            upgraded = true;
                            return Poll::Ready(false);
                        }
                    }
                    Poll::Ready(None) => return Poll::Ready(true),
                    // A handler that ends its stream early (SSE polling) needs a stream.
                    Poll::Pending if json_mode && accepts.sse && events.close_requested_any() => {
                        upgraded = true;
                        return Poll::Ready(false);
                    }
                    // JSON bodies, and `initialize` (whose session exists only once it
                    // succeeded), wait for the result.
                    Poll::Pending if json_mode || new => return Poll::Pending,
                    Poll::Pending => return Poll::Ready(false),
                }
            }
        })
        .await;

        // An answer that keeps streaming in a legacy session is resumable: its events get
        // ids (from the event store when there is one, else from this process, good for a
        // resume on this instance after the server itself closed the stream), and 2025-11-25
        // streams open with a priming event.
        let mut prefix = VecDeque::new();
        if !complete && let Some(h) = &http {
            let ids: Vec<_> = events.request_ids();
            let stream = match self.store() {
                Some(store) => store
                    .open_stream(&h.id, &ids)
                    .await
                    .ok()
                    .map(|s| (s, Some(store.clone()))),
                None => Some((h.live.next_local_stream(), None)),
            };
            if let Some((stream, store)) = stream {
                h.live.open(stream);
                if h.core.protocol_version() >= ProtocolVersion::V2025_11_25 {
                    prefix.push_back(sse::priming(
                        EventId::start_of(stream),
                        self.options.sse_retry,
                    ));
                }
                events.make_resumable(
                    StoredStream {
                        store,
                        session: h.id.clone(),
                        stream,
                        live: h.live.clone(),
                    },
                    std::mem::take(&mut buffered),
                );
            }
        }

        // A new session exists once `initialize` succeeded.
        let mut session_header = None;
        if new && let Some(h) = &http {
            let ok = complete && buffered.iter().any(|e| e.fin == Some(None));
            if ok && let Some(mut record) = h.core.record() {
                // Shared sessions exist in the store before their id is handed out.
                record.owner = h.owner.clone();
                if self.sessions.cluster.create(&h.id, &record).await.is_err() {
                    h.core.close();
                    drop(self.sessions.cluster.session_ended(&h.id));
                    return Err(Rejection::StoreUnavailable);
                }
            }
            if ok {
                // A fresh random id cannot be in the table yet.
                self.sessions.insert(h.clone());
                session_header = HeaderValue::from_str(&h.id).ok();
                log_event!(logger, info, "mcp.session.id" = %redact_session_id(&h.id), "session created");
            } else {
                // `initialize` failed: forget whatever its stream stored.
                h.core.close();
                drop(self.sessions.cluster.session_ended(&h.id));
            }
        }

        let mut resp = if complete && (json_mode && !upgraded) {
            json_response(&buffered, &early, batch, modern)
        } else if complete
            && modern
            && !batch
            && let Some(status) = modern_error(&buffered)
        {
            // Modern protocol errors carry their HTTP status, so they cannot ride a stream.
            let mut r = json_response(&buffered, &early, false, true);
            *r.status_mut() = status;
            r
        } else {
            for b in early {
                push_event(
                    &mut prefix,
                    sse::SseEvent {
                        id: None,
                        message: b,
                    },
                );
            }
            for ev in buffered.into_iter().filter(|e| !e.silent) {
                push_event(&mut prefix, ev.event);
            }
            let body = if complete {
                ResponseBody::chunks(prefix)
            } else {
                let stops = self.stops(http.as_deref());
                ResponseBody::stream(SseStream::new(
                    Box::new(events),
                    prefix,
                    self.options.sse_keep_alive,
                    self.options.sse_retry,
                    stops,
                    None,
                ))
            };
            sse_response(body)
        };
        if let Some(v) = session_header {
            resp.headers_mut().insert(names::SESSION_ID, v);
        }
        Ok(resp)
    }

    // ---- GET ----------------------------------------------------------------------------

    async fn get(&self, parts: http::request::Parts) -> Result<Response<ResponseBody>, Rejection> {
        if self.options.stateless
            || text(&parts.headers, &names::PROTOCOL_VERSION)
                .is_some_and(ProtocolVersion::looks_modern)
        {
            return Err(Rejection::MethodNotAllowed { allow: "POST" });
        }
        if !Accepts::from_headers(&parts.headers).sse {
            return Err(Rejection::NotAcceptable(
                "Not Acceptable: a GET stream needs Accept: text/event-stream",
            ));
        }
        let http = self
            .session(&parts)
            .await?
            .ok_or(Rejection::MissingSession)?;
        let activity = http.activity(&self.sessions);
        let last =
            match text(&parts.headers, &names::LAST_EVENT_ID) {
                None => None,
                Some(v) => Some(v.parse::<EventId>().map_err(|_| {
                    Rejection::BadLastEventId("Bad Request: malformed Last-Event-ID")
                })?),
            };
        let (stream, after) = match last {
            Some(id) => (id.stream, Some(id)),
            None => (StreamId::STANDALONE, None),
        };
        if after.is_some() && self.store().is_none() && stream == StreamId::STANDALONE {
            // Without an event store nothing sent while the client was away is kept: a
            // "resumed" standalone stream would silently miss it.
            return Err(Rejection::BadLastEventId(
                "Bad Request: this stream cannot be resumed (the server keeps no events)",
            ));
        }
        let attached = http
            .live
            .attach_within(stream, after.is_some(), RESUME_PATIENCE)
            .await
            .map_err(|StreamBusy| Rejection::StreamConflict)?;
        if after.is_some() && attached.is_none() && self.store().is_none() {
            // Without an event store only a stream still held here can be resumed.
            return Err(Rejection::BadLastEventId(
                "Bad Request: this stream cannot be resumed (the server keeps no events)",
            ));
        }
        // What the client missed first (errors here are still HTTP statuses)...
        let replay = match (after, self.store()) {
            (Some(after), Some(store)) => store
                .replay_after(&http.id, after)
                .await
                .map_err(Rejection::Replay)?,
            _ => Vec::new(),
        };
        // ...then live events: from this instance, or, for a stream another instance
        // writes, followed through the store.
        let (live, attachment) = match (attached, after, self.store()) {
            (Some(a), _, _) => (Live::Local(a.queue), Some((a.attachment, a.superseded))),
            (None, Some(after), Some(store)) => {
                let from = replay.last().map_or(after, |e| e.id);
                let live = store
                    .follow(&http.id, from)
                    .map_or(Live::None, Live::Follow);
                (live, None)
            }
            _ => (Live::None, None),
        };
        let mut prefix = VecDeque::new();
        if after.is_none() {
            // A new standalone stream: flush headers now, and give the client a place to
            // resume from when events carry ids.
            if self.store().is_some()
                && http.core.protocol_version() >= ProtocolVersion::V2025_11_25
            {
                prefix.push_back(sse::priming(
                    http.event_id_of_standalone_head(),
                    self.options.sse_retry,
                ));
            } else {
                prefix.push_back(sse::comment());
            }
        }
        let source = ResumeStream::new(replay, after, live, attachment, activity);
        let body = SseStream::new(
            Box::new(source),
            prefix,
            self.options.sse_keep_alive,
            self.options.sse_retry,
            self.stops(Some(&http)),
            None,
        );
        Ok(sse_response(ResponseBody::stream(body)))
    }

    // ---- DELETE -------------------------------------------------------------------------

    async fn delete(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Response<ResponseBody>, Rejection> {
        if self.options.stateless
            || text(&parts.headers, &names::PROTOCOL_VERSION)
                .is_some_and(ProtocolVersion::looks_modern)
        {
            return Err(Rejection::MethodNotAllowed { allow: "POST" });
        }
        let http = self
            .session(parts)
            .await?
            .ok_or(Rejection::MissingSession)?;
        // Answer once the stores and the other instances know (so they answer 404 next).
        let _ = self.sessions.close(&http.id).await;
        log_event!(self.options.logger.as_ref(), info, "mcp.session.id" = %redact_session_id(&http.id), "session deleted");
        Ok(status_only(StatusCode::NO_CONTENT))
    }
}

/// Where each request of a POST gets its protocol context.
enum ScopeOf {
    Legacy(Arc<Session>),
    Modern(Box<crate::server::ModernMeta>),
}

impl ScopeOf {
    fn make(&self) -> Scope {
        match self {
            ScopeOf::Legacy(s) => Scope::Legacy(s.clone()),
            ScopeOf::Modern(m) => Scope::Modern(m.clone()),
        }
    }
}

/// The tool, prompt or resource a request targets (for span names).
fn request_target(method: &str, params: Option<&crate::protocol::RawJson>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Target {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        uri: Option<String>,
    }
    match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ => {
            let t: Target = params?.parse().ok()?;
            t.name.or(t.uri)
        }
        _ => None,
    }
}

fn has_request(p: &Payload) -> bool {
    match p {
        Payload::Single(m) => matches!(m, Message::Request(_)),
        Payload::Batch(v) => v.iter().any(|m| matches!(m, Message::Request(_))),
    }
}

fn is_initialize(p: &Payload) -> bool {
    matches!(p, Payload::Single(Message::Request(r)) if r.method == methods::INITIALIZE)
}

/// The HTTP status of a modern request's final error, when it is not 200.
fn modern_error(events: &[PostEvent]) -> Option<StatusCode> {
    events
        .iter()
        .find_map(|e| e.fin.flatten())
        .map(modern_error_status)
        .filter(|s| *s != StatusCode::OK)
}

fn status_only(status: StatusCode) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = status;
    r
}

fn json_response(
    events: &[PostEvent],
    early: &[Bytes],
    batch: bool,
    _modern: bool,
) -> Response<ResponseBody> {
    let finals: Vec<Bytes> = early
        .iter()
        .cloned()
        .chain(
            events
                .iter()
                .filter(|e| e.fin.is_some())
                .map(|e| e.event.message.clone()),
        )
        .collect();
    let mut chunks = VecDeque::new();
    if batch {
        chunks.push_back(Bytes::from_static(b"["));
        for (i, m) in finals.into_iter().enumerate() {
            if i > 0 {
                chunks.push_back(Bytes::from_static(b","));
            }
            chunks.push_back(m);
        }
        chunks.push_back(Bytes::from_static(b"]"));
    } else {
        chunks.extend(finals);
    }
    let mut r = Response::new(ResponseBody::chunks(chunks));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn sse_response(body: ResponseBody) -> Response<ResponseBody> {
    let live = body.is_stream();
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    if live {
        // Only a live stream needs proxies to pass it through unbuffered and unchanged.
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, no-transform"),
        );
        h.insert(names::X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    }
    r
}

/// Reads a body up to `limit` bytes: 413 beyond it, 400 if it breaks off.
async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, Rejection>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Some(upper) = body.size_hint().upper()
        && upper > limit as u64
    {
        return Err(Rejection::PayloadTooLarge(limit));
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(Rejection::PayloadTooLarge(limit))
        }
        Err(_) => Err(Rejection::UnreadableBody),
    }
}

impl<B> tower_service::Service<Request<B>> for StreamableHttpHandler
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}
