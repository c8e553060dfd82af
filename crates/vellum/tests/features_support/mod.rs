//! Loopback test harness for the feature tests: serves a [`Server`] over real HTTP on
//! 127.0.0.1:0, and speaks to it as a legacy (session) client or a modern (2026-07-28)
//! client, reading JSON and SSE answers alike.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use vellum::server::Server;
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions, serve_listener};

/// How long any single step may take before a test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// A server on a loopback port; stops when dropped.
pub struct TestServer {
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Serves `server` with `options` on 127.0.0.1 (a free port).
pub async fn spawn_with(server: Server, options: StreamableHttpOptions) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let handler = StreamableHttpHandler::for_server(server, options);
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = serve_listener(listener, handler, async {
            let _ = rx.await;
        })
        .await;
    });
    TestServer {
        url,
        stop: Some(tx),
    }
}

/// Serves `server` with the default options.
pub async fn spawn(server: Server) -> TestServer {
    spawn_with(server, StreamableHttpOptions::default()).await
}

/// Everything a request produced: the messages before the answer, then the answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub messages: Vec<Value>,
    pub response: Value,
}

impl Answer {
    /// The `result`, failing the test on an error response.
    pub fn result(&self) -> &Value {
        assert!(
            self.response.get("error").is_none(),
            "expected a result, got {}",
            self.response
        );
        &self.response["result"]
    }

    /// The error code, failing the test on a result.
    pub fn error_code(&self) -> i64 {
        self.response["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error, got {}", self.response))
    }

    /// The notifications of one method that came before the answer.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m["method"] == method && m.get("id").is_none())
            .collect()
    }
}

/// Splits complete SSE events off `buf`, returning their data lines (empty data skipped).
pub fn take_sse_events(buf: &mut String) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(end) = buf.find("\n\n") {
        let event: String = buf.drain(..end + 2).collect();
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let data = data.join("\n");
        if !data.trim().is_empty() {
            out.push(data);
        }
    }
    out
}

/// An open SSE response, read event by event.
pub struct SseReader {
    resp: reqwest::Response,
    buf: String,
    pending: std::collections::VecDeque<Value>,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        SseReader {
            resp,
            buf: String::new(),
            pending: Default::default(),
        }
    }

    /// The next message, or `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(v) = self.pending.pop_front() {
                return Some(v);
            }
            let chunk = tokio::time::timeout(DEADLINE, self.resp.chunk())
                .await
                .expect("no SSE event within the deadline")
                .ok()??;
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
            for d in take_sse_events(&mut self.buf) {
                self.pending.push_back(serde_json::from_str(&d).unwrap());
            }
        }
    }
}

/// How a test client answers the server's requests (sampling, elicitation, roots).
pub type Responder = dyn Fn(&Value) -> Value + Send + Sync;

/// A client for the legacy era: one session, negotiated with `initialize`.
pub struct Legacy {
    pub http: reqwest::Client,
    pub url: String,
    pub session: String,
    pub version: String,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}

impl Legacy {
    /// Initializes a session at `version` with these client capabilities.
    pub async fn connect_with(url: &str, version: &str, capabilities: Value) -> Legacy {
        let http = client();
        let resp = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "vellum-tests", "version": "1"}
                }}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let session = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let mut this = Legacy {
            http,
            url: url.to_owned(),
            session,
            version: version.to_owned(),
        };
        let init = this.read_answer(resp, &json!(0), None).await;
        assert_eq!(init.result()["protocolVersion"], version);
        let r = this
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(r.status(), 202);
        this.version = version.to_owned();
        this
    }

    /// A 2025-11-25 session declaring sampling, elicitation (form and URL) and roots.
    pub async fn connect(url: &str) -> Legacy {
        Self::connect_with(
            url,
            "2025-11-25",
            json!({"sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}}, "roots": {}}),
        )
        .await
    }

    /// POSTs one message with the session's headers.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        self.http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", &self.version)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Sends a request and reads everything up to its answer.
    pub async fn request(&self, id: i64, method: &str, params: Value) -> Answer {
        self.request_answering(id, method, params, None).await
    }

    /// Sends a request, answering the server's requests on the way with `responder`.
    pub async fn request_answering(
        &self,
        id: i64,
        method: &str,
        params: Value,
        responder: Option<&Responder>,
    ) -> Answer {
        let resp = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.read_answer(resp, &json!(id), responder).await
    }

    /// Opens the standalone GET stream.
    pub async fn listen(&self) -> SseReader {
        let resp = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", &self.version)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        SseReader::new(resp)
    }

    async fn read_answer(
        &self,
        resp: reqwest::Response,
        id: &Value,
        responder: Option<&Responder>,
    ) -> Answer {
        read_answer(resp, id, async |m: &Value| {
            // A request from the server: answer it on a separate POST.
            let answer = responder.expect("the server asked something unexpected")(m);
            let r = self
                .post(&json!({"jsonrpc": "2.0", "id": m["id"], "result": answer}))
                .await;
            assert_eq!(r.status(), 202);
        })
        .await
    }
}

/// Reads a JSON or SSE answer up to the response to `id`; `on_request` handles the server's
/// requests met on the way.
async fn read_answer(
    resp: reqwest::Response,
    id: &Value,
    mut on_request: impl AsyncFnMut(&Value),
) -> Answer {
    let status = resp.status().as_u16();
    let sse = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
    if !sse {
        return Answer {
            status,
            messages: Vec::new(),
            response: resp.json().await.unwrap(),
        };
    }
    let mut reader = SseReader::new(resp);
    let mut messages = Vec::new();
    while let Some(m) = reader.next().await {
        if m.get("method").is_some() && m.get("id").is_some() {
            on_request(&m).await;
        } else if m.get("method").is_none() && &m["id"] == id {
            return Answer {
                status,
                messages,
                response: m,
            };
        }
        messages.push(m);
    }
    panic!("the stream ended without an answer; got {messages:?}");
}

/// A client for the 2026-07-28 era: every request stands alone.
pub struct Modern {
    pub http: reqwest::Client,
    pub url: String,
    pub capabilities: Value,
    pub log_level: Option<&'static str>,
}

/// The `_meta` every modern request carries.
pub fn modern_meta(capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "vellum-tests", "version": "1"}
    })
}

impl Modern {
    /// A client declaring sampling, elicitation and roots.
    pub fn new(url: &str) -> Modern {
        Modern {
            http: client(),
            url: url.to_owned(),
            capabilities: json!({"sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}}, "roots": {}}),
            log_level: None,
        }
    }

    /// The body of a request: params with this client's `_meta` merged in.
    pub fn body(&self, id: i64, method: &str, mut params: Value) -> Value {
        let mut meta = modern_meta(&self.capabilities);
        if let Some(l) = self.log_level {
            meta["io.modelcontextprotocol/logLevel"] = json!(l);
        }
        if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
            for (k, v) in extra {
                meta[k] = v.clone();
            }
        }
        params["_meta"] = meta;
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// POSTs a body with the modern headers.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        let method = body["method"].as_str().unwrap_or_default();
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        let p = &body["params"];
        let name = match method {
            "tools/call" | "prompts/get" => p["name"].as_str(),
            "resources/read" => p["uri"].as_str(),
            _ => None,
        };
        if let Some(n) = name {
            req = req.header("mcp-name", n);
        }
        req.json(body).send().await.unwrap()
    }

    /// Sends a request and reads everything up to its answer.
    pub async fn request(&self, id: i64, method: &str, params: Value) -> Answer {
        let resp = self.post(&self.body(id, method, params)).await;
        read_answer(resp, &json!(id), async |m: &Value| {
            panic!("a 2026-07-28 server must not send requests: {m}")
        })
        .await
    }

    /// Opens a `subscriptions/listen` stream.
    pub async fn listen(&self, id: i64, notifications: Value) -> SseReader {
        let resp = self
            .post(&self.body(
                id,
                "subscriptions/listen",
                json!({"notifications": notifications}),
            ))
            .await;
        assert_eq!(resp.status(), 200);
        SseReader::new(resp)
    }
}

/// Waits until `f` holds, polling every few milliseconds, failing after [`DEADLINE`].
pub async fn eventually<F: FnMut() -> bool>(mut f: F) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < DEADLINE, "condition not met in time");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
