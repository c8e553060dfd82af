//! Reading Server-Sent Events from a response body: sse-stream parses, this module bounds
//! the bytes an event may take and keeps the resumption cursor (`id`, `retry`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use sse_stream::{Sse, SseByteStream};

/// Where a stream stands, for resuming it with `Last-Event-ID`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cursor {
    /// The id of the last event received.
    pub(crate) last_event_id: Option<String>,
    /// The server's last `retry` hint.
    pub(crate) retry: Option<Duration>,
}

/// One SSE event that carries data.
#[derive(Debug)]
pub(crate) struct Event {
    /// The event type (`None` means `message`).
    pub(crate) event: Option<String>,
    /// The data lines, joined.
    pub(crate) data: String,
}

/// Why reading a stream stopped.
#[derive(Debug)]
pub(crate) enum End {
    /// The server ended the stream cleanly.
    Closed,
    /// The connection broke, or the stream was malformed or too big.
    Broken(String),
}

/// An SSE reader over a response's body with a byte budget per event.
pub(crate) struct EventReader {
    inner: std::pin::Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>,
    since_event: Arc<AtomicUsize>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReadError(String);

impl EventReader {
    /// Reads events from `response`; an event (with what precedes it) larger than
    /// `max_event_bytes` ends the stream.
    pub(crate) fn new(response: reqwest::Response, max_event_bytes: usize) -> EventReader {
        let since_event = Arc::new(AtomicUsize::new(0));
        let counter = since_event.clone();
        let bytes = response.bytes_stream().map(move |chunk| match chunk {
            Ok(b) => {
                let total = counter.fetch_add(b.len(), Ordering::AcqRel) + b.len();
                if total > max_event_bytes {
                    Err(ReadError(format!(
                        "an SSE event longer than {max_event_bytes} bytes"
                    )))
                } else {
                    Ok::<Bytes, ReadError>(b)
                }
            }
            Err(e) => Err(ReadError(e.to_string())),
        });
        EventReader {
            inner: Box::pin(SseByteStream::new(bytes)),
            since_event,
        }
    }

    /// The next event with data, updating `cursor` with every id and retry seen on the way;
    /// `Err` when the stream ends.
    pub(crate) async fn next(&mut self, cursor: &mut Cursor) -> Result<Event, End> {
        loop {
            match self.inner.next().await {
                None => return Err(End::Closed),
                Some(Err(e)) => return Err(End::Broken(e.to_string())),
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
