//! Conversation clients for tests that care about what a request produced rather than about
//! its HTTP framing: [`Legacy`] (one session, answering the server's requests as they come)
//! and [`Modern`] (2026-07-28, every request standing alone). Both speak through [`McpHttp`]
//! and read streams with [`SseReader`]; a request's outcome is a [`Reply`].

use reqwest::Method;
use serde_json::{Value, json};

use super::{MODERN, McpHttp, SseReader};

/// Everything a request produced: the messages before the response, then the response.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The messages before the response (the server's requests included).
    pub messages: Vec<Value>,
    /// The response: a whole JSON body, or the response message of the stream.
    pub response: Value,
}

impl Reply {
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

    /// The notifications of one method that came before the response.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m["method"] == method && m.get("id").is_none())
            .collect()
    }
}

/// How a test client answers the server's requests (sampling, elicitation, roots): the
/// `result` for a request.
pub type Responder = dyn Fn(&Value) -> Value + Send + Sync;

/// The client capabilities the conversation clients declare unless told otherwise:
/// sampling (with tools), elicitation (form and URL) and roots.
pub fn full_capabilities() -> Value {
    json!({"sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}}, "roots": {}})
}

/// A client for the legacy era: one session, negotiated with `initialize`.
pub struct Legacy {
    /// The HTTP client holding the session.
    pub mcp: McpHttp,
}

impl Legacy {
    /// Initializes a session at `version` with these client capabilities.
    pub async fn connect_with(url: &str, version: &str, capabilities: Value) -> Legacy {
        let mut mcp = McpHttp::new(url);
        mcp.capabilities = capabilities;
        let init = mcp.initialize(version).await;
        assert_eq!(init.status, 200, "initialize: {}", init.text());
        assert!(mcp.session.is_some(), "initialize gave no Mcp-Session-Id");
        assert_eq!(
            mcp.protocol_version.as_deref(),
            Some(version),
            "{}",
            init.text()
        );
        let ack = mcp.notify("notifications/initialized", None).await;
        assert_eq!(ack.status, 202, "initialized: {}", ack.text());
        Legacy { mcp }
    }

    /// A 2025-11-25 session declaring [`full_capabilities`].
    pub async fn connect(url: &str) -> Legacy {
        Self::connect_with(url, "2025-11-25", full_capabilities()).await
    }

    /// POSTs one message with the session's headers; the response is left unread.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        self.mcp
            .builder(Method::POST)
            .body(body.to_string())
            .send()
            .await
            .expect("the HTTP request failed")
    }

    /// Sends a request and reads everything up to its response.
    pub async fn request(&self, id: i64, method: &str, params: Value) -> Reply {
        self.request_answering(id, method, params, None).await
    }

    /// Sends a request, answering the server's requests on the way with `responder`.
    pub async fn request_answering(
        &self,
        id: i64,
        method: &str,
        params: Value,
        responder: Option<&Responder>,
    ) -> Reply {
        let resp = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        read_reply(resp, &json!(id), async |m: &Value| {
            // A request from the server: answer it on a separate POST.
            let answer = responder.expect("the server asked something unexpected")(m);
            let r = self
                .post(&json!({"jsonrpc": "2.0", "id": m["id"], "result": answer}))
                .await;
            assert_eq!(r.status(), 202);
        })
        .await
    }

    /// Opens the standalone GET stream.
    pub async fn listen(&self) -> SseReader {
        let stream = self.mcp.listen().await;
        assert_eq!(stream.status, 200);
        stream
    }
}

/// A client for the 2026-07-28 era: every request stands alone.
pub struct Modern {
    /// The HTTP client (it holds no session).
    pub mcp: McpHttp,
    /// The capabilities every request declares (default: [`full_capabilities`]).
    pub capabilities: Value,
    /// The `logLevel` every request asks for, if any.
    pub log_level: Option<&'static str>,
}

/// The `_meta` every modern request of [`Modern`] carries.
pub fn modern_meta(capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "vellum-tests", "version": "1"}
    })
}

impl Modern {
    /// A client declaring [`full_capabilities`].
    pub fn new(url: &str) -> Modern {
        Modern {
            mcp: McpHttp::new(url),
            capabilities: full_capabilities(),
            log_level: None,
        }
    }

    /// The body of a request: `params` with this client's `_meta` merged in (keys the
    /// params' own `_meta` sets win).
    pub fn body(&self, id: i64, method: &str, params: Value) -> Value {
        let mut meta = modern_meta(&self.capabilities);
        if let Some(l) = self.log_level {
            meta["io.modelcontextprotocol/logLevel"] = json!(l);
        }
        super::mcp_http::request_with_meta(json!(id), method, params, meta)
    }

    /// POSTs a body with the modern headers; the response is left unread.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        self.mcp
            .modern_builder(body)
            .send()
            .await
            .expect("the HTTP request failed")
    }

    /// Sends a request and reads everything up to its response.
    pub async fn request(&self, id: i64, method: &str, params: Value) -> Reply {
        let resp = self.post(&self.body(id, method, params)).await;
        read_reply(resp, &json!(id), async |m: &Value| {
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

/// Reads a JSON or SSE answer up to the response to `id`; `on_request` handles the server's
/// requests met on the way.
async fn read_reply(
    resp: reqwest::Response,
    id: &Value,
    mut on_request: impl AsyncFnMut(&Value),
) -> Reply {
    let status = resp.status().as_u16();
    let sse = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
    if !sse {
        return Reply {
            status,
            messages: Vec::new(),
            response: resp.json().await.expect("a JSON body"),
        };
    }
    let mut reader = SseReader::new(resp);
    let mut messages = Vec::new();
    while let Some(m) = reader.next_json().await {
        if m.get("method").is_some() && m.get("id").is_some() {
            on_request(&m).await;
        } else if m.get("method").is_none() && &m["id"] == id {
            return Reply {
                status,
                messages,
                response: m,
            };
        }
        messages.push(m);
    }
    panic!("the stream ended without an answer; got {messages:?}");
}
