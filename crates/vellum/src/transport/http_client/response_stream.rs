//! The SSE answer of a POST: its events are delivered until the response to the request
//! arrives; a broken legacy stream is resumed with `Last-Event-ID` after the server's `retry`
//! (or backoff with jitter), at most the configured number of attempts. Modern streams cannot
//! be resumed: a lost stream is a lost request.

use std::sync::Arc;

use bytes::Bytes;

use super::authorize::send_request;
use super::event_reader::{Cursor, End, EventReader, Lost, ResumeFailure};
use super::response::content_type;
use super::shared::Shared;
use crate::client::transport::{Incoming, decode_incoming};
use crate::protocol::{Message, RequestId};

/// Delivers the events of a POST's SSE answer until the response to `id`; resumes a
/// broken legacy stream with `Last-Event-ID`.
pub(super) async fn read_response_stream(
    shared: &Arc<Shared>,
    resp: reqwest::Response,
    id: &RequestId,
    modern: bool,
) {
    let mut cursor = Cursor::default();
    let mut reader = EventReader::new(resp, shared.options.max_message_bytes);
    let mut attempt = 0u32;
    loop {
        let end = match pump(shared, &mut reader, &mut cursor, Some(id), &mut attempt).await {
            Pumped::Answered => return,
            Pumped::Ended(e) => e,
        };
        if modern || cursor.last_event_id.is_none() {
            return shared.fail(id, Lost { end, resume: None }.into_error());
        }
        match resume(shared, &cursor, &mut attempt).await {
            Ok(r) => reader = EventReader::new(r, shared.options.max_message_bytes),
            Err(why) => {
                let lost = Lost {
                    end,
                    resume: Some(why),
                };
                return shared.fail(id, lost.into_error());
            }
        }
    }
}

/// How [`pump`] stopped.
pub(super) enum Pumped {
    /// The response to the awaited request arrived.
    Answered,
    /// The stream ended first.
    Ended(End),
}

/// Delivers events until the stream ends or (when `awaited` is set) its response arrives.
pub(super) async fn pump(
    shared: &Shared,
    reader: &mut EventReader,
    cursor: &mut Cursor,
    awaited: Option<&RequestId>,
    attempt: &mut u32,
) -> Pumped {
    loop {
        let event = match reader.next(cursor).await {
            Ok(e) => e,
            Err(end) => return Pumped::Ended(end),
        };
        *attempt = 0;
        if event.event.as_deref().is_some_and(|e| e != "message") {
            continue;
        }
        let mut answered = false;
        for i in decode_incoming(&Bytes::from(event.data)) {
            if let (Some(want), Incoming::Message(Message::Response(r))) = (awaited, &i)
                && r.id.as_ref() == Some(want)
            {
                answered = true;
            }
            shared.deliver(i);
        }
        if answered {
            return Pumped::Answered;
        }
    }
}

/// Waits (the server's `retry`, else backoff with jitter) and GETs the stream after
/// `cursor`'s last event id.
async fn resume(
    shared: &Shared,
    cursor: &Cursor,
    attempt: &mut u32,
) -> Result<reqwest::Response, ResumeFailure> {
    loop {
        if !backoff(shared, cursor, attempt).await {
            return Err(ResumeFailure::GaveUp(*attempt));
        }
        let resp = match send_request(shared, shared.get(cursor.last_event_id.as_deref())).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("resuming the stream failed: {}", crate::error::chain(&e));
                continue;
            }
        };
        let status = resp.status();
        if status.is_success() && content_type(&resp) == "text/event-stream" {
            return Ok(resp);
        }
        if status.is_client_error() {
            return Err(ResumeFailure::Refused(status));
        }
        tracing::debug!("resuming the stream answered HTTP {status}; retrying");
    }
}

/// Waits before the next attempt (the server's `retry`, else backoff with jitter); false
/// once the attempts are used up.
pub(super) async fn backoff(shared: &Shared, cursor: &Cursor, attempt: &mut u32) -> bool {
    if *attempt >= shared.options.reconnect.max_retries {
        return false;
    }
    let delay = shared.options.reconnect.delay(*attempt, cursor.retry);
    *attempt += 1;
    tokio::time::sleep(delay).await;
    true
}
