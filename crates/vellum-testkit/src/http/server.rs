//! [`TestHttpServer`]: a Streamable HTTP handler served on `127.0.0.1:0` by the library's own
//! accept loop, until it is stopped or dropped.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use vellum::server::Server;
use vellum::transport::http::{ServeLayer, StreamableHttpHandler, StreamableHttpOptions, serve};

use super::McpHttp;
use crate::within;

/// A request the server saw: method, `Last-Event-ID`, session id.
#[derive(Clone, Debug)]
pub struct SeenRequest {
    /// The HTTP method.
    pub method: String,
    /// Its `Last-Event-ID` header.
    pub last_event_id: Option<String>,
    /// Its `Mcp-Session-Id` header.
    pub session: Option<String>,
}

/// The requests an instrumented server saw, in arrival order.
pub type RequestLog = Arc<Mutex<Vec<SeenRequest>>>;

/// A handler served on an ephemeral loopback port until the value is dropped or stopped.
pub struct TestHttpServer {
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The handler being served (for session counts and the like).
    pub handler: StreamableHttpHandler,
    /// Every request, when started with [`TestHttpServer::start_instrumented`] (else empty).
    pub requests: RequestLog,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestHttpServer {
    /// Serves `server` with `options`.
    pub async fn start(server: Server, options: StreamableHttpOptions) -> Self {
        Self::start_handler(StreamableHttpHandler::for_server(server, options)).await
    }

    /// Serves `server` with the default options.
    pub async fn serve(server: Server) -> Self {
        Self::start(server, StreamableHttpOptions::default()).await
    }

    /// Serves `handler` with `serve`, exactly as an application would.
    pub async fn start_handler(handler: StreamableHttpHandler) -> Self {
        let (listener, addr) = bind().await;
        let (stop, stopped) = oneshot::channel::<()>();
        let served = handler.clone();
        let task = tokio::spawn(
            serve(listener, served)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .into_future(),
        );
        Self::running(addr, handler, RequestLog::default(), stop, task)
    }

    /// Serves `handler` as [`TestHttpServer::start_handler`] does, through a test layer
    /// (`Serve::layer`) that records every request in [`TestHttpServer::requests`]
    /// and gives each one the authenticated [`Principal`](vellum::auth::Principal) named by
    /// its `x-test-principal` header (`issuer subject`), as an auth layer would.
    pub async fn start_instrumented(handler: StreamableHttpHandler) -> Self {
        let requests = RequestLog::default();
        let layer = TestLayer(requests.clone());
        let mut server = Self::start_with_layer(handler, |_| layer).await;
        server.requests = requests;
        server
    }

    /// Serves `handler` wrapped in the layer `layer` builds from the server's URL (an
    /// [`AuthLayer`](vellum::auth) names its resource by it), with `Serve::layer`.
    pub async fn start_with_layer<L: ServeLayer>(
        handler: StreamableHttpHandler,
        layer: impl FnOnce(&str) -> L,
    ) -> Self {
        let (listener, addr) = bind().await;
        let (stop, stopped) = oneshot::channel::<()>();
        let layer = layer(&format!("http://{addr}/mcp"));
        let served = handler.clone();
        let task = tokio::spawn(
            serve(listener, served)
                .layer(layer)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .into_future(),
        );
        Self::running(addr, handler, RequestLog::default(), stop, task)
    }

    fn running(
        addr: SocketAddr,
        handler: StreamableHttpHandler,
        requests: RequestLog,
        stop: oneshot::Sender<()>,
        task: JoinHandle<std::io::Result<()>>,
    ) -> Self {
        TestHttpServer {
            addr,
            url: format!("http://{addr}/mcp"),
            handler,
            requests,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// `http://127.0.0.1:PORT`: the origin, for paths other than `/mcp`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A client of this server.
    pub fn client(&self) -> McpHttp {
        McpHttp::new(&self.url)
    }

    /// The requests seen so far (see [`TestHttpServer::start_instrumented`]).
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Starts a graceful shutdown (the shutdown signal of `serve` completes) without
    /// waiting for it; [`TestHttpServer::stop`] then waits for the accept loop to end.
    pub fn begin_stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Shuts down gracefully and waits for the accept loop to end.
    pub async fn stop(mut self) {
        self.begin_stop();
        if let Some(t) = self.task.take() {
            within("the server to shut down", t)
                .await
                .expect("the accept loop did not panic")
                .expect("the accept loop ended cleanly");
        }
    }
}

impl Drop for TestHttpServer {
    fn drop(&mut self) {
        self.begin_stop();
    }
}

/// A listener on an ephemeral loopback port, and its address.
async fn bind() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a bound address");
    (listener, addr)
}

/// The layer of [`TestHttpServer::start_instrumented`].
#[derive(Clone)]
struct TestLayer(RequestLog);

impl<S> tower_layer::Layer<S> for TestLayer {
    type Service = TestService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TestService {
            inner,
            log: self.0.clone(),
        }
    }
}

/// Records the request, adds its test principal, and passes it on.
#[derive(Clone)]
struct TestService<S> {
    inner: S,
    log: RequestLog,
}

impl<S, B> tower_service::Service<http::Request<B>> for TestService<S>
where
    S: tower_service::Service<http::Request<B>, Error = Infallible>,
{
    type Response = S::Response;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let header = |n: &str| {
            req.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let seen = SeenRequest {
            method: req.method().to_string(),
            last_event_id: header("last-event-id"),
            session: header("mcp-session-id"),
        };
        let principal = header("x-test-principal").and_then(|v| {
            v.split_once(' ')
                .map(|(i, s)| vellum::auth::Principal::new(i, s))
        });
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(seen);
        if let Some(p) = principal {
            req.extensions_mut().insert(p.caller());
            req.extensions_mut().insert(p);
        }
        self.inner.call(req)
    }
}
