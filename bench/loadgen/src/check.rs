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
    tool_answer(answer, id, Expect::Hello).map(|_| ())
}

/// What a tool's answer must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// `hello_world`: a text item containing `Hello World, bench`.
    Hello,
    /// `stream`: this many `notifications/progress` for the request's progress token (its
    /// id), with increasing progress, then a text item `streamed <count>`.
    Stream(u32),
    /// `blob`: a text item of exactly this many bytes.
    Blob(usize),
    /// Any text item (`touch`).
    Any,
}

/// The JSON-RPC messages of a correct answer (the response and the notifications before it).
pub(crate) type Messages = u64;

/// Checks the answer to `tools/call` request `id` against `expect`.
pub(crate) fn tool_answer(answer: &Answer, id: u64, expect: Expect) -> Result<Messages, Fault> {
    match expect {
        Expect::Stream(count) => stream_answer(answer, id, count),
        Expect::Hello => find(answer, id, |json, want| {
            decode_tool_call(json, want, |t| t.contains(EXPECTED_TEXT), EXPECTED_TEXT)
        })
        .map(|()| 1),
        Expect::Blob(n) => find(answer, id, |json, want| {
            decode_tool_call(json, want, |t| t.len() == n, "the blob's length")
        })
        .map(|()| 1),
        Expect::Any => find(answer, id, |json, want| {
            decode_tool_call(json, want, |_| true, "any text")
        })
        .map(|()| 1),
    }
}

/// One message of an SSE answer, with what the stream check needs of its params.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Progress<'a> {
    #[serde(rename = "progressToken", borrow)]
    token: &'a RawValue,
    progress: f64,
}

fn stream_answer(answer: &Answer, id: u64, count: u32) -> Result<Messages, Fault> {
    status_ok(answer)?;
    if !starts_with_ignore_case(content_type(answer), b"text/event-stream") {
        return Err(fault(format!(
            "a streaming tool answered with Content-Type {:?} (progress needs SSE)",
            String::from_utf8_lossy(content_type(answer))
        )));
    }
    let want = id.to_string();
    let done = format!("streamed {count}");
    let mut seen = 0u32;
    let mut last = f64::NEG_INFINITY;
    for data in sse::events(&answer.body) {
        let m: Message<'_> =
            serde_json::from_slice(&data).map_err(|e| fault(format!("bad JSON: {e}")))?;
        match m.method.as_deref() {
            Some("notifications/progress") => {
                let p: Progress<'_> = m
                    .params
                    .map(|p| serde_json::from_str(p.get()))
                    .transpose()
                    .map_err(|e| fault(format!("bad progress params: {e}")))?
                    .ok_or_else(|| fault("progress without params"))?;
                if p.token.get() != want {
                    return Err(fault(format!(
                        "progress token {} on the stream of request {want}",
                        p.token.get()
                    )));
                }
                if p.progress <= last {
                    return Err(fault("progress did not increase"));
                }
                last = p.progress;
                seen += 1;
            }
            Some(_) => {}
            None => {
                decode_tool_call(&data, &want, |t| t == done, &done)?
                    .ok_or_else(|| fault("response is not a response"))?;
                if seen != count {
                    return Err(fault(format!(
                        "{seen} progress notifications before the result, {count} expected"
                    )));
                }
                return Ok(u64::from(seen) + 1);
            }
        }
    }
    Err(fault("SSE body ended without a response"))
}

#[derive(Deserialize)]
struct ListPage {
    tools: Vec<IgnoredAny>,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<String>,
}

/// Checks a `tools/list` answer; returns the page's tool count and its `nextCursor`.
pub(crate) fn list_page(answer: &Answer, id: u64) -> Result<(usize, Option<String>), Fault> {
    find(answer, id, |json, want| {
        Ok(envelope::<ListPage>(json, want)?.map(|p| (p.tools.len(), p.next_cursor)))
    })
}

#[derive(Deserialize)]
struct MethodOnly<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
}

/// The method of one JSON-RPC message (`None` for a response or bad JSON).
pub(crate) fn method_of(json: &[u8]) -> Option<String> {
    serde_json::from_slice::<MethodOnly<'_>>(json)
        .ok()?
        .method
        .map(Cow::into_owned)
}

/// Checks an `initialize` answer; returns the negotiated protocol version.
pub(crate) fn initialize(answer: &Answer, id: u64) -> Result<String, Fault> {
    find(answer, id, decode_initialize)
}

/// One JSON-RPC message decoded by a `decode_*` function: `None` when it is not a response
/// (a notification or request on an SSE stream, to be skipped).
type Decoded<T> = Result<Option<T>, Fault>;

/// Decodes a tool result whose text item must pass `ok` (`what` names it in the fault).
fn decode_tool_call(json: &[u8], want: &str, ok: impl Fn(&str) -> bool, what: &str) -> Decoded<()> {
    let Some(result) = envelope::<ToolResult<'_>>(json, want)? else {
        return Ok(None);
    };
    if result.is_error == Some(true) {
        let text = result
            .content
            .iter()
            .find_map(|c| c.text.as_deref())
            .unwrap_or_default();
        return Err(fault(format!(
            "tool result has isError: true: {}",
            truncate(text, 200)
        )));
    }
    let hit = result
        .content
        .iter()
        .any(|c| c.kind == "text" && c.text.as_deref().is_some_and(&ok));
    if hit {
        Ok(Some(()))
    } else {
        Err(fault(format!("no text content matching {what}")))
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

fn status_ok(answer: &Answer) -> Result<(), Fault> {
    if answer.status != StatusCode::OK {
        return Err(fault(format!(
            "HTTP {}: {}",
            answer.status.as_u16(),
            truncate(&String::from_utf8_lossy(&answer.body), 200)
        )));
    }
    Ok(())
}

fn content_type(answer: &Answer) -> &[u8] {
    answer
        .headers
        .get(CONTENT_TYPE)
        .map(|v| v.as_bytes())
        .unwrap_or_default()
}

/// Checks the status and framing, then finds and decodes the response to request `id`.
fn find<T>(
    answer: &Answer,
    id: u64,
    decode: impl Fn(&[u8], &str) -> Decoded<T>,
) -> Result<T, Fault> {
    status_ok(answer)?;
    let ct = content_type(answer);
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

    fn progress(token: u64, p: u32) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":{p},"total":3}}}}"#
        )
    }

    const STREAMED: &str =
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"streamed 3"}]}}"#;

    #[test]
    fn checks_a_stream_of_progress() {
        let sse = |events: &[String]| {
            let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            answer(200, "text/event-stream", &body)
        };
        let good: Vec<String> = (1..=3)
            .map(|p| progress(5, p))
            .chain([STREAMED.to_owned()])
            .collect();
        assert_eq!(tool_answer(&sse(&good), 5, Expect::Stream(3)), Ok(4));
        let short = [progress(5, 1), progress(5, 2), STREAMED.to_owned()];
        assert!(tool_answer(&sse(&short), 5, Expect::Stream(3)).is_err());
        let foreign = [
            progress(5, 1),
            progress(6, 2),
            progress(5, 3),
            STREAMED.to_owned(),
        ];
        assert!(tool_answer(&sse(&foreign), 5, Expect::Stream(3)).is_err());
        let backwards = [
            progress(5, 2),
            progress(5, 1),
            progress(5, 3),
            STREAMED.to_owned(),
        ];
        assert!(tool_answer(&sse(&backwards), 5, Expect::Stream(3)).is_err());
        assert!(
            tool_answer(
                &answer(200, "application/json", STREAMED),
                5,
                Expect::Stream(3)
            )
            .is_err()
        );
    }

    #[test]
    fn checks_blob_length_and_list_pages() {
        let blob =
            r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"xxxx"}]}}"#;
        assert_eq!(
            tool_answer(&answer(200, "application/json", blob), 5, Expect::Blob(4)),
            Ok(1)
        );
        assert!(tool_answer(&answer(200, "application/json", blob), 5, Expect::Blob(5)).is_err());
        let page = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{},{}],"nextCursor":"c"}}"#;
        assert_eq!(
            list_page(&answer(200, "application/json", page), 2),
            Ok((2, Some("c".to_owned())))
        );
        assert_eq!(
            method_of(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
                .as_deref(),
            Some("notifications/tools/list_changed")
        );
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
