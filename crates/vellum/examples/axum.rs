//! Vellum inside an existing axum app: the MCP endpoint nested at `/mcp` beside the app's own
//! routes, behind tower-http layers (tracing, a timeout, and compression that leaves SSE
//! streams alone), with the app's state shared by its HTTP routes and its MCP tools.
//!
//! Run: `cargo run -p vellum --example axum`, then point an MCP client at `http://127.0.0.1:8000/mcp`;
//! `curl http://127.0.0.1:8000/visits` shows the count the `visit` tool bumps.
//!
//! Served by `axum::serve`, the handler does not see the address of each connection (vellum's
//! own `serve` tells it), so the app tells it the address it listens on: on a public
//! interface (`BIND=0.0.0.0:8000`) any `Host` is served; on loopback only loopback hosts
//! are, which is the DNS-rebinding defence. Behind a reverse proxy on the same machine,
//! name the public hosts it forwards: `MCP_ALLOWED_HOSTS=mcp.example.com`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State as AxumState;
use axum::routing::get;
use http::StatusCode;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use vellum::prelude::*;

/// The app's state: its HTTP routes and its MCP tools share it.
#[derive(Clone, Default)]
pub struct AppState {
    visits: Arc<AtomicU64>,
}

#[tools]
impl AppState {
    /// Counts a visit and returns how many there have been.
    #[tool]
    async fn visit(&self) -> String {
        (self.visits.fetch_add(1, Ordering::SeqCst) + 1).to_string()
    }

    /// Greets someone, telling them how many visits came before.
    #[tool]
    async fn greet(
        &self,
        /// Who to greet.
        name: String,
    ) -> String {
        let visits = self.visits.load(Ordering::SeqCst);
        format!("Hello, {name}: {visits} visits so far")
    }
}

/// The app: its own routes, `/mcp` (served with `mcp`'s options), and the layers over all
/// of them.
pub fn app(
    state: AppState,
    mcp: StreamableHttpOptions,
) -> Result<Router, vellum::error::ConfigError> {
    let server = Server::new(
        Implementation::new("axum-app", "1.0.0"),
        ServerOptions::default(),
    );
    state.clone().register(&server)?;
    let mcp =
        StreamableHttpHandler::new(move |_req: &http::request::Parts| Some(server.clone()), mcp);
    // Compression buffers what it compresses: an SSE stream must reach the client event by
    // event, so `text/event-stream` is never compressed (JSON answers and pages still are).
    let compress_when = DefaultPredicate::new().and(NotForContentType::new("text/event-stream"));
    Ok(Router::new()
        .route("/", get(|| async { include_str!("axum.rs") }))
        .route("/health", get(|| async { "ok" }))
        .route("/visits", get(visits))
        .with_state(state)
        // axum strips the `/mcp` prefix; the handler serves whatever path it is given.
        .nest_service("/mcp", mcp)
        .layer(CompressionLayer::new().compress_when(compress_when))
        // The timeout covers producing a response's head: a long-lived SSE body (a GET
        // stream, a long tool call's events) is not cut by it.
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .layer(TraceLayer::new_for_http()))
}

async fn visits(AxumState(state): AxumState<AppState>) -> String {
    state.visits.load(Ordering::SeqCst).to_string()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tower_http=debug".into()),
        )
        .init();
    let bind = std::env::var("BIND").unwrap_or_else(|_| "127.0.0.1:8000".to_owned());
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let mut mcp = StreamableHttpOptions::default().local_address(listener.local_addr()?);
    for host in std::env::var("MCP_ALLOWED_HOSTS")
        .unwrap_or_default()
        .split(',')
    {
        if !host.trim().is_empty() {
            mcp = mcp.allow_host(host.trim());
        }
    }
    let app = app(AppState::default(), mcp)?;
    eprintln!("axum app with MCP at http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::{Value, json};

    /// The app on an ephemeral loopback port.
    async fn start() -> (String, AppState, tokio::task::JoinHandle<()>) {
        start_with(|addr| StreamableHttpOptions::default().local_address(addr)).await
    }

    /// The app on an ephemeral loopback port, its MCP options made from the port's address.
    async fn start_with(
        options: impl FnOnce(std::net::SocketAddr) -> StreamableHttpOptions,
    ) -> (String, AppState, tokio::task::JoinHandle<()>) {
        let state = AppState::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let app = app(state.clone(), options(listener.local_addr().unwrap())).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (base, state, task)
    }

    fn post(http: &reqwest::Client, base: &str, body: &Value) -> reqwest::RequestBuilder {
        http.post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("accept-encoding", "gzip")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
    }

    #[tokio::test]
    async fn mcp_beside_the_app_routes_with_shared_state_and_uncompressed_sse() {
        let (base, state, task) = start().await;
        vellum::transport::install_crypto_provider();
        let http = reqwest::Client::new();

        let health = http.get(format!("{base}/health")).send().await.unwrap();
        assert_eq!(health.status(), 200);
        assert_eq!(health.text().await.unwrap(), "ok");
        // The app's own pages are compressed when asked...
        let page = http
            .get(&base)
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(page.headers()["content-encoding"], "gzip");

        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        let r = post(&http, &base, &init).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = r.bytes().await.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = post(&http, &base, &initialized)
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);

        for (id, expect) in [(2, "1"), (3, "2")] {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "visit", "arguments": {}}});
            let r = post(&http, &base, &call)
                .header("mcp-session-id", &session)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            // ... but an SSE answer never is: it must reach the client event by event.
            assert_eq!(r.headers()["content-type"], "text/event-stream");
            assert!(r.headers().get("content-encoding").is_none());
            let body = r.text().await.unwrap();
            let data = body
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .expect("one event");
            let answer: Value = serde_json::from_str(data.trim()).unwrap();
            assert_eq!(answer["result"]["content"][0]["text"], expect);
        }
        // The tools changed the state the app's routes read.
        assert_eq!(state.visits.load(Ordering::SeqCst), 2);
        let visits = http.get(format!("{base}/visits")).send().await.unwrap();
        assert_eq!(visits.text().await.unwrap(), "2");
        task.abort();
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

    /// An `initialize` with this `Host`: its status and body.
    async fn initialize_as(base: &str, host: &str) -> (u16, String) {
        vellum::transport::install_crypto_provider();
        let r = reqwest::Client::new()
            .post(format!("{base}/mcp"))
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INIT)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// Behind a proxy: a public `Host` is served when the app listens on a public address
    /// (the handler told an address a test cannot bind, as a connector on such an interface
    /// would), or when the host is named as the one a proxy on the same machine forwards;
    /// an unnamed public host on loopback stays refused, and a handler told nothing refuses
    /// it saying how to fix that.
    #[tokio::test]
    async fn behind_a_proxy_public_hosts_are_served_where_they_should_be() {
        let public: std::net::SocketAddr = "192.0.2.10:8000".parse().unwrap();
        let (base, _, task) =
            start_with(|_| StreamableHttpOptions::default().local_address(public)).await;
        assert_eq!(initialize_as(&base, "mcp.example.com").await.0, 200);
        task.abort();

        let (base, _, task) = start_with(|addr| {
            StreamableHttpOptions::default()
                .local_address(addr)
                .allow_host("MCP.example.com")
        })
        .await;
        assert_eq!(initialize_as(&base, "mcp.example.com").await.0, 200);
        assert_eq!(initialize_as(&base, "mcp.example.com:443").await.0, 200);
        let (status, body) = initialize_as(&base, "evil.example").await;
        assert_eq!(status, 403, "{body}");
        assert!(!body.contains("local_address"), "{body}");
        assert_eq!(initialize_as(&base, "localhost").await.0, 200);
        task.abort();

        let (base, _, task) = start_with(|_| StreamableHttpOptions::default()).await;
        let (status, body) = initialize_as(&base, "mcp.example.com").await;
        assert_eq!(status, 403, "{body}");
        assert!(
            body.contains("StreamableHttpOptions::local_address"),
            "{body}"
        );
        assert_eq!(initialize_as(&base, "127.0.0.1").await.0, 200);
        task.abort();
    }
}
