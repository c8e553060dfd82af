//! Draining over real sockets: a draining handler refuses new sessions (503 with
//! `Retry-After`) and sessions it would restore from the store, while the sessions it holds
//! go on being served; on shutdown, streams stay open for `stream_grace` and then end with a
//! `retry` hint; requests still running after `request_grace` are cancelled.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use vellum::transport::http::StreamableHttpOptions;
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{TestHttpServer, assert_rejected};
use vellum_testkit::within;

#[tokio::test]
async fn draining_refuses_new_sessions_and_serves_open_ones() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let mut open = srv.client();
    open.connect("2025-11-25").await;
    let mut stream = open.listen().await;
    stream.next_block().await.expect("the opening comment");

    srv.handler.start_draining();
    assert!(srv.handler.is_draining());
    let mut late = srv.client();
    let a = late.initialize("2025-11-25").await;
    let body = assert_rejected(&a, StatusCode::SERVICE_UNAVAILABLE, -32603);
    assert_eq!(a.header("retry-after"), Some("1"), "{body}");
    assert!(a.header("mcp-session-id").is_none());
    assert_eq!(srv.handler.session_count(), 1, "a session was made anyway");

    // The open session is served as before, its stream included.
    assert_eq!(open.greet().await, "Hello World, Alice");
    assert_eq!(
        stream
            .next_block_within(Duration::from_millis(50))
            .await
            .ok(),
        None,
        "the open stream ended while draining"
    );
    srv.stop().await;
}

#[tokio::test]
async fn streams_stay_open_for_their_grace_then_end_with_retry() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.stream_grace = Duration::from_millis(600);
    let mut srv = TestHttpServer::start(f.server, o).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let mut stream = c.listen().await;
    stream.next_block().await.expect("the opening comment");

    let stopping = Instant::now();
    srv.begin_stop();
    let rest = within("the stream to end", stream.rest()).await;
    let lasted = stopping.elapsed();
    assert!(
        lasted >= Duration::from_millis(600),
        "the stream ended after {lasted:?}, before its grace"
    );
    assert!(
        rest.last().is_some_and(|b| b.retry.is_some()),
        "no retry at the end: {rest:?}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn requests_past_their_grace_are_cancelled() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default().json_response(true);
    o.request_grace = Duration::from_millis(300);
    let mut srv = TestHttpServer::start(f.server, o).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let call = c.call_tool("slow", json!({}), None);
    let in_flight = tokio::spawn({
        let c = c.clone();
        async move { c.post(&call).await }
    });
    f.slow.entered().await;

    let stopping = Instant::now();
    srv.begin_stop();
    // Never released: the grace runs out and the call is cancelled with its session.
    f.slow.dropped().await;
    let waited = stopping.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "cancelled after {waited:?}, before the grace"
    );
    let _ = within("the cancelled request", in_flight).await;
    srv.stop().await;
}

#[tokio::test]
async fn a_draining_instance_leaves_restoring_to_the_others() {
    use std::sync::Arc;
    use vellum::store::{MemoryBus, MemorySessionStore};

    let store = Arc::new(MemorySessionStore::new());
    let bus = MemoryBus::new();
    let shared = |instance: &str| {
        StreamableHttpOptions::default()
            .shared_sessions(store.clone(), Arc::new(bus.endpoint(instance)))
    };
    let a = TestHttpServer::start(test_server().server, shared("a")).await;
    let b = TestHttpServer::start(test_server().server, shared("b")).await;
    let mut c = a.client();
    c.connect("2025-11-25").await;
    let on_b = c.at(&b.url);

    b.handler.start_draining();
    let refused = on_b
        .post(&c.call_tool("hello_world", json!({"user_name": "Bo"}), None))
        .await;
    assert_rejected(&refused, StatusCode::SERVICE_UNAVAILABLE, -32603);
    assert_eq!(refused.header("retry-after"), Some("1"));
    // The session itself is untouched: its own instance still serves it.
    assert_eq!(c.greet().await, "Hello World, Alice");
    a.stop().await;
    b.stop().await;
}
