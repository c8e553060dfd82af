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

    /// Serves `handler`.
    pub async fn start_handler(handler: StreamableHttpHandler) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
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

    /// A client of this server.
    pub fn client(&self) -> McpHttp {
        McpHttp::new(&self.url)
    }

    /// Shuts down gracefully and waits for the accept loop to end.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
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
}

async fn read_answer(request: RequestBuilder) -> Answer {
    let resp = request.send().await.expect("the HTTP request failed");
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
