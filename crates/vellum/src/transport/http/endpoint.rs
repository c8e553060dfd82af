//! [`StreamableHttpHandler`]: the Streamable HTTP endpoint as a tower `Service`.
//!
//! One request flows one way: the security layer (Host, Origin, CORS) → the HTTP method →
//! `post.rs` (body, era routing, `session_routing.rs`) → the server core → one response writer
//! (`post_response.rs`: JSON or SSE); `get.rs` serves GET streams. Rejections are values
//! ([`Rejection`]) turned into responses in one place (`rejection.rs`).
//!
//! Not here: accept loops and socket settings (`serve.rs`), and the sessions' table
//! (`session_table.rs`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Method, Request, Response};
use http_body::Body;
use tokio_util::sync::CancellationToken;

use crate::server::Server;
use crate::store::EventStore;

use super::body::ResponseBody;
use super::body_reader::BodyBudget;
use super::cluster::Cluster;
use super::cors;
use super::options::StreamableHttpOptions;
use super::rejection::Rejection;
use super::security::ConnectionInfo;
use super::security_layer::SecurityLayer;
use super::session_table::{HttpSession, SessionTable};
use super::sse_writer::Stops;
use super::trace::log_event;

/// How long a stored session lives without activity when `session_timeout` is unset.
const DEFAULT_STORED_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

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

/// The state of a handler, shared by its clones; each flow adds its methods (`post.rs`,
/// `get.rs`, `session_routing.rs`, `post_response.rs`).
pub(super) struct Inner {
    pub(super) factory: Box<Factory>,
    pub(super) options: StreamableHttpOptions,
    /// The Host/Origin checks and CORS, run around every request.
    pub(super) security: SecurityLayer,
    pub(super) sessions: Arc<SessionTable>,
    /// The bytes buffered for bodies being received, across every connection.
    pub(super) bodies: Arc<BodyBudget>,
    pub(super) shutdown: CancellationToken,
    /// Set by [`StreamableHttpHandler::start_draining`]: new sessions are refused.
    pub(super) draining: std::sync::atomic::AtomicBool,
    /// The rate limits (`options.rate_limit`, `options.rate_limits`), when any is set.
    pub(super) limits: Option<super::rate_limit::Limits>,
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

impl StreamableHttpHandler {
    /// A handler serving the server `factory` returns for each request (or session).
    pub fn new<F>(factory: F, options: StreamableHttpOptions) -> Self
    where
        F: Fn(&http::request::Parts) -> Option<Server> + Send + Sync + 'static,
    {
        let security = SecurityLayer::new(&options);
        let cluster = Arc::new(Cluster {
            events: options.event_store.clone(),
            sessions: options.session_store.clone(),
            bus: options.bus.clone(),
            ttl: options
                .session_timeout
                .unwrap_or(DEFAULT_STORED_SESSION_TTL),
        });
        let limits = super::rate_limit::Limits::new(
            options.rate_limit,
            &options.rate_limits,
            options.rate_limiter.clone(),
        );
        // Each server the factory hands out announces its list changes and resource updates
        // to the other instances, and hears theirs (attached once per server).
        let bus = options.bus.clone();
        let factory = move |parts: &http::request::Parts| {
            let server = factory(parts)?;
            if let Some(bus) = &bus {
                server.attach_bus(bus);
            }
            Some(server)
        };
        StreamableHttpHandler {
            inner: Arc::new(Inner {
                factory: Box::new(factory),
                security,
                sessions: Arc::new(SessionTable::new(
                    cluster,
                    options.max_in_flight_per_session,
                )),
                bodies: BodyBudget::new(options.max_buffered_body_bytes),
                options,
                shutdown: CancellationToken::new(),
                draining: std::sync::atomic::AtomicBool::new(false),
                limits,
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

    /// How many bytes of request bodies are buffered now, across every connection, beyond
    /// the uncounted first 64 KiB of each (what `max_buffered_body_bytes` caps).
    pub fn buffered_body_bytes(&self) -> usize {
        self.inner.bodies.used()
    }

    /// How many sessions are live.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Begins draining: from now on an `initialize` (a new session) and a session this
    /// instance would have to restore from the session store get 503 with `Retry-After`,
    /// so clients retry on another instance, while the sessions held here go on being
    /// served, streams included. The serve loops start draining when their shutdown
    /// future completes; call this earlier to drain while still accepting connections
    /// (`vellum serve` does so for `--drain-grace`, beside failing `/readyz`).
    pub fn start_draining(&self) {
        self.inner
            .draining
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether [`start_draining`](Self::start_draining) was called.
    pub fn is_draining(&self) -> bool {
        self.inner.is_draining()
    }

    /// Begins a graceful shutdown: streams that answer no running request (GET streams,
    /// `subscriptions/listen`) end with a `retry` hint; requests in flight run to their end.
    /// Call [`close_sessions`](Self::close_sessions) when the grace period is over (the
    /// serve loops do).
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// How many requests run on here with no connection waiting for them (their clients
    /// dropped the stream, to resume it here or on another instance).
    pub(crate) fn detached_requests(&self) -> usize {
        self.inner.sessions.detached()
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
        let (mut parts, body) = req.into_parts();
        let method = parts.method.clone();
        let cors_origin = inner.security.cors_origin(&parts.headers);
        let result = async {
            inner.security.check(
                parts.version,
                &parts.method,
                &parts.uri,
                &parts.headers,
                &parts.extensions,
                connection.as_ref(),
            )?;
            if let Some(limits) = &inner.limits {
                limits
                    .admit_request(&mut parts, connection.as_ref())
                    .await?;
            }
            match parts.method {
                Method::POST => inner.post(parts, body).await,
                Method::GET => inner.get(parts).await,
                Method::DELETE => inner.delete(&parts).await,
                Method::OPTIONS => match &cors_origin {
                    Some(origin) => Ok(cors::preflight(&parts.headers, origin)),
                    None => Err(Rejection::MethodNotAllowed {
                        allow: inner.allow(),
                    }),
                },
                _ => Err(Rejection::MethodNotAllowed {
                    allow: inner.allow(),
                }),
            }
        }
        .await;
        let mut resp = result.unwrap_or_else(|r| {
            log_event!(inner.options.logger.as_ref(), debug, method = %method, rejection = ?r, "request rejected");
            let reason = r.reason();
            let resp = r.into_response();
            super::metrics::refused(resp.status().as_u16(), reason);
            resp
        });
        if let Some(o) = &cors_origin {
            cors::decorate(resp.headers_mut(), o);
        }
        resp
    }
}

impl Inner {
    /// Whether new sessions are refused (see [`StreamableHttpHandler::start_draining`]).
    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The methods served, for `Allow`.
    pub(super) fn allow(&self) -> &'static str {
        if self.options.stateless {
            "POST"
        } else {
            "GET, POST, DELETE"
        }
    }

    /// The event store, when streams are resumable.
    pub(super) fn store(&self) -> Option<&Arc<dyn EventStore>> {
        self.options.event_store.as_ref()
    }

    /// What ends a stream of this handler (and of `session`) early.
    pub(super) fn stops(&self, session: Option<&HttpSession>) -> Stops {
        Stops {
            shutdown: self.shutdown.clone(),
            session: session.map(|s| s.closed.clone()),
        }
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
