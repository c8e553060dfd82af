//! JSON-RPC 2.0 framing: ids, error objects, and the one decoder every transport uses (the
//! encoder is in `encode.rs`).
//!
//! Incoming bytes are decoded once into [`Message`]s whose `params`/`result` stay raw JSON
//! ([`RawJson`], a zero-copy slice of the input) until a handler asks for a typed value.
//! Outgoing messages are encoded straight into one buffer by `encode_response` and friends.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The most bytes of a client's input an error message echoes back ([`echo`]).
pub(crate) const ECHO_MAX_BYTES: usize = 256;

/// `input` as an error message may quote it: its first [`ECHO_MAX_BYTES`] bytes (cut at a
/// character boundary, `…` marking the cut), so a client's megabyte name costs a megabyte
/// once, not again in the answer and the logs.
pub(crate) fn echo(input: &str) -> Cow<'_, str> {
    if input.len() <= ECHO_MAX_BYTES {
        return Cow::Borrowed(input);
    }
    let mut end = ECHO_MAX_BYTES;
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &input[..end]))
}

/// Standard and MCP-specific JSON-RPC error codes.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (also: unknown tool, prompt; modern: resource not found).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found (legacy versions only; modern versions use `INVALID_PARAMS`).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    /// An MCP header does not match the body, is missing or malformed (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A JSON-RPC request id: a string or an integer, never null.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.into())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s.into())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or integer id")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("integer id out of range"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A progress token: like a request id, a string or an integer.
pub type ProgressToken = RequestId;

/// The `error` member of a JSON-RPC error response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`code`]).
    pub code: i64,
    /// A short, single-sentence description.
    pub message: Cow<'static, str>,
    /// Structured details, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i64, message: impl Into<Cow<'static, str>>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured data.
    #[must_use]
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700 Parse error.
    pub fn parse_error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(code::PARSE_ERROR, message)
    }
    /// -32600 Invalid request.
    pub fn invalid_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(code::INVALID_REQUEST, message)
    }
    /// -32601 Method not found, naming the method (its first 256 bytes: a client's input is
    /// never echoed whole).
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {}", echo(method)),
        )
    }
    /// -32602 Invalid params.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }
    /// -32603 Internal error.
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (JSON-RPC error {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A piece of raw JSON text known to be well-formed: a zero-copy slice of the bytes it was
/// decoded from. Decode it into a type with [`RawJson::parse`].
#[derive(Clone, PartialEq, Eq)]
pub struct RawJson(Bytes);

impl RawJson {
    /// Serializes a value.
    pub fn from_value<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_vec(value).map(|v| RawJson(Bytes::from(v)))
    }

    /// `{}`.
    #[cfg(feature = "client")]
    pub(crate) fn empty_object() -> Self {
        RawJson(Bytes::from_static(b"{}"))
    }

    /// Decodes the JSON into `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.0)
    }

    /// The JSON text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The JSON text as a string.
    pub fn as_str(&self) -> &str {
        // Invariant: built from serde_json-validated text, which is UTF-8.
        std::str::from_utf8(&self.0).unwrap_or("null")
    }

    /// The shared bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_slice::<&RawValue>(&self.0) {
            Ok(raw) => raw.serialize(s),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        Ok(RawJson(Bytes::from(raw.get().to_owned())))
    }
}

/// A request: it expects a response with the same id.
#[derive(Clone, Debug)]
pub struct Request {
    /// The id the response must echo.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The parameters, undecoded.
    pub params: Option<RawJson>,
}

/// A notification: no id, no response.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, undecoded.
    pub params: Option<RawJson>,
}

/// A response to a request this side sent.
#[derive(Clone, Debug)]
pub struct Response {
    /// The id of the request it answers (`None` only for errors about unreadable requests).
    pub id: Option<RequestId>,
    /// The result, or the error.
    pub outcome: Result<RawJson, ErrorObject>,
}

/// One decoded JSON-RPC message.
#[derive(Clone, Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (result or error).
    Response(Response),
}

impl Message {
    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }

    /// The id, for requests and responses.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Notification(_) => None,
            Message::Response(r) => r.id.as_ref(),
        }
    }
}

/// A POST body or a stdio line: one message, or (2025-03-26 only) a batch.
#[derive(Clone, Debug)]
pub enum Payload {
    /// A single message.
    Single(Message),
    /// A JSON array of messages.
    Batch(Vec<Message>),
}

/// Why a received message could not be read: its body is not JSON, or not a JSON-RPC 2.0
/// message, or (2026-07-28, SEP-2243) an `Mcp-Param-*` header does not fit its arguments.
///
/// Opaque: ask with [`is_parse`](Self::is_parse), [`is_invalid`](Self::is_invalid) and
/// [`is_param_header`](Self::is_param_header); [`to_error_object`](Self::to_error_object) is
/// the JSON-RPC error the message is answered with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct DecodeError {
    kind: Box<DecodeKind>,
}

/// What is wrong with the message: private, so kinds can be added without a break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum DecodeKind {
    /// Not JSON at all; `detail` is the JSON parser's complaint.
    #[error("invalid JSON: {detail}")]
    Parse { detail: String },
    /// JSON, but not a JSON-RPC 2.0 message; `id` is the request id when it could be read.
    #[error("invalid JSON-RPC message: {reason}")]
    Invalid {
        id: Option<RequestId>,
        reason: Cow<'static, str>,
    },
    /// An `Mcp-Param-*` header that does not mirror its argument.
    #[error("Header mismatch: {header} {mismatch}")]
    ParamHeader {
        header: String,
        mismatch: HeaderMismatch,
    },
}

/// How an `Mcp-Param-*` header fails to mirror its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderMismatch {
    /// The body has the value, the header is missing.
    Missing,
    /// The header is present, the body has no value for it.
    Unexpected,
    /// Not a valid header value (bad characters, Base64 that does not decode, sent twice).
    Invalid,
    /// The header and the body disagree.
    Differs,
}

impl std::fmt::Display for HeaderMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HeaderMismatch::Missing => "is required (the argument is present)",
            HeaderMismatch::Unexpected => "is sent but the argument is absent",
            HeaderMismatch::Invalid => "is not a valid value",
            HeaderMismatch::Differs => "differs from the argument",
        })
    }
}

impl DecodeError {
    fn new(kind: DecodeKind) -> Self {
        DecodeError {
            kind: Box::new(kind),
        }
    }

    /// Not JSON: `detail` is the parser's complaint.
    fn parse(detail: impl std::fmt::Display) -> Self {
        Self::new(DecodeKind::Parse {
            detail: detail.to_string(),
        })
    }

    /// Not a JSON-RPC message, for `reason`; `id` when it could be read.
    fn invalid(id: Option<RequestId>, reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(DecodeKind::Invalid {
            id,
            reason: reason.into(),
        })
    }

    /// The `header` does not mirror its argument.
    pub(crate) fn param_header(header: String, mismatch: HeaderMismatch) -> Self {
        Self::new(DecodeKind::ParamHeader { header, mismatch })
    }

    /// The body is not JSON at all (answered with -32700).
    pub fn is_parse(&self) -> bool {
        matches!(*self.kind, DecodeKind::Parse { .. })
    }

    /// The body is JSON but not a JSON-RPC 2.0 message (answered with -32600).
    pub fn is_invalid(&self) -> bool {
        matches!(*self.kind, DecodeKind::Invalid { .. })
    }

    /// An `Mcp-Param-*` header is missing, unexpected, not a valid value, or differs from
    /// its argument (answered with -32020).
    pub fn is_param_header(&self) -> bool {
        matches!(*self.kind, DecodeKind::ParamHeader { .. })
    }

    /// How the header failed, for a [`param_header`](Self::is_param_header) error.
    #[cfg(test)]
    pub(crate) fn header_mismatch(&self) -> Option<HeaderMismatch> {
        match &*self.kind {
            DecodeKind::ParamHeader { mismatch, .. } => Some(*mismatch),
            _ => None,
        }
    }

    /// The JSON-RPC error object this failure is answered with.
    pub fn to_error_object(&self) -> ErrorObject {
        match &*self.kind {
            DecodeKind::Parse { .. } => {
                ErrorObject::parse_error("Parse error: the body is not valid JSON")
            }
            DecodeKind::Invalid { reason, .. } => {
                ErrorObject::invalid_request(format!("Invalid request: {reason}"))
            }
            DecodeKind::ParamHeader { .. } => {
                ErrorObject::new(code::HEADER_MISMATCH, self.to_string())
            }
        }
    }

    /// The request id the error response should echo, when it could be read.
    pub fn id(&self) -> Option<&RequestId> {
        match &*self.kind {
            DecodeKind::Invalid { id, .. } => id.as_ref(),
            DecodeKind::Parse { .. } | DecodeKind::ParamHeader { .. } => None,
        }
    }
}

/// The borrowed shape every message is first decoded into.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    // `deserialize_with` keeps an explicit `null` as `Some("null")` (serde's `Option` would
    // turn it into `None`, making `"id": null` look like a notification).
    #[serde(default, borrow, deserialize_with = "raw_present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

fn raw_present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn slice_of(source: &Bytes, raw: &RawValue) -> RawJson {
    RawJson(source.slice_ref(raw.get().as_bytes()))
}

fn decode_envelope(source: &Bytes, env: Envelope<'_>) -> Result<Message, DecodeError> {
    let id = match env.id {
        None => None,
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => Some(
            serde_json::from_str::<RequestId>(raw.get())
                .map_err(|_| DecodeError::invalid(None, "the id must be a string or an integer"))?,
        ),
    };
    let invalid = |id: Option<RequestId>, reason: &'static str| DecodeError::invalid(id, reason);
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Err(invalid(id, "\"jsonrpc\" must be \"2.0\""));
    }
    // `params`, when present, must be an object: MCP has no by-position params (JSON-RPC's
    // arrays). An explicit null reads as absent.
    let params = match env.params {
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => {
            if raw.get().as_bytes().first() != Some(&b'{') {
                return Err(invalid(id, "\"params\" must be an object"));
            }
            Some(slice_of(source, raw))
        }
        None => None,
    };
    match (env.method, id) {
        (Some(method), Some(id)) => {
            if env.result.is_some() || env.error.is_some() {
                return Err(invalid(
                    Some(id),
                    "a request cannot carry a result or error",
                ));
            }
            if method.is_empty() {
                return Err(invalid(Some(id), "the method must not be empty"));
            }
            Ok(Message::Request(Request {
                id,
                method: method.into_owned(),
                params,
            }))
        }
        (Some(method), None) => {
            if env.id.is_some() {
                return Err(invalid(None, "the id must not be null"));
            }
            if method.is_empty() {
                return Err(invalid(None, "the method must not be empty"));
            }
            Ok(Message::Notification(Notification {
                method: method.into_owned(),
                params,
            }))
        }
        (None, id) => match (env.result, env.error) {
            (Some(result), None) => {
                let Some(id) = id else {
                    return Err(invalid(None, "a result response needs an id"));
                };
                Ok(Message::Response(Response {
                    id: Some(id),
                    outcome: Ok(slice_of(source, result)),
                }))
            }
            (None, Some(error)) => Ok(Message::Response(Response {
                id,
                outcome: Err(error),
            })),
            _ => Err(invalid(
                id,
                "a message needs a method, or exactly one of result and error",
            )),
        },
    }
}

/// Decodes one message or a batch from a body. The bytes are shared, not copied: `params`
/// and `result` of the decoded messages point into `source`.
pub fn decode(source: &Bytes) -> Result<Payload, DecodeError> {
    let first = source.iter().copied().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        let items: Vec<&RawValue> = serde_json::from_slice(source).map_err(DecodeError::parse)?;
        if items.is_empty() {
            return Err(DecodeError::invalid(None, "an empty batch"));
        }
        let mut out = Vec::with_capacity(items.len());
        for raw in items {
            out.push(decode_raw(source, raw)?);
        }
        return Ok(Payload::Batch(out));
    }
    let env: Envelope<'_> = serde_json::from_slice(source).map_err(|e| {
        if e.is_data() {
            DecodeError::invalid(None, "not a JSON-RPC message object")
        } else {
            DecodeError::parse(e)
        }
    })?;
    decode_envelope(source, env).map(Payload::Single)
}

fn decode_raw(source: &Bytes, raw: &RawValue) -> Result<Message, DecodeError> {
    let env: Envelope<'_> = serde_json::from_str(raw.get())
        .map_err(|_| DecodeError::invalid(None, "a batch item is not a JSON-RPC message object"))?;
    // Re-anchor borrowed slices in `source`: `raw` itself points into `source`.
    decode_envelope(source, env)
}

/// Decodes exactly one message (no batch).
pub fn decode_message(source: &Bytes) -> Result<Message, DecodeError> {
    match decode(source)? {
        Payload::Single(m) => Ok(m),
        Payload::Batch(_) => Err(DecodeError::invalid(None, "batches are not allowed here")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn decodes_each_kind() {
        let m = decode_message(&b(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}}"#,
        ))
        .unwrap();
        let Message::Request(r) = m else { panic!() };
        assert_eq!(r.id, RequestId::Number(7));
        assert_eq!(r.params.unwrap().as_str(), r#"{"cursor":"x"}"#);

        let m = decode_message(&b(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ))
        .unwrap();
        assert!(matches!(m, Message::Notification(_)));

        let m = decode_message(&b(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#)).unwrap();
        assert!(matches!(
            m,
            Message::Response(Response { outcome: Ok(_), .. })
        ));

        let m = decode_message(&b(
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}"#,
        ))
        .unwrap();
        assert!(matches!(
            m,
            Message::Response(Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn rejects_malformed() {
        assert!(decode(&b("{")).is_err_and(|e| e.is_parse()));
        assert!(decode(&b("[]")).is_err_and(|e| e.is_invalid()));
        assert!(decode(&b("42")).is_err_and(|e| e.is_invalid()));
        let e = decode(&b(r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#)).unwrap_err();
        assert_eq!(e.id(), Some(&RequestId::Number(3)));
        assert!(decode(&b(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#)).is_err());
        assert!(decode(&b(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#)).is_err());
        assert!(decode(&b(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#)).is_err());
    }

    #[test]
    fn batch() {
        let p = decode(&b(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]"#,
        ))
        .unwrap();
        let Payload::Batch(v) = p else { panic!() };
        assert_eq!(v.len(), 2);
    }
}
