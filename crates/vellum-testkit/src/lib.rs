//! The test harness every integration test of the workspace uses (both `crates/vellum/tests`
//! and `crates/vellum-cli/tests`): one fixture server, one way to serve it on loopback, one
//! MCP-over-HTTP client, one SSE reader, one way to run a server process. Not published.
//!
//! | module | what |
//! |---|---|
//! | [`fixture`] | the fixture server: the seed's `hello_world` plus a tool, resource, prompt and completion for every kind of message, with gates the test holds |
//! | [`conn`] | a [`vellum::transport::Connection`] driven message by message (no HTTP) |
//! | [`http`] | [`http::TestHttpServer`] on `127.0.0.1:0`, the [`http::McpHttp`] client (both eras, raw statuses and headers), the SSE reader, and the [`http::Legacy`] / [`http::Modern`] conversation clients that answer the server's requests |
//! | [`client`] | the SDK's [`vellum::client::Client`] set up for the fixture, and one pass over every typed call |
//! | [`process`] | a server child process (`vellum serve`, an example, an interop server) and its start line |
//! | [`raw`] | HTTP/1.1 written and read byte by byte over `std::net`, for tests that control every byte and stall |
//! | [`redis`] | a throwaway `redis-server` on a free loopback port |
//! | [`redis_ha`] | Redis set up for failover tests: a cluster with replicas, a Sentinel set; nodes killed and started again |
//! | [`netns`] | a `redis-server` in a network namespace whose packets a test drops (partitions) |
//! | [`proxy`] | a round-robin TCP proxy, the load balancer of the cluster tests |
//! | [`tls`] | a test CA, its leaf certificates as PEM files, and clients that trust it |
//! | [`oauth`] | [`oauth::TestAuthServer`], a strict OAuth 2.1 authorization server on `127.0.0.1:0` (metadata, authorize, token, register, revoke, introspect, JWKS; DPoP) |
//!
//! The README's Rust snippets are this crate's doc tests, and its quick start is checked to
//! be the seed's example file.
//!
//! Every wait has a deadline ([`DEADLINE`], [`within`]); state no event announces is polled
//! with [`eventually`]. Nothing sleeps to synchronise.

// Test support: failing loudly, with the reason, is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod client;
pub mod conn;
pub mod fixture;
pub mod http;
pub mod netns;
pub mod oauth;
pub mod process;
pub mod proxy;
pub mod raw;
mod readme;
pub mod redis;
pub mod redis_ha;
pub mod tls;

use std::future::Future;
use std::time::Duration;

/// How long any single awaited event may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Awaits `fut`, failing the test with `what` if it takes longer than [`DEADLINE`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(DEADLINE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {DEADLINE:?} waiting for {what}"),
    }
}

/// Waits until `cond` holds, checking every 5 ms, failing the test with `what` after
/// [`DEADLINE`]. For state no event announces (a session reaped by the sweeper).
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
