//! `StreamableHttpOptions`, each on and off, over real HTTP on loopback: `stateless`,
//! `json_response`, `max_body_bytes`, `sse_keep_alive`, the proxy headers of SSE answers,
//! graceful shutdown through `serve`, and `serve` on a Unix socket. (Sessions and their limits
//! are in `http_sessions.rs`, Host/Origin/CORS in `http_security.rs`, the logger in
//! `http_logging.rs`, the event store in `http_resume.rs`.)

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use vellum::store::{BusMessage, MessageBus, StoreError};
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions};
use vellum_demos::hello_world::hello_world_server;

use vellum_testkit::fixture::{Fixture, test_server};
use vellum_testkit::http::{
    Answer, McpHttp, SESSION_ID, SseBlock, TestHttpServer, assert_rejected, text_of,
};
use vellum_testkit::within;

fn options() -> StreamableHttpOptions {
    StreamableHttpOptions::default()
}

/// The progress notifications among `messages` that carry `token`, as (progress, message).
fn progress_of(messages: &[Value], token: &str) -> Vec<f64> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(
                m["params"]["progressToken"], token,
                "a foreign progress: {m}"
            );
            m["params"]["progress"]
                .as_f64()
                .expect("progress is a number")
        })
        .collect()
}

// ---- stateless ------------------------------------------------------------------------

#[tokio::test]
async fn stateless_mints_and_checks_no_session_id() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().stateless(true)).await;

    // `initialize` still negotiates, but no session id comes back.
    let mut c = srv.client();
    let init = c.initialize("2025-06-18").await;
    assert_eq!(init.status, StatusCode::OK, "{}", init.text());
    assert_eq!(
        init.header(SESSION_ID),
        None,
        "stateless minted a session id"
    );
    assert_eq!(init.messages[0]["result"]["protocolVersion"], "2025-06-18");

    // Requests work without `initialize`, without a session id, and with any session id.
    for session in [None, Some("made-up-session-id")] {
        let mut c = srv.client();
        c.session = session.map(str::to_owned);
        let r = c
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": "Ann"}}),
            )
            .await;
        assert_eq!(text_of(&r), "Hello World, Ann");
        let list = c.request("tools/list", json!({})).await;
        assert!(
            list["result"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
        );
    }
    assert_eq!(srv.handler.session_count(), 0, "stateless kept sessions");
}

/// A bus in one process that can say how many receivers hear it (one per server).
struct CountingBus(broadcast::Sender<BusMessage>);

impl MessageBus for CountingBus {
    fn instance_id(&self) -> &str {
        "counting"
    }

    fn publish(&self, message: BusMessage) -> BoxFuture<'static, Result<(), StoreError>> {
        let _ = self.0.send(message);
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> broadcast::Receiver<BusMessage> {
        self.0.subscribe()
    }
}

/// A factory that makes a new server for every request (the Go SDK's `getServer` style),
/// with a bus: each server hears the bus while it lives and stops when it goes, so many
/// stateless requests leave no receiver (and no task) behind.
#[tokio::test]
async fn servers_a_factory_makes_stop_hearing_the_bus_when_they_go() {
    let bus = Arc::new(CountingBus(broadcast::channel(16).0));
    let mut o = options().stateless(true);
    o.bus = Some(bus.clone());
    let handler = StreamableHttpHandler::new(|_| hello_world_server().ok(), o);
    let srv = TestHttpServer::start_handler(handler).await;
    for n in 0..20 {
        let c = srv.client();
        let r = c
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": format!("n{n}")}}),
            )
            .await;
        assert_eq!(text_of(&r), format!("Hello World, n{n}"));
    }
    // One receiver is the handler's own (messages about sessions). The last server's task
    // may still be ending: wait for it, with a deadline.
    let deadline = tokio::time::Instant::now() + vellum_testkit::DEADLINE;
    while bus.0.receiver_count() > 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} bus receivers left behind by 20 requests",
            bus.0.receiver_count()
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn stateful_default_mints_and_checks_session_ids() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options()).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    assert_eq!(srv.handler.session_count(), 1);

    let mut stranger = srv.client();
    stranger.protocol_version = Some("2025-06-18".into());
    let a = stranger
        .post(&stranger.call_tool("hello_world", json!({"user_name": "x"}), None))
        .await;
    assert_rejected(&a, StatusCode::BAD_REQUEST, -32600);
    stranger.session = Some("made-up-session-id".into());
    let a = stranger
        .post(&stranger.call_tool("hello_world", json!({"user_name": "x"}), None))
        .await;
    assert_rejected(&a, StatusCode::NOT_FOUND, -32600);
}

#[tokio::test]
async fn stateless_get_and_delete_are_405_allowing_post() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().stateless(true)).await;
    let mut c = srv.client();
    c.session = Some("any".into());
    for method in [Method::GET, Method::DELETE] {
        let a = c
            .send(
                c.builder(method.clone())
                    .header("accept", "text/event-stream"),
            )
            .await;
        assert_rejected(&a, StatusCode::METHOD_NOT_ALLOWED, -32600);
        assert_eq!(a.header("allow"), Some("POST"), "{method}");
    }
    // Stateful, the same methods are served (or refused for another reason), and PUT's
    // 405 allows all three.
    let f = test_server();
    let stateful = TestHttpServer::start(f.server, options()).await;
    let c = stateful.client();
    let a = c.send(c.builder(Method::PUT)).await;
    assert_rejected(&a, StatusCode::METHOD_NOT_ALLOWED, -32600);
    assert_eq!(a.header("allow"), Some("GET, POST, DELETE"));
}

#[tokio::test]
async fn stateless_server_to_client_request_fails_at_once() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().stateless(true)).await;
    let c = srv.client();
    // The tool waits up to 60 s for the client's answer; a stateless server must not even
    // ask, so the call ends well within the test deadline, with a clear error.
    let a = c.post(&c.call_tool("ping_client", json!({}), None)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert!(
        a.messages.iter().all(|m| m["method"] != "ping"),
        "a stateless server sent a request: {:?}",
        a.messages
    );
    let r = a.messages.last().expect("a response");
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text_of(r).contains("stateless"), "unclear error: {r}");
}

#[tokio::test]
async fn stateful_server_to_client_request_reaches_the_client() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options()).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut s = c
        .post_stream(&c.call_tool("ping_client", json!({}), None))
        .await
        .expect_stream("ping_client");
    let ping = s.next_message().await.expect("the server's ping").json();
    assert_eq!(ping["method"], "ping", "{ping}");
    let ack = c
        .post(&json!({"jsonrpc": "2.0", "id": ping["id"], "result": {}}))
        .await;
    assert_eq!(ack.status, StatusCode::ACCEPTED, "{}", ack.text());
    let r = s.next_message().await.expect("the tool's result").json();
    assert_eq!(text_of(&r), "pong");
}

#[tokio::test]
async fn stateless_notifications_reach_the_requests_response() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().stateless(true)).await;
    let c = srv.client();
    let a = c
        .post(&c.call_tool("progress", json!({"steps": 4}), Some("tok")))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert!(
        a.content_type().starts_with("text/event-stream"),
        "{}",
        a.content_type()
    );
    assert_eq!(progress_of(&a.messages, "tok"), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(text_of(a.messages.last().expect("a response")), "done");
}

#[tokio::test]
async fn stateless_log_messages_reach_the_requests_response() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().stateless(true)).await;
    let c = srv.client();
    let a = c
        .post(&c.call_tool("log", json!({"message": "from a stateless tool"}), None))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.messages.len(), 2, "{:?}", a.messages);
    assert_eq!(a.messages[0]["method"], "notifications/message");
    assert_eq!(a.messages[0]["params"]["data"], "from a stateless tool");
}

// ---- json_response --------------------------------------------------------------------

#[tokio::test]
async fn json_response_answers_with_one_json_body() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().json_response(true)).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let call = c.call_tool("hello_world", json!({"user_name": "Bo"}), None);
    let a = c.post(&call).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type(), "application/json");
    let body: Value = serde_json::from_slice(&a.body).expect("one JSON value");
    assert!(body.is_object(), "not a single object: {body}");
    assert_eq!(body["id"], call["id"]);
    assert_eq!(text_of(&body), "Hello World, Bo");

    // A 2025-03-26 batch is answered with one JSON array.
    let mut old = srv.client();
    old.connect("2025-03-26").await;
    let batch = json!([
        old.call_tool("hello_world", json!({"user_name": "1"}), None),
        old.call_tool("hello_world", json!({"user_name": "2"}), None),
    ]);
    let a = old.post(&batch).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.content_type(), "application/json");
    let body: Value = serde_json::from_slice(&a.body).expect("one JSON value");
    let items = body.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 2, "{body}");
}

#[tokio::test]
async fn without_json_response_requests_are_answered_with_sse() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options()).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let a = c
        .post(&c.call_tool("hello_world", json!({"user_name": "Bo"}), None))
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(
        a.content_type().starts_with("text/event-stream"),
        "{}",
        a.content_type()
    );
    assert_eq!(text_of(&a.messages[0]), "Hello World, Bo");
}

#[tokio::test]
async fn json_response_upgrades_to_sse_when_notifications_come_first() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().json_response(true)).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;

    let a = c
        .post(&c.call_tool("progress", json!({"steps": 6}), Some("p")))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert!(
        a.content_type().starts_with("text/event-stream"),
        "progress before the result must upgrade the answer to SSE, got {:?}",
        a.content_type()
    );
    assert_eq!(
        progress_of(&a.messages, "p"),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(text_of(a.messages.last().expect("a response")), "done");

    // Log messages too.
    c.request("logging/setLevel", json!({"level": "info"}))
        .await;
    let a = c
        .post(&c.call_tool("log", json!({"message": "hi there"}), None))
        .await;
    assert!(
        a.content_type().starts_with("text/event-stream"),
        "{}",
        a.content_type()
    );
    assert_eq!(a.messages.len(), 2, "{:?}", a.messages);
    assert_eq!(a.messages[0]["method"], "notifications/message");
    assert_eq!(a.messages[0]["params"]["data"], "hi there");
    assert_eq!(text_of(&a.messages[1]), "logged");
}

#[tokio::test]
async fn a_client_accepting_only_json_gets_json() {
    for json_response in [true, false] {
        let f = test_server();
        let srv = TestHttpServer::start(f.server, options().json_response(json_response)).await;
        let mut c = srv.client();
        c.connect("2025-06-18").await;
        let call = c.call_tool("progress", json!({"steps": 3}), Some("p"));
        let a = c.post_accepting(Some("application/json"), &call).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text());
        assert_eq!(
            a.content_type(),
            "application/json",
            "json_response={json_response}"
        );
        let body: Value = serde_json::from_slice(&a.body).expect("one JSON value");
        assert_eq!(body["id"], call["id"]);
        assert_eq!(text_of(&body), "done");
    }
}

/// A JSON answer is one JSON-RPC response to the request, never an empty body.
fn assert_json_answer_to(a: &Answer, id: &Value) {
    if a.status == StatusCode::OK && a.content_type() == "application/json" {
        let body: Value = serde_json::from_slice(&a.body)
            .unwrap_or_else(|e| panic!("a 200 application/json answer is not JSON ({e}): {a:?}"));
        assert_eq!(&body["id"], id, "{body}");
        assert!(
            body.get("result").is_some() || body.get("error").is_some(),
            "{body}"
        );
    }
}

/// A JSON-mode session with a `slow` call in flight: the client, the call, its answer.
async fn json_call_in_flight(
    f: &Fixture,
    srv: &TestHttpServer,
) -> (McpHttp, Value, tokio::task::JoinHandle<Answer>) {
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let call = c.call_tool("slow", json!({}), None);
    let in_flight = tokio::spawn({
        let (c, call) = (c.clone(), call.clone());
        async move { c.post(&call).await }
    });
    f.slow.entered().await;
    (c, call, in_flight)
}

#[tokio::test]
async fn a_json_request_whose_session_ends_gets_a_json_rpc_answer() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), options().json_response(true)).await;
    let (c, call, in_flight) = json_call_in_flight(&f, &srv).await;
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);
    let a = within("the in-flight request", in_flight)
        .await
        .expect("no panic");
    assert_json_answer_to(&a, &call["id"]);
}

#[tokio::test]
async fn a_cancelled_json_request_gets_no_empty_json_body() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), options().json_response(true)).await;
    let (c, call, in_flight) = json_call_in_flight(&f, &srv).await;
    let cancel = json!({"requestId": call["id"]});
    let n = c.notify("notifications/cancelled", Some(cancel)).await;
    assert_eq!(n.status, StatusCode::ACCEPTED);
    let a = within("the cancelled request", in_flight)
        .await
        .expect("no panic");
    assert_json_answer_to(&a, &call["id"]);
}

// ---- max_body_bytes -------------------------------------------------------------------

/// A `tools/call` whose body is exactly `size` bytes.
fn body_of_size(size: usize) -> String {
    let base = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hello_world", "arguments": {"user_name": ""}}})
    .to_string();
    let pad = size
        .checked_sub(base.len())
        .expect("size covers the message");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hello_world", "arguments": {"user_name": "x".repeat(pad)}}})
    .to_string();
    assert_eq!(body.len(), size);
    body
}

fn chunked(body: String) -> reqwest::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
        .into_bytes()
        .chunks(100)
        .map(|c| Ok(c.to_vec()))
        .collect();
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

#[tokio::test]
async fn max_body_bytes_limits_bodies_chunked_or_not() {
    let f = test_server();
    let mut o = options().stateless(true);
    o.max_body_bytes = 1000;
    let srv = TestHttpServer::start(f.server, o).await;
    let c = srv.client();

    let a = c.post_raw(body_of_size(1000)).await;
    assert_eq!(
        a.status,
        StatusCode::OK,
        "a body at the limit: {}",
        a.text()
    );
    let a = c.post_raw(body_of_size(1001)).await;
    assert_rejected(&a, StatusCode::PAYLOAD_TOO_LARGE, -32600);
    let a = c.post_raw(chunked(body_of_size(1000))).await;
    assert_eq!(
        a.status,
        StatusCode::OK,
        "a chunked body at the limit: {}",
        a.text()
    );
    let a = c.post_raw(chunked(body_of_size(5000))).await;
    assert_rejected(&a, StatusCode::PAYLOAD_TOO_LARGE, -32600);
}

#[tokio::test]
async fn max_body_bytes_defaults_to_4_mib() {
    assert_eq!(options().max_body_bytes, 4 << 20);
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options().stateless(true)).await;
    let c = srv.client();
    let a = c.post_raw(body_of_size(4 << 20)).await;
    assert_eq!(a.status, StatusCode::OK, "4 MiB is allowed");
    let a = c.post_raw(chunked(body_of_size((4 << 20) + 1))).await;
    assert_rejected(&a, StatusCode::PAYLOAD_TOO_LARGE, -32600);
}

// ---- SSE keep-alive and proxy headers ---------------------------------------------------

#[tokio::test]
async fn idle_streams_get_keep_alive_comments_at_the_configured_interval() {
    let interval = Duration::from_millis(100);
    let f = test_server();
    let mut on = options();
    on.sse_keep_alive = Some(interval);
    let srv = TestHttpServer::start(f.server, on).await;
    let f = test_server();
    let mut off = options();
    off.sse_keep_alive = None;
    let quiet = TestHttpServer::start(f.server, off).await;

    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut q = quiet.client();
    q.connect("2025-06-18").await;
    let mut quiet_stream = q.listen().await;
    let mut stream = c.listen().await;
    // Both streams open with a comment that flushes the headers.
    let first = stream.next_block().await.expect("the opening comment");
    assert!(first.is_comment_only(), "{first:?}");
    let first = quiet_stream
        .next_block()
        .await
        .expect("the opening comment");
    assert!(first.is_comment_only(), "{first:?}");

    let started = tokio::time::Instant::now();
    for _ in 0..4 {
        let b = stream.next_block().await.expect("a keep-alive");
        assert!(b.is_comment_only(), "an idle stream sent {b:?}");
    }
    let took = started.elapsed();
    assert!(
        took >= interval * 3,
        "4 keep-alives came within {took:?}: faster than every {interval:?}"
    );
    // Meanwhile (and for one more interval) the stream without keep-alives stayed silent.
    let more = quiet_stream.next_block_within(interval * 2).await;
    assert!(
        more.is_err(),
        "keep-alives are off, yet the stream sent {more:?}"
    );
}

#[tokio::test]
async fn a_long_post_stream_gets_keep_alives_too() {
    let f = test_server();
    let mut o = options();
    o.sse_keep_alive = Some(Duration::from_millis(50));
    let srv = TestHttpServer::start(f.server, o).await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut s = c
        .post_stream(&c.call_tool("slow", json!({}), None))
        .await
        .expect_stream("slow");
    f.slow.entered().await;
    for _ in 0..2 {
        let b = s.next_block().await.expect("a keep-alive");
        assert!(b.is_comment_only(), "{b:?}");
    }
    f.slow.release();
    let r = s.next_message().await.expect("the result").json();
    assert_eq!(text_of(&r), "slow done");
}

#[tokio::test]
async fn live_sse_answers_carry_the_headers_that_stop_proxy_buffering() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, options()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    // A POST answer still streaming, and the standalone GET stream.
    let post = c
        .post_stream(&c.call_tool("slow", json!({}), None))
        .await
        .expect_stream("slow");
    f.slow.entered().await;
    let get = c.listen().await;
    for (what, s) in [("POST", &post), ("GET", &get)] {
        assert_eq!(
            s.header("cache-control"),
            Some("no-cache, no-transform"),
            "{what}"
        );
        assert_eq!(s.header("x-accel-buffering"), Some("no"), "{what}");
    }
    f.slow.release();
}

// ---- graceful shutdown ------------------------------------------------------------------

#[tokio::test]
async fn graceful_shutdown_ends_idle_streams_with_retry_and_finishes_calls() {
    let f = test_server();
    let mut srv = TestHttpServer::start(f.server, options()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    // An open standalone stream, and a call in flight on a POST stream.
    let mut stream = c.listen().await;
    stream.next_block().await.expect("the opening comment");
    let mut slow_stream = c
        .post_stream(&c.call_tool("slow", json!({}), None))
        .await
        .expect_stream("slow");
    f.slow.entered().await;

    let addr = srv.addr;
    srv.begin_stop();
    // The standalone stream (answering no request) ends, its last block a `retry` telling
    // the client when to come back.
    let rest = stream.rest().await;
    let last = rest.last().expect("GET: the stream ended silently");
    assert!(last.retry.is_some(), "GET: no retry at the end: {rest:?}");
    assert!(rest.iter().all(|b| !b.is_message()), "GET: {rest:?}");
    // The listener is closed: new connections are refused.
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the listener still accepts connections after shutdown"
    );
    // The call in flight runs to its end on its own stream (within the grace).
    f.slow.release();
    let rest = slow_stream.rest().await;
    assert!(
        rest.iter()
            .any(|b| b.is_message() && b.data.as_deref().is_some_and(|d| d.contains("slow done"))),
        "POST: the in-flight call did not finish: {rest:?}"
    );
    within("the stopped server's accept loop", srv.stop()).await;
}

#[tokio::test]
async fn graceful_shutdown_lets_in_flight_requests_finish() {
    let f = test_server();
    let mut srv = TestHttpServer::start(f.server.clone(), options().json_response(true)).await;
    let (_c, _call, in_flight) = json_call_in_flight(&f, &srv).await;
    srv.begin_stop();
    f.slow.release();
    let a = within("the in-flight request", in_flight)
        .await
        .expect("no panic");
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(
        a.messages.first().map(text_of),
        Some("slow done"),
        "the in-flight request did not finish: {a:?}"
    );
    srv.stop().await;
}

// ---- serve on a Unix socket ---------------------------------------------------------------------------

#[cfg(unix)]
#[tokio::test]
async fn serve_serves_mcp_on_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("vellum-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("mcp.sock");
    let _ = std::fs::remove_file(&path);
    let f = test_server();
    let handler = StreamableHttpHandler::for_server(f.server, options());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listener = tokio::net::UnixListener::bind(&path).expect("bind the socket");
    let task = tokio::spawn(
        vellum::transport::http::serve(listener, handler.clone())
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .into_future(),
    );
    vellum_testkit::eventually("the socket file", || path.exists()).await;

    vellum::transport::install_crypto_provider();
    let http = reqwest::Client::builder()
        .unix_socket(path.clone())
        .build()
        .expect("a unix-socket client");
    // Any Host: a Unix socket is not a loopback TCP connection, so nothing to rebind.
    for host in ["localhost", "example.com"] {
        let mut c = McpHttp::with_client(&format!("http://{host}/mcp"), http.clone());
        c.connect("2025-11-25").await;
        let r = c
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": "Unix"}}),
            )
            .await;
        assert_eq!(text_of(&r), "Hello World, Unix");
        let mut s = c.listen().await;
        let b: SseBlock = s.next_block().await.expect("the opening comment");
        assert!(b.is_comment_only(), "{b:?}");
    }
    assert_eq!(handler.session_count(), 2);
    let _ = stop.send(());
    within("serving on the Unix socket to stop", task)
        .await
        .expect("no panic")
        .expect("serving ended cleanly");
    let _ = std::fs::remove_dir_all(&dir);
}
