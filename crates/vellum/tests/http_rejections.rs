//! Every row of `docs/http-status.md`, over real HTTP on loopback.
//!
//! The doc is the source of truth: each test names the row it proves by its condition text,
//! and the expected status, headers (`Allow`, `Retry-After`), error data and JSON-RPC code
//! are read from that row of the doc. `every_row_of_the_doc_is_tested` fails when a row has
//! no test or a test names a row the doc no longer has, so the two stay in sync.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use vellum::protocol::RequestId;
use vellum::store::{EventId, EventStore, MemoryEventStore, StoreError, StoredEvent, StreamId};
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions};

use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{
    ACCEPT_BOTH, Answer, MODERN, McpHttp, PROTOCOL_VERSION, SESSION_ID, Streamed, TestHttpServer,
    message_ids, modern_body, paced_answer,
};
use vellum_testkit::within;

// ---- the doc ------------------------------------------------------------------------------------

const EVERY: &str = "Every era";
const LEGACY: &str = "Legacy versions";
const MODERN_ERA: &str = "Modern version";

/// What a row of the doc says the answer is.
#[derive(Debug, Clone)]
struct Row {
    section: String,
    condition: String,
    status: u16,
    /// `Some(None)`: an `Allow` header; `Some(Some(v))`: exactly `v`.
    allow: Option<Option<String>>,
    retry_after: bool,
    data_keys: Vec<String>,
    empty_body: bool,
    /// The error rides the JSON body or SSE stream of a 200, not an error body.
    in_stream: bool,
    /// `None`: no error; `Some(None)`: the request's own error; `Some(Some(c))`: `c`.
    code: Option<Option<i64>>,
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn doc_rows() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/http-status.md");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut section = String::new();
    let mut rows = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = h.to_owned();
            continue;
        }
        if !line.starts_with("| ") || line.starts_with("| condition") {
            continue;
        }
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split(" | ")
            .map(str::trim)
            .collect();
        assert_eq!(cells.len(), 3, "a row of three cells: {line}");
        let (condition, status, code) = (cells[0], cells[1], cells[2]);
        let allow = status.contains("Allow").then(|| {
            backticked(status)
                .iter()
                .find_map(|b| b.strip_prefix("Allow: ").map(str::to_owned))
        });
        let data_keys = match status.split_once("data:") {
            Some((_, rest)) => backticked(rest),
            None => Vec::new(),
        };
        rows.push(Row {
            section: section.clone(),
            condition: condition.to_owned(),
            status: status[..3]
                .parse()
                .unwrap_or_else(|_| panic!("a status: {line}")),
            allow,
            retry_after: status.contains("Retry-After"),
            data_keys,
            empty_body: status.contains("empty body"),
            in_stream: status.contains("stream"),
            code: match code {
                "—" => None,
                "as produced" => Some(None),
                c => Some(Some(c.parse().unwrap_or_else(|_| panic!("a code: {line}")))),
            },
        });
    }
    rows
}

fn row(section: &str, condition: &str) -> Row {
    doc_rows()
        .into_iter()
        .find(|r| r.section.starts_with(section) && r.condition == condition)
        .unwrap_or_else(|| panic!("docs/http-status.md has no row {section:?} / {condition:?}"))
}

/// Asserts `a` is what the row says (`produced`: the code when the row says "as produced").
fn check(section: &str, condition: &str, a: &Answer, produced: Option<i64>) -> Value {
    let r = row(section, condition);
    let what = format!("{section} / {condition}");
    assert_eq!(a.status.as_u16(), r.status, "{what}: {}", a.text());
    match &r.allow {
        Some(None) => assert!(a.header("allow").is_some(), "{what}: no Allow"),
        Some(Some(v)) => assert_eq!(a.header("allow"), Some(v.as_str()), "{what}"),
        None => {}
    }
    if r.retry_after {
        let v = a
            .header("retry-after")
            .unwrap_or_else(|| panic!("{what}: no Retry-After"));
        assert!(v.parse::<u64>().is_ok(), "{what}: Retry-After {v:?}");
    }
    if r.empty_body {
        assert!(a.body.is_empty(), "{what}: a body {:?}", a.text());
    }
    let Some(code) = r.code else {
        return Value::Null;
    };
    let code = code
        .or(produced)
        .unwrap_or_else(|| panic!("{what}: which code?"));
    if r.in_stream {
        let e = a
            .messages
            .iter()
            .find(|m| m["error"]["code"] == code)
            .unwrap_or_else(|| panic!("{what}: no error {code} in {:?}", a.messages));
        return e.clone();
    }
    assert_eq!(a.content_type(), "application/json", "{what}: {}", a.text());
    let body: Value = serde_json::from_slice(&a.body)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", a.text()));
    assert_eq!(body["jsonrpc"], "2.0", "{what}: {body}");
    assert_eq!(body["error"]["code"], code, "{what}: {body}");
    assert!(body["error"]["message"].is_string(), "{what}: {body}");
    assert!(
        body.get("id") != Some(&Value::Null),
        "{what}: \"id\": null in {body}"
    );
    for k in &r.data_keys {
        assert!(
            body["error"]["data"].get(k).is_some(),
            "{what}: no data.{k} in {body}"
        );
    }
    body
}

/// Every row the tests below prove, by section and condition.
const TESTED: &[(&str, &str)] = &[
    (EVERY, HEAD_SIZE),
    (EVERY, SINGLETON),
    (EVERY, NO_HOST),
    (EVERY, BAD_AUTHORITY),
    (EVERY, HOST),
    (EVERY, ABSOLUTE_FORM),
    (EVERY, ORIGIN),
    (EVERY, SEC_FETCH_SITE),
    (EVERY, METHOD),
    (EVERY, CONTENT_TYPE),
    (EVERY, ACCEPT),
    (EVERY, ACCEPT_Q0),
    (EVERY, TOO_LARGE),
    (EVERY, UNREADABLE),
    (EVERY, BODY_TIMEOUT),
    (EVERY, BODY_BUDGET),
    (EVERY, NOT_JSON),
    (EVERY, NOT_JSON_RPC),
    (EVERY, NO_SERVER),
    (EVERY, WELL_KNOWN),
    (EVERY, OTHER_PATH),
    (EVERY, MISSING_SCOPE),
    (EVERY, RATE_LIMITED),
    (EVERY, CALL_RATE_LIMITED),
    (EVERY, ONLY_NOTIFICATIONS),
    (LEGACY, BAD_VERSION),
    (LEGACY, NO_LEGACY_VERSION),
    (LEGACY, BATCH_VERSION),
    (LEGACY, BATCH_CAP),
    (LEGACY, INITIALIZE_IN_BATCH),
    (LEGACY, NO_SESSION),
    (LEGACY, UNKNOWN_SESSION),
    (LEGACY, OTHER_PRINCIPAL),
    (LEGACY, MAX_SESSIONS),
    (LEGACY, DRAINING),
    (LEGACY, MAX_IN_FLIGHT),
    (LEGACY, DUPLICATE_ID),
    (LEGACY, STATELESS_GET_DELETE),
    (LEGACY, GET_ACCEPT),
    (LEGACY, GET_DELETE_NO_SESSION),
    (LEGACY, GET_CONFLICT),
    (LEGACY, BAD_LAST_EVENT_ID),
    (LEGACY, FOREIGN_STREAM),
    (LEGACY, EVICTED),
    (LEGACY, STORE_DOWN),
    (LEGACY, DELETE_OK),
    (LEGACY, REQUEST_ERROR),
    (MODERN_ERA, MODERN_BATCH),
    (MODERN_ERA, MODERN_NO_HEADER),
    (MODERN_ERA, MODERN_HEADER_DIFFERS),
    (MODERN_ERA, MODERN_UNSUPPORTED),
    (MODERN_ERA, MODERN_META),
    (MODERN_ERA, MODERN_METHOD_HEADER),
    (MODERN_ERA, MODERN_NAME_HEADER),
    (MODERN_ERA, MODERN_PARAM_HEADER),
    (MODERN_ERA, MODERN_TASKS_UNDECLARED),
    (MODERN_ERA, MODERN_NOT_FOUND),
    (MODERN_ERA, MODERN_REQUEST_ERROR),
    (MODERN_ERA, MODERN_GET_DELETE),
    (MODERN_ERA, MODERN_NOTIFICATION),
    (MODERN_ERA, MODERN_NOT_MODIFIED),
];

#[test]
fn every_row_of_the_doc_is_tested() {
    let doc: BTreeSet<(String, String)> = doc_rows()
        .into_iter()
        .map(|r| {
            let s = [EVERY, LEGACY, MODERN_ERA]
                .into_iter()
                .find(|s| r.section.starts_with(s))
                .unwrap_or_else(|| panic!("an unknown section {:?}", r.section));
            (s.to_owned(), r.condition)
        })
        .collect();
    let tested: BTreeSet<(String, String)> = TESTED
        .iter()
        .map(|(s, c)| ((*s).to_owned(), (*c).to_owned()))
        .collect();
    let untested: Vec<_> = doc.difference(&tested).collect();
    let gone: Vec<_> = tested.difference(&doc).collect();
    assert!(
        untested.is_empty(),
        "rows of docs/http-status.md without a test: {untested:#?}"
    );
    assert!(
        gone.is_empty(),
        "tests of rows the doc no longer has: {gone:#?}"
    );
    assert_eq!(TESTED.len(), tested.len(), "a row is listed twice");
}

// ---- helpers --------------------------------------------------------------------------------------

async fn server(
    options: StreamableHttpOptions,
) -> (vellum_testkit::fixture::Fixture, TestHttpServer) {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), options).await;
    (f, srv)
}

async fn session(srv: &TestHttpServer, version: &str) -> McpHttp {
    let mut c = srv.client();
    c.connect(version).await;
    c
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn call(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": args}})
}

/// A request with exactly the given headers (plus the client's session headers).
async fn send(
    c: &McpHttp,
    method: Method,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> Answer {
    let mut b = c.http.request(method, &c.url);
    if let Some(s) = &c.session {
        b = b.header(SESSION_ID, s);
    }
    if let Some(v) = &c.protocol_version {
        b = b.header(PROTOCOL_VERSION, v);
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    if let Some(body) = body {
        b = b.body(body);
    }
    c.send(b).await
}

// ---- every era ----------------------------------------------------------------------------------

const NO_HOST: &str = "HTTP/1.1 or HTTP/2 request that names no authority (no `Host` header, no absolute-form target or `:authority`), on any connection, localhost protection on or off (RFC 9112 §3.2); an HTTP/1.0 request without `Host` is judged by the localhost check";
const BAD_AUTHORITY: &str = "the authority named is malformed: a `Host` that is not ASCII, a port past 65535, or on HTTP/2 a `host` header that differs from `:authority` (RFC 9113 §8.3.1), on any connection, localhost protection on or off";
const HOST: &str = "loopback connection and `Host` is not `localhost` / `127.x.y.z` / `[::1]` (localhost protection on)";
const HEAD_SIZE: &str =
    "request head (target and header lines) larger than 64 KiB, whatever the packets it came in";
const SINGLETON: &str = "a singleton header (`Host`, `Content-Type`, `Origin`, `Sec-Fetch-Site`, `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`) sent more than once";
const ABSOLUTE_FORM: &str = "loopback connection, absolute-form target (`POST http://authority/mcp`) whose authority is not loopback, whatever `Host` says (RFC 9112 §3.2.2)";
const ACCEPT_Q0: &str = "POST whose `Accept` excludes both with quality 0 (`application/json;q=0`; the most specific matching range decides)";
const ORIGIN: &str = "`Origin` present and neither same-origin with `Host` nor trusted (including `Origin: null`), any method";
const SEC_FETCH_SITE: &str = "cross-origin protection on, unsafe method, `Sec-Fetch-Site` other than `same-origin`/`none` from an untrusted origin";
const METHOD: &str = "method other than GET, POST, DELETE (or OPTIONS preflight with CORS on)";
const CONTENT_TYPE: &str = "POST without `Content-Type: application/json`";
const ACCEPT: &str = "POST whose `Accept` allows neither `application/json` nor `text/event-stream` (a missing `Accept` allows both)";
const TOO_LARGE: &str = "body larger than `max_body_bytes` (default 4 MiB), chunked or not";
const UNREADABLE: &str = "body cannot be read (connection broke)";
const BODY_TIMEOUT: &str = "body not received within `body_timeout` (default 30 s), or arriving slower than `min_body_rate` (default 1 KiB/s, after 5 s); the connection is closed";
const BODY_BUDGET: &str = "body would pass `max_buffered_body_bytes`, the bytes buffered for bodies across all connections (default 256 MiB; the first 64 KiB of each body not counted); the connection is closed";
const NOT_JSON: &str = "body is not JSON";
const NOT_JSON_RPC: &str = "body is JSON but not JSON-RPC 2.0 (wrong `jsonrpc`, `\"id\": null`, non-object params, empty batch, …)";
const NO_SERVER: &str = "the server factory returned `None`";
const WELL_KNOWN: &str = "a path under `/.well-known/` (a metadata document: OAuth, OpenID; the authorization layer serves its protected resource metadata, and answers the same 404 for the others without asking for a token)";
const OTHER_PATH: &str = "`path` is set (`--path /mcp`) and the request's path is another one (compared exactly; the health probes are answered before)";
const MISSING_SCOPE: &str = "an authentication layer identified the caller, and it lacks a scope the request's tool or method needs (`Tool::requires_scope`, the layer's scope rules); checked before the request begins, the session is kept";
const ONLY_NOTIFICATIONS: &str = "only notifications and/or responses were posted";

/// Sends an `initialize` with header `name` set to each of `values`, by each of `methods`,
/// and checks every answer against the row.
async fn header_row(condition: &str, name: &str, values: &[&str], methods: &[Method]) {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for value in values {
        for method in methods {
            let h = [(name, *value), ("content-type", "application/json")];
            let a = send(&c, method.clone(), &h, Some(initialize().to_string())).await;
            check(EVERY, condition, &a, None);
        }
    }
    assert_eq!(
        srv.handler.session_count(),
        0,
        "a refused request made a session"
    );
}

#[tokio::test]
async fn row_host() {
    let hosts = ["evil.com", "localhost.evil.com:80", "127.0.0.1.nip.io"];
    header_row(
        HOST,
        "host",
        &hosts,
        &[Method::POST, Method::GET, Method::DELETE],
    )
    .await;
}

#[tokio::test]
async fn row_origin() {
    let origins = ["http://evil.com", "null", "http://localhost"];
    let methods = [Method::POST, Method::GET, Method::DELETE, Method::OPTIONS];
    header_row(ORIGIN, "origin", &origins, &methods).await;
}

#[tokio::test]
async fn row_sec_fetch_site() {
    let sites = ["cross-site", "same-site"];
    let methods = [Method::POST, Method::DELETE, Method::PUT];
    header_row(SEC_FETCH_SITE, "sec-fetch-site", &sites, &methods).await;
}

#[tokio::test]
async fn row_method() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for method in [
        Method::PUT,
        Method::PATCH,
        Method::OPTIONS,
        Method::from_bytes(b"BREW").unwrap(),
    ] {
        let a = send(&c, method, &[], None).await;
        check(EVERY, METHOD, &a, None);
        assert_eq!(a.header("allow"), Some("GET, POST, DELETE"));
    }
}

#[tokio::test]
async fn row_content_type() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for ct in [
        None,
        Some("text/plain"),
        Some("application/jsonx"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut h = vec![("accept", ACCEPT_BOTH)];
        if let Some(ct) = ct {
            h.push(("content-type", ct));
        }
        let a = send(&c, Method::POST, &h, Some(initialize().to_string())).await;
        check(EVERY, CONTENT_TYPE, &a, None);
    }
    // Parameters and case do not matter.
    let a = send(
        &c,
        Method::POST,
        &[("content-type", "Application/JSON; charset=utf-8")],
        Some(initialize().to_string()),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
}

#[tokio::test]
async fn row_accept() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for accept in ["text/html", "image/png, text/plain"] {
        let a = c.post_accepting(Some(accept), &initialize()).await;
        check(EVERY, ACCEPT, &a, None);
    }
    for accept in [
        None,
        Some("application/json"),
        Some("text/event-stream"),
        Some("*/*"),
    ] {
        let a = c.post_accepting(accept, &initialize()).await;
        assert_eq!(a.status, StatusCode::OK, "Accept {accept:?}: {}", a.text());
    }
}

fn padded_call(size: usize) -> String {
    let base = call(1, "hello_world", json!({"user_name": ""})).to_string();
    let body = call(
        1,
        "hello_world",
        json!({"user_name": "x".repeat(size - base.len())}),
    )
    .to_string();
    assert_eq!(body.len(), size);
    body
}

#[tokio::test]
async fn row_too_large() {
    let mut o = StreamableHttpOptions::default();
    o.max_body_bytes = 2000;
    let (_f, srv) = server(o).await;
    let c = session(&srv, "2025-06-18").await;
    let a = c.post_raw(padded_call(2001)).await;
    check(EVERY, TOO_LARGE, &a, None);
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = padded_call(3000)
        .into_bytes()
        .chunks(64)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let a = c
        .post_raw(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .await;
    check(EVERY, TOO_LARGE, &a, None);
    // The default is 4 MiB.
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-06-18").await;
    let a = c.post_raw(padded_call((4 << 20) + 1)).await;
    check(EVERY, TOO_LARGE, &a, None);
}

/// Sends raw bytes on a fresh connection and reads the answer until the server closes it.
async fn raw_http(srv: &TestHttpServer, request: &[u8], half_close: bool) -> Answer {
    let mut s = tokio::net::TcpStream::connect(srv.addr)
        .await
        .expect("connect");
    s.write_all(request).await.expect("write");
    if half_close {
        s.shutdown().await.expect("half-close");
    }
    let mut raw = Vec::new();
    vellum_testkit::within("the raw answer", s.read_to_end(&mut raw))
        .await
        .expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = reqwest::header::HeaderMap::new();
    for l in lines {
        let (k, v) = l.split_once(':').unwrap();
        headers.append(
            reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()).unwrap(),
            v.trim().parse().unwrap(),
        );
    }
    if headers
        .get("transfer-encoding")
        .is_some_and(|v| v == "chunked")
    {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap().trim(), 16)
                .unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
            rest = &rest[nl + 2 + n + 2..];
        }
        body = out;
    }
    let messages = serde_json::from_slice::<Value>(&body)
        .map(|v| vec![v])
        .unwrap_or_default();
    Answer {
        status: StatusCode::from_u16(status).unwrap(),
        headers,
        body: Bytes::from(body),
        events: Vec::new(),
        messages,
    }
}

#[tokio::test]
async fn row_unreadable() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let host = srv.addr.to_string();
    // A chunked body that breaks off with garbage.
    let broken = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
         5\r\n{{\"jso\r\nzz-not-a-chunk-size\r\n\r\n"
    );
    let a = raw_http(&srv, broken.as_bytes(), false).await;
    check(EVERY, UNREADABLE, &a, None);
    // A body shorter than its Content-Length, then the client stops sending.
    let short = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{{\"jsonrpc\""
    );
    let a = raw_http(&srv, short.as_bytes(), true).await;
    check(EVERY, UNREADABLE, &a, None);
}

#[tokio::test]
async fn row_head_size() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let host = srv.addr.to_string();
    let init = initialize().to_string();
    // 70 KiB of headers, sent at once and in small pieces: the same answer either way.
    let filler = "a".repeat(1000);
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n"
    );
    for i in 0..70 {
        req.push_str(&format!("x-filler-{i}: {filler}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
        init.len()
    ));
    let a = raw_http(&srv, req.as_bytes(), false).await;
    check(EVERY, HEAD_SIZE, &a, None);
    // Within the limit: served.
    let ok = req.replacen(&format!("x-filler-69: {filler}\r\n"), "", 1);
    let ok = (0..10).fold(ok, |r, i| {
        r.replacen(&format!("x-filler-{i}: {filler}\r\n"), "", 1)
    });
    let a = raw_http(&srv, ok.as_bytes(), false).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
}

#[tokio::test]
async fn row_singleton() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let host = srv.addr.to_string();
    let init = initialize().to_string();
    for (name, a, b) in [
        ("Host", host.as_str(), "evil.com"),
        ("Host", host.as_str(), host.as_str()),
        ("Content-Type", "application/json", "text/plain"),
        ("Origin", "http://evil.com", "http://evil.com"),
        ("Sec-Fetch-Site", "same-origin", "cross-site"),
        ("Mcp-Session-Id", "a", "b"),
        ("MCP-Protocol-Version", "2025-06-18", "2025-03-26"),
        ("Last-Event-ID", "1", "2"),
    ] {
        // Content-Type and Host are written once by the request itself unless repeated here.
        let mut req = format!("POST /mcp HTTP/1.1\r\nAccept: {ACCEPT_BOTH}\r\n");
        if name != "Host" {
            req.push_str(&format!("Host: {host}\r\n"));
        }
        if name != "Content-Type" {
            req.push_str("Content-Type: application/json\r\n");
        }
        req.push_str(&format!(
            "{name}: {a}\r\n{name}: {b}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        ));
        let answer = raw_http(&srv, req.as_bytes(), false).await;
        check(EVERY, SINGLETON, &answer, None);
    }
    assert_eq!(srv.handler.session_count(), 0);
}

#[tokio::test]
async fn row_no_host() {
    let init = initialize().to_string();
    let req = |version: &str| {
        format!(
            "POST /mcp HTTP/{version}\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
    };
    for protection_off in [false, true] {
        let mut options = StreamableHttpOptions::default();
        options.disable_localhost_protection = protection_off;
        let (_f, srv) = server(options).await;
        let a = raw_http(&srv, req("1.1").as_bytes(), false).await;
        check(EVERY, NO_HOST, &a, None);
        // HTTP/1.0 has no Host: the localhost check judges it (403 with the protection on).
        let a = raw_http(&srv, req("1.0").as_bytes(), false).await;
        let expected = if protection_off { 200 } else { 403 };
        assert_eq!(a.status.as_u16(), expected, "HTTP/1.0: {}", a.text());
        assert_eq!(srv.handler.session_count(), usize::from(protection_off));
    }
}

#[tokio::test]
async fn row_bad_authority() {
    let init = initialize().to_string();
    let req = |host: &[u8]| {
        let mut r = b"POST /mcp HTTP/1.1\r\nHost: ".to_vec();
        r.extend_from_slice(host);
        r.extend_from_slice(
            format!(
                "\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
                init.len()
            )
            .as_bytes(),
        );
        r
    };
    for protection_off in [false, true] {
        let mut options = StreamableHttpOptions::default();
        options.disable_localhost_protection = protection_off;
        let (_f, srv) = server(options).await;
        let a = raw_http(&srv, &req(b"127.0.0.1:99999"), false).await;
        check(EVERY, BAD_AUTHORITY, &a, None);
        assert!(a.text().contains("invalid port"), "{}", a.text());
        let a = raw_http(&srv, &req("caf\u{e9}.localhost".as_bytes()), false).await;
        check(EVERY, BAD_AUTHORITY, &a, None);
        assert!(a.text().contains("not ASCII"), "{}", a.text());
        assert_eq!(srv.handler.session_count(), 0);
    }
}

#[tokio::test]
async fn row_absolute_form() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let host = srv.addr.to_string();
    let init = initialize().to_string();
    let req = |target: &str| {
        format!(
            "POST {target} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: {ACCEPT_BOTH}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
    };
    for target in ["http://evil.com/mcp", "http://[::1]evil.com/mcp"] {
        let a = raw_http(&srv, req(target).as_bytes(), false).await;
        check(EVERY, ABSOLUTE_FORM, &a, None);
    }
    // A loopback authority in the target is served.
    let a = raw_http(&srv, req(&format!("http://{host}/mcp")).as_bytes(), false).await;
    assert_eq!(a.status, StatusCode::OK);
}

#[tokio::test]
async fn row_accept_q0() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for accept in [
        "application/json;q=0, text/event-stream;q=0",
        "*/*;q=0",
        "application/json;q=0, text/*;q=0.0",
    ] {
        let a = c.post_accepting(Some(accept), &initialize()).await;
        check(EVERY, ACCEPT_Q0, &a, None);
    }
    // One type left acceptable is served in it.
    let a = c
        .post_accepting(
            Some("text/event-stream;q=0, application/json"),
            &initialize(),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type(), "application/json");
}

#[tokio::test]
async fn row_body_timeout() {
    let mut o = StreamableHttpOptions::default();
    o.body_timeout = Some(std::time::Duration::from_millis(300));
    let (_f, srv) = server(o).await;
    let host = srv.addr.to_string();
    // The body stops part-way and the client waits (no half-close): the deadline ends it.
    let short = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    let a = raw_http(&srv, short.as_bytes(), false).await;
    check(EVERY, BODY_TIMEOUT, &a, None);
    assert_eq!(a.header("connection"), Some("close"));
}

#[tokio::test]
async fn row_body_budget() {
    let mut o = StreamableHttpOptions::default();
    o.max_buffered_body_bytes = Some(0);
    let (_f, srv) = server(o).await;
    let host = srv.addr.to_string();
    // Past the uncounted first 64 KiB, a budget of 0 refuses the body.
    let mut big = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nContent-Length: 200000\r\n\r\n"
    )
    .into_bytes();
    big.extend(std::iter::repeat_n(b' ', 100_000));
    let a = raw_http(&srv, &big, false).await;
    check(EVERY, BODY_BUDGET, &a, None);
    assert_eq!(srv.handler.buffered_body_bytes(), 0);
    // A body within the uncounted part is served whatever the budget.
    let c = session(&srv, "2025-06-18").await;
    let a = c
        .post(&c.call_tool("add", json!({"a": 1, "b": 2}), None))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
}

#[tokio::test]
async fn row_not_json() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-06-18").await;
    for body in [
        "",
        "{",
        "not json",
        "{\"jsonrpc\": \"2.0\", \"id\": 1,",
        "\u{feff}garbage",
    ] {
        let a = c.post_raw(body.to_owned()).await;
        check(EVERY, NOT_JSON, &a, None);
    }
}

#[tokio::test]
async fn row_not_json_rpc() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-03-26").await;
    let bodies = [
        json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
        json!({"id": 1, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": 1}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": "x"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
        json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
        json!([]),
        json!(42),
        json!("ping"),
    ];
    for body in bodies {
        let a = c.post(&body).await;
        check(EVERY, NOT_JSON_RPC, &a, None);
    }
}

#[tokio::test]
async fn row_not_json_rpc_array_params() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-06-18").await;
    for params in [
        json!([]),
        json!(["a-cursor"]),
        json!([{"name": "hello_world"}]),
    ] {
        let a = c
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}))
            .await;
        check(EVERY, NOT_JSON_RPC, &a, None);
    }
}

#[tokio::test]
async fn row_no_server() {
    for stateless in [false, true] {
        let handler = StreamableHttpHandler::new(
            |_| None,
            StreamableHttpOptions::default().stateless(stateless),
        );
        let srv = TestHttpServer::start_handler(handler).await;
        let c = srv.client();
        let a = c.post(&initialize()).await;
        check(EVERY, NO_SERVER, &a, None);
        let a = c
            .post(&call(2, "hello_world", json!({"user_name": "x"})))
            .await;
        if stateless {
            check(EVERY, NO_SERVER, &a, None);
        }
        // Modern requests ask the factory too.
        let a = c.modern("tools/list", json!({})).await;
        check(EVERY, NO_SERVER, &a, None);
        assert_eq!(srv.handler.session_count(), 0);
    }
}

#[tokio::test]
async fn row_only_notifications() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let mut c = srv.client();
    c.initialize("2025-03-26").await;
    let a = c.notify("notifications/initialized", None).await;
    check(EVERY, ONLY_NOTIFICATIONS, &a, None);
    // A response to nothing, and a batch of notifications and responses.
    let a = c
        .post(&json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .await;
    check(EVERY, ONLY_NOTIFICATIONS, &a, None);
    let a = c
        .post(&json!([
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "no"}}
        ]))
        .await;
    check(EVERY, ONLY_NOTIFICATIONS, &a, None);
    // Stateless too.
    let (_f, srv) = server(StreamableHttpOptions::default().stateless(true)).await;
    let a = srv.client().notify("notifications/initialized", None).await;
    check(EVERY, ONLY_NOTIFICATIONS, &a, None);
}

// ---- legacy -----------------------------------------------------------------------------------------

const BAD_VERSION: &str = "`MCP-Protocol-Version` names a version this server does not speak, or one outside `protocol_versions` (`--protocol-versions`)";
const NO_LEGACY_VERSION: &str = "`initialize` when `protocol_versions` lists no legacy version (else it negotiates within them: the client's version when listed, the newest listed otherwise)";
const BATCH_VERSION: &str = "a JSON array (batch) when the request's version is not 2025-03-26: its `MCP-Protocol-Version`, else its session's negotiated version (2025-03-26 for a stateless request without the header)";
const BATCH_CAP: &str =
    "a batch of more than `max_batch_entries` entries (default 64), counted before any runs";
const INITIALIZE_IN_BATCH: &str = "`initialize` inside a batch";
const NO_SESSION: &str = "stateful mode, no `Mcp-Session-Id`, body is not `initialize`";
const UNKNOWN_SESSION: &str = "`Mcp-Session-Id` unknown, expired or deleted";
const OTHER_PRINCIPAL: &str = "the session belongs to another authenticated principal";
const MAX_SESSIONS: &str = "`initialize` beyond `max_sessions`, `max_sessions_per_principal`, or `max_sessions_per_address` (sessions without an authenticated caller, per client address)";
const RATE_LIMITED: &str = "the caller's `rate_limit` is spent (a token bucket per authenticated principal, else per client address as `client_addresses` tells it: the peer, or the client a trusted proxy forwarded, IPv6 by prefix; every request to the endpoint takes a token, before its body is read)";
const CALL_RATE_LIMITED: &str = "a request of the POST (each entry of a batch) is beyond its method's or its tool's limit in `rate_limits` (a token bucket per caller and configured name; checked once the body is decoded)";
const DRAINING: &str = "`initialize`, or a session only the session store holds (another instance's), while the handler drains (`start_draining`; SIGTERM under `vellum serve`)";
const MAX_IN_FLIGHT: &str = "the session already has `max_in_flight_per_session` requests running (default 256), each request of a batch counted, a request whose connection went not counted";
const DUPLICATE_ID: &str = "a request id that is still in flight in the session";
const STATELESS_GET_DELETE: &str = "GET or DELETE in stateless mode";
const GET_ACCEPT: &str = "GET whose `Accept` lacks `text/event-stream`";
const GET_DELETE_NO_SESSION: &str = "GET or DELETE without `Mcp-Session-Id`";
const GET_CONFLICT: &str = "GET of a stream another connection is reading: a second standalone GET (a resume with `Last-Event-ID` takes a stream over instead, from the GET or POST response reading it: that response ends, and its requests go on for the resuming GET; 409 only when the POST response has not let go within 1 s, which happens when its connection is not writable)";
const BAD_LAST_EVENT_ID: &str = "GET with a malformed `Last-Event-ID` (not visible ASCII, or not in the store's `<stream>-<seq>` form), or, without an event store, one of a stream this instance no longer holds";
const FOREIGN_STREAM: &str = "GET with a `Last-Event-ID` of a stream this session does not have";
const EVICTED: &str =
    "GET with a `Last-Event-ID` whose following events were evicted from the store";
const STORE_DOWN: &str = "the event store backend is unreachable during a replay";
const DELETE_OK: &str = "DELETE of a live session";
const REQUEST_ERROR: &str = "any JSON-RPC error of a request (unknown method -32601, unknown tool -32602, resource not found -32002, …)";

#[tokio::test]
async fn row_rate_limited() {
    let mut o = StreamableHttpOptions::default();
    o.rate_limit = Some(vellum::store::RateLimit::new(0.001, 1));
    let (_f, srv) = server(o).await;
    let c = srv.client();
    assert_eq!(c.post(&initialize()).await.status, StatusCode::OK);
    let a = c.post(&initialize()).await;
    check(EVERY, RATE_LIMITED, &a, None);
}

#[tokio::test]
async fn row_call_rate_limited() {
    let mut o = StreamableHttpOptions::default();
    o.rate_limits = vellum::transport::http::RateLimits::new()
        .method("tools/list", vellum::store::RateLimit::new(0.001, 1));
    let (_f, srv) = server(o).await;
    let c = session(&srv, "2025-11-25").await;
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    assert_eq!(c.post(&list).await.status, StatusCode::OK);
    let a = c.post(&list).await;
    check(EVERY, CALL_RATE_LIMITED, &a, None);
}

#[tokio::test]
async fn row_draining() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let open = session(&srv, "2025-11-25").await;
    srv.handler.start_draining();
    let a = srv.client().post(&initialize()).await;
    check(LEGACY, DRAINING, &a, None);
    // The open session is still served.
    assert_eq!(open.greet().await, "Hello World, Alice");
}

#[tokio::test]
async fn row_bad_version() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let mut c = session(&srv, "2025-06-18").await;
    for v in ["2024-11-05", "2025-06-19", "1.0"] {
        c.protocol_version = Some(v.to_owned());
        let a = c
            .post(&call(5, "hello_world", json!({"user_name": "x"})))
            .await;
        let e = check(LEGACY, BAD_VERSION, &a, None);
        assert_eq!(e["error"]["data"]["requested"], v);
    }
    // On `initialize` and GET too.
    let mut fresh = srv.client();
    fresh.protocol_version = Some("2024-11-05".into());
    let a = fresh.post(&initialize()).await;
    check(LEGACY, BAD_VERSION, &a, None);
    // A version spoken here but left out of `protocol_versions`.
    let mut o = StreamableHttpOptions::default();
    o.protocol_versions = "2026-07-28,2025-11-25".parse().unwrap();
    let (_f, srv) = server(o).await;
    let mut c = session(&srv, "2025-11-25").await;
    c.protocol_version = Some("2025-06-18".into());
    let a = c
        .post(&call(5, "hello_world", json!({"user_name": "x"})))
        .await;
    let e = check(LEGACY, BAD_VERSION, &a, None);
    assert_eq!(
        e["error"]["data"]["supported"],
        json!(["2026-07-28", "2025-11-25"])
    );
}

#[tokio::test]
async fn row_no_legacy_version() {
    let mut o = StreamableHttpOptions::default();
    o.protocol_versions = "2026-07-28".parse().unwrap();
    for stateless in [false, true] {
        let (_f, srv) = server(o.clone().stateless(stateless)).await;
        let a = srv.client().post(&initialize()).await;
        let e = check(LEGACY, NO_LEGACY_VERSION, &a, None);
        assert_eq!(
            e["error"]["data"]["supported"],
            json!(["2026-07-28"]),
            "{e}"
        );
        assert_eq!(a.header(SESSION_ID), None);
    }
}

#[tokio::test]
async fn row_well_known() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/openid-configuration",
    ] {
        let url = format!("{}{path}", srv.base());
        check(EVERY, WELL_KNOWN, &c.send(c.http.get(&url)).await, None);
        // A POST there is no MCP request either.
        check(
            EVERY,
            WELL_KNOWN,
            &c.at(&url).post(&initialize()).await,
            None,
        );
    }
}

#[tokio::test]
async fn row_other_path() {
    let (_f, srv) = server(StreamableHttpOptions::default().path("/mcp")).await;
    let c = srv.client();
    for path in ["/", "/mcp/", "/other"] {
        let at = c.at(&format!("{}{path}", srv.base()));
        let e = check(EVERY, OTHER_PATH, &at.post(&initialize()).await, None);
        assert!(
            e["error"]["message"].as_str().unwrap().contains("/mcp"),
            "{e}"
        );
        check(
            EVERY,
            OTHER_PATH,
            &at.send(at.builder(Method::GET)).await,
            None,
        );
    }
}

#[tokio::test]
async fn row_batch_version() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let mut c = session(&srv, "2025-11-25").await;
    let batch = json!([
        call(1, "hello_world", json!({"user_name": "a"})),
        call(2, "hello_world", json!({"user_name": "b"}))
    ]);
    for v in ["2025-06-18", "2025-11-25"] {
        c.protocol_version = Some(v.to_owned());
        let a = c.post(&batch).await;
        check(LEGACY, BATCH_VERSION, &a, None);
    }
    c.protocol_version = Some("2025-03-26".into());
    assert_eq!(c.post(&batch).await.status, StatusCode::OK);
    // Without the header, the session's version decides: 2025-11-25 has no batches.
    c.protocol_version = None;
    let a = c.post(&batch).await;
    check(LEGACY, BATCH_VERSION, &a, None);
    // A 2025-03-26 session takes them without the header.
    let mut old = session(&srv, "2025-03-26").await;
    old.protocol_version = None;
    let a = old.post(&batch).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.messages.len(), 2);
}

#[tokio::test]
async fn row_batch_cap() {
    let mut o = StreamableHttpOptions::default();
    o.max_batch_entries = 3;
    let (_f, srv) = server(o).await;
    let c = session(&srv, "2025-03-26").await;
    let calls = |n: i64| {
        Value::Array(
            (1..=n)
                .map(|i| call(i, "hello_world", json!({"user_name": "a"})))
                .collect(),
        )
    };
    let a = c.post(&calls(4)).await;
    check(LEGACY, BATCH_CAP, &a, None);
    assert_eq!(c.post(&calls(3)).await.status, StatusCode::OK);
    // The default is 64.
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-03-26").await;
    check(LEGACY, BATCH_CAP, &c.post(&calls(65)).await, None);
}

#[tokio::test]
async fn row_initialize_in_batch() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let a = c
        .post(&json!([initialize(), {"jsonrpc": "2.0", "id": 2, "method": "ping"}]))
        .await;
    check(LEGACY, INITIALIZE_IN_BATCH, &a, None);
    let a = c.post(&json!([initialize()])).await;
    check(LEGACY, INITIALIZE_IN_BATCH, &a, None);
    assert_eq!(srv.handler.session_count(), 0);
}

#[tokio::test]
async fn row_no_session() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let _live = session(&srv, "2025-06-18").await;
    let mut c = srv.client();
    c.protocol_version = Some("2025-06-18".into());
    for body in [
        call(1, "hello_world", json!({"user_name": "x"})),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ] {
        let a = c.post(&body).await;
        check(LEGACY, NO_SESSION, &a, None);
    }
}

#[tokio::test]
async fn row_unknown_session() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let body = call(1, "hello_world", json!({"user_name": "x"}));
    // Unknown.
    let mut c = srv.client();
    c.protocol_version = Some("2025-06-18".into());
    c.session = Some("no-such-session".into());
    for method in [Method::POST, Method::GET, Method::DELETE] {
        let h = [
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
        ];
        let a = send(&c, method, &h, Some(body.to_string())).await;
        check(LEGACY, UNKNOWN_SESSION, &a, None);
    }
    // Deleted.
    let c = session(&srv, "2025-06-18").await;
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);
    check(LEGACY, UNKNOWN_SESSION, &c.post(&body).await, None);
    // Expired.
    let mut o = StreamableHttpOptions::default();
    o.session_timeout = Some(std::time::Duration::from_millis(150));
    let (_f, srv) = server(o).await;
    let mut c = srv.client();
    assert_eq!(c.initialize("2025-06-18").await.status, StatusCode::OK);
    vellum_testkit::eventually("the session to expire", || srv.handler.session_count() == 0).await;
    check(LEGACY, UNKNOWN_SESSION, &c.post(&body).await, None);
}

#[tokio::test]
async fn row_other_principal() {
    let f = test_server();
    let srv = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        f.server,
        StreamableHttpOptions::default(),
    ))
    .await;
    let as_user = |c: &McpHttp, who: Option<&str>, method: Method| {
        let mut b = c.builder(method).header("accept", ACCEPT_BOTH);
        if let Some(w) = who {
            b = b.header("x-test-principal", w);
        }
        b.body(call(2, "hello_world", json!({"user_name": "x"})).to_string())
    };
    let mut c = srv.client();
    let init = c
        .send(
            c.builder(Method::POST)
                .header("x-test-principal", "https://issuer alice")
                .body(initialize().to_string()),
        )
        .await;
    assert_eq!(init.status, StatusCode::OK);
    c.session = init.header(SESSION_ID).map(str::to_owned);
    c.protocol_version = Some("2025-06-18".into());
    for who in [
        Some("https://issuer bob"),
        Some("https://other alice"),
        None,
    ] {
        for method in [Method::POST, Method::GET, Method::DELETE] {
            let a = c.send(as_user(&c, who, method)).await;
            check(LEGACY, OTHER_PRINCIPAL, &a, None);
        }
    }
    let a = c
        .send(as_user(&c, Some("https://issuer alice"), Method::POST))
        .await;
    assert_eq!(
        a.status,
        StatusCode::OK,
        "the owner is served: {}",
        a.text()
    );
}

#[tokio::test]
async fn row_max_sessions() {
    let mut o = StreamableHttpOptions::default();
    o.max_sessions = Some(1);
    let (_f, srv) = server(o).await;
    let _one = session(&srv, "2025-06-18").await;
    let a = srv.client().post(&initialize()).await;
    check(LEGACY, MAX_SESSIONS, &a, None);

    // Per principal.
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.max_sessions_per_principal = Some(1);
    let srv =
        TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(f.server, o)).await;
    let c = srv.client();
    let init_as = |who: &str| {
        c.builder(Method::POST)
            .header("x-test-principal", who)
            .body(initialize().to_string())
    };
    assert_eq!(
        c.send(init_as("https://i alice")).await.status,
        StatusCode::OK
    );
    check(
        LEGACY,
        MAX_SESSIONS,
        &c.send(init_as("https://i alice")).await,
        None,
    );
    assert_eq!(
        c.send(init_as("https://i bob")).await.status,
        StatusCode::OK
    );

    // Per client address (no principal).
    let mut o = StreamableHttpOptions::default();
    o.max_sessions_per_address = Some(1);
    let (_f, srv) = server(o).await;
    let _one = session(&srv, "2025-06-18").await;
    let a = srv.client().post(&initialize()).await;
    check(LEGACY, MAX_SESSIONS, &a, None);
}

#[tokio::test]
async fn row_max_in_flight() {
    let mut o = StreamableHttpOptions::default();
    o.max_in_flight_per_session = Some(1);
    let (f, srv) = server(o).await;
    let c = session(&srv, "2025-06-18").await;
    let _slow = c
        .post_stream(&call(1, "slow", json!({})))
        .await
        .expect_stream("slow");
    f.slow.entered().await;
    let a = c
        .post(&call(2, "hello_world", json!({"user_name": "x"})))
        .await;
    check(LEGACY, MAX_IN_FLIGHT, &a, None);
    f.slow.release();
    // The default is 256.
    assert_eq!(
        StreamableHttpOptions::default().max_in_flight_per_session,
        Some(256)
    );
}

#[tokio::test]
async fn row_duplicate_id() {
    for json_response in [false, true] {
        let (f, srv) = server(StreamableHttpOptions::default().json_response(json_response)).await;
        let c = session(&srv, "2025-06-18").await;
        let first = tokio::spawn({
            let c = c.clone();
            async move { c.post(&call(77, "slow", json!({}))).await }
        });
        f.slow.entered().await;
        let a = c
            .post(&call(77, "hello_world", json!({"user_name": "x"})))
            .await;
        let e = check(LEGACY, DUPLICATE_ID, &a, None);
        assert_eq!(e["id"], 77);
        f.slow.release();
        // The first request with that id is untouched.
        let a = vellum_testkit::within("the first request", first)
            .await
            .unwrap();
        assert_eq!(
            a.messages.last().unwrap()["result"]["content"][0]["text"],
            "slow done"
        );
    }
}

#[tokio::test]
async fn row_stateless_get_delete() {
    let (_f, srv) = server(StreamableHttpOptions::default().stateless(true)).await;
    let mut c = srv.client();
    for session in [None, Some("x")] {
        c.session = session.map(str::to_owned);
        for method in [Method::GET, Method::DELETE] {
            let a = send(&c, method, &[("accept", "text/event-stream")], None).await;
            check(LEGACY, STATELESS_GET_DELETE, &a, None);
        }
    }
}

#[tokio::test]
async fn row_get_accept() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-06-18").await;
    for accept in ["application/json", "text/html"] {
        let a = send(&c, Method::GET, &[("accept", accept)], None).await;
        check(LEGACY, GET_ACCEPT, &a, None);
    }
}

#[tokio::test]
async fn row_get_delete_no_session() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let _live = session(&srv, "2025-06-18").await;
    let c = srv.client();
    for method in [Method::GET, Method::DELETE] {
        let a = send(&c, method, &[("accept", "text/event-stream")], None).await;
        check(LEGACY, GET_DELETE_NO_SESSION, &a, None);
    }
    assert_eq!(srv.handler.session_count(), 1);
}

#[tokio::test]
async fn row_get_conflict() {
    let o = StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::default()));
    let (f, srv) = server(o).await;
    let c = session(&srv, "2025-11-25").await;
    // A second standalone GET.
    let _first = c.listen().await;
    let a = c.get_stream(None).await.expect_whole("a second GET");
    check(LEGACY, GET_CONFLICT, &a, None);
    // A resume of a POST stream whose response is still being read takes it over instead
    // (tests/http_resume.rs shows that the stream carries on there).
    let mut s = c
        .post_stream(&call(3, "slow", json!({})))
        .await
        .expect_stream("slow");
    let priming = s.next_block().await.expect("the priming event");
    let id = priming.id.expect("a priming id");
    f.slow.entered().await;
    match c.get_stream(Some(&id)).await {
        Streamed::Stream(g) => assert_eq!(g.status, StatusCode::OK),
        Streamed::Whole(a) => panic!("a resume of an attached stream: {} {}", a.status, a.text()),
    }
    within("the end of the superseded response", s.rest()).await;
    f.slow.release();
}

#[tokio::test]
async fn row_bad_last_event_id() {
    let o = StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::default()));
    let (_f, srv) = server(o).await;
    let c = session(&srv, "2025-11-25").await;
    for id in ["garbage", "1", "1_1", "a-1", "1--1"] {
        let a = c.get_stream(Some(id)).await.expect_whole(id);
        check(LEGACY, BAD_LAST_EVENT_ID, &a, None);
    }
    // Without a store: streams never held here, or finished and read.
    let (f, srv) = server(StreamableHttpOptions::default()).await;
    let c = session(&srv, "2025-11-25").await;
    let finished = message_ids(&paced_answer(&c, &f.pace, 1).await).remove(0);
    for id in [finished.as_str(), "9-1", "garbage"] {
        let a = c.get_stream(Some(id)).await.expect_whole(id);
        check(LEGACY, BAD_LAST_EVENT_ID, &a, None);
    }
}

#[tokio::test]
async fn row_foreign_stream() {
    let o = StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::default()));
    let (f, srv) = server(o).await;
    let c = session(&srv, "2025-11-25").await;
    let id = message_ids(&paced_answer(&c, &f.pace, 1).await).remove(0);
    let other = session(&srv, "2025-11-25").await;
    for (who, last) in [
        (&c, "77-1".to_owned()),
        (&c, id.replace("-1", "-50")),
        (&other, id.clone()),
    ] {
        let a = who.get_stream(Some(&last)).await.expect_whole(&last);
        check(LEGACY, FOREIGN_STREAM, &a, None);
    }
}

#[tokio::test]
async fn row_evicted() {
    let o = StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::new(300)));
    let (f, srv) = server(o).await;
    let c = session(&srv, "2025-11-25").await;
    let first = message_ids(&paced_answer(&c, &f.pace, 20).await).remove(0);
    let a = c.get_stream(Some(&first)).await.expect_whole(&first);
    check(LEGACY, EVICTED, &a, None);
}

/// An event store whose backend fails on replay.
struct DownOnReplay(MemoryEventStore);

impl EventStore for DownOnReplay {
    fn open_stream(
        &self,
        session: &str,
        requests: &[RequestId],
    ) -> BoxFuture<'static, Result<StreamId, StoreError>> {
        self.0.open_stream(session, requests)
    }
    fn append(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
    ) -> BoxFuture<'static, Result<EventId, StoreError>> {
        self.0.append(session, stream, message)
    }
    fn replay_after(
        &self,
        _session: &str,
        _after: EventId,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(async { Err(StoreError::backend("connection refused")) })
    }
    fn session_closed(&self, session: &str) -> BoxFuture<'static, Result<(), StoreError>> {
        self.0.session_closed(session)
    }
    fn follow(
        &self,
        _session: &str,
        _after: EventId,
    ) -> Option<BoxStream<'static, Result<StoredEvent, StoreError>>> {
        None
    }
}

#[tokio::test]
async fn row_store_down() {
    let o = StreamableHttpOptions::default()
        .event_store(Arc::new(DownOnReplay(MemoryEventStore::default())));
    let (f, srv) = server(o).await;
    let c = session(&srv, "2025-11-25").await;
    let id = message_ids(&paced_answer(&c, &f.pace, 1).await).remove(0);
    let a = c.get_stream(Some(&id)).await.expect_whole(&id);
    let e = check(LEGACY, STORE_DOWN, &a, None);
    assert!(
        !e.to_string().contains("connection refused"),
        "internal text leaked: {e}"
    );
}

#[tokio::test]
async fn row_delete_ok() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    for v in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let c = session(&srv, v).await;
        let a = c.send(c.builder(Method::DELETE)).await;
        check(LEGACY, DELETE_OK, &a, None);
    }
    assert_eq!(srv.handler.session_count(), 0);
}

#[tokio::test]
async fn row_request_error() {
    for json_response in [false, true] {
        let (_f, srv) = server(StreamableHttpOptions::default().json_response(json_response)).await;
        let c = session(&srv, "2025-06-18").await;
        let cases = [
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "no/such"}),
                -32601,
            ),
            (call(2, "nope", json!({})), -32602),
            (
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}),
                -32602,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "greet"}}),
                -32602,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "test://missing"}}),
                -32002,
            ),
        ];
        for (body, code) in cases {
            let a = c.post(&body).await;
            let e = check(LEGACY, REQUEST_ERROR, &a, Some(code));
            assert_eq!(e["id"], body["id"]);
        }
    }
}

// ---- modern -----------------------------------------------------------------------------------------

const MODERN_BATCH: &str = "a batch, or a response from the client";
const MODERN_NO_HEADER: &str = "`MCP-Protocol-Version` missing while `_meta` names a version";
const MODERN_HEADER_DIFFERS: &str = "`MCP-Protocol-Version` differs from `_meta` protocol version";
const MODERN_UNSUPPORTED: &str = "`MCP-Protocol-Version` 2026-07-28 or later but not spoken here, or 2026-07-28 left out of `protocol_versions` (`--protocol-versions`; `supported` lists those)";
const MODERN_META: &str = "`_meta`, its protocol version or its client capabilities missing; malformed client info or log level";
const MODERN_METHOD_HEADER: &str = "`Mcp-Method` missing or different from the body's method (after `=?base64?…?=` decoding, OWS trimmed)";
const MODERN_NAME_HEADER: &str = "`Mcp-Name` missing or different from `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`) or `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`)";
const MODERN_PARAM_HEADER: &str = "`Mcp-Param-{Name}` of a tool's `x-mcp-header` argument missing while the argument is present, present while it is absent or null, sent twice, not valid header text or Base64 (`=?base64?…?=`), or different from the argument (`tools/call`)";
const MODERN_TASKS_UNDECLARED: &str = "a task method (`tasks/get`, `tasks/update`, `tasks/cancel`) whose `_meta` client capabilities lack the tasks extension";
const MODERN_NOT_FOUND: &str = "unknown method, or a legacy-only one (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`)";
const MODERN_REQUEST_ERROR: &str =
    "a request error -32602 (unknown tool, resource not found, bad params), -32021, -32022, -32600";
const MODERN_GET_DELETE: &str = "GET or DELETE with `MCP-Protocol-Version` 2026-07-28";
const MODERN_NOTIFICATION: &str = "accepted notification";
const MODERN_NOT_MODIFIED: &str = "`If-None-Match` names the `ETag` of the JSON answer of `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` or `resources/read`, or is `*` (weak comparison; the handler ran; the answer's `Cache-Control` and `ETag` are sent, see [deploy.md](deploy.md#http-caching-2026-07-28))";

#[tokio::test]
async fn row_modern_batch() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let one = modern_body(json!(1), "tools/list", json!({}));
    let a = c
        .modern_with(
            &json!([one.clone(), one]),
            &[("mcp-method", Some("tools/list"))],
        )
        .await;
    check(MODERN_ERA, MODERN_BATCH, &a, None);
    let a = c
        .modern_with(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}), &[])
        .await;
    check(MODERN_ERA, MODERN_BATCH, &a, None);
}

#[tokio::test]
async fn row_modern_no_header() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let body = modern_body(json!(1), "tools/list", json!({}));
    let a = c.modern_with(&body, &[(PROTOCOL_VERSION, None)]).await;
    let e = check(MODERN_ERA, MODERN_NO_HEADER, &a, None);
    assert_eq!(e["id"], 1);
}

#[tokio::test]
async fn row_modern_header_differs() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let body = modern_body(json!(1), "tools/list", json!({}));
    for v in ["2026-07-29", "2099-01-01"] {
        let a = c.modern_with(&body, &[(PROTOCOL_VERSION, Some(v))]).await;
        check(MODERN_ERA, MODERN_HEADER_DIFFERS, &a, None);
    }
}

#[tokio::test]
async fn row_modern_unsupported() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for v in ["2026-07-29", "2099-01-01"] {
        let body = modern_body(
            json!(1),
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": v}}),
        );
        let a = c.modern_with(&body, &[(PROTOCOL_VERSION, Some(v))]).await;
        let e = check(MODERN_ERA, MODERN_UNSUPPORTED, &a, None);
        assert_eq!(e["error"]["data"]["requested"], v);
        // The header alone (no `_meta` version).
        let bare = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
        let a = c.modern_with(&bare, &[(PROTOCOL_VERSION, Some(v))]).await;
        check(MODERN_ERA, MODERN_UNSUPPORTED, &a, None);
    }
    // 2026-07-28 itself, left out of `protocol_versions`.
    let mut o = StreamableHttpOptions::default();
    o.protocol_versions = "2025-11-25".parse().unwrap();
    let (_f, srv) = server(o).await;
    let a = srv.client().modern("tools/list", json!({})).await;
    let e = check(MODERN_ERA, MODERN_UNSUPPORTED, &a, None);
    assert_eq!(
        e["error"]["data"],
        json!({"supported": ["2025-11-25"], "requested": MODERN})
    );
}

#[tokio::test]
async fn row_modern_meta() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let v = "io.modelcontextprotocol/protocolVersion";
    let caps = "io.modelcontextprotocol/clientCapabilities";
    let bodies = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {caps: {}}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {v: MODERN}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {v: MODERN, caps: {},
            "io.modelcontextprotocol/clientInfo": 7}}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": {v: MODERN, caps: {},
            "io.modelcontextprotocol/logLevel": "loud"}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {v: MODERN, caps: 5}}}),
    ];
    for body in bodies {
        let a = c.modern_with(&body, &[]).await;
        let e = check(MODERN_ERA, MODERN_META, &a, None);
        assert_eq!(e["id"], body["id"]);
    }
}

#[tokio::test]
async fn row_modern_method_header() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let body = modern_body(json!(1), "tools/list", json!({}));
    for m in [
        None,
        Some("tools/call"),
        Some("Tools/List"),
        Some("=?base64?dG9vbHMvY2FsbA==?="),
        Some("=?base64?%%%?="),
    ] {
        let a = c.modern_with(&body, &[("mcp-method", m)]).await;
        check(MODERN_ERA, MODERN_METHOD_HEADER, &a, None);
    }
    for m in ["=?base64?dG9vbHMvbGlzdA==?=", " tools/list\t"] {
        let a = c.modern_with(&body, &[("mcp-method", Some(m))]).await;
        assert_eq!(a.status, StatusCode::OK, "{m:?}: {}", a.text());
    }
}

#[tokio::test]
async fn row_modern_name_header() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let bodies = [
        modern_body(
            json!(1),
            "tools/call",
            json!({"name": "hello_world", "arguments": {"user_name": "x"}}),
        ),
        modern_body(
            json!(2),
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "x"}}),
        ),
        modern_body(
            json!(3),
            "resources/read",
            json!({"uri": "test://greeting"}),
        ),
    ];
    for body in &bodies {
        for n in [None, Some("other"), Some("=?base64?b3RoZXI=?=")] {
            let a = c.modern_with(body, &[("mcp-name", n)]).await;
            check(MODERN_ERA, MODERN_NAME_HEADER, &a, None);
        }
        let a = c.modern_with(body, &[]).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    }
    // The task methods route by their taskId (checked before the task is looked up).
    for method in ["tasks/get", "tasks/cancel"] {
        let body = modern_body(json!(4), method, json!({"taskId": "t-1"}));
        for n in [None, Some("t-2")] {
            let a = c.modern_with(&body, &[("mcp-name", n)]).await;
            check(MODERN_ERA, MODERN_NAME_HEADER, &a, None);
        }
    }
}

#[tokio::test]
async fn row_modern_param_header() {
    use vellum::prelude::{
        CallToolRequest, CallToolResult, HandlerError, Implementation, RequestContext, Server,
        ServerOptions, Tool,
    };
    let s = Server::new(
        Implementation::new("headers", "1"),
        ServerOptions::default(),
    );
    let schema = json!({"type": "object",
        "properties": {"region": {"type": ["string", "null"], "x-mcp-header": "Region"}}});
    s.add_tool(
        Tool::new("route", "Routes by region")
            .with_input_schema(schema.as_object().unwrap().clone()),
        |_ctx: RequestContext, _req: CallToolRequest, _: Value| async move {
            Ok::<_, HandlerError>(CallToolResult::text("routed"))
        },
    )
    .unwrap();
    let srv = TestHttpServer::start(s, StreamableHttpOptions::default()).await;
    let c = srv.client();
    let call = |args: Value| {
        modern_body(
            json!(1),
            "tools/call",
            json!({"name": "route", "arguments": args}),
        )
    };
    let h = "mcp-param-region";
    for (args, values) in [
        (json!({"region": "eu"}), &[][..]),
        (json!({}), &["eu"][..]),
        (json!({"region": null}), &["eu"][..]),
        (json!({"region": "eu"}), &["eu", "eu"][..]),
        (json!({"region": "eu"}), &["=?base64?ZX!=?="][..]),
        (json!({"region": "eu"}), &["us"][..]),
    ] {
        let mut b = c.modern_builder(&call(args));
        for v in values {
            b = b.header(h, *v);
        }
        let a = c.send(b).await;
        check(MODERN_ERA, MODERN_PARAM_HEADER, &a, None);
    }
    let a = c
        .send(
            c.modern_builder(&call(json!({"region": "eu"})))
                .header(h, "=?base64?ZXU=?="),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
}

#[tokio::test]
async fn row_modern_tasks_undeclared() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for (method, params) in [
        ("tasks/get", json!({"taskId": "t-1"})),
        (
            "tasks/update",
            json!({"taskId": "t-1", "inputResponses": {}}),
        ),
        ("tasks/cancel", json!({"taskId": "t-1"})),
    ] {
        let a = c
            .modern_with(&modern_body(json!(1), method, params), &[])
            .await;
        let e = check(MODERN_ERA, MODERN_TASKS_UNDECLARED, &a, None);
        assert!(
            e["error"]["data"]["requiredCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"]
                .is_object(),
            "{e}"
        );
    }
}

#[tokio::test]
async fn row_modern_not_found() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for (method, params) in [
        ("no/such", json!({})),
        (
            "initialize",
            json!({"protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "info"})),
        ("resources/subscribe", json!({"uri": "test://greeting"})),
    ] {
        let body = modern_body(json!(method), method, params);
        let a = c.modern_with(&body, &[]).await;
        let e = check(MODERN_ERA, MODERN_NOT_FOUND, &a, None);
        assert_eq!(e["id"], method);
    }
}

#[tokio::test]
async fn row_modern_request_error() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    let cases = [
        modern_body(
            json!(1),
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
        ),
        modern_body(json!(2), "resources/read", json!({"uri": "test://missing"})),
        modern_body(json!(3), "tools/list", json!({"cursor": 5})),
        modern_body(json!(4), "prompts/get", json!({"name": "nope"})),
        modern_body(json!(5), "prompts/get", json!({"name": "greet"})),
    ];
    for body in cases {
        let a = c.modern_with(&body, &[]).await;
        let e = check(MODERN_ERA, MODERN_REQUEST_ERROR, &a, Some(-32602));
        assert_eq!(e["id"], body["id"]);
    }
}

#[tokio::test]
async fn row_modern_get_delete() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let mut c = session(&srv, "2025-11-25").await;
    c.protocol_version = None;
    for method in [Method::GET, Method::DELETE] {
        let a = send(
            &c,
            method,
            &[(PROTOCOL_VERSION, MODERN), ("accept", "text/event-stream")],
            None,
        )
        .await;
        check(MODERN_ERA, MODERN_GET_DELETE, &a, None);
    }
}

#[tokio::test]
async fn row_modern_notification() {
    let (_f, srv) = server(StreamableHttpOptions::default()).await;
    let c = srv.client();
    for method in [
        "notifications/cancelled",
        "notifications/initialized",
        "notifications/roots/list_changed",
    ] {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": {"requestId": 1}});
        let a = c.modern_with(&body, &[]).await;
        check(MODERN_ERA, MODERN_NOTIFICATION, &a, None);
    }
    assert_eq!(srv.handler.session_count(), 0);
}

#[tokio::test]
async fn row_modern_not_modified() {
    let mut o = StreamableHttpOptions::default();
    o.json_response = true;
    let (_f, srv) = server(o).await;
    let c = srv.client();
    for (method, params) in [
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://greeting"})),
    ] {
        let body = modern_body(json!(c.next_id()), method, params.clone());
        let first = c.send(c.modern_builder(&body)).await;
        assert_eq!(first.status, StatusCode::OK, "{method}: {}", first.text());
        let tag = first.header("etag").expect("an ETag").to_owned();
        for line in [tag.as_str(), "*"] {
            let body = modern_body(json!(c.next_id()), method, params.clone());
            let a = c
                .send(c.modern_builder(&body).header("if-none-match", line))
                .await;
            check(MODERN_ERA, MODERN_NOT_MODIFIED, &a, None);
            assert_eq!(a.header("etag"), Some(tag.as_str()), "{method}");
            assert!(a.header("cache-control").is_some(), "{method}");
        }
    }
}

#[tokio::test]
async fn row_missing_scope() {
    let f = test_server();
    f.server
        .add_raw_tool(
            vellum::protocol::Tool::new("scoped", "Needs a scope").requires_scope("files:write"),
            |_c: vellum::server::RequestContext, _r: vellum::server::CallToolRequest| async move {
                Ok::<_, vellum::server::HandlerError>(vellum::protocol::CallToolResult::text("ran"))
            },
        )
        .unwrap();
    let srv = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        f.server,
        StreamableHttpOptions::default().json_response(true),
    ))
    .await;
    let mut c = srv.client();
    let init = c
        .send(
            c.builder(Method::POST)
                .header("x-test-principal", "https://issuer alice")
                .body(initialize().to_string()),
        )
        .await;
    c.session = init.header(SESSION_ID).map(str::to_owned);
    c.protocol_version = Some("2025-06-18".into());
    let legacy = c
        .send(
            c.builder(Method::POST)
                .header("x-test-principal", "https://issuer alice")
                .body(call(2, "scoped", json!({})).to_string()),
        )
        .await;
    let body = check(EVERY, MISSING_SCOPE, &legacy, None);
    assert_eq!(body["id"], 2);
    assert_eq!(
        legacy.header("www-authenticate"),
        Some("Bearer error=\"insufficient_scope\", scope=\"files:write\"")
    );
    // The session is kept: an unscoped call on it is served.
    let ok = c
        .send(
            c.builder(Method::POST)
                .header("x-test-principal", "https://issuer alice")
                .body(call(3, "add", json!({"a": 1, "b": 2})).to_string()),
        )
        .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());

    let m = srv.client();
    let body = vellum_testkit::http::modern_body(
        json!(4),
        "tools/call",
        json!({"name": "scoped", "arguments": {}}),
    );
    let modern = m
        .send(
            m.modern_builder(&body)
                .header("x-test-principal", "https://issuer alice"),
        )
        .await;
    check(EVERY, MISSING_SCOPE, &modern, None);
}
