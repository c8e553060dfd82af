//! A corpus of hostile and malformed requests, replayed over raw TCP: one row per case (the
//! bytes sent, the status expected), and after every row a fresh client must still be
//! served and the handler must have logged no panic.
//!
//! A row's bytes are sent whole on a fresh connection; `{host}` is replaced by the server's
//! loopback address, `{session}` by a live session's id. The expected status is the first
//! line of the answer; 0 means the server must close the connection without answering.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions};

use vellum_testkit::fixture::test_server;
use vellum_testkit::http::TestHttpServer;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#;
const ACCEPT: &str = "application/json, text/event-stream";

/// One case: its name, the request, the status expected (0: closed without an answer).
struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    status: u16,
}

/// A POST with these extra header lines (each ending in CRLF) and this body.
fn post(target: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {target} HTTP/1.1\r\nhost: {{host}}\r\ncontent-type: application/json\r\naccept: {ACCEPT}\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A POST without the default Host/Content-Type lines: the test writes every header.
fn post_bare(headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn get(extra: &str) -> Vec<u8> {
    format!("GET /mcp HTTP/1.1\r\nhost: {{host}}\r\naccept: text/event-stream\r\n{extra}\r\n")
        .into_bytes()
}

fn corpus() -> Vec<Case> {
    let session = "mcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\n";
    let session_0326 = "mcp-session-id: {session0326}\r\nmcp-protocol-version: 2025-03-26\r\n";
    let batch = |n: usize| {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#))
            .collect();
        format!("[{}]", items.join(","))
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_obj = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{}1{}}}"#,
        "{\"a\":".repeat(5_000),
        "}".repeat(5_000)
    );
    let mut big_header = format!("x-filler: {}\r\n", "a".repeat(70 * 1024)).into_bytes();
    let mut big = post("/mcp", "", INIT);
    let at = big.iter().position(|b| *b == b'\n').unwrap() + 1;
    big.splice(at..at, big_header.drain(..));
    let c = |name, bytes, status| Case {
        name,
        bytes,
        status,
    };
    vec![
        // The request line and head.
        c("garbage request line", b"\x00\x01\x02 garbage\r\n\r\n".to_vec(), 400),
        c("HTTP/0.9 style", b"GET /mcp\r\n\r\n".to_vec(), 400),
        c("unknown method", {
            let mut v = post("/mcp", "", INIT);
            v.splice(0..4, *b"BREW");
            v
        }, 405),
        c("headers past 64 KiB", big, 431),
        c("101 header lines", post("/mcp", &(0..101).map(|i| format!("x-h{i}: 1\r\n")).collect::<String>(), INIT), 431),
        c("space before colon", post("/mcp", "x-bad : 1\r\n", INIT), 400),
        // RFC 9112 §2.2 lets a recipient take a bare LF as a line end: it is read, then judged.
        c("bare LF line ends", b"POST /mcp HTTP/1.1\nhost: {host}\ncontent-length: 2\n\n{}".to_vec(), 415),
        c("content-length and chunked", post("/mcp", "transfer-encoding: chunked\r\n", INIT), 400),
        c("two content-lengths", post("/mcp", "content-length: 5\r\n", INIT), 400),
        c("negative content-length", post_bare("host: {host}\r\ncontent-type: application/json\r\ncontent-length: -1\r\n", ""), 400),
        c("bad chunk size", b"POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(), 400),
        // Host and the target's authority.
        c("foreign Host", post_bare("host: evil.com\r\ncontent-type: application/json\r\n", INIT), 403),
        c("no Host", post_bare("content-type: application/json\r\n", INIT), 400),
        c("two Hosts, the first ours", post_bare("host: {host}\r\nhost: evil.com\r\ncontent-type: application/json\r\n", INIT), 400),
        c("bracketed host with junk", post_bare("host: [::1]evil.com\r\ncontent-type: application/json\r\n", INIT), 403),
        c("bracketed IPv4", post_bare("host: [127.0.0.1]:80\r\ncontent-type: application/json\r\n", INIT), 403),
        c("IPv6 zone id", post_bare("host: [::1%25lo]:80\r\ncontent-type: application/json\r\n", INIT), 403),
        c("localhost with a trailing dot", post_bare("host: localhost.\r\ncontent-type: application/json\r\n", INIT), 403),
        c("absolute-form foreign authority", post("http://evil.com/mcp", "", INIT), 403),
        c("absolute-form ours", post("http://{host}/mcp", "", INIT), 200),
        // Origin and fetch metadata.
        c("foreign Origin", post("/mcp", "origin: http://evil.com\r\n", INIT), 403),
        c("Origin null", post("/mcp", "origin: null\r\n", INIT), 403),
        c("two Origins", post("/mcp", "origin: http://{host}\r\norigin: http://{host}\r\n", INIT), 400),
        c("cross-site fetch", post("/mcp", "sec-fetch-site: cross-site\r\n", INIT), 403),
        c("two Sec-Fetch-Site", post("/mcp", "sec-fetch-site: same-origin\r\nsec-fetch-site: cross-site\r\n", INIT), 400),
        // Content negotiation.
        c("no Content-Type", post_bare("host: {host}\r\n", INIT), 415),
        c("two Content-Types", post("/mcp", "content-type: text/plain\r\n", INIT), 400),
        c("Accept q=0 for both", post_bare("host: {host}\r\ncontent-type: application/json\r\naccept: application/json;q=0, text/event-stream;q=0\r\n", INIT), 406),
        c("Accept wildcard q=0", post_bare("host: {host}\r\ncontent-type: application/json\r\naccept: */*;q=0\r\n", INIT), 406),
        // Bodies.
        c("body not JSON", post("/mcp", "", "{not json"), 400),
        c("empty body", post("/mcp", "", ""), 400),
        c("invalid UTF-8 body", post("/mcp", "", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\u{0}\u{ffff}\"}").into_iter().map(|b| if b == 0 { 0xff } else { b }).collect(), 400),
        c("JSON nested 10,000 deep", post("/mcp", "", &deep), 400),
        // Kept raw (never parsed into a tree), and `ping` ignores its params.
        c("params nested 5,000 deep", post("/mcp", session, &deep_obj), 200),
        c("id null", post("/mcp", "", r#"{"jsonrpc":"2.0","id":null,"method":"initialize"}"#), 400),
        c("jsonrpc 1.0", post("/mcp", "", r#"{"jsonrpc":"1.0","id":1,"method":"initialize"}"#), 400),
        c("empty batch", post("/mcp", "", "[]"), 400),
        c("body past the size limit", b"POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: 5000000\r\n\r\n".to_vec(), 413),
        // Sessions and versions.
        c("unknown session", post("/mcp", "mcp-session-id: nope\r\n", CALL), 404),
        c("two session ids", post("/mcp", "mcp-session-id: {session}\r\nmcp-session-id: {session}\r\n", CALL), 400),
        c("two versions", post("/mcp", "mcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\nmcp-protocol-version: 2025-06-18\r\n", CALL), 400),
        c("unsupported version", post("/mcp", "mcp-session-id: {session}\r\nmcp-protocol-version: 1999-01-01\r\n", CALL), 400),
        c("batch in a 2025-06-18 session", post("/mcp", session, &batch(2)), 400),
        c("batch in a 2025-06-18 session, no version header", post("/mcp", "mcp-session-id: {session}\r\n", &batch(2)), 400),
        c("batch in a 2025-03-26 session", post("/mcp", session_0326, &batch(2)), 200),
        c("batch past the entry cap", post("/mcp", session_0326, &batch(65)), 400),
        c("batch at the in-flight cap", post("/mcp", session_0326, &batch(64)), 200),
        c("initialize in a batch", post("/mcp", session_0326, &format!("[{INIT},{INIT}]")), 400),
        // GET streams.
        c("GET without session", get(""), 400),
        c("GET with a malformed Last-Event-ID", get("mcp-session-id: {session}\r\nlast-event-id: ../../etc\r\n"), 400),
        c("GET with a non-ASCII Last-Event-ID", {
            let mut g = get("mcp-session-id: {session}\r\nlast-event-id: 0-1\u{e9}\r\n");
            g.retain(|b| *b != 0xc3);
            g
        }, 400),
        c("GET with two Last-Event-IDs", get("mcp-session-id: {session}\r\nlast-event-id: 0-1\r\nlast-event-id: 0-2\r\n"), 400),
        // Methods.
        c("DELETE without session", b"DELETE /mcp HTTP/1.1\r\nhost: {host}\r\n\r\n".to_vec(), 400),
        c("PUT", b"PUT /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\n\r\n".to_vec(), 405),
        c("OPTIONS without CORS", b"OPTIONS /mcp HTTP/1.1\r\nhost: {host}\r\norigin: http://{host}\r\n\r\n".to_vec(), 405),
    ]
}

/// `bytes` with each placeholder replaced (byte-wise: some cases are not UTF-8).
fn fill(bytes: &[u8], pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (from, to) in pairs {
        let (from, to) = (from.as_bytes(), to.as_bytes());
        let mut i = 0;
        while i + from.len() <= out.len() {
            if &out[i..i + from.len()] == from {
                out.splice(i..i + from.len(), to.iter().copied());
                i += to.len();
            } else {
                i += 1;
            }
        }
    }
    out
}

/// The first status of what the server answers to `bytes` (0: closed without answering).
async fn replay(addr: std::net::SocketAddr, bytes: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // A server may close before reading everything (a refused head): that is an answer too.
    let _ = s.write_all(bytes).await;
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
            if out.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// Records every log line of the handler (panics would appear here).
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_request_is_refused_and_the_server_serves_on() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    let mut o = StreamableHttpOptions::default();
    o.logger = Some(tracing::Dispatch::new(subscriber));
    o.max_in_flight_per_session = Some(64);
    let handler = StreamableHttpHandler::for_server(test_server().server, o);
    let srv = TestHttpServer::start_handler(handler).await;
    let mut modern = srv.client();
    modern.connect("2025-06-18").await;
    let mut old = srv.client();
    old.connect("2025-03-26").await;
    let (s, s0326) = (
        modern.session.clone().unwrap(),
        old.session.clone().unwrap(),
    );
    let host = srv.addr.to_string();

    let mut failures = Vec::new();
    let cases = corpus();
    for case in &cases {
        let bytes = fill(
            &case.bytes,
            &[
                ("{host}", &host),
                ("{session0326}", &s0326),
                ("{session}", &s),
            ],
        );
        let (status, head) = replay(srv.addr, &bytes).await;
        if status != case.status {
            failures.push(format!(
                "{}: {status}, expected {}: {:?}",
                case.name,
                case.status,
                head.lines().next().unwrap_or("")
            ));
        }
        // A fresh client is served after every case.
        let mut fresh = srv.client();
        assert!(
            fresh.try_connect("2025-06-18").await,
            "after {:?} a fresh client was not served",
            case.name
        );
    }
    let log = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    assert!(!log.contains("panicked"), "a panic was logged:\n{log}");
    assert!(
        failures.is_empty(),
        "{} of {} cases answered otherwise:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn client_input_echoed_in_an_error_is_cut_to_256_bytes() {
    let f = test_server();
    let srv = TestHttpServer::serve(f.server.clone()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let long = "m".repeat(1 << 20);
    let asks = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": long}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": long, "arguments": {}}}),
    ];
    for (ask, code) in asks.iter().zip([-32601, -32602]) {
        let a = c.post(ask).await;
        let answer = a.last();
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.ends_with(&format!("{}…", "m".repeat(256))),
            "{message}"
        );
        assert!(a.body.len() < 1024, "an answer of {} bytes", a.body.len());
    }
}
