//! How SSE events are framed on the wire: read over real loopback HTTP on a raw socket, with
//! the HTTP/1.1 chunked encoding parsed by hand (so every chunk boundary the server wrote is
//! seen, whatever the reads return), each live SSE event is exactly one chunk. The `paced`
//! tool makes each event ready on its own, so no two can share a chunk by luck.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use vellum::store::MemoryEventStore;
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::fixture::{Fixture, test_server};
use vellum_testkit::http::{McpHttp, TestHttpServer, modern_body};
use vellum_testkit::within;

/// A response read chunk by chunk.
struct Chunked {
    r: BufReader<TcpStream>,
}

impl Chunked {
    /// Sends `head` + `body` on a new connection and reads the response head, which must be
    /// a 200 SSE response in the chunked encoding.
    async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Chunked {
        let body = body.to_string();
        let mut req = String::from("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!(
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ));
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(req.as_bytes()).await.unwrap();
        let mut r = BufReader::new(s);
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            within("the response head", r.read_line(&mut line))
                .await
                .unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push(line.trim_end().to_ascii_lowercase());
        }
        assert!(head[0].starts_with("http/1.1 200"), "{head:?}");
        assert!(
            head.iter().any(|h| h == "content-type: text/event-stream"),
            "{head:?}"
        );
        assert!(
            head.iter().any(|h| h == "transfer-encoding: chunked"),
            "a live stream is chunked: {head:?}"
        );
        Chunked { r }
    }

    /// The next chunk's data; `None` for the last (empty) chunk.
    async fn chunk(&mut self) -> Option<Vec<u8>> {
        let mut size = String::new();
        within("a chunk", self.r.read_line(&mut size))
            .await
            .unwrap();
        let hex = size.trim_end().split(';').next().unwrap_or_default();
        let n = usize::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("a chunk size: {size:?}"));
        let mut data = vec![0; n + 2];
        within("a chunk's data", self.r.read_exact(&mut data))
            .await
            .unwrap();
        assert_eq!(&data[n..], b"\r\n", "a chunk ends with CRLF");
        data.truncate(n);
        (n > 0).then_some(data)
    }
}

/// The SSE events of one chunk, asserting that the chunk holds whole events only.
fn events_of(chunk: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(chunk).unwrap();
    assert!(
        text.ends_with("\n\n"),
        "a chunk ends where an event ends: {text:?}"
    );
    text.strip_suffix("\n\n")
        .unwrap()
        .split("\n\n")
        .map(str::to_owned)
        .collect()
}

/// The JSON of an event's `data:` line.
fn data_of(event: &str) -> Value {
    let data = event
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_default();
    if data.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(data).unwrap()
    }
}

/// Drives one `paced` call of `steps` on `c`: allows one progress notification at a time
/// and reads exactly one chunk for it. Returns the events read after the stream opened.
async fn paced_chunks(f: &Fixture, mut c: Chunked, steps: u32, first: Option<&str>) -> Vec<String> {
    if let Some(what) = first {
        // The stream opens with its priming event (2025-11-25 with ids), alone in a chunk.
        let opening = events_of(&c.chunk().await.expect("the opening chunk"));
        assert_eq!(opening.len(), 1, "{what}: {opening:?}");
        assert_eq!(data_of(&opening[0]), Value::Null, "{what}: a priming event");
    }
    let mut events = Vec::new();
    for step in 1..=steps {
        f.pace.allow(1);
        let chunk = c.chunk().await.expect("a chunk per step");
        let got = events_of(&chunk);
        if step < steps {
            // Nothing else is ready: the one event is the one chunk.
            assert_eq!(got.len(), 1, "step {step}: one event per chunk: {got:?}");
            let progress = data_of(&got[0])["params"]["progress"].as_f64();
            assert_eq!(progress, Some(f64::from(step)), "{got:?}");
        }
        events.extend(got);
    }
    // The result may share the last step's chunk (ready together) or come in its own.
    while events.len() < steps as usize + 1 {
        let chunk = c.chunk().await.expect("the result");
        events.extend(events_of(&chunk));
    }
    assert_eq!(events.len(), steps as usize + 1, "{events:?}");
    assert_eq!(
        data_of(events.last().unwrap())["result"]["content"][0]["text"],
        "paced done"
    );
    assert!(
        c.chunk().await.is_none(),
        "the stream ends after the result"
    );
    events
}

#[tokio::test]
async fn each_live_event_of_a_legacy_session_is_one_chunk() {
    for store in [false, true] {
        let f = test_server();
        let mut o = StreamableHttpOptions::default();
        if store {
            o = o.event_store(Arc::new(MemoryEventStore::default()));
        }
        let t = TestHttpServer::start(f.server.clone(), o).await;
        let mut c = McpHttp::new(&t.url);
        c.connect("2025-11-25").await;
        let session = c.session.clone().unwrap();
        let call = c.call_tool("paced", json!({"steps": 4}), Some("p"));
        let stream = Chunked::post(
            t.addr,
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            &call,
        )
        .await;
        let events = paced_chunks(&f, stream, 4, Some("legacy")).await;
        // A streaming answer of a legacy session is resumable: every event has its id.
        assert!(
            events.iter().all(|e| e.starts_with("id: ")),
            "store {store}: {events:?}"
        );
    }
}

#[tokio::test]
async fn each_live_event_of_a_modern_request_is_one_chunk() {
    let f = test_server();
    let t = TestHttpServer::serve(f.server.clone()).await;
    let mut params = json!({"name": "paced", "arguments": {"steps": 3}});
    params["_meta"] = json!({"progressToken": "m"});
    let body = modern_body(json!(1), "tools/call", params);
    let stream = Chunked::post(
        t.addr,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "paced"),
        ],
        &body,
    )
    .await;
    let events = paced_chunks(&f, stream, 3, None).await;
    assert!(
        events.iter().all(|e| e.starts_with("data: ")),
        "no ids on 2026-07-28: {events:?}"
    );
}
