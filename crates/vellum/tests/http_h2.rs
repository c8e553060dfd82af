//! HTTP/2 on the library's own accept loop, beside HTTP/1.1 on the same port (h2c with prior
//! knowledge here; h2 by ALPN over TLS is in `http_tls.rs`): calls, SSE answers and their
//! resumption, every handler option answering exactly as over HTTP/1.1, one connection
//! carrying many sessions' streams where a stalled stream blocks none of the others, the
//! limits the server advertises, and floods of stream resets and oversized headers that the
//! server survives while it serves a fresh client.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use reqwest::{StatusCode, Version};
use serde_json::{Value, json};
use vellum::store::MemoryEventStore;
use vellum::transport::http::{
    ConnectionInfo, H2_MAX_CONCURRENT_STREAMS, StreamableHttpHandler, StreamableHttpOptions,
};
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{McpHttp, Streamed, TestHttpServer};
use vellum_testkit::within;

fn h2_client() -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap()
}

fn h1_client() -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .build()
        .unwrap()
}

fn with_store() -> StreamableHttpOptions {
    StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::default()))
}

#[tokio::test]
async fn calls_and_a_resumed_sse_answer_over_h2c() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), with_store()).await;
    let mut c = McpHttp::with_client(&srv.url, h2_client());
    let r = c.get(None).send().await.unwrap();
    assert_eq!(r.version(), Version::HTTP_2, "prior knowledge speaks h2");
    c.connect("2025-11-25").await;
    assert!(c.greet().await.contains("Alice"));
    let a = c.modern("tools/list", json!({})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());

    let call = c.call_tool("paced", json!({"steps": 3}), Some("p"));
    let mut s = c.post_stream(&call).await.expect_stream("a paced call");
    f.pace.allow(1);
    let first = s.next_message().await.expect("progress 1");
    let last = first.id.clone().expect("an event id");
    // Dropping the reader resets the h2 stream; the connection stays.
    drop(s);
    f.pace.allow(2);
    // Never refused: the resume takes the stream over whether or not the reset reached
    // the server yet.
    let mut resumed = match c.get_stream(Some(&last)).await {
        Streamed::Stream(s) => s,
        Streamed::Whole(a) => panic!("resume: {} {}", a.status, a.text()),
    };
    let rest = resumed.rest_messages().await;
    assert_eq!(rest.len(), 3, "{rest:?}");
    assert_eq!(rest[0]["params"]["progress"], 2.0);
    assert_eq!(rest[2]["id"], call["id"]);
}

/// What a conversation answered, without what differs by nature between two runs (session
/// ids, event ids).
async fn conversation(url: &str, http: reqwest::Client) -> Vec<Value> {
    let mut c = McpHttp::with_client(url, http);
    let mut seen = Vec::new();
    let init = c.initialize("2025-11-25").await;
    seen.push(json!([
        init.status.as_u16(),
        init.content_type(),
        init.last()["result"]["protocolVersion"]
    ]));
    let ack = c.notify("notifications/initialized", None).await;
    seen.push(json!([ack.status.as_u16(), ack.text()]));
    for message in [
        c.call_tool("hello_world", json!({"user_name": "Alice"}), None),
        c.call_tool("progress", json!({"steps": 2}), Some("t")),
        json!({"jsonrpc": "2.0", "id": 90, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 91, "method": "no/such/method"}),
    ] {
        let a = c.post(&message).await;
        let mut messages = a.messages.clone();
        for m in &mut messages {
            if let Some(o) = m.as_object_mut() {
                o.remove("id");
            }
        }
        seen.push(json!([a.status.as_u16(), a.content_type(), messages]));
    }
    let get = c.get(None).send().await.unwrap();
    seen.push(json!([get.status().as_u16()]));
    drop(get);
    seen.push(json!([c.delete().await.as_u16()]));
    seen
}

/// Builds one set of handler options.
type MakeOptions = fn() -> StreamableHttpOptions;

#[tokio::test]
async fn every_handler_option_answers_over_h2_exactly_as_over_http1() {
    let options: [(&str, MakeOptions); 4] = [
        ("default", StreamableHttpOptions::default),
        ("stateless", || {
            let mut o = StreamableHttpOptions::default();
            o.stateless = true;
            o
        }),
        ("json", || {
            let mut o = StreamableHttpOptions::default();
            o.json_response = true;
            o
        }),
        ("stateless json", || {
            let mut o = StreamableHttpOptions::default();
            o.stateless = true;
            o.json_response = true;
            o
        }),
    ];
    for (name, o) in options {
        let f = test_server();
        let srv = TestHttpServer::start(f.server.clone(), o()).await;
        let h1 = conversation(&srv.url, h1_client()).await;
        let h2 = conversation(&srv.url, h2_client()).await;
        assert_eq!(h1, h2, "{name}: HTTP/1.1 and HTTP/2 answered differently");
    }
}

#[tokio::test]
async fn one_connection_carries_many_sessions_and_a_stalled_stream_blocks_none() {
    let f = test_server();
    let remotes = Arc::new(Mutex::new(HashSet::new()));
    let seen = remotes.clone();
    let layer =
        tower::util::MapRequestLayer::new(move |req: http::Request<hyper::body::Incoming>| {
            if let Some(info) = http::Request::extensions(&req).get::<ConnectionInfo>() {
                seen.lock().unwrap().insert(info.remote);
            }
            req
        });
    let handler = StreamableHttpHandler::for_server(f.server.clone(), with_store());
    let srv = TestHttpServer::start_with_layer(handler, |_| layer).await;
    // A small stream window, so a stream nobody reads stalls after 64 KiB.
    vellum::transport::install_crypto_provider();
    let http = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .http2_initial_stream_window_size(65_535)
        .http2_adaptive_window(false)
        .build()
        .unwrap();

    // The stalled one: a call whose thousands of progress notifications nobody reads.
    let mut stalled = McpHttp::with_client(&srv.url, http.clone());
    stalled.connect("2025-11-25").await;
    let call = stalled.call_tool("paced", json!({"steps": 5000}), Some("big"));
    let stuck = stalled
        .post_stream(&call)
        .await
        .expect_stream("the paced call");
    f.pace.allow(5000);

    // Many sessions, each with its standalone stream open, on the same client.
    let mut sessions = Vec::new();
    for _ in 0..16 {
        let mut c = McpHttp::with_client(&srv.url, http.clone());
        within(
            "a session beside the stalled stream",
            c.connect("2025-11-25"),
        )
        .await;
        let g = within("a GET stream", c.listen()).await;
        sessions.push((c, g));
    }
    // Each still gets calls answered and its stream's events delivered.
    for (c, _) in &sessions {
        assert!(
            within("a call beside the stalled stream", c.greet())
                .await
                .contains("Alice")
        );
    }
    f.server
        .add_tool(
            vellum::prelude::Tool::new("late", "announced to every session"),
            |_ctx: vellum::prelude::RequestContext,
             _req: vellum::prelude::CallToolRequest,
             _in: vellum::server::NoArgs| async move {
                Ok::<_, vellum::prelude::HandlerError>(vellum::prelude::CallToolResult::text("x"))
            },
        )
        .unwrap();
    for (_, g) in &mut sessions {
        let b = within("list_changed on each stream", g.next_message())
            .await
            .expect("the stream is open");
        assert_eq!(b.json()["method"], "notifications/tools/list_changed");
    }
    let remotes = remotes.lock().unwrap().clone();
    assert_eq!(remotes.len(), 1, "all on one connection: {remotes:?}");
    drop(stuck);
}

#[tokio::test]
async fn the_server_advertises_its_stream_limit_and_survives_a_reset_flood() {
    let f = test_server();
    let srv = TestHttpServer::serve(f.server.clone()).await;
    let tcp = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let conn = tokio::spawn(conn);
    let mut client = within("h2 ready", client.ready()).await.unwrap();

    // A first request, so the server's SETTINGS have been applied.
    let req = http::Request::get(format!("http://{}/mcp", srv.addr))
        .body(())
        .unwrap();
    let (resp, _) = client.send_request(req, true).unwrap();
    within("an h2 answer", resp).await.unwrap();
    assert_eq!(
        client.current_max_send_streams(),
        H2_MAX_CONCURRENT_STREAMS as usize
    );

    // Rapid reset: open streams and cancel each at once, many thousand times.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"}}})
    .to_string();
    let mut sent = 0;
    for _ in 0..20_000 {
        match within("h2 ready during the flood", client.clone().ready()).await {
            Ok(c) => client = c,
            Err(_) => break,
        }
        let req = http::Request::post(format!("http://{}/mcp", srv.addr))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(())
            .unwrap();
        let Ok((_, mut stream)) = client.send_request(req, false) else {
            break;
        };
        let _ = stream.send_data(body.clone().into(), false);
        stream.send_reset(h2::Reason::CANCEL);
        sent += 1;
    }
    // The flooding connection is told to go away (or its stream count stays bounded by the
    // resets the server tolerates); either way it ends, and not the server.
    let ended = within("the flooding connection to end", async {
        drop(client);
        conn.await
    })
    .await
    .unwrap();
    eprintln!("{sent} streams opened and reset; the connection ended with {ended:?}");
    assert!(sent > 0);
    // Every flooded request was cancelled before its body ended: none became a session.
    assert_eq!(srv.handler.session_count(), 0);

    // A fresh client is served at once.
    let mut c = McpHttp::with_client(&srv.url, h2_client());
    within("a session after the flood", c.connect("2025-11-25")).await;
    assert!(c.greet().await.contains("Alice"));
}

#[tokio::test]
async fn an_oversized_header_list_is_refused_and_the_server_serves_on() {
    let f = test_server();
    let srv = TestHttpServer::serve(f.server.clone()).await;
    let big = "x".repeat(100 * 1024);
    let r = h2_client()
        .post(&srv.url)
        .header("x-big", big)
        .body("{}")
        .send()
        .await;
    match r {
        Ok(r) => assert_eq!(
            r.status(),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "a 100 KiB header was accepted"
        ),
        Err(e) => eprintln!("refused at the connection: {e}"),
    }
    let mut c = McpHttp::with_client(&srv.url, h2_client());
    c.connect("2025-11-25").await;
    assert!(c.greet().await.contains("Alice"));
}

#[tokio::test]
async fn a_host_header_that_differs_from_the_authority_is_refused() {
    let f = test_server();
    let srv = TestHttpServer::serve(f.server.clone()).await;
    let tcp = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let _conn = tokio::spawn(conn);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "h", "version": "0"}}})
    .to_string();
    // RFC 9113 §8.3.1: `:authority` 127.0.0.1 with `host: evil.com` is malformed; the same
    // request with a `host` that agrees is served.
    for (host, expected) in [("evil.com", 400), (&*srv.addr.to_string(), 200)] {
        let mut client = within("h2 ready", client.clone().ready()).await.unwrap();
        let req = http::Request::post(format!("http://{}/mcp", srv.addr))
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(())
            .unwrap();
        let (resp, mut stream) = client.send_request(req, false).unwrap();
        stream.send_data(body.clone().into(), true).unwrap();
        let resp = within("an h2 answer", resp).await.unwrap();
        assert_eq!(resp.status().as_u16(), expected, "host {host}");
    }
    assert_eq!(srv.handler.session_count(), 1);
}

/// Writes `pieces` one after another on a fresh loopback connection to `addr` (each its own
/// segment: no Nagle), so that the server may look at the first bytes before the rest has
/// come; returns the connection.
fn send_in_pieces(addr: std::net::SocketAddr, pieces: &[&[u8]]) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    for p in pieces {
        s.write_all(p).unwrap();
        s.flush().unwrap();
    }
    s
}

#[tokio::test]
async fn the_version_is_told_from_first_bytes_that_come_in_pieces() {
    use std::io::Read;
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), StreamableHttpOptions::default()).await;
    let addr = srv.addr;
    tokio::task::spawn_blocking(move || {
        // The preface in two pieces, then an empty SETTINGS frame: the server's first frame
        // is its own SETTINGS (type 4), so it speaks HTTP/2.
        let preface: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        let settings: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
        let mut h2 = send_in_pieces(addr, &[&preface[..5], &preface[5..], settings]);
        let mut frame_head = [0u8; 9];
        h2.read_exact(&mut frame_head)
            .expect("the server's first HTTP/2 frame");
        assert_eq!(frame_head[3], 4, "the server's first frame is SETTINGS");

        // An HTTP/1.1 request whose first byte is also the preface's ('P'), then the rest:
        // answered as HTTP/1.1. And one whose first bytes already differ, in pieces too.
        for pieces in [[&b"P"[..], &b"OST"[..]], [&b"POST"[..], &b""[..]]] {
            let host = addr.to_string();
            let rest = vellum_testkit::raw::build(
                "",
                "/mcp",
                &vellum_testkit::raw::post_headers(&host, &[]),
                Some(vellum_testkit::raw::INIT),
            );
            let mut h1 = send_in_pieces(addr, &[pieces[0], pieces[1], &rest]);
            let r = vellum_testkit::raw::read_response(&mut h1);
            assert_eq!(r.status, 200, "initialize over HTTP/1.1 sent as {pieces:?}");
        }
    })
    .await
    .unwrap();
}
