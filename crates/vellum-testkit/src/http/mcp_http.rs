//! [`McpHttp`]: an MCP client over plain reqwest that keeps the session id and protocol
//! version it was given, so tests see statuses, headers and bodies exactly; requests of
//! both eras.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use super::answer::read_answer;
use super::sse::{SseBlock, SseReader, Streamed};
use super::{ACCEPT_BOTH, Answer, PROTOCOL_VERSION, SESSION_ID};
use crate::within;

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
    /// The client capabilities `initialize` declares (default: none).
    pub capabilities: Value,
    next_id: Arc<AtomicI64>,
}

impl McpHttp {
    /// A client of `url`.
    pub fn new(url: &str) -> Self {
        // reqwest is built without a crypto provider of its own (see vellum::transport).
        vellum::transport::install_crypto_provider();
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a reqwest client");
        Self::with_client(url, http)
    }

    /// A client of `url` whose connections come from the loopback address `from` (any
    /// 127.x address is loopback: distinct ones are distinct clients to per-address limits).
    pub fn from_address(url: &str, from: [u8; 4]) -> Self {
        vellum::transport::install_crypto_provider();
        let http = reqwest::Client::builder()
            .no_proxy()
            .local_address(std::net::IpAddr::from(from))
            .build()
            .expect("a reqwest client bound to a loopback address");
        McpHttp::with_client(url, http)
    }

    /// A client of `url` that sends through `http` (e.g. a client bound to a Unix socket).
    pub fn with_client(url: &str, http: reqwest::Client) -> Self {
        McpHttp {
            http,
            url: url.to_owned(),
            session: None,
            protocol_version: None,
            capabilities: json!({}),
            next_id: Arc::new(AtomicI64::new(1)),
        }
    }

    /// The same client (session, version, ids) speaking to another endpoint: an instance of
    /// the same deployment.
    pub fn at(&self, url: &str) -> McpHttp {
        McpHttp {
            url: url.to_owned(),
            ..self.clone()
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

    /// Calls the seed's `hello_world` for Alice and returns the text it answered.
    pub async fn greet(&self) -> String {
        let r = self
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": "Alice"}}),
            )
            .await;
        super::text_of(&r).to_owned()
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
                    "capabilities": self.capabilities,
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

    /// A GET of the session's stream (`Accept: text/event-stream`), resuming after
    /// `last_event_id` when given.
    pub fn get(&self, last_event_id: Option<&str>) -> RequestBuilder {
        let b = self
            .builder(Method::GET)
            .header("accept", "text/event-stream");
        match last_event_id {
            Some(id) => b.header("last-event-id", id),
            None => b,
        }
    }

    /// [`McpHttp::get`], read as it streams (or whole, when the answer is not SSE).
    pub async fn get_stream(&self, last_event_id: Option<&str>) -> Streamed {
        SseReader::open(self.get(last_event_id)).await
    }

    /// A 2026-07-28 POST of `body` with the headers the spec requires: the protocol version,
    /// `Mcp-Method`, and `Mcp-Name` for `tools/call`, `prompts/get` and `resources/read` (and
    /// the `taskId` of `tasks/get`, `tasks/update` and `tasks/cancel`)
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
            "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
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

/// The blocks of a `paced` call of `steps` (see the fixtures): an answer that is still
/// streaming when its headers go out (so it is resumable: ids, and a priming event for
/// 2025-11-25), read to its end.
pub async fn paced_answer(c: &McpHttp, pace: &crate::fixture::Pacer, steps: u32) -> Vec<SseBlock> {
    let call = c.call_tool("paced", json!({"steps": steps}), Some("paced"));
    let mut s = c.post_stream(&call).await.expect_stream("a paced call");
    pace.allow(steps as usize);
    s.rest().await
}

/// The modern protocol version.
pub const MODERN: &str = "2026-07-28";

/// A 2026-07-28 request: `params` plus the `_meta` every modern request carries (protocol
/// version and client capabilities; existing `_meta` keys are kept).
pub fn modern_body(id: Value, method: &str, params: Value) -> Value {
    let defaults = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    request_with_meta(id, method, params, defaults)
}

/// A request whose `params._meta` holds `defaults` wherever the params do not set a key.
pub(super) fn request_with_meta(id: Value, method: &str, params: Value, defaults: Value) -> Value {
    let mut params = if params.is_null() { json!({}) } else { params };
    let meta = params
        .as_object_mut()
        .expect("request params are an object")
        .entry("_meta")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("_meta is an object");
    if let Value::Object(defaults) = defaults {
        for (k, v) in defaults {
            meta.entry(k).or_insert(v);
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}
