//! Sessions over real HTTP on loopback: the idle timeout (reaping, and what counts as
//! activity), the handshake timeout, the caps on live sessions and on requests in flight,
//! and isolation between concurrent sessions.
//!
//! Timeouts are short configured durations (200 ms); "the timeout has passed" is proven by
//! a control session on the same handler being reaped, never by sleeping. A session a
//! loaded machine lets idle past the timeout while it is being set up is set up again
//! ([`fresh_session`]): what is asserted starts once its activity is established.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::time::Duration;

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::json;
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::eventually;
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{
    McpHttp, SseReader, Streamed, TestHttpServer, assert_rejected, text_of,
};

const TIMEOUT: Duration = Duration::from_millis(200);

/// True while the session answers (false once it is gone: 404).
async fn alive(c: &McpHttp) -> bool {
    let a = c
        .post(&json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "ping"}))
        .await;
    match a.status {
        StatusCode::OK => true,
        StatusCode::NOT_FOUND => false,
        s => panic!("unexpected {s}: {}", a.text()),
    }
}

/// A connected session of `srv`, connecting again if a short timeout closed it before the
/// handshake finished.
async fn fresh_session(srv: &TestHttpServer) -> McpHttp {
    for _ in 0..20 {
        let mut c = srv.client();
        if c.try_connect("2025-06-18").await {
            return c;
        }
    }
    panic!("every session was closed before its handshake finished")
}

/// A session of `srv` holding a stream open: the answer to a `tools/call` of `tool`, or
/// (`None`) the standalone GET stream. Set up again if the timeout closed it first.
async fn session_holding(srv: &TestHttpServer, tool: Option<&str>) -> (McpHttp, SseReader) {
    for _ in 0..20 {
        let c = fresh_session(srv).await;
        let opened = match tool {
            Some(t) => c.post_stream(&c.call_tool(t, json!({}), None)).await,
            None => c.get_stream(None).await,
        };
        match opened {
            Streamed::Stream(s) => return (c, s),
            Streamed::Whole(a) => assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.text()),
        }
    }
    panic!("every session was closed before its stream opened")
}

fn with_timeout() -> StreamableHttpOptions {
    StreamableHttpOptions::default().session_timeout(TIMEOUT)
}

// ---- session_timeout ---------------------------------------------------------------------

#[tokio::test]
async fn idle_sessions_are_reaped_and_then_unknown() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, with_timeout()).await;
    let c = fresh_session(&srv).await;
    eventually("the idle session to be reaped", || {
        srv.handler.session_count() == 0
    })
    .await;
    let a = c
        .post(&c.call_tool("hello_world", json!({"user_name": "x"}), None))
        .await;
    assert_rejected(&a, StatusCode::NOT_FOUND, -32600);
    assert_eq!(c.delete().await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn without_a_timeout_idle_sessions_live_on() {
    let f = test_server();
    let forever = TestHttpServer::start(f.server.clone(), StreamableHttpOptions::default()).await;
    let reaping = TestHttpServer::start(f.server, with_timeout()).await;
    let mut kept = forever.client();
    kept.connect("2025-06-18").await;
    let _control = fresh_session(&reaping).await;
    // The control session was created after ours and has been reaped: ours was idle longer
    // than the timeout.
    eventually("the control session to be reaped", || {
        reaping.handler.session_count() == 0
    })
    .await;
    assert!(alive(&kept).await, "a session without a timeout was closed");
}

#[tokio::test]
async fn a_request_in_flight_keeps_its_session_alive() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, with_timeout()).await;
    let (busy, mut slow) = session_holding(&srv, Some("slow")).await;
    f.slow.entered().await;
    let control = fresh_session(&srv).await;
    eventually("the control session to be reaped", || {
        srv.handler.session_count() == 1
    })
    .await;
    assert!(!alive(&control).await);
    assert!(
        alive(&busy).await,
        "the session was reaped while a request ran"
    );

    f.slow.release();
    let r = slow.next_message().await.expect("the slow result").json();
    assert_eq!(text_of(&r), "slow done");
    // Once idle, it goes too.
    eventually("the now idle session to be reaped", || {
        srv.handler.session_count() == 0
    })
    .await;
}

#[tokio::test]
async fn an_open_get_stream_keeps_its_session_alive() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, with_timeout()).await;
    let (listening, mut stream) = session_holding(&srv, None).await;
    stream.next_block().await.expect("the opening comment");
    let _control = fresh_session(&srv).await;
    eventually("the control session to be reaped", || {
        srv.handler.session_count() == 1
    })
    .await;
    assert!(alive(&listening).await, "a listening client was reaped");
    drop(stream);
    eventually("the session to be reaped once the stream is gone", || {
        srv.handler.session_count() == 0
    })
    .await;
}

#[tokio::test]
async fn a_reaped_sessions_get_stream_ends() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut stream = c.listen().await;
    stream.next_block().await.expect("the opening comment");
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);
    let rest = stream.rest().await;
    assert!(rest.iter().all(|b| !b.is_message()), "{rest:?}");
}

// ---- initialize_timeout --------------------------------------------------------------------

#[tokio::test]
async fn a_session_that_never_sends_initialized_is_closed() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.initialize_timeout = Some(TIMEOUT);
    let srv = TestHttpServer::start(f.server, o).await;
    let mut abandoned = srv.client();
    let init = abandoned.initialize("2025-06-18").await;
    assert_eq!(init.status, StatusCode::OK);
    let done = fresh_session(&srv).await;
    eventually("the abandoned handshake to be closed", || {
        srv.handler.session_count() == 1
    })
    .await;
    let late = abandoned.notify("notifications/initialized", None).await;
    assert_rejected(&late, StatusCode::NOT_FOUND, -32600);
    assert!(alive(&done).await, "a completed handshake was closed");
}

#[tokio::test]
async fn without_an_initialize_timeout_a_pending_handshake_stays() {
    let f = test_server();
    let mut off = StreamableHttpOptions::default();
    off.initialize_timeout = None;
    let patient = TestHttpServer::start(f.server.clone(), off).await;
    let mut on = StreamableHttpOptions::default();
    on.initialize_timeout = Some(TIMEOUT);
    let strict = TestHttpServer::start(f.server, on).await;

    let mut pending = patient.client();
    assert_eq!(
        pending.initialize("2025-06-18").await.status,
        StatusCode::OK
    );
    let mut control = strict.client();
    assert_eq!(
        control.initialize("2025-06-18").await.status,
        StatusCode::OK
    );
    eventually("the control handshake to be closed", || {
        strict.handler.session_count() == 0
    })
    .await;
    let ack = pending.notify("notifications/initialized", None).await;
    assert_eq!(ack.status, StatusCode::ACCEPTED, "{}", ack.text());
    assert!(alive(&pending).await);
}

// ---- max_sessions ------------------------------------------------------------------------

#[tokio::test]
async fn max_sessions_refuses_initialize_beyond_the_cap_with_503() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.max_sessions = Some(2);
    let srv = TestHttpServer::start(f.server, o).await;
    let mut a = srv.client();
    a.connect("2025-06-18").await;
    let mut b = srv.client();
    b.connect("2025-06-18").await;
    let mut c = srv.client();
    let refused = c.initialize("2025-06-18").await;
    assert_rejected(&refused, StatusCode::SERVICE_UNAVAILABLE, -32603);
    let retry = refused.header("retry-after").expect("Retry-After");
    assert!(retry.parse::<u64>().is_ok(), "Retry-After {retry:?}");
    // Existing sessions are served; a freed slot is usable.
    assert!(alive(&a).await);
    assert_eq!(b.delete().await, StatusCode::NO_CONTENT);
    c.connect("2025-06-18").await;
    assert_eq!(srv.handler.session_count(), 2);
}

#[tokio::test]
async fn without_max_sessions_many_sessions_are_served() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    for _ in 0..20 {
        let mut c = srv.client();
        c.connect("2025-06-18").await;
    }
    assert_eq!(srv.handler.session_count(), 20);
}

// ---- max_in_flight_per_session -------------------------------------------------------------

#[tokio::test]
async fn max_in_flight_refuses_requests_beyond_the_cap_with_429() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.max_in_flight_per_session = Some(2);
    let srv = TestHttpServer::start(f.server, o).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut s1 = c
        .post_stream(&c.call_tool("slow", json!({}), None))
        .await
        .expect_stream("slow 1");
    let mut s2 = c
        .post_stream(&c.call_tool("slow", json!({}), None))
        .await
        .expect_stream("slow 2");
    f.slow.entered().await;
    f.slow.entered().await;

    let a = c
        .post(&c.call_tool("hello_world", json!({"user_name": "x"}), None))
        .await;
    assert_rejected(&a, StatusCode::TOO_MANY_REQUESTS, -32603);
    assert!(
        a.header("retry-after")
            .is_some_and(|v| v.parse::<u64>().is_ok())
    );
    // Notifications carry no request: still accepted. Other sessions are not limited.
    let n = c.notify("notifications/roots/list_changed", None).await;
    assert_eq!(n.status, StatusCode::ACCEPTED, "{}", n.text());
    let mut other = srv.client();
    other.connect("2025-06-18").await;
    assert!(alive(&other).await);

    f.slow.release();
    for s in [&mut s1, &mut s2] {
        let r = s.next_message().await.expect("a slow result").json();
        assert_eq!(text_of(&r), "slow done");
    }
    assert!(
        alive(&c).await,
        "the session stays limited after its requests finished"
    );
}

#[tokio::test]
async fn max_in_flight_is_not_triggered_by_sequential_requests() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.max_in_flight_per_session = Some(2);
    let srv = TestHttpServer::start(f.server, o.clone()).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    for i in 0..60 {
        let a = c
            .post(&c.call_tool("hello_world", json!({"user_name": i.to_string()}), None))
            .await;
        assert_eq!(a.status, StatusCode::OK, "request {i}: {}", a.text());
        // Some callers also send progress-reporting and failing requests.
        let a = c
            .post(&c.call_tool("progress", json!({"steps": 2}), Some("t")))
            .await;
        assert_eq!(a.status, StatusCode::OK, "request {i}: {}", a.text());
        let a = c.post(&c.call_tool("nope", json!({}), None)).await;
        assert_eq!(a.status, StatusCode::OK, "request {i}: {}", a.text());
    }
    // JSON answers too.
    let f = test_server();
    let srv = TestHttpServer::start(f.server, o.json_response(true)).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    for i in 0..60 {
        let a = c
            .post(&c.call_tool("hello_world", json!({"user_name": i.to_string()}), None))
            .await;
        assert_eq!(a.status, StatusCode::OK, "request {i}: {}", a.text());
    }
}

#[tokio::test]
async fn without_max_in_flight_many_requests_run_at_once() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.max_in_flight_per_session = None;
    let srv = TestHttpServer::start(f.server, o).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut streams = Vec::new();
    for _ in 0..8 {
        streams.push(
            c.post_stream(&c.call_tool("slow", json!({}), None))
                .await
                .expect_stream("slow"),
        );
    }
    for _ in 0..8 {
        f.slow.entered().await;
    }
    f.slow.release();
    for s in &mut streams {
        let r = s.next_message().await.expect("a slow result").json();
        assert_eq!(text_of(&r), "slow done");
    }
}

// ---- isolation -----------------------------------------------------------------------------

#[tokio::test]
async fn concurrent_sessions_never_see_each_others_messages() {
    const SESSIONS: usize = 16;
    const CALLS: usize = 4;
    const STEPS: u32 = 5;
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let mut clients = Vec::new();
    for _ in 0..SESSIONS {
        let mut c = srv.client();
        c.connect("2025-11-25").await;
        c.request("logging/setLevel", json!({"level": "info"}))
            .await;
        clients.push(c);
    }
    // Each session listens on its standalone stream, which must stay empty.
    let mut listeners = Vec::new();
    for c in &clients {
        let mut l = c.listen().await;
        l.next_block().await.expect("the opening comment");
        listeners.push(l);
    }
    let runs = clients.iter().enumerate().flat_map(|(s, c)| {
        (0..CALLS).map(move |k| {
            let c = c.clone();
            async move {
                let token = format!("s{s}-c{k}");
                let call = c.call_tool("progress", json!({"steps": STEPS}), Some(&token));
                let log = c.call_tool("log", json!({"message": token.clone()}), None);
                let (a, b) = tokio::join!(c.post(&call), c.post(&log));
                (token, call["id"].clone(), a, log["id"].clone(), b)
            }
        })
    });
    let results = join_all(runs).await;
    let mut seen_ids = HashSet::new();
    for (token, call_id, a, log_id, b) in results {
        assert_eq!(a.status, StatusCode::OK);
        // The progress call's stream: exactly its own progress, then its own result.
        let (last, notes) = a.messages.split_last().expect("messages");
        assert_eq!(last["id"], call_id, "{token}: {:?}", a.messages);
        assert_eq!(notes.len(), STEPS as usize, "{token}: {:?}", a.messages);
        for n in notes {
            assert_eq!(n["method"], "notifications/progress", "{token}: {n}");
            assert_eq!(n["params"]["progressToken"], token.as_str(), "{token}: {n}");
        }
        // The log call's stream: its own log message, then its result.
        assert_eq!(b.messages.len(), 2, "{token}: {:?}", b.messages);
        assert_eq!(b.messages[0]["params"]["data"], token.as_str());
        assert_eq!(b.messages[1]["id"], log_id);
        assert!(seen_ids.insert(token));
    }
    for mut l in listeners {
        let extra = l.next_block_within(Duration::from_millis(50)).await;
        assert!(
            extra
                .as_ref()
                .map_or(true, |b| b.as_ref().is_none_or(|b| !b.is_message())),
            "a standalone stream got {extra:?}"
        );
    }
}
