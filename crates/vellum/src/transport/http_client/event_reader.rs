//! Reading the Server-Sent Events of a response body on the client side: sse-stream parses,
//! this module bounds the bytes an event may take, keeps the resumption cursor (`id`,
//! `retry`), and says how a stream ended ([`End`]) and why it was lost for good ([`Lost`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::StatusCode;
use sse_stream::{Sse, SseByteStream};

use crate::error::TransportError;

/// Where a stream stands, for resuming it with `Last-Event-ID`.
#[derive(Debug, Default, Clone)]
pub(super) struct Cursor {
    /// The id of the last event received.
    pub(super) last_event_id: Option<String>,
    /// The server's last `retry` hint.
    pub(super) retry: Option<Duration>,
}

/// One SSE event that carries data.
#[derive(Debug)]
pub(super) struct Event {
    /// The event type (`None` means `message`).
    pub(super) event: Option<String>,
    /// The data lines, joined.
    pub(super) data: String,
}

/// How reading a stream stopped.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum End {
    /// The server ended the stream cleanly.
    #[error("the server closed the stream")]
    Closed,
    /// The connection broke, or the stream was malformed or too big.
    #[error("the stream broke")]
    Broken(#[source] TransportError),
}

/// Why resuming a stream failed.
#[derive(Debug, Clone, Copy)]
pub(super) enum ResumeFailure {
    /// The server answered the resumption with a client error status.
    Refused(StatusCode),
    /// Every attempt allowed failed.
    GaveUp(u32),
}

/// A stream lost for good: how it ended and, when resuming was tried, why that failed. The
/// source of [`TransportError::StreamLost`].
#[derive(Debug, Clone)]
pub(super) struct Lost {
    pub(super) end: End,
    pub(super) resume: Option<ResumeFailure>,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.end)?;
        match self.resume {
            None => Ok(()),
            Some(ResumeFailure::Refused(status)) => {
                write!(f, ", and the server refused to resume it (HTTP {status})")
            }
            Some(ResumeFailure::GaveUp(n)) => write!(f, ", and {n} attempts to resume it failed"),
        }
    }
}

impl std::error::Error for Lost {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.end {
            End::Broken(e) => Some(e),
            End::Closed => None,
        }
    }
}

impl Lost {
    /// The transport error of a stream lost this way.
    pub(super) fn into_error(self) -> TransportError {
        TransportError::stream_lost(self)
    }
}

/// What the byte stream under the parser fails with (boxed by sse-stream, recovered here).
#[derive(Debug, thiserror::Error)]
enum ChunkError {
    #[error("an SSE event longer than {0} bytes")]
    TooLarge(usize),
    #[error("reading the stream failed")]
    Body(#[source] reqwest::Error),
}

/// An SSE reader over a response's body with a byte budget per event.
pub(super) struct EventReader {
    inner: std::pin::Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>,
    since_event: Arc<AtomicUsize>,
}

impl EventReader {
    /// Reads events from `response`; an event (with what precedes it) larger than
    /// `max_event_bytes` ends the stream.
    pub(super) fn new(response: reqwest::Response, max_event_bytes: usize) -> EventReader {
        let since_event = Arc::new(AtomicUsize::new(0));
        let counter = since_event.clone();
        let bytes = response.bytes_stream().map(move |chunk| match chunk {
            Ok(b) => {
                let total = counter.fetch_add(b.len(), Ordering::AcqRel) + b.len();
                if total > max_event_bytes {
                    Err(ChunkError::TooLarge(max_event_bytes))
                } else {
                    Ok::<Bytes, ChunkError>(b)
                }
            }
            Err(e) => Err(ChunkError::Body(e.without_url())),
        });
        EventReader {
            inner: Box::pin(SseByteStream::new(bytes)),
            since_event,
        }
    }

    /// The next event with data, updating `cursor` with every id and retry seen on the way;
    /// `Err` when the stream ends.
    pub(super) async fn next(&mut self, cursor: &mut Cursor) -> Result<Event, End> {
        loop {
            match self.inner.next().await {
                None => return Err(End::Closed),
                Some(Err(e)) => return Err(End::Broken(broken(e))),
                Some(Ok(sse)) => {
                    self.since_event.store(0, Ordering::Release);
                    if let Some(id) = sse.id {
                        cursor.last_event_id = (!id.is_empty()).then_some(id);
                    }
                    if let Some(ms) = sse.retry {
                        cursor.retry = Some(Duration::from_millis(ms));
                    }
                    match sse.data {
                        Some(data) if !data.trim().is_empty() => {
                            return Ok(Event {
                                event: sse.event,
                                data,
                            });
                        }
                        // Priming events and keep-alives carry no message.
                        _ => continue,
                    }
                }
            }
        }
    }
}

/// The transport error behind a parser error.
fn broken(e: sse_stream::Error) -> TransportError {
    match e {
        sse_stream::Error::Body(b) => match b.downcast::<ChunkError>() {
            Ok(chunk) => match *chunk {
                ChunkError::TooLarge(limit) => TransportError::TooLarge { limit },
                ChunkError::Body(e) => TransportError::body(e),
            },
            Err(other) => TransportError::Body(Arc::from(other)),
        },
        other => TransportError::Protocol {
            detail: format!("a malformed event stream ({other})"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_stream_says_how_it_ended_and_why_resuming_failed() {
        let lost = Lost {
            end: End::Closed,
            resume: Some(ResumeFailure::GaveUp(5)),
        };
        assert_eq!(
            crate::error::chain(&lost.into_error()),
            "the response stream ended before the response: the server closed the stream, \
             and 5 attempts to resume it failed"
        );
        let lost = Lost {
            end: End::Broken(TransportError::TooLarge { limit: 10 }),
            resume: Some(ResumeFailure::Refused(StatusCode::BAD_REQUEST)),
        };
        assert_eq!(
            crate::error::chain(&lost.into_error()),
            "the response stream ended before the response: the stream broke, and the server \
             refused to resume it (HTTP 400 Bad Request): a message from the server is larger \
             than 10 bytes"
        );
    }
}
