//! `vellum serve`'s per-address limits on a real child process (issue 27, items 6 and 7):
//! the network default of 100 sessions per client address without authentication (the
//! 101st refused with the real wait, another address served), `--trusted-proxy`,
//! `--forwarded-header` and `--ipv6-prefix` for the rate limit's keys, and `--auth-failures-per-minute`.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use reqwest::StatusCode;
use serde_json::json;
use vellum_testkit::http::{McpHttp, assert_rejected};
use vellum_testkit::process::{ServerProcess, vellum_bin, vellum_serve, vellum_serve_with_env};

/// A client of `url` whose connections come from `from` (any 127.x address is loopback).
fn client_from(url: &str, from: [u8; 4]) -> McpHttp {
    McpHttp::from_address(url, from)
}

#[tokio::test]
async fn the_101st_session_of_one_address_is_refused_with_the_real_wait() {
    // A non-loopback address: the network defaults apply (the wildcard covers loopback).
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["serve", "--addr", "0.0.0.0:0"]);
    let s = ServerProcess::spawn(cmd);
    let url = format!("http://127.0.0.1:{}/mcp", s.addr().port());
    let line = s.line_with("network defaults");
    assert!(line.contains("100 sessions per client address"), "{line}");
    // 100 sessions from 127.0.0.1 that never send `initialized`.
    let opened: Vec<StatusCode> = futures_util::stream::iter(0..100)
        .map(|_| {
            let mut c = client_from(&url, [127, 0, 0, 1]);
            async move { c.initialize("2025-11-25").await.status }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(opened.iter().all(|s| *s == StatusCode::OK), "{opened:?}");
    let refused = client_from(&url, [127, 0, 0, 1])
        .initialize("2025-11-25")
        .await;
    let body = assert_rejected(&refused, StatusCode::SERVICE_UNAVAILABLE, -32603);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many sessions"),
        "{body}"
    );
    // The real wait: the oldest of them is dropped 60 s after its initialize.
    let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((45..=60).contains(&wait), "{wait}");
    // Another address is served at once: initialize, then a tool call.
    let started = Instant::now();
    let mut fresh = client_from(&url, [127, 0, 0, 2]);
    fresh.connect("2025-11-25").await;
    let call = fresh.call_tool("hello_world", json!({"user_name": "A"}), None);
    assert_eq!(fresh.post(&call).await.status, StatusCode::OK);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

/// A GET as `forwarded_for` says: 429 when the rate limit refuses it, else another refusal
/// (no session) once it had its token.
async fn limited(c: &McpHttp, forwarded_for: &str) -> bool {
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("x-forwarded-for", forwarded_for)
        .send()
        .await
        .unwrap();
    r.status() == StatusCode::TOO_MANY_REQUESTS
}

#[tokio::test]
async fn trusted_proxy_and_ipv6_prefix_set_the_rate_limit_keys() {
    let rate = ["--rate-limit", "1/h", "--rate-burst", "1"];
    let trusted = [
        &rate[..],
        &["--trusted-proxy", "127.0.0.0/8", "--ipv6-prefix", "48"],
    ]
    .concat();
    let s = vellum_serve(&trusted);
    let c = McpHttp::new(&s.mcp_url());
    assert!(!limited(&c, "2001:db8:0:1::1").await);
    // The same /48.
    assert!(limited(&c, "2001:db8:0:2::1").await);
    assert!(!limited(&c, "2001:db8:1::1").await);
    assert!(!limited(&c, "203.0.113.1").await);
    // Without --trusted-proxy the header is not read: the peer is the client.
    let s = vellum_serve(&rate);
    let c = McpHttp::new(&s.mcp_url());
    assert!(!limited(&c, "203.0.113.1").await);
    assert!(limited(&c, "203.0.113.2").await);
}

/// A GET with the header `name: value`: true when the rate limit refuses it.
async fn limited_by(c: &McpHttp, name: &str, value: &str) -> bool {
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header(name, value)
        .send()
        .await
        .unwrap();
    r.status() == StatusCode::TOO_MANY_REQUESTS
}

#[tokio::test]
async fn a_client_cannot_choose_its_key_with_the_header_the_proxy_does_not_write() {
    let rate = ["--rate-limit", "1/h", "--rate-burst", "1"];
    // The proxy appends to X-Forwarded-For (the default) and passes `Forwarded` through: a
    // new `Forwarded: for=` on each request is not a new client.
    let s = vellum_serve(&[&rate[..], &["--trusted-proxy", "127.0.0.0/8"]].concat());
    let c = McpHttp::new(&s.mcp_url());
    assert!(!limited_by(&c, "forwarded", "for=198.51.100.1").await);
    assert!(limited_by(&c, "forwarded", "for=198.51.100.2").await);
    assert!(limited_by(&c, "forwarded", "for=198.51.100.3").await);
    // `--forwarded-header forwarded`: the other way round.
    let s = vellum_serve(
        &[
            &rate[..],
            &[
                "--trusted-proxy",
                "127.0.0.0/8",
                "--forwarded-header",
                "forwarded",
            ],
        ]
        .concat(),
    );
    let c = McpHttp::new(&s.mcp_url());
    assert!(!limited_by(&c, "x-forwarded-for", "198.51.100.1").await);
    assert!(limited_by(&c, "x-forwarded-for", "198.51.100.2").await);
    assert!(!limited_by(&c, "forwarded", "for=198.51.100.3").await);
    assert!(limited_by(&c, "forwarded", "for=198.51.100.3").await);
}

#[tokio::test]
async fn auth_failures_per_minute_limits_an_address() {
    let secret = "a test secret of at least thirty-two bytes";
    let s = vellum_serve_with_env(
        &[
            "--auth-issuer",
            "http://127.0.0.1:9/as",
            "--auth-audience",
            "vellum-cli-test",
            "--auth-failures-per-minute",
            "2",
        ],
        &[("VELLUM_AUTH_HS256_SECRET", secret)],
    );
    let forged = |c: &McpHttp, n: u32| {
        c.builder(reqwest::Method::POST)
            .bearer_auth(format!("forged.token.{n}"))
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
    };
    let c = client_from(&s.mcp_url(), [127, 0, 0, 2]);
    for n in 0..2 {
        assert_eq!(c.send(forged(&c, n)).await.status, StatusCode::UNAUTHORIZED);
    }
    let r = c.send(forged(&c, 2)).await;
    assert_rejected(&r, StatusCode::TOO_MANY_REQUESTS, -32603);
    assert!(r.header("retry-after").is_some());
    // Another address is not limited.
    let other = client_from(&s.mcp_url(), [127, 0, 0, 3]);
    assert_eq!(
        other.send(forged(&other, 3)).await.status,
        StatusCode::UNAUTHORIZED
    );
}
