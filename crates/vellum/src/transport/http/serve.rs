//! Serving the handler: an accept loop on TCP or a Unix socket with the settings that
//! matter (TCP_NODELAY on every socket, a header-read timeout, graceful shutdown).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, ToSocketAddrs};

use super::handler::StreamableHttpHandler;
use super::security::ConnectionInfo;

/// How long a graceful shutdown waits for in-flight requests.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Binds `addr` and serves `handler` until the process ends.
pub async fn serve(
    addr: impl ToSocketAddrs,
    handler: StreamableHttpHandler,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    serve_listener(listener, handler, std::future::pending()).await
}

fn builder() -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .max_buf_size(64 * 1024);
    b.http2().timer(TokioTimer::new());
    b
}

/// Serves `handler` on an already bound listener until `shutdown` completes, then shuts
/// down gracefully: stop accepting, end SSE streams (with a `retry` hint), let in-flight
/// requests finish for up to [`DEFAULT_SHUTDOWN_GRACE`].
pub async fn serve_listener(
    listener: TcpListener,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let builder = builder();
    tokio::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                // Out of file descriptors and the like: wait a little instead of spinning.
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
            () = &mut shutdown => break,
        };
        // Small SSE frames must not wait for Nagle and delayed ACKs (~40 ms each).
        let _ = stream.set_nodelay(true);
        let info = ConnectionInfo {
            local: stream.local_addr().ok(),
            remote: Some(remote),
        };
        let h = handler.clone();
        let svc = service_fn(move |req| {
            let h = h.clone();
            async move { Ok::<_, std::convert::Infallible>(h.handle_on(req, Some(info)).await) }
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    handler.shutdown();
    let _ = tokio::time::timeout(DEFAULT_SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}

/// Serves `handler` on a Unix socket at `path` until `shutdown` completes.
#[cfg(unix)]
pub async fn serve_unix(
    path: impl AsRef<std::path::Path>,
    handler: StreamableHttpHandler,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let listener = tokio::net::UnixListener::bind(path)?;
    let graceful = GracefulShutdown::new();
    let builder = builder();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
            () = &mut shutdown => break,
        };
        let info = ConnectionInfo {
            local: None,
            remote: None,
        };
        let h = handler.clone();
        let svc = service_fn(move |req| {
            let h = h.clone();
            async move { Ok::<_, std::convert::Infallible>(h.handle_on(req, Some(info)).await) }
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    handler.shutdown();
    let _ = tokio::time::timeout(DEFAULT_SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}

/// The address a listener is bound to (for tests and logs).
pub fn local_addr(listener: &TcpListener) -> std::io::Result<SocketAddr> {
    listener.local_addr()
}
