//! Real HTTP over loopback: a server on `127.0.0.1:0` and an MCP client that speaks
//! Streamable HTTP with plain reqwest (so tests see statuses, headers and bodies exactly).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use vellum::server::Server;
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions, serve_listener};

use super::within;

/// The header carrying the session id.
pub const SESSION_ID: &str = "mcp-session-id";
/// The header carrying the negotiated protocol version.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// What a client that takes both answers sends in `Accept`.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A handler served on an ephemeral loopback port until the value is dropped or stopped.
pub struct TestHttpServer {
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The handler being served (for session counts and the like).
    pub handler: StreamableHttpHandler,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestHttpServer {
    /// Serves `server` with `options`.
    pub async fn start(server: Server, options: StreamableHttpOptions) -> Self {
        Self::start_handler(StreamableHttpHandler::for_server(server, options)).await
    }

    /// A listener on an ephemeral loopback port, and its address.
    async fn bind() -> (tokio::net::TcpListener, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        (listener, addr)
    }

    /// Serves `handler`.
    pub async fn start_handler(handler: StreamableHttpHandler) -> Self {
        let (listener, addr) = Self::bind().await;
        let (stop, stopped) = oneshot::channel::<()>();
        let served = handler.clone();
        let task = tokio::spawn(async move {
            serve_listener(listener, served, async {
                let _ = stopped.await;
            })
            .await
        });
        TestHttpServer {
            addr,
            url: format!("http://{addr}/mcp"),
            handler,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Serves `handler` as [`TestHttpServer::start_handler`] does, and also gives every
    /// request the authenticated [`Principal`](vellum::auth::Principal) named by its
    /// `x-test-principal` header (`issuer subject`), as an auth layer would.
    pub async fn start_with_principals(handler: StreamableHttpHandler) -> Self {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        use vellum::transport::http::ConnectionInfo;
        let (listener, addr) = Self::bind().await;
        let (stop, mut stopped) = oneshot::channel::<()>();
        let served = handler.clone();
        let task = tokio::spawn(async move {
            loop {
                let (stream, remote) = tokio::select! {
                    r = listener.accept() => r?,
                    _ = &mut stopped => break,
                };
                let info = ConnectionInfo {
                    local: stream.local_addr().ok(),
                    remote: Some(remote),
                };
                let h = served.clone();
                let svc = hyper::service::service_fn(
                    move |mut req: http::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(info);
                        let principal = req
                            .headers()
                            .get("x-test-principal")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.split_once(' '))
                            .map(|(i, s)| vellum::auth::Principal::new(i, s));
                        if let Some(p) = principal {
                            req.extensions_mut().insert(p.caller());
                            req.extensions_mut().insert(p);
                        }
                        let h = h.clone();
                        async move { Ok::<_, std::convert::Infallible>(h.handle(req).await) }
                    },
                );
                tokio::spawn(async move {
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
            served.shutdown();
            Ok(())
        });
        TestHttpServer {
            addr,
            url: format!("http://{addr}/mcp"),
            handler,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// A client of this server.
    pub fn client(&self) -> McpHttp {
        McpHttp::new(&self.url)
    }

    /// Starts a graceful shutdown (the shutdown future of `serve_listener` completes) without
    /// waiting for it; [`TestHttpServer::stop`] then waits for the accept loop to end.
    pub fn begin_stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Shuts down gracefully and waits for the accept loop to end.
    pub async fn stop(mut self) {
        self.begin_stop();
        if let Some(t) = self.task.take() {
            within("the server to shut down", t)
                .await
                .expect("the accept loop did not panic")
                .expect("the accept loop ended cleanly");
        }
    }
}

impl Drop for TestHttpServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// One event of an SSE stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `retry:` field, if any.
    pub retry: Option<u64>,
}

/// Parses an SSE stream (the WHATWG rules): events end at a blank line, `:` lines are
/// comments, one space after the colon is dropped, `data:` lines join with `\n`. Events
/// without data (comments only, or a priming event) are left out.
pub fn parse_sse(text: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut cur = SseEvent::default();
    let mut has_data = false;
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    for line in text.split('\n') {
        if line.is_empty() {
            if has_data {
                events.push(std::mem::take(&mut cur));
            } else {
                cur = SseEvent::default();
            }
            has_data = false;
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if has_data {
                    cur.data.push('\n');
                }
                cur.data.push_str(value);
                has_data = true;
            }
            "id" => cur.id = Some(value.to_owned()),
            "event" => cur.event = Some(value.to_owned()),
            "retry" => cur.retry = value.parse().ok(),
            _ => {}
        }
    }
    // An event the stream ended before terminating is dropped, as the spec says.
    events.retain(|e| !e.data.is_empty());
    events
}

/// An HTTP answer, with its JSON-RPC messages read from a JSON or SSE body.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// The SSE events (empty for a JSON body).
    pub events: Vec<SseEvent>,
    /// Every JSON-RPC message of the body, in order.
    pub messages: Vec<Value>,
}

impl Answer {
    /// The `Content-Type` (empty when absent).
    pub fn content_type(&self) -> &str {
        self.headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The response (result or error) to the request with this id.
    pub fn response(&self, id: &Value) -> &Value {
        self.messages
            .iter()
            .find(|m| {
                m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
            })
            .unwrap_or_else(|| panic!("no response to id {id} in {:?}", self.messages))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// An MCP client over plain HTTP: keeps the session id and protocol version it was given.
#[derive(Clone)]
pub struct McpHttp {
    /// The HTTP client (no proxies, so loopback stays loopback).
    pub http: reqwest::Client,
    /// The endpoint.
    pub url: String,
    /// The session id (`Mcp-Session-Id`), once initialized.
    pub session: Option<String>,
    /// The protocol version sent in `MCP-Protocol-Version`, once negotiated.
    pub protocol_version: Option<String>,
    next_id: Arc<AtomicI64>,
}

impl McpHttp {
    /// A client of `url`.
    pub fn new(url: &str) -> Self {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a reqwest client");
        McpHttp {
            http,
            url: url.to_owned(),
            session: None,
            protocol_version: None,
            next_id: Arc::new(AtomicI64::new(1)),
        }
    }

    /// A client of `url` that sends through `http` (e.g. a client bound to a Unix socket).
    pub fn with_client(url: &str, http: reqwest::Client) -> Self {
        McpHttp {
            http,
            url: url.to_owned(),
            session: None,
            protocol_version: None,
            next_id: Arc::new(AtomicI64::new(1)),
        }
    }

    /// A fresh request id.
    pub fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A request to the endpoint with the session's headers (and, for POST, the JSON
    /// content type and an `Accept` allowing both answers).
    pub fn builder(&self, method: Method) -> RequestBuilder {
        let mut b = self.http.request(method.clone(), &self.url);
        if method == Method::POST {
            b = b
                .header(CONTENT_TYPE, "application/json")
                .header("accept", ACCEPT_BOTH);
        }
        if let Some(s) = &self.session {
            b = b.header(SESSION_ID, s);
        }
        if let Some(v) = &self.protocol_version {
            b = b.header(PROTOCOL_VERSION, v);
        }
        b
    }

    /// Sends a request and reads the whole answer.
    pub async fn send(&self, request: RequestBuilder) -> Answer {
        within("an HTTP answer", read_answer(request)).await
    }

    /// POSTs these exact bytes with the session's headers.
    pub async fn post_raw(&self, body: impl Into<reqwest::Body>) -> Answer {
        self.send(self.builder(Method::POST).body(body)).await
    }

    /// POSTs one JSON message with this exact `Accept` header (`None`: no `Accept` at all).
    pub async fn post_accepting(&self, accept: Option<&str>, message: &Value) -> Answer {
        let mut b = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json");
        if let Some(a) = accept {
            b = b.header("accept", a);
        }
        if let Some(s) = &self.session {
            b = b.header(SESSION_ID, s);
        }
        if let Some(v) = &self.protocol_version {
            b = b.header(PROTOCOL_VERSION, v);
        }
        self.send(b.body(message.to_string())).await
    }

    /// POSTs one JSON message.
    pub async fn post(&self, message: &Value) -> Answer {
        self.post_raw(message.to_string()).await
    }

    /// Sends a request and returns its response message (asserting HTTP 200).
    pub async fn request(&self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id());
        let answer = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "{method}: unexpected status, body {}",
            answer.text()
        );
        answer.response(&id).clone()
    }

    /// Sends a notification and returns the answer (202 with no body, normally).
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Answer {
        let mut m = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            m["params"] = p;
        }
        self.post(&m).await
    }

    /// `initialize` with `version`; on success keeps the session id and the negotiated
    /// version for later requests. Returns the whole answer.
    pub async fn initialize(&mut self, version: &str) -> Answer {
        let id = json!(self.next_id());
        let answer = self
            .post(&json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "vellum-tests", "version": "0.0.0"}
                }
            }))
            .await;
        if answer.status == StatusCode::OK {
            self.session = answer.header(SESSION_ID).map(str::to_owned);
            self.protocol_version = answer.response(&id)["result"]["protocolVersion"]
                .as_str()
                .map(str::to_owned);
        }
        answer
    }

    /// `initialize` then `notifications/initialized`; `false` when the session was gone by
    /// the second (closed by a short timeout on a loaded machine), so the caller can retry.
    pub async fn try_connect(&mut self, version: &str) -> bool {
        let init = self.initialize(version).await;
        assert_eq!(init.status, StatusCode::OK, "initialize: {}", init.text());
        let ack = self.notify("notifications/initialized", None).await;
        if ack.status == StatusCode::NOT_FOUND {
            return false;
        }
        assert_eq!(
            ack.status,
            StatusCode::ACCEPTED,
            "initialized: {}",
            ack.text()
        );
        true
    }

    /// `initialize` then `notifications/initialized`, asserting both succeed.
    pub async fn connect(&mut self, version: &str) {
        let init = self.initialize(version).await;
        assert_eq!(init.status, StatusCode::OK, "initialize: {}", init.text());
        assert!(self.session.is_some(), "initialize gave no Mcp-Session-Id");
        let ack = self.notify("notifications/initialized", None).await;
        assert_eq!(
            ack.status,
            StatusCode::ACCEPTED,
            "initialized: {}",
            ack.text()
        );
    }

    /// Ends the session with DELETE; returns the status.
    pub async fn delete(&self) -> StatusCode {
        self.send(self.builder(Method::DELETE)).await.status
    }

    /// A `tools/call` request with a fresh id (and `progressToken` when given).
    pub fn call_tool(&self, name: &str, arguments: Value, progress_token: Option<&str>) -> Value {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(t) = progress_token {
            params["_meta"] = json!({"progressToken": t});
        }
        json!({"jsonrpc": "2.0", "id": self.next_id(), "method": "tools/call", "params": params})
    }

    /// POSTs `message` and reads the answer as it streams (an SSE body), or, when the
    /// answer is not SSE, the whole answer.
    pub async fn post_stream(&self, message: &Value) -> Streamed {
        SseReader::open(self.builder(Method::POST).body(message.to_string())).await
    }

    /// Opens the session's standalone stream (GET), asserting it is an SSE stream.
    pub async fn listen(&self) -> SseReader {
        self.get_stream(None)
            .await
            .expect_stream("the standalone GET stream")
    }

    /// A GET with `Accept: text/event-stream`, and `Last-Event-ID` when given.
    pub async fn get_stream(&self, last_event_id: Option<&str>) -> Streamed {
        let mut b = self
            .builder(Method::GET)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            b = b.header("last-event-id", id);
        }
        SseReader::open(b).await
    }

    /// A 2026-07-28 POST of `body` with the headers the spec requires: the protocol version,
    /// `Mcp-Method`, and `Mcp-Name` for `tools/call`, `prompts/get` and `resources/read`
    /// (no session headers, whatever this client holds).
    pub fn modern_builder(&self, body: &Value) -> RequestBuilder {
        self.modern_builder_with(body, &[])
    }

    /// [`McpHttp::modern_builder`] with some of those headers changed: `(name, Some(v))`
    /// sends `v` instead, `(name, None)` leaves the header out.
    pub fn modern_builder_with(
        &self,
        body: &Value,
        over: &[(&str, Option<&str>)],
    ) -> RequestBuilder {
        let method = body["method"].as_str();
        let name = match method.unwrap_or_default() {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        let mut b = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header("accept", ACCEPT_BOTH);
        for (header, value) in [
            (PROTOCOL_VERSION, Some(MODERN)),
            ("mcp-method", method),
            ("mcp-name", name),
        ] {
            let value = over
                .iter()
                .find(|(h, _)| *h == header)
                .map_or(value, |(_, v)| *v);
            if let Some(v) = value {
                b = b.header(header, v);
            }
        }
        b.body(body.to_string())
    }

    /// Sends `body` as [`McpHttp::modern_builder_with`] builds it.
    pub async fn modern_with(&self, body: &Value, over: &[(&str, Option<&str>)]) -> Answer {
        self.send(self.modern_builder_with(body, over)).await
    }

    /// Sends a 2026-07-28 request (see [`modern_body`]) with the right headers.
    pub async fn modern(&self, method: &str, params: Value) -> Answer {
        let body = modern_body(json!(self.next_id()), method, params);
        self.send(self.modern_builder(&body)).await
    }
}

/// The text of a tool result's first content block.
pub fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {response}"))
}

/// Asserts a refusal: `status`, an `application/json` JSON-RPC error body with `code`, and
/// never `"id": null`. Returns the body.
pub fn assert_rejected(a: &Answer, status: StatusCode, code: i64) -> Value {
    assert_eq!(a.status, status, "{}", a.text());
    assert_eq!(a.content_type(), "application/json", "{}", a.text());
    let body: Value = serde_json::from_slice(&a.body)
        .unwrap_or_else(|e| panic!("not a JSON-RPC error body ({e}): {}", a.text()));
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body.get("id") != Some(&Value::Null),
        "\"id\": null in {body}"
    );
    body
}

/// The blocks of a `paced` call of `steps` (see the fixtures): an answer that is still
/// streaming when its headers go out (so it is resumable: ids, and a priming event for
/// 2025-11-25), read to its end.
pub async fn paced_answer(c: &McpHttp, pace: &super::fixtures::Pacer, steps: u32) -> Vec<SseBlock> {
    let call = c.call_tool("paced", json!({"steps": steps}), Some("paced"));
    let mut s = c.post_stream(&call).await.expect_stream("a paced call");
    pace.allow(steps as usize);
    s.rest().await
}

/// The event ids of `blocks` that carry a message.
pub fn message_ids(blocks: &[SseBlock]) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b.is_message())
        .map(|b| {
            b.id.clone()
                .unwrap_or_else(|| panic!("a message without an id: {b:?}"))
        })
        .collect()
}

/// The modern protocol version.
pub const MODERN: &str = "2026-07-28";

/// A 2026-07-28 request: `params` plus the `_meta` every modern request carries (protocol
/// version and client capabilities; existing `_meta` keys are kept).
pub fn modern_body(id: Value, method: &str, params: Value) -> Value {
    let mut params = if params.is_null() { json!({}) } else { params };
    let meta = params
        .as_object_mut()
        .expect("modern params are an object")
        .entry("_meta")
        .or_insert_with(|| json!({}));
    let meta = meta.as_object_mut().expect("_meta is an object");
    meta.entry("io.modelcontextprotocol/protocolVersion")
        .or_insert_with(|| json!(MODERN));
    meta.entry("io.modelcontextprotocol/clientCapabilities")
        .or_insert_with(|| json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One block of an SSE stream as it arrived: an event, a `retry`-only block, or comments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseBlock {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n` (`None` when the block has no data line).
    pub data: Option<String>,
    /// The `retry:` field, if any.
    pub retry: Option<u64>,
    /// How many comment lines (`:` …) the block had.
    pub comments: usize,
}

impl SseBlock {
    /// True for a block that carries a message (non-empty data).
    pub fn is_message(&self) -> bool {
        self.data.as_deref().is_some_and(|d| !d.is_empty())
    }

    /// True for a block of comments only (a keep-alive).
    pub fn is_comment_only(&self) -> bool {
        self.comments > 0 && self.data.is_none() && self.id.is_none() && self.retry.is_none()
    }

    /// The message, parsed (panics when the block has none).
    pub fn json(&self) -> Value {
        let d = self.data.as_deref().unwrap_or_default();
        serde_json::from_str(d).unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {d:?}"))
    }
}

fn parse_block(text: &str) -> SseBlock {
    let mut b = SseBlock::default();
    for line in text.split('\n') {
        if line.starts_with(':') {
            b.comments += 1;
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut b.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => b.data = Some(value.to_owned()),
            },
            "id" => b.id = Some(value.to_owned()),
            "event" => b.event = Some(value.to_owned()),
            "retry" => b.retry = value.parse().ok(),
            _ => {}
        }
    }
    b
}

/// What a request expected to stream gave: a live SSE stream, or a complete other answer.
pub enum Streamed {
    /// An SSE body, being read.
    Stream(SseReader),
    /// Any other answer (a JSON body, an error, 202…), read whole.
    Whole(Answer),
}

impl Streamed {
    /// The stream, or a failure naming `what` and showing the answer.
    pub fn expect_stream(self, what: &str) -> SseReader {
        match self {
            Streamed::Stream(s) => s,
            Streamed::Whole(a) => panic!(
                "{what}: expected an SSE stream, got {} {:?}: {}",
                a.status,
                a.content_type(),
                a.text()
            ),
        }
    }

    /// The whole answer, or a failure naming `what` when it is a stream.
    pub fn expect_whole(self, what: &str) -> Answer {
        match self {
            Streamed::Whole(a) => a,
            Streamed::Stream(s) => panic!(
                "{what}: expected a complete non-SSE answer, got an SSE stream ({})",
                s.status
            ),
        }
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        match self {
            Streamed::Stream(s) => s.status,
            Streamed::Whole(a) => a.status,
        }
    }
}

/// An SSE body read block by block as it arrives. Dropping it drops the connection.
pub struct SseReader {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    /// Bytes received and not yet parsed (`\r` dropped: the server never sends one inside
    /// a field, and this turns CRLF line ends into LF).
    buf: Vec<u8>,
    ended: bool,
}

impl SseReader {
    /// Sends `request`; an SSE answer is returned unread, any other answer is read whole.
    pub async fn open(request: RequestBuilder) -> Streamed {
        let resp = within("the response headers", request.send())
            .await
            .expect("the HTTP request failed");
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_sse {
            return Streamed::Whole(within("an HTTP answer", answer_of(resp)).await);
        }
        Streamed::Stream(SseReader {
            status: resp.status(),
            headers: resp.headers().clone(),
            body: Box::pin(resp.bytes_stream()),
            buf: Vec::new(),
            ended: false,
        })
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn take_block(&mut self) -> Option<SseBlock> {
        let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
        let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
        let text = String::from_utf8(raw).expect("SSE is UTF-8");
        Some(parse_block(text.trim_end_matches('\n')))
    }

    /// The next block, or `None` once the stream ended; fails after [`super::DEADLINE`].
    pub async fn next_block(&mut self) -> Option<SseBlock> {
        match self.next_block_within(super::DEADLINE).await {
            Ok(b) => b,
            Err(()) => panic!("no SSE block within {:?}", super::DEADLINE),
        }
    }

    /// The next block, `Ok(None)` once the stream ended, `Err` if nothing came in `wait`.
    pub async fn next_block_within(
        &mut self,
        wait: std::time::Duration,
    ) -> Result<Option<SseBlock>, ()> {
        use futures_util::StreamExt as _;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(b) = self.take_block() {
                return Ok(Some(b));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Err(()),
                Ok(Some(Ok(chunk))) => self.buf.extend(chunk.iter().filter(|b| **b != b'\r')),
                // A broken-off body ends the stream too (the server went away).
                Ok(Some(Err(_)) | None) => self.ended = true,
            }
        }
    }

    /// The next block carrying a message (skipping comments, priming and `retry`-only
    /// blocks), or `None` once the stream ended.
    pub async fn next_message(&mut self) -> Option<SseBlock> {
        loop {
            let b = self.next_block().await?;
            if b.is_message() {
                return Some(b);
            }
        }
    }

    /// Every remaining block, until the stream ends.
    pub async fn rest(&mut self) -> Vec<SseBlock> {
        let mut out = Vec::new();
        while let Some(b) = self.next_block().await {
            out.push(b);
        }
        out
    }

    /// The messages of every remaining block, until the stream ends.
    pub async fn rest_messages(&mut self) -> Vec<Value> {
        self.rest()
            .await
            .iter()
            .filter(|b| b.is_message())
            .map(SseBlock::json)
            .collect()
    }
}

async fn read_answer(request: RequestBuilder) -> Answer {
    let resp = request.send().await.expect("the HTTP request failed");
    answer_of(resp).await
}

async fn answer_of(resp: reqwest::Response) -> Answer {
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.expect("the body could not be read");
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut events = Vec::new();
    let mut messages = Vec::new();
    if content_type.starts_with("text/event-stream") {
        let text = std::str::from_utf8(&body).expect("an SSE body is UTF-8");
        events = parse_sse(text);
        for e in &events {
            let v: Value = serde_json::from_str(&e.data)
                .unwrap_or_else(|err| panic!("SSE data is not JSON ({err}): {:?}", e.data));
            messages.push(v);
        }
    } else if content_type.starts_with("application/json") && !body.is_empty() {
        let v: Value = serde_json::from_slice(&body).unwrap_or_else(|err| {
            panic!(
                "a JSON body is not JSON ({err}): {}",
                String::from_utf8_lossy(&body)
            )
        });
        match v {
            Value::Array(items) => messages.extend(items),
            other => messages.push(other),
        }
    }
    Answer {
        status,
        headers,
        body,
        events,
        messages,
    }
}
