//! The shapes of the handler's own responses: status only, a JSON body of final messages,
//! an SSE stream (with the headers that keep proxies from buffering it).
//!
//! Not here: rejections (`rejection.rs`) and deciding which shape answers a POST
//! (`respond.rs`).

use std::collections::VecDeque;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use super::body::ResponseBody;
use super::headers::names;
use super::post_events::PostEvent;

/// A response with only a status.
pub(crate) fn status_only(status: StatusCode) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = status;
    r
}

/// The JSON body answering a POST: its final messages (in a JSON array for a batch).
pub(super) fn json_response(
    events: &[PostEvent],
    early: &[Bytes],
    batch: bool,
) -> Response<ResponseBody> {
    let finals: Vec<Bytes> = early
        .iter()
        .cloned()
        .chain(
            events
                .iter()
                .filter(|e| e.kind.is_final())
                .map(|e| e.event.message.clone()),
        )
        .collect();
    let mut chunks = VecDeque::new();
    if batch {
        chunks.push_back(Bytes::from_static(b"["));
        for (i, m) in finals.into_iter().enumerate() {
            if i > 0 {
                chunks.push_back(Bytes::from_static(b","));
            }
            chunks.push_back(m);
        }
        chunks.push_back(Bytes::from_static(b"]"));
    } else {
        chunks.extend(finals);
    }
    let mut r = Response::new(ResponseBody::chunks(chunks));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// An SSE response around `body`.
pub(super) fn sse_response(body: ResponseBody) -> Response<ResponseBody> {
    let live = body.is_stream();
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    if live {
        // Only a live stream needs proxies to pass it through unbuffered and unchanged.
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, no-transform"),
        );
        h.insert(names::X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    }
    r
}
