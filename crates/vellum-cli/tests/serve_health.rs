//! `vellum serve`'s health probes and draining, as a child process over real sockets:
//! `/healthz` and `/readyz` beside the endpoint (moved by `--health-path`, gone with
//! `--no-health`), readiness following a configured Redis, and SIGTERM turning readiness to
//! 503 and new sessions refused for `--drain-grace` while open sessions are still served,
//! then stopping with SSE streams ended by a `retry` hint (after `--stream-grace`).

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use reqwest::StatusCode;
use serde_json::json;
use vellum_testkit::http::{McpHttp, SseReader};
use vellum_testkit::process::{ServerProcess, vellum_serve};
use vellum_testkit::redis::RedisServer;
use vellum_testkit::within;

fn http() -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn probe(s: &ServerProcess, path: &str) -> (StatusCode, String) {
    let r = http().get(format!("{}{path}", s.url)).send().await.unwrap();
    let status = r.status();
    (status, r.text().await.unwrap())
}

#[tokio::test]
async fn probes_are_served_moved_or_left_out() {
    let s = vellum_serve(&[]);
    assert_eq!(probe(&s, "/healthz").await, (StatusCode::OK, "ok\n".into()));
    assert_eq!(
        probe(&s, "/readyz").await,
        (StatusCode::OK, "ready\n".into())
    );
    let r = http()
        .get(format!("{}/readyz", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["cache-control"], "no-store");
    // The endpoint is still the endpoint.
    let mut c = McpHttp::new(&s.mcp_url());
    c.connect("2025-11-25").await;

    let moved = vellum_serve(&["--health-path", "/ops/"]);
    assert_eq!(probe(&moved, "/ops/readyz").await.0, StatusCode::OK);
    assert_eq!(probe(&moved, "/ops/healthz").await.0, StatusCode::OK);
    assert_ne!(probe(&moved, "/readyz").await.1, "ready\n");

    let none = vellum_serve(&["--no-health"]);
    let (status, body) = probe(&none, "/healthz").await;
    assert!(
        status != StatusCode::OK && body != "ok\n",
        "{status} {body}"
    );
}

#[tokio::test]
async fn readiness_follows_redis() {
    let redis = RedisServer::start();
    let s = vellum_serve(&["--session-store", &redis.url()]);
    assert_eq!(probe(&s, "/readyz").await.0, StatusCode::OK);
    redis.stop();
    let (status, body) = within("readiness to see Redis gone", async {
        loop {
            let p = probe(&s, "/readyz").await;
            if p.0 != StatusCode::OK {
                break p;
            }
        }
    })
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("redis"), "{body}");
    // Alive all the same.
    assert_eq!(probe(&s, "/healthz").await.0, StatusCode::OK);
}

#[tokio::test]
async fn sigterm_drains_readiness_first_then_stops() {
    let s = vellum_serve(&["--drain-grace", "3s"]);
    let mut c = McpHttp::new(&s.mcp_url());
    c.connect("2025-11-25").await;
    let resp = c.get(None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut stream = SseReader::new(resp);

    let ok = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    s.line_with("draining");
    // Not ready, still alive, still serving its sessions.
    assert_eq!(
        probe(&s, "/readyz").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(probe(&s, "/healthz").await.0, StatusCode::OK);
    let r = c
        .request(
            "tools/call",
            json!({"name": "hello_world", "arguments": {"user_name": "Alice"}}),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello World, Alice");
    // New sessions go elsewhere.
    let mut late = McpHttp::new(&s.mcp_url());
    let a = late.initialize("2025-11-25").await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.text());
    assert_eq!(a.header("retry-after"), Some("1"));

    // After the grace: the stream ends (with a retry hint when the era has one) and the
    // process exits.
    s.line_with("stopping");
    let rest = within("the stream to end", stream.rest()).await;
    assert!(
        rest.iter().any(|b| b.retry.is_some()),
        "no retry hint before the end: {rest:?}"
    );
    let (status, _) = s.finish("-TERM");
    assert!(status.success(), "{status}");
}
