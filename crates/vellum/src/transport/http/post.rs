//! A POST: its content type and `Accept`, the body (size limit, JSON-RPC decode), and the
//! era routing in the spec's dual-era order (a modern version header, a session, an
//! `initialize`, a modern `_meta`, else legacy). Notifications and answers are handled at
//! once; requests go on to `respond.rs`.
//!
//! Not here: the session lookups (`session_routing.rs`) and the 2026-07-28 header checks
//! (`modern_headers.rs`).

use http::{Response, StatusCode};
use http_body::Body;

use crate::protocol::{Message, Payload, ProtocolVersion, decode, methods};
use crate::server::{handle_notification, handle_response};

use super::body::ResponseBody;
use super::body_reader::{BodyLimits, read_body};
use super::headers::{Accepts, is_json_content_type, names, text};
use super::modern_headers;
use super::rejection::Rejection;
use super::response::status_only;
use super::state::Inner;

// The stages after this one, in order: the session the requests belong to, then their answer.
use super::session_routing::{Route, check_in_flight, legacy_route};

use super::respond::respond;

/// Bodies at least this large are decoded on the blocking pool instead of a runtime worker.
///
/// Decoding is linear in the body, but a maximum-size body (4 MiB by default) of many small
/// items still takes milliseconds of CPU (tens in a debug build): on a runtime worker that is
/// time every other connection queued on that worker waits, and a few such bodies at once hold
/// all the workers. Below this size the decode is shorter than the hand-off to another thread.
const OFF_REACTOR_BYTES: usize = 64 * 1024;

/// Decodes a body, and for a request that may be a modern one without its version header
/// (`probe_meta`) whether its `_meta` names a version: both walk the whole body, so for a
/// large body both run on the blocking pool, where they cannot starve the runtime's workers.
async fn decode_body(bytes: bytes::Bytes, probe_meta: bool) -> Result<(Payload, bool), Rejection> {
    let work = move |bytes: &bytes::Bytes| {
        let payload = decode(bytes).map_err(Rejection::Decode)?;
        let modern = probe_meta && modern_headers::carries_modern_meta(&payload);
        Ok((payload, modern))
    };
    if bytes.len() < OFF_REACTOR_BYTES || tokio::runtime::Handle::try_current().is_err() {
        return work(&bytes);
    }
    let shared = bytes.clone();
    match tokio::task::spawn_blocking(move || work(&shared)).await {
        Ok(decoded) => decoded,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The pool is shutting down (the runtime is going away): decode here instead.
        Err(_) => work(&bytes),
    }
}

/// Serves a POST: checks its headers, reads and decodes its body, routes it to its era and
/// session, then serves its messages.
pub(super) async fn post<B>(
    inner: &Inner,
    parts: http::request::Parts,
    body: B,
) -> Result<Response<ResponseBody>, Rejection>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let accepts = check_headers(&parts.headers)?;
    let header_version = text(&parts.headers, &names::PROTOCOL_VERSION);
    // Era routing (the spec's dual-era order): a modern version header, then a session, then
    // `initialize`, then a modern `_meta`, else legacy (stateless) or 400. (A request of a
    // legacy session, or with a legacy version header, is legacy: only a header-less request
    // without a session may be a modern one in disguise.)
    let ambiguous = header_version.is_none() && !parts.headers.contains_key(names::SESSION_ID);
    let (payload, modern_meta) = read_payload(inner, &parts, body, ambiguous).await?;
    if header_version.is_some_and(ProtocolVersion::looks_modern) || modern_meta {
        let meta = modern_headers::validate(&parts.headers, &payload)?;
        let route = Route::Modern(Box::new(meta));
        return serve_payload(inner, parts, payload, accepts, route).await;
    }
    let version = match header_version {
        None => None,
        Some(v) => Some(
            ProtocolVersion::parse(v)
                .ok_or_else(|| Rejection::UnsupportedLegacyVersion(v.to_owned()))?,
        ),
    };
    let route = legacy_route(inner, &parts, &payload, version).await?;
    check_batch(inner, &payload, route.version(version))?;
    check_in_flight(inner, &route, &payload)?;
    serve_payload(inner, parts, payload, accepts, route).await
}

/// A POST must send JSON and take JSON or SSE: what it takes.
fn check_headers(headers: &http::HeaderMap) -> Result<Accepts, Rejection> {
    if !is_json_content_type(headers) {
        return Err(Rejection::UnsupportedMediaType);
    }
    let accepts = Accepts::from_headers(headers);
    if !accepts.json && !accepts.sse {
        return Err(Rejection::NotAcceptable(
            "Not Acceptable: Accept must allow application/json or text/event-stream",
        ));
    }
    Ok(accepts)
}

/// Reads the body within the limits and decodes it (see [`decode_body`]); takes the
/// per-method and per-tool rate-limit tokens, known only once the body is decoded.
async fn read_payload<B>(
    inner: &Inner,
    parts: &http::request::Parts,
    body: B,
    probe_meta: bool,
) -> Result<(Payload, bool), Rejection>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limits = BodyLimits {
        max_bytes: inner.options.max_body_bytes,
        timeout: inner.options.body_timeout,
        min_rate: inner.options.min_body_rate,
    };
    let (bytes, held) = read_body(body, limits, &inner.bodies).await?;
    let decoded = decode_body(bytes, probe_meta).await?;
    // The decoded messages share the bytes; what the budget bounds is bodies in transit.
    drop(held);
    if let Some(limits) = &inner.limits {
        limits.admit_calls(parts, &decoded.0).await?;
    }
    Ok(decoded)
}

/// Refuses a batch the version does not allow, or one of more entries than the cap.
fn check_batch(
    inner: &Inner,
    payload: &Payload,
    version: ProtocolVersion,
) -> Result<(), Rejection> {
    let Payload::Batch(entries) = payload else {
        return Ok(());
    };
    if !version.allows_batches() {
        return Err(Rejection::BadRequest {
            id: None,
            message: "Invalid request: batches are only allowed in protocol version 2025-03-26"
                .into(),
        });
    }
    if entries.len() > inner.options.max_batch_entries {
        return Err(Rejection::BadRequest {
            id: None,
            message: format!(
                "Invalid request: a batch of {} entries (at most {} allowed)",
                entries.len(),
                inner.options.max_batch_entries
            ),
        });
    }
    Ok(())
}

/// Serves the messages of a POST: answers, notifications, then requests.
async fn serve_payload(
    inner: &Inner,
    parts: http::request::Parts,
    payload: Payload,
    accepts: Accepts,
    route: Route,
) -> Result<Response<ResponseBody>, Rejection> {
    let messages = match payload {
        Payload::Single(m) => vec![m],
        Payload::Batch(v) => v,
    };
    let legacy_session = route.legacy_session();
    let mut requests = Vec::new();
    for m in messages {
        match m {
            Message::Request(r) => requests.push(r),
            Message::Notification(n) => handle_notification(legacy_session, &n),
            Message::Response(r) => {
                if let Some(s) = legacy_session {
                    handle_response(s, r);
                }
            }
        }
    }
    if requests.is_empty() {
        return Ok(status_only(StatusCode::ACCEPTED));
    }
    if requests.len() > 1 && requests.iter().any(|r| r.method == methods::INITIALIZE) {
        return Err(Rejection::BadRequest {
            id: None,
            message: "Invalid request: initialize must not be part of a batch".into(),
        });
    }
    respond(inner, parts, requests, accepts, route).await
}
