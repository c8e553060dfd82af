//! [`Answer`]: an HTTP answer read whole, with the JSON-RPC messages of its JSON or SSE body,
//! and the assertions tests make on answers.

use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use super::sse::{SseEvent, parse_sse};

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

    /// The last JSON-RPC message of the body (the response, for a request's answer).
    pub fn last(&self) -> &Value {
        self.messages
            .last()
            .unwrap_or_else(|| panic!("no message in {:?}", self.text()))
    }

    /// The JSON-RPC error code of a JSON error body.
    pub fn error_code(&self) -> i64 {
        let body: Value = serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not a JSON-RPC error body ({e}): {}", self.text()));
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code in {body}"))
    }
}

/// Sends `request` and reads the whole answer.
pub(super) async fn read_answer(request: reqwest::RequestBuilder) -> Answer {
    let resp = request.send().await.expect("the HTTP request failed");
    answer_of(resp).await
}

/// Reads `resp` whole: its SSE events, or its JSON message (or batch), as messages.
pub(super) async fn answer_of(resp: reqwest::Response) -> Answer {
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
