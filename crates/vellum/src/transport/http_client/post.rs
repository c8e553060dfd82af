//! The POST of one message and everything its answer carries: a request's JSON body or SSE
//! stream, a notification's or response's 202, the session id `initialize` assigns, the
//! `SessionExpired` of a forgotten session, and the switch to the HTTP+SSE fallback when
//! the server refuses `initialize` the old way.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;

use super::authorize::send_request;
use super::http_sse_fallback;
use super::response::{
    ERROR_BODY_LIMIT, answer_in, content_type, detail_of, read_body, status_error,
};
use super::response_stream::read_response_stream;
use super::shared::Shared;
use crate::client::transport::{Incoming, OutgoingMessage, decode_incoming};
use crate::error::TransportError;
use crate::protocol::{CancelledParams, Message, Payload, RequestId, decode, methods};
use crate::sync::write;
use crate::transport::http::headers::names;

/// POSTs a notification or a response: 202 (any 2xx) is success.
pub(super) async fn post_one_way(
    shared: &Shared,
    message: &OutgoingMessage,
) -> Result<(), TransportError> {
    let carried_session = !message.modern && shared.session_id().is_some();
    let resp = send_request(shared, shared.post(message)).await?;
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    if status == StatusCode::NOT_FOUND && carried_session {
        return Err(TransportError::SessionExpired);
    }
    Err(status_error(resp).await)
}

/// Sends one request and delivers everything its response carries.
pub(super) async fn request(shared: &Arc<Shared>, message: OutgoingMessage) {
    let Some(id) = message.request_id().cloned() else {
        return;
    };
    let carried_session = !message.modern && shared.session_id().is_some();
    let resp = match send_request(shared, shared.post(&message)).await {
        Ok(r) => r,
        Err(e) => return shared.fail(&id, e),
    };
    let status = resp.status();
    let initialize = message.method.as_deref() == Some(methods::INITIALIZE);
    if initialize
        && status.is_success()
        && let Some(sid) = resp
            .headers()
            .get(names::SESSION_ID)
            .and_then(|v| v.to_str().ok())
    {
        shared.set_session(Some(sid.to_owned()));
    }
    if status.is_success() {
        return read_answer(shared, resp, &id, message.modern).await;
    }
    if status == StatusCode::NOT_FOUND && carried_session {
        shared.set_session(None);
        return shared.fail(&id, TransportError::SessionExpired);
    }
    let body = read_body(resp, ERROR_BODY_LIMIT).await.unwrap_or_default();
    if let Some(answer) = answer_in(&body, &id) {
        // The server's own JSON-RPC error for this request (modern errors carry a status).
        return shared.deliver(Incoming::Message(answer));
    }
    let refused_initialize = initialize && matches!(status.as_u16(), 400 | 404 | 405);
    if refused_initialize && shared.options.legacy_sse_fallback {
        match http_sse_fallback::open(shared).await {
            Ok(fallback) => {
                tracing::debug!("the server speaks the 2024-11-05 HTTP+SSE transport; using it");
                *write(&shared.fallback) = Some(fallback.clone());
                if let Err(e) = http_sse_fallback::send(&fallback, shared, message).await {
                    shared.fail(&id, e);
                }
                return;
            }
            Err(e) => tracing::debug!("no HTTP+SSE fallback either: {}", crate::error::chain(&e)),
        }
    }
    shared.fail(
        &id,
        TransportError::HttpStatus {
            status,
            detail: detail_of(&body),
        },
    );
}

/// Delivers a successful answer: a JSON body, or the events of an SSE stream.
async fn read_answer(shared: &Arc<Shared>, resp: reqwest::Response, id: &RequestId, modern: bool) {
    let status = resp.status();
    match content_type(&resp).as_str() {
        "text/event-stream" => read_response_stream(shared, resp, id, modern).await,
        "application/json" => match read_body(resp, shared.options.max_message_bytes).await {
            Ok(body) => {
                for i in decode_incoming(&body) {
                    shared.deliver(i);
                }
            }
            Err(e) => shared.fail(id, e),
        },
        // 202 with no body: the answer comes on another stream (unusual, but legal in
        // 2025-03-26 batches).
        _ if status == StatusCode::ACCEPTED => {}
        other => shared.fail(
            id,
            TransportError::ContentType {
                content_type: other.to_owned(),
            },
        ),
    }
}

/// The `requestId` of a `notifications/cancelled`.
pub(super) fn cancelled_id(bytes: &Bytes) -> Option<RequestId> {
    match decode(bytes) {
        Ok(Payload::Single(Message::Notification(n))) => n
            .params
            .and_then(|p| p.parse::<CancelledParams>().ok())
            .map(|p| p.request_id),
        _ => None,
    }
}
