//! A GET: the standalone stream of a legacy session (messages that belong to no request),
//! or a stream resumed with `Last-Event-ID`: what the client missed first (from the event
//! store), then live events, from this instance or followed through the store.
//!
//! Not here: attaching to a live stream (`live_streams.rs`) and the event source
//! (`resume_stream.rs`).

use std::collections::VecDeque;

use http::Response;

use crate::protocol::ProtocolVersion;
use crate::store::{EventId, StreamId};

use super::body::ResponseBody;
use super::endpoint::Inner;
use super::headers::{Accepts, names, text};
use super::live_streams::StreamBusy;
use super::rejection::Rejection;
use super::response::sse_response;
use super::resume_stream::{Live, ResumeStream};
use super::sse_writer::{self, SseStream};

/// How long a resuming GET waits for the POST response it takes the stream over from to
/// end (at the response's next poll, immediate unless its connection is not writable),
/// before a 409.
const RESUME_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

impl Inner {
    /// Serves a GET: the session's standalone stream, or a stream resumed with
    /// `Last-Event-ID` (replay from the event store, then live events).
    pub(super) async fn get(
        &self,
        parts: http::request::Parts,
    ) -> Result<Response<ResponseBody>, Rejection> {
        if self.options.stateless
            || text(&parts.headers, &names::PROTOCOL_VERSION)
                .is_some_and(ProtocolVersion::looks_modern)
        {
            return Err(Rejection::MethodNotAllowed { allow: "POST" });
        }
        if !Accepts::from_headers(&parts.headers).sse {
            return Err(Rejection::NotAcceptable(
                "Not Acceptable: a GET stream needs Accept: text/event-stream",
            ));
        }
        let http = self
            .session(&parts)
            .await?
            .ok_or(Rejection::MissingSession)?;
        let activity = http.activity(&self.sessions);
        let last =
            match text(&parts.headers, &names::LAST_EVENT_ID) {
                None => None,
                Some(v) => Some(v.parse::<EventId>().map_err(|_| {
                    Rejection::BadLastEventId("Bad Request: malformed Last-Event-ID")
                })?),
            };
        let (stream, after) = match last {
            Some(id) => (id.stream, Some(id)),
            None => (StreamId::STANDALONE, None),
        };
        if after.is_some() && self.store().is_none() && stream == StreamId::STANDALONE {
            // Without an event store nothing sent while the client was away is kept: a
            // "resumed" standalone stream would silently miss it.
            return Err(Rejection::BadLastEventId(
                "Bad Request: this stream cannot be resumed (the server keeps no events)",
            ));
        }
        let attached = http
            .live
            .attach_within(stream, after.is_some(), RESUME_PATIENCE)
            .await
            .map_err(|StreamBusy| Rejection::StreamConflict)?;
        if after.is_some() && attached.is_none() && self.store().is_none() {
            // Without an event store only a stream still held here can be resumed.
            return Err(Rejection::BadLastEventId(
                "Bad Request: this stream cannot be resumed (the server keeps no events)",
            ));
        }
        // What the client missed first (errors here are still HTTP statuses)...
        let replay = match (after, self.store()) {
            (Some(after), Some(store)) => store
                .replay_after(&http.id, after)
                .await
                .map_err(Rejection::Replay)?,
            _ => Vec::new(),
        };
        // ...then live events: from this instance, or, for a stream another instance
        // writes, followed through the store.
        let (live, attachment) = match (attached, after, self.store()) {
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
        let mut prefix = VecDeque::new();
        if after.is_none() {
            // A new standalone stream: flush headers now, and give the client a place to
            // resume from when events carry ids.
            if self.store().is_some()
                && http.core.protocol_version() >= ProtocolVersion::V2025_11_25
            {
                prefix.push_back(sse_writer::priming(
                    http.event_id_of_standalone_head(),
                    self.options.sse_retry,
                ));
            } else {
                prefix.push_back(sse_writer::comment());
            }
        }
        let source = ResumeStream::new(replay, after, live, attachment, activity);
        let body = SseStream::new(
            Box::new(source),
            prefix,
            self.options.sse_keep_alive,
            self.options.sse_retry,
            self.stops(Some(&http)),
            None,
        );
        Ok(sse_response(ResponseBody::stream(body)))
    }
}
