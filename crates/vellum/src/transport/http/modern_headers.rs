//! The checks of a 2026-07-28 request over HTTP: the version header against `_meta`, the
//! required `_meta` fields, and the `Mcp-Method` / `Mcp-Name` mirror headers (SEP-2243; `Mcp-Name`
//! carries the `taskId` of the task methods, SEP-2663).
//!
//! Not here: the HTTP status of a failed check (`rejection.rs`), and reading `_meta` itself
//! (the server core's `modern_meta.rs`).

use http::HeaderMap;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::protocol::{
    ErrorObject, Message, Payload, ProtocolVersion, RawJson, RequestId, code, decode_header_value,
    methods,
};
use crate::server::{MetaFields, ModernMeta, parse_meta, raw_str, unsupported_version};

use super::headers::{names, text};
use super::rejection::Rejection;

/// The parts of modern params the transport checks (one pass over the params, borrowed
/// from the request's bytes).
#[derive(Deserialize, Default)]
struct Peek<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<MetaFields<'a>>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<&'a RawValue>,
}

fn peek(params: Option<&RawJson>) -> Option<Peek<'_>> {
    match params {
        None => Some(Peek::default()),
        Some(p) => serde_json::from_slice(p.as_bytes()).ok(),
    }
}

/// True when a single request's `_meta` names a protocol version (a modern request without
/// the version header, which [`validate`] then rejects with -32020).
pub(crate) fn carries_modern_meta(payload: &Payload) -> bool {
    let Payload::Single(Message::Request(r)) = payload else {
        return false;
    };
    #[derive(Deserialize)]
    struct MetaOnly<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<VersionOnly<'a>>,
    }
    #[derive(Deserialize)]
    struct VersionOnly<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
        version: Option<std::borrow::Cow<'a, str>>,
    }
    r.params.as_ref().is_some_and(|p| {
        serde_json::from_slice::<MetaOnly<'_>>(p.as_bytes())
            .ok()
            .and_then(|m| m.meta)
            .and_then(|m| m.version)
            .is_some()
    })
}

fn reject(id: Option<&RequestId>, code: i64, message: String) -> Rejection {
    Rejection::Modern {
        id: id.cloned(),
        error: ErrorObject::new(code, message),
    }
}

/// Validates a modern POST and returns the request's client context.
pub(crate) fn validate(headers: &HeaderMap, payload: &Payload) -> Result<ModernMeta, Rejection> {
    let (id, method, params) = the_message(payload)?;
    let Some(p) = peek(params) else {
        return Err(reject(
            id,
            code::INVALID_PARAMS,
            "Invalid params: params must be an object".into(),
        ));
    };
    check_version(headers, id, &p)?;
    let meta = if id.is_some() {
        parse_meta(p.meta.as_ref()).map_err(|error| Rejection::Modern {
            id: id.cloned(),
            error,
        })?
    } else {
        // Notifications carry no required `_meta`.
        ModernMeta::of_notification()
    };
    check_routing_headers(headers, id, method, &p)?;
    Ok(meta)
}

/// The one message of a modern POST (no batches, no responses): its id (none for a
/// notification), method and params.
fn the_message(
    payload: &Payload,
) -> Result<(Option<&RequestId>, &str, Option<&RawJson>), Rejection> {
    let message = match payload {
        Payload::Single(m) => m,
        Payload::Batch(_) => {
            return Err(reject(
                None,
                code::INVALID_REQUEST,
                "Invalid request: 2026-07-28 does not allow batches".into(),
            ));
        }
    };
    match message {
        Message::Request(r) => Ok((Some(&r.id), r.method.as_str(), r.params.as_ref())),
        Message::Notification(n) => Ok((None, n.method.as_str(), n.params.as_ref())),
        Message::Response(_) => Err(reject(
            None,
            code::INVALID_REQUEST,
            "Invalid request: clients do not send responses in 2026-07-28".into(),
        )),
    }
}

/// `MCP-Protocol-Version` is present, agrees with `_meta`, and names a modern version.
fn check_version(
    headers: &HeaderMap,
    id: Option<&RequestId>,
    p: &Peek<'_>,
) -> Result<(), Rejection> {
    let body_version = p.meta.as_ref().and_then(MetaFields::version);
    let Some(header) = text(headers, &names::PROTOCOL_VERSION) else {
        return Err(reject(
            id,
            code::HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version is required".into(),
        ));
    };
    if let Some(v) = body_version
        && v.as_ref() != header
    {
        return Err(reject(
            id,
            code::HEADER_MISMATCH,
            format!(
                "Header mismatch: MCP-Protocol-Version {header:?} differs from _meta protocolVersion {v:?}"
            ),
        ));
    }
    if ProtocolVersion::parse(header)
        .filter(|v| v.is_modern())
        .is_none()
    {
        return Err(Rejection::Modern {
            id: id.cloned(),
            error: unsupported_version(header),
        });
    }
    Ok(())
}

/// `Mcp-Method` names the method, and `Mcp-Name` the tool, prompt, resource or task the
/// request is about.
fn check_routing_headers(
    headers: &HeaderMap,
    id: Option<&RequestId>,
    method: &str,
    p: &Peek<'_>,
) -> Result<(), Rejection> {
    let got_method = text(headers, &names::METHOD).and_then(decode_header_value);
    if got_method.as_deref() != Some(method) {
        return Err(reject(
            id,
            code::HEADER_MISMATCH,
            format!("Header mismatch: Mcp-Method must be {method:?}"),
        ));
    }
    let expected = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => Some(&p.name),
        methods::RESOURCES_READ => Some(&p.uri),
        // SEP-2663's routing header: the task a request is about.
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => Some(&p.task_id),
        _ => None,
    };
    if let Some(expected) = expected {
        let body = expected.and_then(raw_str);
        let got = text(headers, &names::NAME).and_then(decode_header_value);
        if body.is_none() || got.as_deref() != body.as_deref() {
            return Err(reject(
                id,
                code::HEADER_MISMATCH,
                "Header mismatch: Mcp-Name must equal the request's name, uri or taskId".into(),
            ));
        }
    }
    Ok(())
}
