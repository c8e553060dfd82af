//! Helpers shared by the integration tests (each test crate includes this with `mod common;`).
//!
//! - [`fixtures`]: the test server (the seed's `hello_world` plus tools for structured output,
//!   failure, progress, logging, slowness and questions to the client, a resource, a template
//!   and a prompt).
//! - [`http`]: a server on an ephemeral loopback port and an MCP-over-HTTP client that reads
//!   both JSON and SSE answers.
//! - [`conn`]: a [`vellum::server::Connection`] driven message by message, without HTTP.
//!
//! Not every test crate uses every helper.
#![allow(dead_code, unreachable_pub)]

pub mod conn;
pub mod fixtures;
pub mod http;

/// The seed's example, compiled into the tests as it is.
#[path = "../../examples/hello_world.rs"]
pub mod hello_world;

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
