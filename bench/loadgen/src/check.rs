//! Checks every answer: HTTP status, framing (JSON or SSE), JSON-RPC envelope, and the
//! `hello_world` result.
//!
//! A correct tool-call answer is HTTP 200 with `application/json` or `text/event-stream`,
//! carries a JSON-RPC 2.0 response with the request's id and a `result` without
//! `isError: true`, and has a text content item containing `Hello World, bench`. On SSE, events
//! that are not responses (notifications, requests) are skipped; a response with another id is
//! an error. Anything else is a [`Fault`], counted and sampled by the scenarios.

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use crate::proto::EXPECTED_TEXT;
use crate::sse;

/// Why an answer was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault(pub(crate) String);

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fault {}

fn fault(msg: impl Into<String>) -> Fault {
    Fault(msg.into())
}

/// A complete HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

#[derive(Deserialize)]
struct Envelope<'a, R> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<IgnoredAny>,
    result: Option<R>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ToolResult<'a> {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    content: Vec<Content<'a>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct InitResult {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
}

/// Checks a `tools/call hello_world` answer to the request with id `id`.
pub(crate) fn tool_call(answer: &Answer, id: u64) -> Result<(), Fault> {
    find(answer, id, decode_tool_call)
}

/// Checks an `initialize` answer; returns the negotiated protocol version.
pub(crate) fn initialize(answer: &Answer, id: u64) -> Result<String, Fault> {
    find(answer, id, decode_initialize)
}

/// One JSON-RPC message decoded by a `decode_*` function: `None` when it is not a response
/// (a notification or request on an SSE stream, to be skipped).
type Decoded<T> = Result<Option<T>, Fault>;

fn decode_tool_call(json: &[u8], want: &str) -> Decoded<()> {
    let Some(result) = envelope::<ToolResult<'_>>(json, want)? else {
        return Ok(None);
    };
    if result.is_error == Some(true) {
        return Err(fault("tool result has isError: true"));
    }
    let hit = result
        .content
        .iter()
        .any(|c| c.kind == "text" && c.text.as_deref().is_some_and(|t| t.contains(EXPECTED_TEXT)));
    if hit {
        Ok(Some(()))
    } else {
        Err(fault("no text content containing 'Hello World, bench'"))
    }
}

fn decode_initialize(json: &[u8], want: &str) -> Decoded<String> {
    Ok(envelope::<InitResult>(json, want)?.map(|r| r.protocol_version))
}

/// Decodes one JSON-RPC message and checks its envelope against the expected id `want`.
fn envelope<'a, R: Deserialize<'a>>(json: &'a [u8], want: &str) -> Decoded<R> {
    let env: Envelope<'a, R> =
        serde_json::from_slice(json).map_err(|e| fault(format!("bad JSON: {e}")))?;
    if env.method.is_some() {
        return Ok(None);
    }
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Err(fault("jsonrpc is not \"2.0\""));
    }
    match env.id {
        Some(id) if id.get() == want => {}
        Some(id) => {
            return Err(fault(format!(
                "response id {} where {want} was sent",
                id.get()
            )));
        }
        None => return Err(fault("response without id")),
    }
    if let Some(e) = env.error {
        return Err(fault(format!("JSON-RPC error {}", truncate(e.get(), 200))));
    }
    env.result
        .map(Some)
        .ok_or_else(|| fault("response without result"))
}

/// Checks the status and framing, then finds and decodes the response to request `id`.
fn find<T>(answer: &Answer, id: u64, decode: fn(&[u8], &str) -> Decoded<T>) -> Result<T, Fault> {
    if answer.status != StatusCode::OK {
        return Err(fault(format!(
            "HTTP {}: {}",
            answer.status.as_u16(),
            truncate(&String::from_utf8_lossy(&answer.body), 200)
        )));
    }
    let ct = answer
        .headers
        .get(CONTENT_TYPE)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    let want = id.to_string();
    if starts_with_ignore_case(ct, b"application/json") {
        return decode(&answer.body, &want)?.ok_or_else(|| fault("JSON body is not a response"));
    }
    if starts_with_ignore_case(ct, b"text/event-stream") {
        for data in sse::events(&answer.body) {
            if let Some(out) = decode(&data, &want)? {
                return Ok(out);
            }
        }
        return Err(fault("SSE body ended without a response"));
    }
    Err(fault(format!(
        "unexpected Content-Type {:?}",
        String::from_utf8_lossy(ct)
    )))
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn answer(status: u16, ct: &'static str, body: &str) -> Answer {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
        Answer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            headers,
            body: Bytes::copy_from_slice(body.as_bytes()),
        }
    }

    const OK: &str = r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Hello World, bench"}]}}"#;

    #[test]
    fn accepts_json_and_sse() {
        assert_eq!(tool_call(&answer(200, "application/json", OK), 5), Ok(()));
        let sse = format!("id: 0\nretry: 3000\ndata:\n\nevent: message\r\ndata: {OK}\r\n\r\n");
        assert_eq!(
            tool_call(&answer(200, "text/event-stream", &sse), 5),
            Ok(())
        );
    }

    #[test]
    fn skips_notifications_before_the_response() {
        let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        let sse = format!("data: {note}\n\ndata: {OK}\n\n");
        assert_eq!(
            tool_call(&answer(200, "text/event-stream", &sse), 5),
            Ok(())
        );
    }

    #[test]
    fn accepts_multi_line_data() {
        let split = OK.replacen(",\"result\"", "\ndata: ,\"result\"", 1);
        let sse = format!("data: {split}\n\n");
        assert_eq!(
            tool_call(&answer(200, "text/event-stream", &sse), 5),
            Ok(())
        );
    }

    #[test]
    fn rejects_wrong_answers() {
        let json = "application/json";
        assert!(tool_call(&answer(200, json, OK), 6).is_err(), "wrong id");
        assert!(tool_call(&answer(400, json, OK), 5).is_err(), "status");
        assert!(
            tool_call(&answer(200, "text/plain", OK), 5).is_err(),
            "content type"
        );
        let err = OK.replace("\"content\"", "\"isError\":true,\"content\"");
        assert!(tool_call(&answer(200, json, &err), 5).is_err(), "isError");
        let other = OK.replace("bench", "world");
        assert!(tool_call(&answer(200, json, &other), 5).is_err(), "text");
        let v1 = OK.replace("2.0", "1.0");
        assert!(tool_call(&answer(200, json, &v1), 5).is_err(), "jsonrpc");
        let rpc_err = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"x"}}"#;
        assert!(tool_call(&answer(200, json, rpc_err), 5).is_err(), "error");
        let unterminated = format!("data: {OK}\n");
        assert!(tool_call(&answer(200, "text/event-stream", &unterminated), 5).is_err());
    }

    #[test]
    fn reads_the_negotiated_version() {
        let init = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;
        assert_eq!(
            initialize(&answer(200, "application/json", init), 0).as_deref(),
            Ok("2025-06-18")
        );
    }
}
