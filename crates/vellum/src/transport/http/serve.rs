//! Serving the handler: [`serve`]`(listener, handler)`, a builder awaited as a future, with
//! a layer around the handler ([`Serve::layer`]), TLS ([`Serve::tls`], feature `tls`), the
//! limits of its connections ([`Serve::connection_limits`]) and a graceful shutdown
//! ([`Serve::with_graceful_shutdown`]); one accept loop on TCP or a Unix socket with the
//! settings that matter (TCP_NODELAY on every TCP socket, one deadline from accept to the
//! first request head, an idle timeout, a connection cap, a budget of unwritten answer bytes
//! and a write timeout: [`ConnectionLimits`]).
//!
//! Connections speak HTTP/1.1. With the feature `http2` they speak HTTP/1.1 or HTTP/2, told
//! apart by the client's first bytes (the HTTP/2 preface): h2c with prior knowledge on plain
//! TCP and Unix sockets, h2 by ALPN over TLS. On TCP the first bytes are peeked at, not read,
//! and over TLS the ALPN choice is read: when they say HTTP/1.1, hyper's HTTP/1.1 connection
//! serves the socket itself and costs what it costs without the feature (hyper-util's
//! detection, which Unix sockets, TLS without ALPN and a preface still go through, feeds
//! hyper the bytes it read on their own, and hyper's read buffer then doubles to 16 KiB for
//! the connection's life: 24.1 against 17.1 KiB per session and open GET stream over TCP,
//! `tests/http_stream_memory.rs`). HTTP/2's limits, each against a known abuse:
//!
//! | limit | value | against |
//! |---|---|---|
//! | concurrent streams per connection | [`H2_MAX_CONCURRENT_STREAMS`] | one connection holding unbounded work |
//! | header list size | [`H2_MAX_HEADER_LIST_BYTES`] | header and CONTINUATION floods |
//! | streams reset by the client before the server accepted them | [`H2_MAX_PENDING_ACCEPT_RESET_STREAMS`] | rapid reset (CVE-2023-44487): the connection gets GOAWAY beyond it |
//! | streams the server had to reset for protocol errors | [`H2_MAX_LOCAL_ERROR_RESET_STREAMS`] | a client that provokes resets in a loop (CVE-2024-27316's kin) |
//! | keep-alive PING | every [`H2_KEEP_ALIVE`], closed when unanswered for as long | dead peers holding streams |
//!
//! SETTINGS and PING floods are bounded by the HTTP/2 implementation itself (it answers
//! each with one ACK and queues no more than one pending ACK of each).
//!
//! Not here: what a request does (`endpoint.rs`); sockets, handshakes and connections
//! (`listener.rs`); a connection's deadlines (`connection_task.rs`), the table of
//! connections (`connection_table.rs`) and the answer budget (`answer_budget.rs`); the TLS
//! configuration (`tls.rs`).

use std::future::{Future, IntoFuture, Pending};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tower_layer::{Identity, Layer};
use tower_service::Service;

use super::answer_budget::AnswerFuture;
use super::body_reader::{BodyExemption, ConnectionExemption};
use super::connection_limits::ConnectionLimits;
use super::connection_table::{ConnectionState, ConnectionTable, Registered};
use super::connection_task;
use super::endpoint::StreamableHttpHandler;
use super::listener::{Accepting, Connected, Listener};
use super::security::ConnectionInfo;

/// An error any service may fail with.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `handler` on `listener` (a bound [`TcpListener`] or Unix socket): await the
/// returned [`Serve`], after setting what it offers.
///
/// ```no_run
/// # async fn f(handler: vellum::transport::http::StreamableHttpHandler) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
/// vellum::transport::http::serve(listener, handler).await
/// # }
/// ```
///
/// Without [`Serve::with_graceful_shutdown`] it serves until the process ends.
pub fn serve(listener: impl Into<Listener>, handler: StreamableHttpHandler) -> Serve {
    Serve {
        listener: listener.into(),
        handler,
        layer: Identity::new(),
        shutdown: std::future::pending(),
        limits: ConnectionLimits::default(),
        #[cfg(feature = "tls")]
        tls: None,
    }
}

/// Serving a handler, as [`serve`] starts it: a future (`.await` it, or spawn
/// `.into_future()`), with builder methods for what else it does.
///
/// `L` is the layer around the handler ([`Identity`] until [`Serve::layer`]), `G` the
/// shutdown signal. Awaited, it serves until `G` completes, then shuts down gracefully: stop
/// accepting, refuse new sessions (503, `Retry-After`), end SSE streams with a `retry` hint
/// after the options' `stream_grace` (zero by default), let in-flight requests finish within
/// their `request_grace` (default [`DEFAULT_SHUTDOWN_GRACE`](super::DEFAULT_SHUTDOWN_GRACE)),
/// then close the sessions. It fails only when the accept loop's task does.
#[must_use = "a Serve does nothing until it is awaited"]
pub struct Serve<L = Identity, G = Pending<()>> {
    listener: Listener,
    handler: StreamableHttpHandler,
    layer: L,
    shutdown: G,
    limits: ConnectionLimits,
    #[cfg(feature = "tls")]
    tls: Option<super::TlsConfig>,
}

/// The layer of a [`Serve`] after [`Serve::layer`].
#[derive(Debug, Clone)]
pub struct Layered<L>(L);

impl<L, G> std::fmt::Debug for Serve<L, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("handler", &self.handler)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<G> Serve<Identity, G> {
    /// Wraps `layer` (e.g. [`AuthLayer`](crate::auth::AuthLayer), or a stack of layers)
    /// around the handler; each request then carries its [`ConnectionInfo`] in its
    /// extensions. Shutdown still ends the handler's streams and sessions.
    pub fn layer<L: ServeLayer>(self, layer: L) -> Serve<Layered<L>, G> {
        Serve {
            listener: self.listener,
            handler: self.handler,
            layer: Layered(layer),
            shutdown: self.shutdown,
            limits: self.limits,
            #[cfg(feature = "tls")]
            tls: self.tls,
        }
    }
}

impl<L, G> Serve<L, G> {
    /// Serves until `signal` completes, then shuts down gracefully (see [`Serve`]).
    pub fn with_graceful_shutdown<S>(self, signal: S) -> Serve<L, S>
    where
        S: Future<Output = ()> + Send + 'static,
    {
        Serve {
            listener: self.listener,
            handler: self.handler,
            layer: self.layer,
            shutdown: signal,
            limits: self.limits,
            #[cfg(feature = "tls")]
            tls: self.tls,
        }
    }

    /// Sets the limits of the connections (deadlines, the connection cap, the answer
    /// budget); [`ConnectionLimits::default`] otherwise.
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Speaks TLS on every connection: each handshake runs in the connection's own task,
    /// within the connection's first-request deadline
    /// ([`ConnectionLimits::first_request_timeout`]; h2 or HTTP/1.1 by ALPN with the feature
    /// `http2`).
    /// [`TlsConfig::reload`](super::TlsConfig::reload) changes the certificate of later
    /// handshakes while this serves.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: super::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// What the accept loop runs on: its listener and connection limits, the handler, the
    /// layer, the shutdown signal.
    fn into_parts(self) -> (Accepting, ConnectionLimits, StreamableHttpHandler, L, G) {
        let listener = self.listener.accepting(
            #[cfg(feature = "tls")]
            self.tls.as_ref(),
        );
        (
            listener,
            self.limits,
            self.handler,
            self.layer,
            self.shutdown,
        )
    }
}

/// A layer [`Serve::layer`] can wrap around the handler: one that makes of it a service
/// answering hyper's requests, with a body hyper can send. Every such layer is one; the
/// bounds are written here once so that code generic over a layer needs only `L: ServeLayer`.
pub trait ServeLayer: Layer<StreamableHttpHandler, Service = Self::Served> {
    /// The handler inside the layer.
    type Served: Service<
            Request<Incoming>,
            Response = Response<Self::Body>,
            Error = Self::Error,
            Future = Self::Future,
        > + Clone
        + Send
        + 'static;
    /// The body of its responses.
    type Body: http_body::Body<Data: Send, Error: Into<BoxError>> + Send + 'static;
    /// What it fails with (hyper closes the connection).
    type Error: Into<BoxError> + 'static;
    /// Its response future.
    type Future: Future<Output = Result<Response<Self::Body>, Self::Error>> + Send + 'static;
}

impl<L, S, B> ServeLayer for L
where
    L: Layer<StreamableHttpHandler, Service = S>,
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Served = S;
    type Body = B;
    type Error = S::Error;
    type Future = S::Future;
}

/// What awaiting a [`Serve`] runs.
pub type ServeFuture = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

impl<G> IntoFuture for Serve<Identity, G>
where
    G: Future<Output = ()> + Send + 'static,
{
    type Output = std::io::Result<()>;
    type IntoFuture = ServeFuture;

    /// The handler itself: the connection reaches it as an argument, not in the
    /// request's extensions (no extensions map per request).
    fn into_future(self) -> ServeFuture {
        let (listener, limits, handler, _, shutdown) = self.into_parts();
        let h = handler.clone();
        let respond = move |req, info, exemption| h.call_on(req, Some(info), exemption);
        Box::pin(accept_loop(listener, limits, handler, respond, shutdown))
    }
}

impl<L, G> IntoFuture for Serve<Layered<L>, G>
where
    L: ServeLayer,
    G: Future<Output = ()> + Send + 'static,
{
    type Output = std::io::Result<()>;
    type IntoFuture = ServeFuture;

    /// The handler inside the layer, each request with its [`ConnectionInfo`] in its
    /// extensions (and an HTTP/2 one with its connection's body exemption).
    fn into_future(self) -> ServeFuture {
        let (listener, limits, handler, Layered(layer), shutdown) = self.into_parts();
        let service = layer.layer(handler.clone());
        let respond = move |mut req: Request<Incoming>,
                            info: ConnectionInfo,
                            exemption: Option<Arc<BodyExemption>>| {
            req.extensions_mut().insert(info);
            if let Some(e) = exemption {
                req.extensions_mut().insert(ConnectionExemption(e));
            }
            let mut s = service.clone();
            async move {
                std::future::poll_fn(|cx| s.poll_ready(cx)).await?;
                s.call(req).await
            }
        };
        Box::pin(accept_loop(listener, limits, handler, respond, shutdown))
    }
}

#[cfg(feature = "http2")]
/// The most streams one HTTP/2 connection may have open at once (each MCP request and each
/// GET stream is one; a client beyond it waits for a stream to end).
pub const H2_MAX_CONCURRENT_STREAMS: u32 = 256;

#[cfg(feature = "http2")]
/// The largest HTTP/2 header list accepted, in bytes (the HTTP/1.1 head is bounded at
/// 64 KiB too).
pub const H2_MAX_HEADER_LIST_BYTES: u32 = 64 * 1024;

#[cfg(feature = "http2")]
/// How many streams an HTTP/2 client may reset before the server got to them, at once,
/// before the connection is closed (rapid reset).
pub const H2_MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;

#[cfg(feature = "http2")]
/// How many streams the server may have to reset for a client's protocol errors before it
/// closes the connection.
pub const H2_MAX_LOCAL_ERROR_RESET_STREAMS: usize = 256;

#[cfg(feature = "http2")]
/// The interval of HTTP/2 keep-alive PINGs, and how long an answer may take.
pub const H2_KEEP_ALIVE: Duration = Duration::from_secs(20);

// The HTTP/1.1 settings of `builder`, on whichever builder carries them (the two builders
// are different types with the same methods).
macro_rules! http1_settings_of {
    ($b:expr) => {
        $b.timer(TokioTimer::new())
            .header_read_timeout(None)
            .max_buf_size(2 * super::headers::MAX_HEAD_BYTES)
    };
}

/// The connection settings. HTTP/1.1: no header-read timer of hyper's (the connection's
/// first-request deadline and idle timeout bound every head, without a timer per request),
/// at most 128 KiB of buffered request head (twice the handler's 64 KiB head limit, so that
/// the handler, not the connection, refuses a head between the two with its JSON-RPC 431),
/// at most 100 headers (hyper's default: setting it, even to the same 100, makes hyper
/// initialise a header array per parse, about 1.7k instructions per request). HTTP/2
/// (feature `http2`): the limits of the module documentation.
#[cfg(feature = "http2")]
struct Builders {
    /// A connection whose first bytes said HTTP/1.1 ([`Connected::http1`]).
    http1: hyper::server::conn::http1::Builder,
    /// Any other: hyper-util tells HTTP/1.1 from HTTP/2 (same HTTP/1.1 settings).
    auto: hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
}

#[cfg(feature = "http2")]
fn builder() -> Builders {
    let mut b = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    http1_settings_of!(b.http1());
    b.http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .max_header_list_size(H2_MAX_HEADER_LIST_BYTES)
        .max_pending_accept_reset_streams(H2_MAX_PENDING_ACCEPT_RESET_STREAMS)
        .max_local_error_reset_streams(H2_MAX_LOCAL_ERROR_RESET_STREAMS)
        .keep_alive_interval(H2_KEEP_ALIVE)
        .keep_alive_timeout(H2_KEEP_ALIVE);
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1_settings_of!(http1);
    Builders { http1, auto: b }
}

/// The connection settings without the feature `http2`: HTTP/1.1 only, with no HTTP/2
/// preface to look for.
#[cfg(not(feature = "http2"))]
fn builder() -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    http1_settings_of!(b);
    b
}

/// Serves connections from `listener` as a task of its own until `shutdown` completes, then
/// shuts down gracefully. Awaited from `block_on` (as under `#[tokio::main]`), the loop would
/// otherwise accept on the main thread and hand every new connection over to a worker
/// thread: a wake-up and a thread switch per connection. Dropping the returned future aborts
/// the loop.
async fn accept_loop<F, Fut, B, E>(
    listener: Accepting,
    limits: ConnectionLimits,
    handler: StreamableHttpHandler,
    respond: F,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    F: Fn(Request<Incoming>, ConnectionInfo, Option<Arc<BodyExemption>>) -> Fut
        + Clone
        + Send
        + 'static,
    Fut: Future<Output = Result<Response<B>, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let stop = CancellationToken::new();
    let table = ConnectionTable::new(limits, handler.options().logger.clone());
    let serving = accept_connections(listener, table, handler, respond, stop.clone());
    let mut task = AbortOnDropHandle::new(tokio::spawn(serving));
    tokio::select! {
        r = &mut task => return r.map_err(std::io::Error::other),
        () = shutdown => stop.cancel(),
    }
    task.await.map_err(std::io::Error::other)
}

/// Accepts until `stop` is cancelled, then ends gracefully: refuse new sessions, end the
/// handler's streams after `stream_grace`, let in-flight requests finish within
/// `request_grace` (the handler's options), then close what is left.
async fn accept_connections<F, Fut, B, E>(
    listener: Accepting,
    table: Arc<ConnectionTable>,
    handler: StreamableHttpHandler,
    respond: F,
    stop: CancellationToken,
) where
    F: Fn(Request<Incoming>, ConnectionInfo, Option<Arc<BodyExemption>>) -> Fut
        + Clone
        + Send
        + 'static,
    Fut: Future<Output = Result<Response<B>, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let builder = Arc::new(builder());
    loop {
        // Connections closed to make room still hold their descriptors until their tasks
        // end: let them go before taking more.
        while table.crowded() && !stop.is_cancelled() {
            table.some_closed(Duration::from_millis(50)).await;
        }
        let (handshake, info) = tokio::select! {
            r = listener.next() => match r {
                Ok(x) => x,
                // Out of file descriptors and the like: close the connections idle the
                // longest, and wait for one to go instead of spinning.
                Err(_) => {
                    table.close_idle();
                    table.some_closed(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        // At the cap with no connection idle, the newcomer is closed at once.
        let Some(state) = table.open() else {
            continue;
        };
        let respond = respond.clone();
        let conn = state.clone();
        // Not boxed: hyper keeps the slot of a request's future for the connection's whole
        // life, and the response futures are small (the handler boxes its request's state,
        // ~4.5 KiB, once, inside its `HandlerFuture`).
        let svc = service_fn(move |req: Request<Incoming>| {
            let guard = conn.begin();
            let exemption = (req.version() >= http::Version::HTTP_2).then(|| conn.body_exemption());
            AnswerFuture::new(respond(req, info, exemption), guard)
        });
        let builder = builder.clone();
        tokio::spawn(async move {
            let _registered = Registered(state.clone());
            let Some(connected) = connection_task::handshake(&state, handshake).await else {
                return;
            };
            speak_http(&state, &builder, connected, svc).await;
        });
    }
    drop(listener);
    handler.start_draining();
    let grace = handler.options().request_grace;
    let deadline = tokio::time::Instant::now() + grace;
    let streams_end = tokio::time::Instant::now() + handler.options().stream_grace.min(grace);
    table.shut_down();
    let connections = table.all_closed();
    tokio::pin!(connections);
    // Streams first (after their grace), so their clients reconnect elsewhere while the
    // requests still running here finish within theirs.
    tokio::select! {
        () = &mut connections => {}
        () = tokio::time::sleep_until(streams_end) => {
            handler.shutdown();
            let _ = tokio::time::timeout_at(deadline, connections).await;
        }
    }
    // With no connection left, requests may still run detached (their clients dropped the
    // stream to resume it with Last-Event-ID, perhaps on another instance, which follows the
    // events they store): they get the same grace as those still connected.
    while handler.detached_requests() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handler.shutdown();
    handler.close_sessions();
}

/// Serves HTTP on a connection after its handshake, until it ends (`connection_task::drive`).
#[cfg(not(feature = "http2"))]
async fn speak_http<S, B>(
    state: &ConnectionState,
    builder: &hyper::server::conn::http1::Builder,
    connected: Connected,
    svc: S,
) where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    B: http_body::Body + 'static,
    B::Error: Into<BoxError>,
{
    let http = builder.serve_connection(TokioIo::new(connected.conn), svc);
    connection_task::drive(state, http, |c| c.graceful_shutdown()).await;
}

/// Serves HTTP on a connection after its handshake, until it ends (`connection_task::drive`):
/// hyper's HTTP/1.1 connection on the socket itself when its first bytes said HTTP/1.1 (no
/// bytes held aside, so its read buffer stays at 8 KiB), else hyper-util's detection.
#[cfg(feature = "http2")]
async fn speak_http<S, B>(
    state: &ConnectionState,
    builders: &Builders,
    connected: Connected,
    svc: S,
) where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    if connected.http1 {
        let http = builders
            .http1
            .serve_connection(TokioIo::new(connected.conn), svc);
        connection_task::drive(state, http, |c| c.graceful_shutdown()).await;
    } else {
        // Boxed: it is the larger (HTTP/2 and HTTP/1.1 states), and an HTTP/1.1 connection's
        // task should not carry its size for the few connections that take this way.
        let http = Box::pin(
            builders
                .auto
                .serve_connection(TokioIo::new(connected.conn), svc),
        );
        connection_task::drive(state, http, |c| c.get_mut().as_mut().graceful_shutdown()).await;
    }
}

/// The address a listener is bound to (for tests and logs).
pub fn local_addr(listener: &TcpListener) -> std::io::Result<SocketAddr> {
    listener.local_addr()
}
