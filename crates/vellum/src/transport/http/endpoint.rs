//! [`StreamableHttpHandler`]: the Streamable HTTP endpoint as a tower `Service`, and the
//! first stage of every request. Each stage is a function of its own file that imports the
//! next, so one POST can be followed through the `use` lines:
//!
//! ```text
//! endpoint.rs ─► security_layer.rs ─► post.rs ─► session_routing.rs ─► respond.rs
//!   (method)      (Host, Origin, CORS)  (body, decode,  (which session)    (run, first poll,
//!                                        era)                               JSON or SSE)
//!             ─► post_events.rs ─► sse_writer.rs
//!                (the requests as    (the one SSE writer)
//!                 a stream of events)
//! ```
//!
//! A GET goes to `get.rs`, a DELETE to `session_routing.rs`. The state every stage reads is
//! `state.rs`. Rejections are values ([`Rejection`]) turned into responses in one place
//! (`rejection.rs`).
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

use crate::server::{Caller, Server};

use super::body::ResponseBody;
use super::body_reader::{BodyExemption, ConnectionExemption};
use super::client_address::ClientKey;
use super::options::StreamableHttpOptions;
use super::rejection::{Rejection, refused};
use super::security::ConnectionInfo;
use super::state::Inner;

// The request path from here: the security layer, then the stage of each HTTP method.
use super::security_layer::SecurityFuture;

use super::get::get;
use super::post::post;
use super::session_routing::delete;

/// The Streamable HTTP handler, built like the Go SDK's
/// `NewStreamableHTTPHandler(getServer, opts)`: a factory from the HTTP request to the
/// [`Server`] that serves it, and [`StreamableHttpOptions`].
///
/// The factory is called for every new session (stateful mode) and for every request
/// otherwise; returning `None` answers 400. The handler answers on whatever path it is
/// mounted at (or on [`StreamableHttpOptions::path`] alone), never under `/.well-known/`
/// (404). It is a `tower::Service`, so it serves from hyper, axum (`Router::route_service`)
/// or [`serve`](super::serve).
#[derive(Clone)]
pub struct StreamableHttpHandler {
    inner: Arc<Inner>,
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
            inner: Arc::new(Inner::new(Box::new(factory), options)),
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
    /// the uncounted first 64 KiB of one body per connection (what `max_buffered_body_bytes`
    /// caps).
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
        self.inner.start_draining();
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

    /// Serves one request. The connection it came on is read from its extensions
    /// ([`ConnectionInfo`]; assumed loopback when absent).
    pub async fn handle<B>(&self, req: Request<B>) -> Response<ResponseBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let info = req.extensions().get::<ConnectionInfo>().copied();
        let exemption = ConnectionExemption::of(&req);
        match self.call_on(req, info, exemption).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        }
    }

    /// Serves one request that arrived on a known connection (the accept loop calls this,
    /// saving an extensions map per request), with the connection's shared body exemption
    /// when it is an HTTP/2 one: the security layer, then the HTTP method.
    pub(super) fn call_on<B>(
        &self,
        req: Request<B>,
        connection: Option<ConnectionInfo>,
        exemption: Option<Arc<BodyExemption>>,
    ) -> HandlerFuture
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.inner.listen_to_bus();
        let inner = self.inner.clone();
        let logger = self.inner.options.logger.as_ref();
        let refuse = |method: &Method, rejection| refused(logger, method, rejection);
        let next =
            move |req| -> ByMethod { Box::pin(by_method(inner, req, connection, exemption)) };
        HandlerFuture {
            inner: self
                .inner
                .security
                .serve(req, connection.as_ref(), refuse, next),
        }
    }
}

/// The request after the security layer, being served (boxed: its state holds the whole
/// request path, and hyper keeps a connection's response future for the connection's life).
type ByMethod = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

/// Serves a request the security layer passed: the caller's rate limit, then its HTTP method
/// (`post.rs`, `get.rs`, DELETE in `session_routing.rs`); a refusal is answered here.
async fn by_method<B>(
    inner: Arc<Inner>,
    req: Request<B>,
    connection: Option<ConnectionInfo>,
    exemption: Option<Arc<BodyExemption>>,
) -> Result<Response<ResponseBody>, Infallible>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut parts, body) = req.into_parts();
    let method = parts.method.clone();
    let served = async {
        super::mount::check_path(&inner.options, parts.uri.path())?;
        if let Some(limits) = &inner.limits {
            limits
                .admit_request(&mut parts, connection.as_ref())
                .await?;
        }
        // What a caller without a principal keeps is counted per address: the sessions its
        // `initialize` opens (a POST without a session), the tasks any of its POSTs start
        // (an authenticated caller's count per principal).
        if parts.method == Method::POST
            && parts.extensions.get::<Caller>().is_none()
            && let Some(key) =
                (inner.options.client_addresses).key_of_request(&parts.headers, connection.as_ref())
        {
            parts.extensions.insert(ClientKey(key));
        }
        match parts.method {
            Method::POST => post(&inner, parts, body, exemption).await,
            Method::GET => get(&inner, parts).await,
            Method::DELETE => delete(&inner, &parts).await,
            // (A CORS preflight was answered by the security layer.)
            _ => Err(Rejection::MethodNotAllowed {
                allow: inner.allow(),
            }),
        }
    }
    .await;
    Ok(served.unwrap_or_else(|r| refused(inner.options.logger.as_ref(), &method, r)))
}

pin_project_lite::pin_project! {
    /// The future of a [`StreamableHttpHandler`] call: the security layer's answer, or the
    /// request served (with the CORS headers the layer adds).
    pub struct HandlerFuture {
        #[pin]
        inner: SecurityFuture<ByMethod>,
    }
}

impl Future for HandlerFuture {
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project()
            .inner
            .poll(cx)
            .map(|r| r.map(|resp| resp.map(http_body_util::Either::into_inner)))
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
    type Future = HandlerFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let info = req.extensions().get::<ConnectionInfo>().copied();
        let exemption = ConnectionExemption::of(&req);
        self.call_on(req, info, exemption)
    }
}
