//! A POST: its content type and `Accept`, the body (size limit, JSON-RPC decode), and the
//! era routing in the spec's dual-era order (a modern version header, a session, an
//! `initialize`, a modern `_meta`, else legacy). Notifications and answers are handled at
//! once; requests go on to `post_response.rs`.
//!
//! Not here: the session lookups (`session_routing.rs`) and the 2026-07-28 header checks
//! (`modern_headers.rs`).

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;

use crate::protocol::{Message, Payload, ProtocolVersion, decode, methods};
use crate::server::{handle_notification, handle_response};

use super::body::ResponseBody;
use super::endpoint::Inner;
use super::headers::{Accepts, is_json_content_type, names, text};
use super::modern_headers;
use super::rejection::Rejection;
use super::response::status_only;
use super::session_routing::{Route, has_request, is_initialize};

impl Inner {
    /// Serves a POST: checks its headers, reads and decodes its body, routes it to its era
    /// and session, then serves its messages.
    pub(super) async fn post<B>(
        &self,
        parts: http::request::Parts,
        body: B,
    ) -> Result<Response<ResponseBody>, Rejection>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if !is_json_content_type(&parts.headers) {
            return Err(Rejection::UnsupportedMediaType);
        }
        let accepts = Accepts::from_headers(&parts.headers);
        if !accepts.json && !accepts.sse {
            return Err(Rejection::NotAcceptable(
                "Not Acceptable: Accept must allow application/json or text/event-stream",
            ));
        }
        let bytes = read_body(body, self.options.max_body_bytes).await?;
        let payload = decode(&bytes).map_err(Rejection::Decode)?;
        let header_version = text(&parts.headers, &names::PROTOCOL_VERSION);

        // Era routing (the spec's dual-era order): a modern version header, then a session,
        // then `initialize`, then a modern `_meta`, else legacy (stateless) or 400.
        // (A request of a legacy session, or with a legacy version header, is legacy: only
        // a header-less request without a session may be a modern one in disguise.)
        let ambiguous = header_version.is_none() && !parts.headers.contains_key(names::SESSION_ID);
        if header_version.is_some_and(ProtocolVersion::looks_modern)
            || (ambiguous && modern_headers::carries_modern_meta(&payload))
        {
            let meta = modern_headers::validate(&parts.headers, &payload)?;
            return self
                .serve_payload(parts, payload, accepts, Route::Modern(Box::new(meta)))
                .await;
        }
        let version = match header_version {
            None => None,
            Some(v) => Some(
                ProtocolVersion::parse(v)
                    .ok_or_else(|| Rejection::UnsupportedLegacyVersion(v.to_owned()))?,
            ),
        };
        if let Payload::Batch(_) = &payload
            && !version
                .unwrap_or(ProtocolVersion::DEFAULT_LEGACY)
                .allows_batches()
        {
            return Err(Rejection::BadRequest {
                id: None,
                message: "Invalid request: batches are only allowed in protocol version 2025-03-26"
                    .into(),
            });
        }
        let route = if self.options.stateless {
            self.stateless_route(&parts, &payload, version)?
        } else if let Some(http) = self.session(&parts).await? {
            if let Some(max) = self.options.max_in_flight_per_session
                && has_request(&payload)
                && http.core.inflight_count() >= max
            {
                return Err(Rejection::TooManyRequests);
            }
            let activity = http.activity(&self.sessions);
            Route::Legacy {
                session: http.core.clone(),
                http: Some(http),
                activity: Some(activity),
                new: false,
            }
        } else if is_initialize(&payload) {
            self.new_session_route(&parts)?
        } else {
            return Err(Rejection::MissingSession);
        };
        self.serve_payload(parts, payload, accepts, route).await
    }

    /// Serves the messages of a POST: answers, notifications, then requests.
    async fn serve_payload(
        &self,
        parts: http::request::Parts,
        payload: Payload,
        accepts: Accepts,
        route: Route,
    ) -> Result<Response<ResponseBody>, Rejection> {
        let messages = match payload {
            Payload::Single(m) => vec![m],
            Payload::Batch(v) => v,
        };
        let legacy_session = match &route {
            Route::Legacy { session, .. } => Some(session.clone()),
            Route::Modern(_) => None,
        };
        let mut requests = Vec::new();
        for m in messages {
            match m {
                Message::Request(r) => requests.push(r),
                Message::Notification(n) => handle_notification(legacy_session.as_ref(), &n),
                Message::Response(r) => {
                    if let Some(s) = &legacy_session {
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
        self.respond(parts, requests, accepts, route).await
    }
}

/// Reads a body up to `limit` bytes: 413 beyond it, 400 if it breaks off.
async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, Rejection>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Some(upper) = body.size_hint().upper()
        && upper > limit as u64
    {
        return Err(Rejection::PayloadTooLarge(limit));
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(Rejection::PayloadTooLarge(limit))
        }
        Err(_) => Err(Rejection::UnreadableBody),
    }
}
