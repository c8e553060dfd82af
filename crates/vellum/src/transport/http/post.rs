//! A POST: its content type and `Accept`, the body (size limit, JSON-RPC decode), and the
//! era routing in the spec's dual-era order (a modern version header, a session, an
//! `initialize`, a modern `_meta`, else legacy). Notifications and answers are handled at
//! once; requests go on to `post_response.rs`.
//!
//! Not here: the session lookups (`session_routing.rs`) and the 2026-07-28 header checks
//! (`modern_headers.rs`).

use http::{Response, StatusCode};
use http_body::Body;

use crate::protocol::{Message, Payload, ProtocolVersion, decode, methods};
use crate::server::{handle_notification, handle_response};

use super::body::ResponseBody;
use super::body_reader::{BodyLimits, read_body};
use super::endpoint::Inner;
use super::headers::{Accepts, is_json_content_type, names, text};
use super::modern_headers;
use super::rejection::Rejection;
use super::response::status_only;
use super::session_routing::{Route, is_initialize, request_count};

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
        let limits = BodyLimits {
            max_bytes: self.options.max_body_bytes,
            timeout: self.options.body_timeout,
            min_rate: self.options.min_body_rate,
        };
        let (bytes, held) = read_body(body, limits, &self.bodies).await?;
        let header_version = text(&parts.headers, &names::PROTOCOL_VERSION);
        // Era routing (the spec's dual-era order): a modern version header, then a session,
        // then `initialize`, then a modern `_meta`, else legacy (stateless) or 400.
        // (A request of a legacy session, or with a legacy version header, is legacy: only
        // a header-less request without a session may be a modern one in disguise.)
        let ambiguous = header_version.is_none() && !parts.headers.contains_key(names::SESSION_ID);
        let (payload, modern_meta) = decode_body(bytes, ambiguous).await?;
        // The decoded messages share the bytes; what the budget bounds is bodies in transit.
        drop(held);
        if let Some(limits) = &self.limits {
            // Per method and per tool: known only now that the body is decoded.
            limits.admit_calls(&parts, &payload).await?;
        }
        if header_version.is_some_and(ProtocolVersion::looks_modern) || modern_meta {
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
        let route = if self.options.stateless {
            self.stateless_route(&parts, &payload, version)?
        } else if let Some(http) = self.session(&parts).await? {
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
        if let Route::Legacy { session, http, .. } = &route {
            // A request without a version header speaks its session's version (the one
            // negotiated; 2025-03-26 for a stateless request without the header).
            let version = match (version, http) {
                (Some(v), _) => v,
                (None, Some(_)) => session.protocol_version(),
                (None, None) => ProtocolVersion::DEFAULT_LEGACY,
            };
            self.check_batch(&payload, version)?;
            if let (Some(h), Some(max)) = (http, self.options.max_in_flight_per_session)
                && h.attached_inflight()
                    .saturating_add(request_count(&payload))
                    > max
            {
                // Every request of a batch counts, not the POST that carries them.
                return Err(Rejection::TooManyRequests);
            }
        }
        self.serve_payload(parts, payload, accepts, route).await
    }

    /// Refuses a batch the version does not allow, or one of more entries than the cap.
    fn check_batch(&self, payload: &Payload, version: ProtocolVersion) -> Result<(), Rejection> {
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
        if entries.len() > self.options.max_batch_entries {
            return Err(Rejection::BadRequest {
                id: None,
                message: format!(
                    "Invalid request: a batch of {} entries (at most {} allowed)",
                    entries.len(),
                    self.options.max_batch_entries
                ),
            });
        }
        Ok(())
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
