//! Serving the handler: an accept loop on TCP, TLS over TCP (feature `tls`) or a Unix socket
//! with the settings that matter (TCP_NODELAY on every socket, a header-read timeout, a
//! handshake deadline, graceful shutdown).
//!
//! Connections speak HTTP/1.1. With the feature `http2` they speak HTTP/1.1 or HTTP/2, told
//! apart by the client's first bytes (the HTTP/2 preface): h2c with prior knowledge on plain
//! TCP and Unix sockets, h2 by ALPN over TLS. (Telling them apart costs about 7.6 KiB more
//! per HTTP/1.1 connection than a HTTP/1.1-only server, measured with 1,000 open GET
//! streams: 29.7 against 22.0 KiB per session and stream; it is one reason the feature is
//! not on by default.) HTTP/2's limits, each against a known abuse:
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
//! Not here: what a request does (`endpoint.rs`); the TLS configuration (`tls.rs`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::endpoint::StreamableHttpHandler;
use super::security::ConnectionInfo;

/// Binds `addr` and serves `handler` until the process ends.
pub async fn serve(
    addr: impl ToSocketAddrs,
    handler: StreamableHttpHandler,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    serve_listener(listener, handler, std::future::pending()).await
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
            .header_read_timeout(Duration::from_secs(30))
            .max_buf_size(2 * super::headers::MAX_HEAD_BYTES)
    };
}

/// The connection settings. HTTP/1.1: a 30 s header-read timeout (slowloris), at most
/// 128 KiB of buffered request head (twice the handler's 64 KiB head limit, so that the
/// handler, not the connection, refuses a head between the two with its JSON-RPC 431), at
/// most 100 headers (hyper's default: setting it, even to the same 100, makes hyper
/// initialise a header array per parse, about 1.7k instructions per request). HTTP/2
/// (feature `http2`): the limits of the module documentation.
#[cfg(feature = "http2")]
fn builder() -> hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor> {
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
    b
}

/// The connection settings without the feature `http2`: HTTP/1.1 only, with no HTTP/2
/// preface to look for.
#[cfg(not(feature = "http2"))]
fn builder() -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    http1_settings_of!(b);
    b
}

/// Serves `handler` on an already bound listener until `shutdown` completes, then shuts
/// down gracefully: stop accepting, refuse new sessions (503, `Retry-After`), end SSE
/// streams with a `retry` hint after the options' `stream_grace` (zero by default), let
/// in-flight requests finish within their `request_grace` (default
/// [`DEFAULT_SHUTDOWN_GRACE`](super::DEFAULT_SHUTDOWN_GRACE)), then close the sessions.
pub async fn serve_listener(
    listener: TcpListener,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_plain(Listener::Tcp(listener), handler, shutdown).await
}

/// Like [`serve_listener`], with `layer` (e.g. [`AuthLayer`](crate::auth::AuthLayer))
/// wrapped around the handler; each request carries its [`ConnectionInfo`] in its
/// extensions. Shutdown still ends the handler's streams and sessions.
pub async fn serve_listener_with<L, B>(
    listener: TcpListener,
    handler: StreamableHttpHandler,
    layer: L,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    L: tower_layer::Layer<StreamableHttpHandler>,
    L::Service:
        tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    <L::Service as tower_service::Service<Request<Incoming>>>::Future: Send + 'static,
    <L::Service as tower_service::Service<Request<Incoming>>>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = layer.layer(handler.clone());
    serve_layered(Listener::Tcp(listener), handler, service, shutdown).await
}

/// Like [`serve_listener`], over TLS: each connection's handshake runs in its own task
/// within [`TLS_HANDSHAKE_TIMEOUT`]. [`TlsConfig::reload`](super::TlsConfig::reload) changes
/// the certificate of later handshakes while this serves.
#[cfg(feature = "tls")]
pub async fn serve_tls_listener(
    listener: TcpListener,
    tls: super::TlsConfig,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_plain(Listener::tls(listener, &tls), handler, shutdown).await
}

/// [`serve_listener_with`] over TLS, as [`serve_tls_listener`].
#[cfg(feature = "tls")]
pub async fn serve_tls_listener_with<L, B>(
    listener: TcpListener,
    tls: super::TlsConfig,
    handler: StreamableHttpHandler,
    layer: L,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    L: tower_layer::Layer<StreamableHttpHandler>,
    L::Service:
        tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    <L::Service as tower_service::Service<Request<Incoming>>>::Future: Send + 'static,
    <L::Service as tower_service::Service<Request<Incoming>>>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = layer.layer(handler.clone());
    serve_layered(Listener::tls(listener, &tls), handler, service, shutdown).await
}

/// The handler itself on any listener.
async fn serve_plain(
    listener: Listener,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let h = handler.clone();
    let respond = move |req, info| {
        let h = h.clone();
        h.call_on(req, Some(info))
    };
    accept_loop(listener, handler, respond, shutdown).await
}

/// `service` (the handler inside a layer) on any listener, each request with its
/// [`ConnectionInfo`] in its extensions.
async fn serve_layered<S, B>(
    listener: Listener,
    handler: StreamableHttpHandler,
    service: S,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let respond = move |mut req: Request<Incoming>, info: ConnectionInfo| {
        req.extensions_mut().insert(info);
        let mut s = service.clone();
        async move {
            std::future::poll_fn(|cx| tower_service::Service::poll_ready(&mut s, cx)).await?;
            tower_service::Service::call(&mut s, req).await
        }
    };
    accept_loop(listener, handler, respond, shutdown).await
}

/// How long a TLS client may take to complete its handshake before the connection is
/// dropped (a client that connects and stays silent must not hold a task for ever).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the accept loop takes connections from. One loop serves every kind: only accepting
/// and the handshake differ, and they differ here.
enum Listener {
    /// Plain TCP (HTTP/1.1, or h2c with prior knowledge with `http2`).
    Tcp(TcpListener),
    /// TLS over TCP (h2 with `http2`, or HTTP/1.1, by ALPN). The acceptor shares the configuration, so a
    /// certificate reload reaches the next handshake.
    #[cfg(feature = "tls")]
    Tls(TcpListener, tokio_rustls::TlsAcceptor),
    /// A Unix socket (no addresses to tell).
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
}

impl Listener {
    #[cfg(feature = "tls")]
    fn tls(tcp: TcpListener, tls: &super::TlsConfig) -> Self {
        Listener::Tls(tcp, tls.acceptor())
    }

    /// The next connection, with its handshake still to run, and how it looks.
    async fn next(&self) -> std::io::Result<(Handshake, ConnectionInfo)> {
        match self {
            Listener::Tcp(tcp) => {
                let (stream, info) = accept_tcp(tcp).await?;
                Ok((Handshake::Ready(Conn::Tcp(stream)), info))
            }
            #[cfg(feature = "tls")]
            Listener::Tls(tcp, tls) => {
                let (stream, info) = accept_tcp(tcp).await?;
                Ok((Handshake::Tls(Box::new(tls.accept(stream))), info))
            }
            #[cfg(unix)]
            Listener::Unix(unix) => {
                let (stream, _) = unix.accept().await?;
                let info = ConnectionInfo {
                    local: None,
                    remote: None,
                };
                Ok((Handshake::Ready(Conn::Unix(stream)), info))
            }
        }
    }
}

/// Accepts a TCP connection and tells its addresses.
async fn accept_tcp(tcp: &TcpListener) -> std::io::Result<(tokio::net::TcpStream, ConnectionInfo)> {
    let (stream, remote) = tcp.accept().await?;
    // Small SSE frames must not wait for Nagle and delayed ACKs (~40 ms each).
    let _ = stream.set_nodelay(true);
    let info = ConnectionInfo {
        local: stream.local_addr().ok(),
        remote: Some(remote),
    };
    Ok((stream, info))
}

/// An accepted connection before HTTP: what is left to do is run in the connection's own
/// task, so a slow handshake does not hold up the accept loop.
enum Handshake {
    /// Nothing to do.
    Ready(Conn),
    /// The TLS handshake. Boxed (it is over a kilobyte): a plain connection's task should
    /// not carry its size.
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::Accept<tokio::net::TcpStream>>),
}

impl Handshake {
    /// The connection HTTP is spoken over, once the handshake is done.
    async fn finish(self) -> std::io::Result<Conn> {
        match self {
            Handshake::Ready(conn) => Ok(conn),
            #[cfg(feature = "tls")]
            Handshake::Tls(accept) => Ok(Conn::Tls(Box::new((*accept).await?))),
        }
    }
}

/// A connection ready for HTTP, whichever kind it is.
enum Conn {
    Tcp(tokio::net::TcpStream),
    // Boxed: a TLS stream is large, and a plain connection should not carry its size.
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// Runs `$e` with `$s` bound to the pinned stream inside `$conn`.
macro_rules! each_conn {
    ($conn:expr, $s:ident => $e:expr) => {
        match $conn.get_mut() {
            Conn::Tcp(s) => {
                let $s = Pin::new(s);
                $e
            }
            #[cfg(feature = "tls")]
            Conn::Tls(s) => {
                let $s = Pin::new(&mut **s);
                $e
            }
            #[cfg(unix)]
            Conn::Unix(s) => {
                let $s = Pin::new(s);
                $e
            }
        }
    };
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        each_conn!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        each_conn!(self, s => s.poll_write(cx, buf))
    }

    // Vectored: hyper writes a response head and body chunk in one call when the stream
    // takes vectors, as all three do.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        each_conn!(self, s => s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Tcp(s) => s.is_write_vectored(),
            #[cfg(feature = "tls")]
            Conn::Tls(s) => s.is_write_vectored(),
            #[cfg(unix)]
            Conn::Unix(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        each_conn!(self, s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        each_conn!(self, s => s.poll_shutdown(cx))
    }
}

/// Serves connections from `listener` as a task of its own until `shutdown` completes, then
/// shuts down gracefully. Awaited from `block_on` (as under `#[tokio::main]`), the loop would
/// otherwise accept on the main thread and hand every new connection over to a worker
/// thread: a wake-up and a thread switch per connection. Dropping the returned future aborts
/// the loop.
async fn accept_loop<F, Fut, B, E>(
    listener: Listener,
    handler: StreamableHttpHandler,
    respond: F,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    F: Fn(Request<Incoming>, ConnectionInfo) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Response<B>, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stop = CancellationToken::new();
    let serving = accept_connections(listener, handler, respond, stop.clone());
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
    listener: Listener,
    handler: StreamableHttpHandler,
    respond: F,
    stop: CancellationToken,
) where
    F: Fn(Request<Incoming>, ConnectionInfo) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Response<B>, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let graceful = GracefulShutdown::new();
    let builder = Arc::new(builder());
    loop {
        let (handshake, info) = tokio::select! {
            r = listener.next() => match r {
                Ok(x) => x,
                // Out of file descriptors and the like: wait a little instead of spinning.
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
            () = stop.cancelled() => break,
        };
        let respond = respond.clone();
        // Boxed: hyper keeps the slot of a request's future for the connection's whole life,
        // so an unboxed one (~4.5 KiB) would cost every open connection that much.
        let svc = service_fn(move |req| Box::pin(respond(req, info)));
        // Taken before the handshake, so a shutdown that starts meanwhile waits for it too.
        let watcher = graceful.watcher();
        let builder = builder.clone();
        tokio::spawn(async move {
            let Ok(Ok(stream)) =
                tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, handshake.finish()).await
            else {
                return;
            };
            let _ = watcher
                .watch(builder.serve_connection(TokioIo::new(stream), svc))
                .await;
        });
    }
    drop(listener);
    handler.start_draining();
    let grace = handler.options().request_grace;
    let deadline = tokio::time::Instant::now() + grace;
    let streams_end = tokio::time::Instant::now() + handler.options().stream_grace.min(grace);
    let connections = graceful.shutdown();
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

/// Serves `handler` on a Unix socket at `path` until `shutdown` completes.
#[cfg(unix)]
pub async fn serve_unix(
    path: impl AsRef<std::path::Path>,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let listener = tokio::net::UnixListener::bind(path)?;
    serve_unix_listener(listener, handler, shutdown).await
}

/// Serves `handler` on an already bound Unix socket until `shutdown` completes (bind first
/// to announce the socket only once clients can connect).
#[cfg(unix)]
pub async fn serve_unix_listener(
    listener: tokio::net::UnixListener,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_plain(Listener::Unix(listener), handler, shutdown).await
}

/// The address a listener is bound to (for tests and logs).
pub fn local_addr(listener: &TcpListener) -> std::io::Result<SocketAddr> {
    listener.local_addr()
}
