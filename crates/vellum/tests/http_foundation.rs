//! The foundation over real HTTP on loopback: the seed's `hello_world` server, served by
//! `serve` on `127.0.0.1:0` and talked to with reqwest. Covers the session
//! lifecycle (id, initialized, DELETE), the tool flow, the error answers, and concurrency
//! inside one session.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use vellum::protocol::ProtocolVersion;
use vellum::transport::http::StreamableHttpOptions;

use vellum_demos::hello_world::hello_world_server;
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{SESSION_ID, TestHttpServer, parse_sse};
use vellum_testkit::within;

const LEGACY: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

async fn seed_server() -> TestHttpServer {
    let server = hello_world_server().expect("the seed's server registers");
    TestHttpServer::start(server, StreamableHttpOptions::default()).await
}

fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {response}"))
}

fn is_base64url(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[tokio::test]
async fn initialize_gives_a_fresh_strong_session_id() {
    let srv = seed_server().await;
    let mut ids = Vec::new();
    for version in LEGACY {
        for _ in 0..3 {
            let mut c = srv.client();
            let answer = c.initialize(version).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
            let id = answer
                .header(SESSION_ID)
                .unwrap_or_else(|| panic!("no Mcp-Session-Id for {version}"))
                .to_owned();
            assert!(
                id.len() >= 22 && is_base64url(&id),
                "the session id {id:?} must be at least 22 base64url characters (128 bits)"
            );
            assert!(
                id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
                "the session id {id:?} must be visible ASCII"
            );
            let result = &answer.messages[0]["result"];
            assert_eq!(result["protocolVersion"], version);
            assert_eq!(result["serverInfo"]["name"], "hello-world");
            assert_eq!(result["serverInfo"]["version"], "0.1.0");
            assert!(result["capabilities"]["tools"].is_object(), "{result}");
            ids.push(id);
        }
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "session ids repeat: {ids:?}");
    assert_eq!(srv.handler.session_count(), ids.len());
}

#[tokio::test]
async fn unknown_initialize_version_negotiates_the_latest_legacy_version() {
    let srv = seed_server().await;
    let mut c = srv.client();
    let answer = c.initialize("1999-01-01").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(
        answer.messages[0]["result"]["protocolVersion"],
        ProtocolVersion::LATEST_LEGACY.as_str()
    );
}

#[tokio::test]
async fn initialized_notification_is_accepted_with_an_empty_body() {
    let srv = seed_server().await;
    let mut c = srv.client();
    c.initialize("2025-11-25").await;
    let ack = c.notify("notifications/initialized", None).await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    assert!(
        ack.body.is_empty(),
        "202 must have no body: {:?}",
        ack.text()
    );
}

#[tokio::test]
async fn tools_list_describes_hello_world() {
    let srv = seed_server().await;
    for version in LEGACY {
        let mut c = srv.client();
        c.connect(version).await;
        let list = c.request("tools/list", json!({})).await;
        let tools = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {list}"));
        let hello = tools
            .iter()
            .find(|t| t["name"] == "hello_world")
            .unwrap_or_else(|| panic!("hello_world missing from {list}"));
        assert_eq!(hello["description"], "根据 user_name 返回问候语");
        let schema = &hello["inputSchema"];
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(schema["properties"]["user_name"]["type"], "string");
        assert_eq!(
            schema["properties"]["user_name"]["description"],
            "调用方用户名"
        );
        assert_eq!(schema["required"], json!(["user_name"]));
        // Legacy results carry no modern framing.
        assert!(list["result"].get("resultType").is_none(), "{list}");
    }
}

#[tokio::test]
async fn tools_call_greets_alice_in_every_legacy_version() {
    let srv = seed_server().await;
    for version in LEGACY {
        let mut c = srv.client();
        c.connect(version).await;
        let r = c
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": "Alice"}}),
            )
            .await;
        assert_eq!(text_of(&r), "Hello World, Alice", "{version}: {r}");
        assert_eq!(r["result"]["content"][0]["type"], "text");
        assert_ne!(r["result"]["isError"], true, "{r}");
    }
}

#[tokio::test]
async fn json_response_mode_answers_with_one_json_body() {
    let server = hello_world_server().expect("the seed's server registers");
    let options = StreamableHttpOptions::default().json_response(true);
    let srv = TestHttpServer::start(server, options).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let id = json!(c.next_id());
    let answer = c
        .post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "hello_world", "arguments": {"user_name": "Alice"}}}))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(
        answer.content_type().starts_with("application/json"),
        "{}",
        answer.content_type()
    );
    assert!(answer.events.is_empty());
    assert_eq!(text_of(answer.response(&id)), "Hello World, Alice");
}

#[tokio::test]
async fn bad_arguments_are_a_tool_error_result() {
    let srv = seed_server().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    for args in [
        json!({}),
        json!({"user_name": 42}),
        json!({"name": "Alice"}),
    ] {
        let r = c
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": args}),
            )
            .await;
        assert!(
            r.get("error").is_none(),
            "{args}: expected a result, got {r}"
        );
        assert_eq!(r["result"]["isError"], true, "{args}: {r}");
        assert!(!text_of(&r).is_empty(), "the error must say what is wrong");
    }
}

#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    let srv = seed_server().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let r = c
        .request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r.get("result").is_none());
}

#[tokio::test]
async fn a_request_without_a_session_is_400() {
    let srv = seed_server().await;
    let c = srv.client();
    let answer = c
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.text());
    assert!(
        answer.messages[0]["error"]["code"].is_i64(),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn an_unknown_session_is_404() {
    let srv = seed_server().await;
    let mut c = srv.client();
    c.session = Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into());
    let answer = c
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.text());
}

#[tokio::test]
async fn a_deleted_session_is_404() {
    let srv = seed_server().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    // The session works before DELETE.
    let r = c.request("tools/list", json!({})).await;
    assert!(r["result"]["tools"].is_array());
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);
    let answer = c
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.text());
    assert_eq!(c.delete().await, StatusCode::NOT_FOUND);
    assert_eq!(srv.handler.session_count(), 0);
}

#[tokio::test]
async fn malformed_json_is_400_with_a_parse_error() {
    let srv = seed_server().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    for body in ["{not json", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", ""] {
        let answer = c.post_raw(body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body:?}");
        assert!(answer.content_type().starts_with("application/json"));
        let m = &answer.messages[0];
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        assert_eq!(m["error"]["code"], -32700, "{body:?}: {m}");
        // The id could not be read, so the response has none (never `"id": null`).
        assert!(m.get("id").is_none(), "{m}");
    }
}

#[tokio::test]
async fn concurrent_calls_in_one_session_do_not_block_each_other() {
    const SLOW: usize = 20;
    const FAST: usize = 20;
    let fx = test_server();
    let srv = TestHttpServer::start(fx.server.clone(), StreamableHttpOptions::default()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;

    // SLOW calls, all in flight at once: each one holds until the gate is released.
    let mut slow = Vec::new();
    for _ in 0..SLOW {
        let c = c.clone();
        let id = json!(c.next_id());
        slow.push(tokio::spawn(async move {
            let answer = c
                .post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "slow", "arguments": {}}}))
                .await;
            (id, answer)
        }));
    }
    for _ in 0..SLOW {
        fx.slow.entered().await;
    }

    // Meanwhile FAST calls in the same session all finish, each answer matched to its id.
    let fast = join_all((0..FAST).map(|i| {
        let c = c.clone();
        async move {
            let id = json!(c.next_id());
            let answer = c
                .post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "hello_world", "arguments": {"user_name": format!("user-{i}")}}}))
                .await;
            (i, id, answer)
        }
    }))
    .await;
    for (i, id, answer) in &fast {
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.messages.len(), 1, "{:?}", answer.messages);
        assert_eq!(
            text_of(answer.response(id)),
            format!("Hello World, user-{i}")
        );
    }
    assert!(
        slow.iter().all(|t| !t.is_finished()),
        "a slow call finished before its gate opened"
    );

    fx.slow.release();
    for task in slow {
        let (id, answer) = within("a slow call's answer", task)
            .await
            .expect("the slow call's task did not panic");
        assert_eq!(answer.status, StatusCode::OK);
        assert!(answer.content_type().starts_with("text/event-stream"));
        assert_eq!(text_of(answer.response(&id)), "slow done");
    }
}

#[tokio::test]
async fn get_without_session_is_400_and_other_methods_405() {
    let srv = seed_server().await;
    let c = srv.client();
    let get = c
        .send(c.builder(Method::GET).header("accept", "text/event-stream"))
        .await;
    assert_eq!(get.status, StatusCode::BAD_REQUEST, "{}", get.text());
    let put = c.send(c.builder(Method::PUT)).await;
    assert_eq!(put.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(put.header("allow").is_some_and(|a| a.contains("POST")));
}

#[test]
fn sse_parser_follows_the_event_stream_rules() {
    let stream = ": keep-alive comment\r\n\r\n\
                  id: 7\r\nretry: 1000\r\ndata:\r\n\r\n\
                  event: message\nid: 8\ndata: {\"a\":\ndata:1}\n\n\
                  data:{\"b\":2}\n\n\
                  data: {\"unterminated\":true}";
    let events = parse_sse(stream);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].id.as_deref(), Some("8"));
    assert_eq!(events[0].event.as_deref(), Some("message"));
    assert_eq!(events[0].data, "{\"a\":\n1}");
    assert_eq!(events[1].data, "{\"b\":2}");
}

/// The default build (no feature `http2`) serves HTTP/1.1 only: a client that opens with the
/// HTTP/2 preface gets an HTTP/1.1 error or a closed connection, never a hang, and the
/// server goes on serving. (`scripts/test.sh` runs this file without features for it.)
#[cfg(not(feature = "http2"))]
#[tokio::test]
async fn without_http2_an_h2c_preface_is_refused_and_http1_still_serves() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let srv = seed_server().await;
    let mut tcp = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    within("the connection to close", tcp.read_to_end(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 4") || answer.starts_with("HTTP/1.1 5"),
        "{answer}"
    );
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    assert!(c.greet().await.contains("Alice"));
}
