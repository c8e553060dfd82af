//! rmcp peer for the Vellum benchmark: `hello_world` over Streamable HTTP with rmcp's own
//! server (`StreamableHttpService` under axum), written against rmcp's public API.
//!
//! `rmcp-peer --addr 127.0.0.1:PORT` serves stateful sessions with SSE answers (rmcp's
//! default); `--stateless` serves without sessions and answers with JSON. TCP_NODELAY is set on
//! every accepted socket: without it rmcp's multi-write SSE answers wait ~40 ms for Nagle and
//! delayed ACKs (see shared research perf-peers.md, note 1). The endpoint is `/mcp`.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use axum::serve::ListenerExt as _;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};

/// Arguments of `hello_world`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct HelloArgs {
    /// Who to greet.
    user_name: String,
}

/// The server: one tool.
#[derive(Debug, Clone)]
struct Hello {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Hello {
    fn new() -> Self {
        Self { tool_router: Self::tool_router() }
    }

    /// Greets the user.
    #[tool(description = "Say hello to a user")]
    fn hello_world(&self, Parameters(HelloArgs { user_name }): Parameters<HelloArgs>) -> String {
        format!("Hello World, {user_name}")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Hello {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn parse_args() -> anyhow::Result<(SocketAddr, bool)> {
    let mut addr: SocketAddr = ([127, 0, 0, 1], 8000).into();
    let mut stateless = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => addr = args.next().context("--addr needs a value")?.parse()?,
            "--stateless" => stateless = true,
            other => bail!("unknown argument {other} (usage: rmcp-peer [--addr A] [--stateless])"),
        }
    }
    Ok((addr, stateless))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (addr, stateless) = parse_args()?;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_json_response(stateless);
    let service: StreamableHttpService<Hello, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Hello::new()), Arc::new(LocalSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, router).await?;
    Ok(())
}
