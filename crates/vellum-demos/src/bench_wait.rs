//! The benchmark's tool that waits (`wait` scenario, bench/README.md): `hello_wait
//! {user_name}` reads a greeting from Redis (`GET bench:greeting`) and makes one HTTP `GET` of
//! a slow service, then answers `<greeting>, <user_name>`, as a real tool waits on a database
//! and an internal API. Served by `vellum serve --server bench --bench-wait-redis URL
//! --bench-wait-http URL` (feature `bench-wait`).
//!
//! The clients are the ones a Vellum user would pick: redis-rs's `ConnectionManager` (one
//! multiplexed connection, reconnecting) and one `reqwest::Client` (its connection pool). A
//! program that links Vellum's `client` or `auth` feature builds reqwest with rustls and no
//! crypto provider: it calls `vellum::transport::install_crypto_provider()` before
//! [`WaitBackends::connect`] (`vellum serve` does).

use anyhow::Context as _;
use schemars::JsonSchema;
use serde::Deserialize;
use vellum::error::ConfigError;
use vellum::prelude::*;

/// The Redis key `hello_wait` reads (bench/run.sh seeds it with `Hello World`).
pub const GREETING_KEY: &str = "bench:greeting";

/// Input of `hello_wait`.
#[derive(Deserialize, JsonSchema)]
struct WaitInput {
    /// Who to greet.
    user_name: String,
}

/// What `hello_wait` waits on: a Redis connection and an HTTP client with the stub's URL.
#[derive(Clone)]
pub struct WaitBackends {
    redis: redis::aio::ConnectionManager,
    http: reqwest::Client,
    url: reqwest::Url,
}

impl std::fmt::Debug for WaitBackends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitBackends")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl WaitBackends {
    /// Connects to Redis at `redis_url` (`redis://HOST:PORT`) and prepares calls of `http_url`.
    pub async fn connect(redis_url: &str, http_url: &str) -> anyhow::Result<WaitBackends> {
        let client =
            redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
        let redis = redis::aio::ConnectionManager::new(client)
            .await
            .with_context(|| format!("connecting to Redis at {redis_url}"))?;
        let url = reqwest::Url::parse(http_url).with_context(|| format!("bad URL {http_url}"))?;
        Ok(WaitBackends {
            redis,
            http: reqwest::Client::new(),
            url,
        })
    }

    /// The greeting from Redis, then one call of the stub: the two waits of `hello_wait`.
    async fn greeting(&self) -> Result<String, HandlerError> {
        let mut redis = self.redis.clone();
        let greeting: Option<String> = redis::AsyncCommands::get(&mut redis, GREETING_KEY)
            .await
            .map_err(|e| HandlerError::failed(format!("Redis GET: {e}")))?;
        let greeting =
            greeting.ok_or_else(|| HandlerError::failed(format!("no {GREETING_KEY} in Redis")))?;
        let resp = self
            .http
            .get(self.url.clone())
            .send()
            .await
            .map_err(|e| HandlerError::failed(format!("HTTP GET: {e}")))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(HandlerError::failed(format!("HTTP GET: {status}")));
        }
        resp.bytes()
            .await
            .map_err(|e| HandlerError::failed(format!("HTTP GET body: {e}")))?;
        Ok(greeting)
    }
}

/// Registers `hello_wait` on `server`, waiting on `backends`.
pub fn add_hello_wait(server: &Server, backends: WaitBackends) -> Result<(), ConfigError> {
    server.add_tool(
        Tool::new(
            "hello_wait",
            "Say hello to a user, with a greeting from Redis, after an HTTP call",
        ),
        move |_ctx: RequestContext, _req: CallToolRequest, input: WaitInput| {
            let backends = backends.clone();
            async move {
                let greeting = backends.greeting().await?;
                Ok::<_, HandlerError>(CallToolResult::text(format!(
                    "{greeting}, {}",
                    input.user_name
                )))
            }
        },
    )?;
    Ok(())
}
