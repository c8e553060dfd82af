//! Every HTTP status the handler decides: each way it refuses a request ([`Rejection`]) with
//! its JSON-RPC error, and the status a 2026-07-28 error answer carries
//! ([`modern_error_status`]). See `docs/http-status.md` for the table.
//!
//! Not here: what a handler's failure becomes inside a 200 (the server core's
//! `handler_error.rs`).

use http::{HeaderValue, Method, Response, StatusCode, header};
use tracing::Dispatch;

use super::body::ResponseBody;
use super::trace::log_event;
use crate::protocol::encode_error;
use crate::protocol::{DecodeError, ErrorObject, ProtocolVersions, RequestId, code};
use crate::server::InsufficientScope;
use crate::store::StoreError;

/// Why a request was refused before (or instead of) being served.
#[derive(Debug)]
pub(crate) enum Rejection {
    /// Host or Origin check failed (403).
    Forbidden(&'static str),
    /// The path is not served: a well-known URI (`mount` none), or a path other than the
    /// endpoint's mount path (404).
    NotFound { mount: Option<String> },
    /// The method is not served (405, with `Allow`).
    MethodNotAllowed { allow: &'static str },
    /// The POST body is not `application/json` (415).
    UnsupportedMediaType,
    /// `Accept` allows neither JSON nor SSE (406).
    NotAcceptable(&'static str),
    /// The request head (target and headers) exceeds 64 KiB (431).
    HeadersTooLarge,
    /// The body exceeds the limit (413).
    PayloadTooLarge(usize),
    /// The body could not be read (400).
    UnreadableBody,
    /// The body did not arrive within the body deadline or at the minimum rate (408).
    BodyTimeout,
    /// The bytes buffered for bodies across all connections reached their budget (503,
    /// `Retry-After`).
    BodyBudgetExhausted,
    /// A finished answer found no room in the budget of answer bytes waiting to be written
    /// (503, `Retry-After`; the answer is dropped).
    AnswerBudgetExhausted,
    /// The body is not JSON or not JSON-RPC (400, -32700 / -32600).
    Decode(DecodeError),
    /// A malformed request (400, -32600).
    BadRequest {
        id: Option<RequestId>,
        message: String,
    },
    /// A legacy `MCP-Protocol-Version` this server does not accept (400, -32600).
    UnsupportedLegacyVersion {
        requested: String,
        supported: ProtocolVersions,
    },
    /// A stateful request without `Mcp-Session-Id` (400).
    MissingSession,
    /// An unknown, expired or deleted session (404).
    UnknownSession,
    /// Too many live sessions, in all, for this principal or for this client address (503,
    /// `Retry-After`: until the soonest of the sessions counted expires).
    TooManySessions { retry_after_secs: u64 },
    /// The handler drains: no new sessions here (503, `Retry-After`).
    Draining,
    /// The caller's rate limit is spent (429, `Retry-After` in whole seconds).
    RateLimited { retry_after_secs: u64 },
    /// The client address's budget of failed authentications is spent (the authorization
    /// layer's 429, `Retry-After` in whole seconds; only that layer, feature `auth`, makes it).
    #[cfg_attr(not(feature = "auth"), allow(dead_code))]
    AuthFailures { retry_after_secs: u64 },
    /// The session has too many requests in flight (429, `Retry-After`).
    TooManyRequests,
    /// The session belongs to another principal (403).
    WrongPrincipal,
    /// The stream is already being read by another connection (409).
    StreamConflict,
    /// A `Last-Event-ID` that is not ours, or a replay the store refused (400).
    BadLastEventId(&'static str),
    /// The store could not replay (400 for gaps, 503 for backend failures).
    Replay(StoreError),
    /// The server factory declined the request (400).
    NoServer,
    /// The session store is unreachable (503, `Retry-After`).
    StoreUnavailable,
    /// The caller lacks a scope the request needs (403, `WWW-Authenticate: Bearer
    /// error="insufficient_scope"`; the response carries the refusal in its extensions for
    /// an authentication layer to write its own challenge). The session, if any, is kept.
    InsufficientScope {
        id: Option<RequestId>,
        refusal: InsufficientScope,
    },
    /// A 2026-07-28 check failed (headers against `_meta`, `_meta` itself): the status of
    /// its JSON-RPC error under the modern rules (400 for every code these checks use).
    Modern {
        id: Option<RequestId>,
        error: ErrorObject,
    },
}

impl Rejection {
    /// A short name of the refusal (the `reason` label of the refusals metric).
    pub(crate) fn reason(&self) -> &'static str {
        use Rejection as R;
        match self {
            R::Forbidden(_) => "forbidden",
            R::NotFound { .. } => "not_found",
            R::MethodNotAllowed { .. } => "method_not_allowed",
            R::UnsupportedMediaType => "unsupported_media_type",
            R::NotAcceptable(_) => "not_acceptable",
            R::HeadersTooLarge => "headers_too_large",
            R::PayloadTooLarge(_) => "payload_too_large",
            R::UnreadableBody => "unreadable_body",
            R::BodyTimeout => "body_timeout",
            R::BodyBudgetExhausted => "body_budget",
            R::AnswerBudgetExhausted => "answer_budget",
            R::Decode(_) => "decode",
            R::BadRequest { .. } => "bad_request",
            R::UnsupportedLegacyVersion { .. } => "unsupported_version",
            R::MissingSession => "missing_session",
            R::UnknownSession => "unknown_session",
            R::TooManySessions { .. } => "too_many_sessions",
            R::Draining => "draining",
            R::RateLimited { .. } => "rate_limited",
            R::AuthFailures { .. } => "auth_failures",
            R::TooManyRequests => "too_many_requests",
            R::WrongPrincipal => "wrong_principal",
            R::StreamConflict => "stream_conflict",
            R::BadLastEventId(_) => "bad_last_event_id",
            R::Replay(_) => "replay",
            R::NoServer => "no_server",
            R::StoreUnavailable => "store_unavailable",
            R::InsufficientScope { .. } => "insufficient_scope",
            R::Modern { .. } => "modern_check",
        }
    }

    /// The status, JSON-RPC error and extra header of each rejection.
    fn parts(
        self,
    ) -> (
        StatusCode,
        Option<RequestId>,
        ErrorObject,
        Option<(header::HeaderName, HeaderValue)>,
    ) {
        use Rejection as R;
        let invalid = |m: &str| ErrorObject::invalid_request(m.to_owned());
        match self {
            R::Forbidden(m) => (StatusCode::FORBIDDEN, None, invalid(m), None),
            R::NotFound { mount } => (
                StatusCode::NOT_FOUND,
                None,
                ErrorObject::invalid_request(match mount {
                    Some(m) => format!("Not Found: this server serves MCP at {m}"),
                    None => "Not Found: no such metadata document".to_owned(),
                }),
                None,
            ),
            R::MethodNotAllowed { allow } => (
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                invalid("Method not allowed"),
                Some((header::ALLOW, HeaderValue::from_static(allow))),
            ),
            R::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                invalid("Unsupported Media Type: Content-Type must be application/json"),
                None,
            ),
            R::NotAcceptable(m) => (StatusCode::NOT_ACCEPTABLE, None, invalid(m), None),
            R::PayloadTooLarge(limit) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                ErrorObject::invalid_request(format!(
                    "Payload Too Large: the body exceeds {limit} bytes"
                )),
                None,
            ),
            R::UnreadableBody => (
                StatusCode::BAD_REQUEST,
                None,
                invalid("Bad Request: the body could not be read"),
                None,
            ),
            R::HeadersTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                None,
                invalid("Request Header Fields Too Large: the request head exceeds 64 KiB"),
                Some((header::CONNECTION, HeaderValue::from_static("close"))),
            ),
            R::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                None,
                invalid("Request Timeout: the body did not arrive in time"),
                Some((header::CONNECTION, HeaderValue::from_static("close"))),
            ),
            R::BodyBudgetExhausted => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    "Service Unavailable: too many request bodies are being received",
                ),
                Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
            ),
            R::AnswerBudgetExhausted => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    "Service Unavailable: too many answers are waiting for their clients to read them",
                ),
                Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
            ),
            R::Decode(e) => (
                StatusCode::BAD_REQUEST,
                e.id().cloned(),
                e.to_error_object(),
                None,
            ),
            R::BadRequest { id, message } => (
                StatusCode::BAD_REQUEST,
                id,
                ErrorObject::invalid_request(message),
                None,
            ),
            R::UnsupportedLegacyVersion {
                requested: v,
                supported,
            } => {
                let supported = supported.wire_names();
                (
                    StatusCode::BAD_REQUEST,
                    None,
                    ErrorObject::invalid_request(format!(
                        "Bad Request: unsupported protocol version {v:?} (supported: {})",
                        supported.join(", ")
                    ))
                    .with_data(serde_json::json!({ "supported": supported, "requested": v })),
                    None,
                )
            }
            R::MissingSession => (
                StatusCode::BAD_REQUEST,
                None,
                invalid("Bad Request: Mcp-Session-Id header is required"),
                None,
            ),
            R::UnknownSession => (
                StatusCode::NOT_FOUND,
                None,
                invalid("Session not found"),
                None,
            ),
            R::TooManySessions { retry_after_secs } => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "Service Unavailable: too many sessions; retry after {retry_after_secs} s"
                    ),
                ),
                Some((header::RETRY_AFTER, HeaderValue::from(retry_after_secs))),
            ),
            R::Draining => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    "Service Unavailable: this server is shutting down; retry",
                ),
                Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
            ),
            R::RateLimited { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "Too Many Requests: rate limit exceeded; retry after {retry_after_secs} s"
                    ),
                ),
                Some((header::RETRY_AFTER, HeaderValue::from(retry_after_secs))),
            ),
            R::AuthFailures { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "Too Many Requests: too many failed authentications from this address; \
                         retry after {retry_after_secs} s"
                    ),
                ),
                Some((header::RETRY_AFTER, HeaderValue::from(retry_after_secs))),
            ),
            R::TooManyRequests => (
                StatusCode::TOO_MANY_REQUESTS,
                None,
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    "Too Many Requests: too many requests in flight in this session",
                ),
                Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
            ),
            R::WrongPrincipal => (
                StatusCode::FORBIDDEN,
                None,
                invalid("Forbidden: this session belongs to another principal"),
                None,
            ),
            R::StreamConflict => (
                StatusCode::CONFLICT,
                None,
                invalid("Conflict: this stream is already open on another connection"),
                None,
            ),
            R::BadLastEventId(m) => (StatusCode::BAD_REQUEST, None, invalid(m), None),
            R::Replay(e) => match e {
                StoreError::Evicted => (
                    StatusCode::BAD_REQUEST,
                    None,
                    invalid(
                        "Bad Request: the events after Last-Event-ID were evicted; the stream cannot be resumed",
                    ),
                    None,
                ),
                StoreError::UnknownStream => (
                    StatusCode::BAD_REQUEST,
                    None,
                    invalid("Bad Request: Last-Event-ID names no stream of this session"),
                    None,
                ),
                StoreError::Backend(_)
                | StoreError::WriterGone { .. }
                | StoreError::Full
                | StoreError::Io { .. }
                | StoreError::Format { .. } => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    ErrorObject::internal("Service Unavailable: the event store is unreachable"),
                    Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
                ),
            },
            R::StoreUnavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                ErrorObject::internal("Service Unavailable: the session store is unreachable"),
                Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
            ),
            R::NoServer => (
                StatusCode::BAD_REQUEST,
                None,
                invalid("Bad Request: no server is available for this request"),
                None,
            ),
            R::InsufficientScope { id, refusal } => {
                let challenge = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                    refusal.scope_param()
                );
                (
                    StatusCode::FORBIDDEN,
                    id,
                    refusal.to_error(),
                    HeaderValue::from_str(&challenge)
                        .ok()
                        .map(|v| (header::WWW_AUTHENTICATE, v)),
                )
            }
            R::Modern { id, error } => {
                let status = match modern_error_status(error.code) {
                    // A refused request is never a success.
                    StatusCode::OK => StatusCode::BAD_REQUEST,
                    status => status,
                };
                (status, id, error, None)
            }
        }
    }

    /// The HTTP response for this rejection: its status, a JSON-RPC error body, and the
    /// header the status needs (`Allow`, `Retry-After`).
    pub(crate) fn into_response(self) -> Response<ResponseBody> {
        let scope_refusal = match &self {
            Rejection::InsufficientScope { refusal, .. } => Some(refusal.clone()),
            _ => None,
        };
        let (status, id, error, extra) = self.parts();
        let body = encode_error(id.as_ref(), &error);
        let mut resp = Response::new(ResponseBody::full(body));
        *resp.status_mut() = status;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some((k, v)) = extra {
            resp.headers_mut().insert(k, v);
        }
        if let Some(refusal) = scope_refusal {
            resp.extensions_mut().insert(refusal);
        }
        resp
    }
}

/// The handler's answer to a request it refused: the rejection's response, the refusal
/// logged (at debug, under the handler's `logger`) and counted in the refusals metric.
pub(crate) fn refused(
    logger: Option<&Dispatch>,
    method: &Method,
    rejection: Rejection,
) -> Response<ResponseBody> {
    log_event!(logger, debug, method = %method, rejection = ?rejection, "request rejected");
    let reason = rejection.reason();
    let resp = rejection.into_response();
    super::metrics::refused(resp.status().as_u16(), reason);
    resp
}

/// The authorization layer's 429 for a client address past its budget of failed
/// authentications (counted in the refusals metric like the handler's own refusals).
#[cfg(feature = "auth")]
pub(crate) fn too_many_auth_failures(
    method: &Method,
    retry_after_secs: u64,
) -> Response<ResponseBody> {
    refused(None, method, Rejection::AuthFailures { retry_after_secs })
}

/// The HTTP status a modern (2026-07-28) error response gets.
pub(crate) fn modern_error_status(error_code: i64) -> StatusCode {
    match error_code {
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code::INVALID_PARAMS
        | code::INVALID_REQUEST
        | code::PARSE_ERROR
        | code::HEADER_MISMATCH
        | code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}
