//! The per-caller rate limit over real sockets: a token bucket per client address (or per
//! authenticated principal), 429 with `Retry-After` and a JSON-RPC error beyond it; and,
//! with a Redis limiter, one bucket held across three instances. Then the limits per method
//! and per tool (`RateLimits`): a bucket per caller and name, a token per request of a POST
//! (batch entries each), checked once the body is decoded.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use vellum::store::RateLimit;
use vellum::transport::http::{RateLimits, StreamableHttpHandler, StreamableHttpOptions};
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{Answer, McpHttp, TestHttpServer, assert_rejected};

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
}

/// Nearly no refill: the burst is all a caller gets within a test.
fn limited(burst: u32) -> StreamableHttpOptions {
    let mut o = StreamableHttpOptions::default();
    o.rate_limit = Some(RateLimit::new(0.001, burst));
    o
}

/// A client of `url` from 127.0.0.2: another caller address, still loopback.
fn from_another_address(url: &str) -> McpHttp {
    vellum::transport::install_crypto_provider();
    let other = reqwest::Client::builder()
        .no_proxy()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    McpHttp::with_client(url, other)
}

/// An `initialize` POST made as `who` (the instrumented server's test principal).
fn as_principal(c: &McpHttp, who: &str) -> reqwest::RequestBuilder {
    c.builder(Method::POST)
        .header("x-test-principal", format!("https://issuer {who}"))
        .body(initialize().to_string())
}

/// Three instances sharing one Redis limiter, each with `options()`.
#[cfg(feature = "redis")]
async fn three_instances_on(
    redis: &vellum_testkit::redis::RedisServer,
    options: impl Fn() -> StreamableHttpOptions,
) -> Vec<TestHttpServer> {
    use vellum::store::redis::{Redis, RedisOptions};
    let mut servers = Vec::new();
    for _ in 0..3 {
        let r = Redis::connect(&redis.url(), RedisOptions::default())
            .await
            .unwrap();
        let mut o = options();
        o.rate_limiter = Some(Arc::new(r.rate_limiter()));
        servers.push(TestHttpServer::start(test_server().server, o).await);
    }
    servers
}

/// The rate-limit buckets in `redis`.
#[cfg(feature = "redis")]
async fn bucket_keys(redis: &vellum_testkit::redis::RedisServer) -> Vec<String> {
    use vellum::store::redis::{Redis, RedisOptions};
    let probe = Redis::connect(&redis.url(), RedisOptions::default())
        .await
        .unwrap();
    probe
        .keys()
        .await
        .unwrap()
        .into_iter()
        .filter(|k| k.contains(":rl:"))
        .collect()
}

fn assert_limited(a: &Answer) {
    assert_rejected(a, StatusCode::TOO_MANY_REQUESTS, -32603);
    let secs: u64 = a
        .header("retry-after")
        .expect("a Retry-After")
        .parse()
        .expect("whole seconds");
    assert!(secs >= 1, "{secs}");
}

#[tokio::test]
async fn each_client_address_has_its_bucket() {
    let srv = TestHttpServer::start(test_server().server, limited(2)).await;
    let c = srv.client();
    for _ in 0..2 {
        assert_eq!(c.post(&initialize()).await.status, StatusCode::OK);
    }
    assert_limited(&c.post(&initialize()).await);
    // Another address (still loopback) is not held back by the first one's spending.
    let o = from_another_address(&srv.url);
    assert_eq!(o.post(&initialize()).await.status, StatusCode::OK);
}

#[tokio::test]
async fn without_a_limit_nothing_is_limited() {
    let srv = TestHttpServer::start(test_server().server, StreamableHttpOptions::default()).await;
    let c = srv.client();
    for _ in 0..5 {
        assert_eq!(c.post(&initialize()).await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn each_principal_has_its_bucket_whatever_its_address() {
    let handler = StreamableHttpHandler::for_server(test_server().server, limited(1));
    let srv = TestHttpServer::start_instrumented(handler).await;
    let c = srv.client();
    assert_eq!(
        c.send(as_principal(&c, "alice")).await.status,
        StatusCode::OK
    );
    assert_limited(&c.send(as_principal(&c, "alice")).await);
    // Same address, another principal.
    assert_eq!(c.send(as_principal(&c, "bob")).await.status, StatusCode::OK);
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_redis_limiter_holds_one_bucket_across_three_instances() {
    let redis = vellum_testkit::redis::RedisServer::start();
    let servers = three_instances_on(&redis, || limited(3)).await;
    // One token spent on each instance: the shared bucket of three is empty.
    for s in &servers {
        assert_eq!(s.client().post(&initialize()).await.status, StatusCode::OK);
    }
    for s in &servers {
        assert_limited(&s.client().post(&initialize()).await);
    }
    // The bucket is one Redis key with a hash tag, and it expires.
    let keys = bucket_keys(&redis).await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].contains(":rl:{ip:"), "{keys:?}");
}

/// The options with these method and tool limits, the rest default.
fn limited_calls(limits: RateLimits) -> StreamableHttpOptions {
    let mut o = StreamableHttpOptions::default();
    o.rate_limits = limits;
    o
}

/// Nearly no refill: the burst is all a caller gets within a test.
fn few(burst: u32) -> RateLimit {
    RateLimit::new(0.001, burst)
}

fn hello(c: &McpHttp) -> Value {
    c.call_tool("hello_world", json!({"user_name": "Alice"}), None)
}

fn add(c: &McpHttp) -> Value {
    c.call_tool("add", json!({"a": 1, "b": 2}), None)
}

fn list_tools(c: &McpHttp) -> Value {
    json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "tools/list"})
}

#[tokio::test]
async fn a_tool_limit_refuses_that_tool_and_not_another() {
    let limits = RateLimits::new().tool("hello_world", few(2));
    let srv = TestHttpServer::start(test_server().server, limited_calls(limits)).await;
    let mut c = srv.client();
    // initialize, initialized and tools/list have no limit.
    c.connect("2025-11-25").await;
    for _ in 0..2 {
        assert_eq!(c.post(&hello(&c)).await.status, StatusCode::OK);
    }
    assert_limited(&c.post(&hello(&c)).await);
    assert_eq!(c.post(&add(&c)).await.status, StatusCode::OK);
    assert_eq!(c.post(&list_tools(&c)).await.status, StatusCode::OK);
    assert_limited(&c.post(&hello(&c)).await);
}

#[tokio::test]
async fn a_tool_limit_fails_closed_when_the_tool_name_cannot_be_read() {
    let limits = RateLimits::new().tool("hello_world", few(1));
    let srv = TestHttpServer::start(test_server().server, limited_calls(limits)).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    assert_eq!(c.post(&hello(&c)).await.status, StatusCode::OK);
    assert_limited(&c.post(&hello(&c)).await);
    // Two `name` keys: the limiter cannot tell which bucket, so it refuses the call.
    let twice = format!(
        r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"add","name":"hello_world","arguments":{{"user_name":"A"}}}}}}"#,
        c.next_id()
    );
    let a = c.post_raw(twice).await;
    let text = String::from_utf8_lossy(&a.body);
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{text}");
    assert!(text.contains("must name the tool once"), "{text}");
}

#[tokio::test]
async fn a_method_limit_refuses_that_method_and_not_others() {
    let limits = RateLimits::new().method("tools/list", few(1));
    let srv = TestHttpServer::start(test_server().server, limited_calls(limits)).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    assert_eq!(c.post(&list_tools(&c)).await.status, StatusCode::OK);
    assert_limited(&c.post(&list_tools(&c)).await);
    assert_eq!(c.post(&hello(&c)).await.status, StatusCode::OK);
    let ping = json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "ping"});
    assert_eq!(c.post(&ping).await.status, StatusCode::OK);
}

#[tokio::test]
async fn every_request_of_a_batch_takes_a_token() {
    let limits = RateLimits::new().tool("hello_world", few(2));
    let srv = TestHttpServer::start(test_server().server, limited_calls(limits)).await;
    let mut c = srv.client();
    // Batches are of 2025-03-26 only.
    c.connect("2025-03-26").await;
    // Three calls of a tool with two tokens: the POST is refused, whatever its first entries.
    let batch = json!([hello(&c), add(&c), hello(&c), hello(&c)]);
    assert_limited(&c.post(&batch).await);
    // The other tool's calls, batched, still pass.
    assert_eq!(
        c.post(&json!([add(&c), add(&c)])).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn each_address_and_each_principal_has_its_own_method_bucket() {
    let limits = RateLimits::new().method("initialize", few(1));
    let handler = StreamableHttpHandler::for_server(test_server().server, limited_calls(limits));
    let srv = TestHttpServer::start_instrumented(handler).await;
    let c = srv.client();
    assert_eq!(c.post(&initialize()).await.status, StatusCode::OK);
    assert_limited(&c.post(&initialize()).await);
    // Another loopback address: a bucket of its own.
    let o = from_another_address(&srv.url);
    assert_eq!(o.post(&initialize()).await.status, StatusCode::OK);
    assert_limited(&o.post(&initialize()).await);
    // Principals from the first address: each its own bucket, not the address's.
    assert_eq!(
        c.send(as_principal(&c, "alice")).await.status,
        StatusCode::OK
    );
    assert_limited(&c.send(as_principal(&c, "alice")).await);
    assert_eq!(c.send(as_principal(&c, "bob")).await.status, StatusCode::OK);
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_redis_limiter_holds_a_tool_bucket_across_three_instances() {
    let redis = vellum_testkit::redis::RedisServer::start();
    let servers = three_instances_on(&redis, || {
        limited_calls(RateLimits::new().tool("hello_world", few(3)))
    })
    .await;
    let mut clients = Vec::new();
    for s in &servers {
        let mut c = s.client();
        c.connect("2025-11-25").await;
        clients.push(c);
    }
    for c in &clients {
        assert_eq!(c.post(&hello(c)).await.status, StatusCode::OK);
    }
    for c in &clients {
        assert_limited(&c.post(&hello(c)).await);
        assert_eq!(c.post(&add(c)).await.status, StatusCode::OK);
    }
    // One key, for the configured tool only: `add` (unlimited) and `initialize` have none.
    let keys = bucket_keys(&redis).await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].contains(":rl:{ip:"), "{keys:?}");
    assert!(keys[0].ends_with(":t:hello_world}"), "{keys:?}");
}
