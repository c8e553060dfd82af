//! rmcp peer for the Vellum benchmark: the benchmark's fixtures over Streamable HTTP with
//! rmcp's own server (`StreamableHttpService` under axum), written against rmcp's public API.
//!
//! Tools (the same on every peer, see bench/README.md): `hello_world {user_name}`;
//! `stream {count?, interval_ms?}` (count progress notifications, default 10, interval_ms
//! apart, then `streamed <count>`);
//! `blob {bytes}` (a text of exactly that many bytes); `touch {}` (adds or removes the tool
//! `bench_toggle` and tells every session's GET stream and every `subscriptions/listen`
//! stream); and `--tools N` filler tools to list. With `--wait-redis URL --wait-http URL`
//! (the `wait` scenario), `hello_wait {user_name}`: a tool that waits as real tools do, on a
//! Redis `GET bench:greeting` (redis-rs, one multiplexed connection) and an HTTP `GET` of the
//! URL (reqwest), then answers `<greeting>, <user_name>`.
//!
//! `rmcp-peer --addr 127.0.0.1:PORT` serves stateful sessions with SSE answers (rmcp's
//! default); `--stateless` serves without sessions and answers with JSON. TCP_NODELAY is set on
//! every accepted socket: without it rmcp's multi-write SSE answers wait ~40 ms for Nagle and
//! delayed ACKs (see shared research perf-peers.md, note 1). The endpoint is `/mcp`.
//!
//! rmcp's router lists only the tools its macros know, so the filler tools and
//! `bench_toggle` are listed and answered by hand in `list_tools` and `call_tool`, as an rmcp
//! server with a dynamic tool set would; rmcp has no broadcast to all sessions either, so each
//! session's peer (on `notifications/initialized`) and each listen stream's sink are kept.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, bail};
use axum::serve::ListenerExt as _;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, schemars, tool, tool_router};

/// The most bytes `blob` answers with.
const MAX_BLOB_BYTES: usize = 16 * 1024 * 1024;

/// Arguments of `hello_world`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct HelloArgs {
    /// Who to greet.
    user_name: String,
}

/// Arguments of `stream`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct StreamArgs {
    /// Progress notifications to send (default 10).
    count: Option<u32>,
    /// Milliseconds to wait after each notification (default 0).
    interval_ms: Option<u64>,
}

/// Arguments of `blob`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct BlobArgs {
    /// Size of the text to answer with.
    bytes: usize,
}

/// The backends `hello_wait` waits on: Redis and a slow HTTP stub (`--wait-redis`,
/// `--wait-http`), each with the client an rmcp user would pick.
#[derive(Clone)]
struct WaitBackends {
    redis: redis::aio::ConnectionManager,
    http: reqwest::Client,
    url: String,
}

impl std::fmt::Debug for WaitBackends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitBackends").field("url", &self.url).finish_non_exhaustive()
    }
}

/// The Redis key `hello_wait` reads (run.sh seeds it with `Hello World`).
const GREETING_KEY: &str = "bench:greeting";

/// What all sessions share.
#[derive(Debug, Default)]
struct Shared {
    /// `hello_wait`'s backends, when the peer was started with them.
    wait: Option<WaitBackends>,
    /// The filler tools and `bench_toggle`, built once.
    filler: Vec<Tool>,
    toggle: Option<Tool>,
    toggled: AtomicBool,
    peers: Mutex<Vec<Peer<RoleServer>>>,
    listens: Mutex<Vec<SubscriptionSink>>,
}

/// The server of one session.
#[derive(Debug, Clone)]
struct Bench {
    tool_router: ToolRouter<Self>,
    shared: Arc<Shared>,
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn empty_schema() -> Arc<JsonObject> {
    let mut m = JsonObject::new();
    m.insert("type".into(), "object".into());
    Arc::new(m)
}

#[tool_router]
impl Bench {
    fn new(shared: Arc<Shared>) -> Self {
        Self { tool_router: Self::tool_router(), shared }
    }

    /// Greets the user.
    #[tool(description = "Say hello to a user")]
    fn hello_world(&self, Parameters(HelloArgs { user_name }): Parameters<HelloArgs>) -> String {
        format!("Hello World, {user_name}")
    }

    /// Greets the user with a greeting read from Redis, after an HTTP call: a tool that waits.
    #[tool(description = "Say hello to a user, with a greeting from Redis, after an HTTP call")]
    async fn hello_wait(
        &self,
        Parameters(HelloArgs { user_name }): Parameters<HelloArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(wait) = &self.shared.wait else {
            return Err(ErrorData::invalid_request("started without --wait-redis/--wait-http", None));
        };
        let failed = |what: &str, e: &dyn std::fmt::Display| ErrorData::internal_error(format!("{what}: {e}"), None);
        let mut redis = wait.redis.clone();
        let greeting: Option<String> =
            redis::AsyncCommands::get(&mut redis, GREETING_KEY).await.map_err(|e| failed("redis GET", &e))?;
        let greeting = greeting.ok_or_else(|| failed("redis GET", &"no greeting"))?;
        let resp = wait.http.get(&wait.url).send().await.map_err(|e| failed("HTTP GET", &e))?;
        if !resp.status().is_success() {
            return Err(failed("HTTP GET", &resp.status()));
        }
        resp.bytes().await.map_err(|e| failed("HTTP body", &e))?;
        Ok(text(format!("{greeting}, {user_name}")))
    }

    #[tool(description = "Send count progress notifications (default 10), then the result")]
    async fn stream(
        &self,
        Parameters(StreamArgs { count, interval_ms }): Parameters<StreamArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let count = count.unwrap_or(10).min(10_000);
        if let Some(token) = ctx.meta.get_progress_token() {
            for i in 1..=count {
                let mut p = ProgressNotificationParam::new(token.clone(), f64::from(i));
                p.total = Some(f64::from(count));
                ctx.peer
                    .notify_progress(p)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let ms = interval_ms.unwrap_or(0).min(1000);
                if ms > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                }
            }
        }
        Ok(text(format!("streamed {count}")))
    }

    #[tool(description = "Answer with a text of exactly bytes bytes")]
    fn blob(&self, Parameters(BlobArgs { bytes }): Parameters<BlobArgs>) -> Result<CallToolResult, ErrorData> {
        if bytes > MAX_BLOB_BYTES {
            return Err(ErrorData::invalid_params(format!("at most {MAX_BLOB_BYTES} bytes"), None));
        }
        Ok(text("x".repeat(bytes)))
    }

    #[tool(description = "Add or remove the tool bench_toggle")]
    async fn touch(&self) -> Result<CallToolResult, ErrorData> {
        let added = !self.shared.toggled.fetch_xor(true, Ordering::SeqCst);
        // Sessions that have gone away fail at once; the benchmark's servers live briefly.
        let peers: Vec<_> = lock(&self.shared.peers).clone();
        for p in &peers {
            let _ = p.notify_tool_list_changed().await;
        }
        let sinks: Vec<_> = lock(&self.shared.listens).clone();
        for s in &sinks {
            let _ = s.notify_tool_list_changed().await;
        }
        Ok(text(if added { "added" } else { "removed" }))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name.starts_with("filler_") || request.name == "bench_toggle" {
            return Ok(text(if request.name == "bench_toggle" { "toggle" } else { "filler" }).into());
        }
        let tcc = ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        tools.extend(self.shared.filler.iter().cloned());
        if self.shared.toggled.load(Ordering::SeqCst)
            && let Some(t) = &self.shared.toggle
        {
            tools.push(t.clone());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        lock(&self.shared.peers).push(context.peer);
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        lock(&self.shared.listens).push(context.sink().clone());
        context.cancelled().await;
        let id = context.sink().id().clone();
        lock(&self.shared.listens).retain(|s| s.id() != &id);
        Ok(())
    }
}

struct Args {
    addr: SocketAddr,
    stateless: bool,
    tools: usize,
    wait_redis: Option<String>,
    wait_http: Option<String>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut out =
        Args { addr: ([127, 0, 0, 1], 8000).into(), stateless: false, tools: 0, wait_redis: None, wait_http: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => out.addr = args.next().context("--addr needs a value")?.parse()?,
            "--stateless" => out.stateless = true,
            "--tools" => out.tools = args.next().context("--tools needs a value")?.parse()?,
            "--wait-redis" => out.wait_redis = Some(args.next().context("--wait-redis needs a URL")?),
            "--wait-http" => out.wait_http = Some(args.next().context("--wait-http needs a URL")?),
            other => bail!(
                "unknown argument {other} (usage: rmcp-peer [--addr A] [--stateless] [--tools N] \
                 [--wait-redis URL --wait-http URL])"
            ),
        }
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let wait = match (args.wait_redis, args.wait_http) {
        (Some(redis_url), Some(url)) => {
            let client = redis::Client::open(redis_url.as_str()).context("--wait-redis")?;
            let redis = redis::aio::ConnectionManager::new(client).await.context("connecting to Redis")?;
            Some(WaitBackends { redis, http: reqwest::Client::new(), url })
        }
        (None, None) => None,
        _ => bail!("--wait-redis and --wait-http go together"),
    };
    let shared = Arc::new(Shared {
        wait,
        filler: (0..args.tools)
            .map(|i| Tool::new(format!("filler_{i:05}"), "A tool that is only listed", empty_schema()))
            .collect(),
        toggle: Some(Tool::new("bench_toggle", "Comes and goes with touch", empty_schema())),
        ..Shared::default()
    });
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!args.stateless)
        .with_json_response(args.stateless);
    let service: StreamableHttpService<Bench, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Bench::new(Arc::clone(&shared))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, router).await?;
    Ok(())
}
