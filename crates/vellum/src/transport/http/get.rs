//! A GET: the standalone stream of a legacy session (messages that belong to no request),
//! or a stream resumed with `Last-Event-ID`: what the client missed first (from the event
//! store), then live events, from this instance or followed through the store.
//!
//! Not here: attaching to a live stream (`live_streams.rs`) and the event source
//! (`resume_stream.rs`).

use std::collections::VecDeque;

use bytes::Bytes;
use http::Response;

use crate::protocol::ProtocolVersion;
use crate::store::{EventId, StreamId};

use super::body::ResponseBody;
use super::headers::{Accepts, names, text};
use super::live_streams::StreamBusy;
use super::rejection::Rejection;
use super::response::sse_response;
use super::resume_stream::{Live, ResumeStream};
use super::session_routing::session;
use super::session_table::HttpSession;
use super::sse_writer::{self, SseStream};
use super::state::Inner;

/// How long a resuming GET waits for the POST response it takes the stream over from to
/// end (at the response's next poll, immediate unless its connection is not writable),
/// before a 409.
const RESUME_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves a GET: the session's standalone stream, or a stream resumed with `Last-Event-ID`
/// (replay from the event store, then live events).
pub(super) async fn get(
    inner: &Inner,
    parts: http::request::Parts,
) -> Result<Response<ResponseBody>, Rejection> {
    if inner.options.stateless
        || text(&parts.headers, &names::PROTOCOL_VERSION).is_some_and(ProtocolVersion::looks_modern)
    {
        return Err(Rejection::MethodNotAllowed { allow: "POST" });
    }
    if !Accepts::from_headers(&parts.headers).sse {
        return Err(Rejection::NotAcceptable(
            "Not Acceptable: a GET stream needs Accept: text/event-stream",
        ));
    }
    let http = session(inner, &parts)
        .await?
        .ok_or(Rejection::MissingSession)?;
    let activity = http.activity(&inner.sessions);
    let (stream, after) = requested_stream(inner, &parts)?;
    let attached = http
        .live
        .attach_within(stream, after.is_some(), RESUME_PATIENCE)
        .await
        .map_err(|StreamBusy| Rejection::StreamConflict)?;
    if after.is_some() && attached.is_none() && inner.store().is_none() {
        // Without an event store only a stream still held here can be resumed.
        return Err(Rejection::BadLastEventId(
            "Bad Request: this stream cannot be resumed (the server keeps no events)",
        ));
    }
    // What the client missed first (errors here are still HTTP statuses)...
    let replay = match (after, inner.store()) {
        (Some(after), Some(store)) => store
            .replay_after(&http.id, after)
            .await
            .map_err(Rejection::Replay)?,
        _ => Vec::new(),
    };
    // ...then live events: from this instance, or, for a stream another instance writes,
    // followed through the store.
    let (live, attachment) = match (attached, after, inner.store()) {
        (Some(a), _, _) => (Live::Local(a.queue), Some((a.attachment, a.superseded))),
        (None, Some(after), Some(store)) => {
            let from = replay.last().map_or(after, |e| e.id);
            let live = store
                .follow(&http.id, from)
                .map_or(Live::None, Live::Follow);
            (live, None)
        }
        _ => (Live::None, None),
    };
    let prefix = opening(inner, &http, after);
    let source = ResumeStream::new(replay, after, live, attachment, activity);
    let body = SseStream::new(
        Box::new(source),
        prefix,
        inner.options.sse_keep_alive,
        inner.options.sse_retry,
        inner.stops(Some(&http)),
        None,
    );
    Ok(sse_response(ResponseBody::stream(body)))
}

/// The stream a GET asks for, and the event it resumes after (`Last-Event-ID`): the
/// standalone stream when it names none.
fn requested_stream(
    inner: &Inner,
    parts: &http::request::Parts,
) -> Result<(StreamId, Option<EventId>), Rejection> {
    let Some(v) = text(&parts.headers, &names::LAST_EVENT_ID) else {
        return Ok((StreamId::STANDALONE, None));
    };
    let after = v
        .parse::<EventId>()
        .map_err(|_| Rejection::BadLastEventId("Bad Request: malformed Last-Event-ID"))?;
    if inner.store().is_none() && after.stream == StreamId::STANDALONE {
        // Without an event store nothing sent while the client was away is kept: a "resumed"
        // standalone stream would silently miss it.
        return Err(Rejection::BadLastEventId(
            "Bad Request: this stream cannot be resumed (the server keeps no events)",
        ));
    }
    Ok((after.stream, Some(after)))
}

/// What a stream starts with: for a new standalone stream, something to flush the headers
/// now, which gives the client a place to resume from when events carry ids.
fn opening(inner: &Inner, http: &HttpSession, after: Option<EventId>) -> VecDeque<Bytes> {
    let mut prefix = VecDeque::new();
    if after.is_some() {
        return prefix;
    }
    if inner.store().is_some() && http.core.protocol_version() >= ProtocolVersion::V2025_11_25 {
        prefix.push_back(sse_writer::priming(
            http.event_id_of_standalone_head(),
            inner.options.sse_retry,
        ));
    } else {
        prefix.push_back(sse_writer::comment());
    }
    prefix
}
