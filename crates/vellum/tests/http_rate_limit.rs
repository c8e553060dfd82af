//! The per-caller rate limit over real sockets: a token bucket per client address (or per
//! authenticated principal), 429 with `Retry-After` and a JSON-RPC error beyond it; and,
//! with a Redis limiter, one bucket held across three instances.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use vellum::store::RateLimit;
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions};
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
    vellum::transport::install_crypto_provider();
    let other = reqwest::Client::builder()
        .no_proxy()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let o = McpHttp::with_client(&srv.url, other);
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
    let as_ = |who: &str| {
        c.builder(Method::POST)
            .header("x-test-principal", format!("https://issuer {who}"))
            .body(initialize().to_string())
    };
    assert_eq!(c.send(as_("alice")).await.status, StatusCode::OK);
    assert_limited(&c.send(as_("alice")).await);
    // Same address, another principal.
    assert_eq!(c.send(as_("bob")).await.status, StatusCode::OK);
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_redis_limiter_holds_one_bucket_across_three_instances() {
    use vellum::store::redis::{Redis, RedisOptions};
    let redis = vellum_testkit::redis::RedisServer::start();
    let mut servers = Vec::new();
    for _ in 0..3 {
        let r = Redis::connect(&redis.url(), RedisOptions::default())
            .await
            .unwrap();
        let mut o = limited(3);
        o.rate_limiter = Some(Arc::new(r.rate_limiter()));
        servers.push(TestHttpServer::start(test_server().server, o).await);
    }
    // One token spent on each instance: the shared bucket of three is empty.
    for s in &servers {
        assert_eq!(s.client().post(&initialize()).await.status, StatusCode::OK);
    }
    for s in &servers {
        assert_limited(&s.client().post(&initialize()).await);
    }
    // The bucket is one Redis key with a hash tag, and it expires.
    let probe = Redis::connect(&redis.url(), RedisOptions::default())
        .await
        .unwrap();
    let keys: Vec<String> = probe
        .keys()
        .await
        .unwrap()
        .into_iter()
        .filter(|k| k.contains(":rl:"))
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].contains(":rl:{ip:"), "{keys:?}");
}
