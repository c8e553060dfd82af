//! `vellum serve --rate-limit N/s --rate-burst M [--rate-limit-store redis://…]` on real
//! child processes: the burst, then 429 with `Retry-After`; through Redis, one bucket for
//! three instances; bad rates refused at start. `--rate-limit-method` and
//! `--rate-limit-tool`: a bucket per method or tool.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::StatusCode;
use serde_json::json;
use vellum_testkit::http::McpHttp;
use vellum_testkit::process::{vellum_serve, vellum_serve_fails};
use vellum_testkit::redis::RedisServer;

async fn initialize(url: &str) -> (StatusCode, Option<String>) {
    let c = McpHttp::new(url);
    let a = c
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
        )
        .await;
    (a.status, a.header("retry-after").map(str::to_owned))
}

#[tokio::test]
async fn the_burst_then_429_with_retry_after() {
    let s = vellum_serve(&["--rate-limit", "1/h", "--rate-burst", "2"]);
    for _ in 0..2 {
        assert_eq!(initialize(&s.mcp_url()).await.0, StatusCode::OK);
    }
    let (status, retry) = initialize(&s.mcp_url()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // One token an hour: the wait is most of an hour.
    let secs: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1000..=3600).contains(&secs), "{secs}");
}

#[tokio::test]
async fn through_redis_three_instances_share_one_bucket() {
    let redis = RedisServer::start();
    let url = redis.url();
    let servers: Vec<_> = (0..3)
        .map(|_| {
            vellum_serve(&[
                "--rate-limit",
                "1/h",
                "--rate-burst",
                "3",
                "--rate-limit-store",
                &url,
            ])
        })
        .collect();
    for s in &servers {
        assert_eq!(initialize(&s.mcp_url()).await.0, StatusCode::OK);
    }
    for s in &servers {
        assert_eq!(
            initialize(&s.mcp_url()).await.0,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
}

#[tokio::test]
async fn method_and_tool_limits_refuse_only_their_method_and_tool() {
    let s = vellum_serve(&[
        "--rate-limit-method",
        "tools/list=1/h",
        "--rate-limit-tool",
        "hello_world=1/h",
    ]);
    let mut c = McpHttp::new(&s.mcp_url());
    c.connect("2025-11-25").await;
    let call = |c: &McpHttp| c.call_tool("hello_world", json!({"user_name": "A"}), None);
    let list = |c: &McpHttp| json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "tools/list"});
    assert_eq!(c.post(&call(&c)).await.status, StatusCode::OK);
    assert_eq!(c.post(&list(&c)).await.status, StatusCode::OK);
    for m in [call(&c), list(&c)] {
        let a = c.post(&m).await;
        assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{m}");
        let secs: u64 = a
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .unwrap();
        assert!((1000..=3600).contains(&secs), "{secs}");
    }
    let ping = json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "ping"});
    assert_eq!(c.post(&ping).await.status, StatusCode::OK);
}

#[test]
fn bad_method_and_tool_limits_are_refused_at_start() {
    for bad in ["tools/list", "=5/s", "tools/list=0/s", "tools/list=5/week"] {
        let err = vellum_serve_fails(&[&format!("--rate-limit-method={bad}")]);
        assert!(err.contains("--rate-limit-method"), "{bad}: {err}");
        let err = vellum_serve_fails(&[&format!("--rate-limit-tool={bad}")]);
        assert!(err.contains("--rate-limit-tool"), "{bad}: {err}");
    }
}

#[test]
fn bad_rates_are_refused_at_start() {
    for bad in ["0/s", "ten/s", "5/week", "-1/s"] {
        let err = vellum_serve_fails(&[&format!("--rate-limit={bad}")]);
        assert!(err.contains("--rate-limit"), "{bad}: {err}");
    }
    let err = vellum_serve_fails(&["--rate-limit-store", "redis://127.0.0.1:1"]);
    assert!(err.contains("needs a limit"), "{err}");
    // `memory` is a store too (it keeps the buckets here, overriding `--redis`); anything
    // else must be a Redis URL.
    let err = vellum_serve_fails(&["--rate-limit", "5/s", "--rate-limit-store", "postgres://x"]);
    assert!(
        err.contains("Redis URL") && err.contains("--rate-limit-store"),
        "{err}"
    );
}
