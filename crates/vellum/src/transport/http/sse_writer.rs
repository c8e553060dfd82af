//! The one place that writes Server-Sent Events: event framing, priming events, `retry`,
//! keep-alive comments, and [`SseStream`], the body that drives an [`EventSource`] and
//! ends it cleanly (client gone, session closed, server shutting down).
//!
//! Not here: where events come from (`post_events.rs`, `resume_stream.rs`).

use std::collections::VecDeque;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::store::EventId;

/// One event of a stream.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    /// The event id, when the stream is resumable.
    pub(crate) id: Option<EventId>,
    /// The encoded JSON-RPC message.
    pub(crate) message: Bytes,
}

const DATA: &[u8] = b"data: ";
const END: &[u8] = b"\n\n";

/// Frames one message event into `out` without copying the message: `[id: …\n]data: `,
/// the JSON, a blank line. (JSON from serde_json has no raw newlines, so one data line
/// always suffices.)
pub(crate) fn push_event(out: &mut VecDeque<Bytes>, ev: SseEvent) {
    match ev.id {
        Some(id) => out.push_back(Bytes::from(format!("id: {id}\ndata: "))),
        None => out.push_back(Bytes::from_static(DATA)),
    }
    out.push_back(ev.message);
    out.push_back(Bytes::from_static(END));
}

/// A priming event (SEP-1699): an id to resume from, the reconnect delay, and empty data.
pub(crate) fn priming(id: EventId, retry: Duration) -> Bytes {
    Bytes::from(format!(
        "id: {id}\nretry: {}\ndata: \n\n",
        retry.as_millis()
    ))
}

/// Tells the client when to reconnect before the server ends a stream early.
pub(crate) fn retry(retry: Duration) -> Bytes {
    Bytes::from(format!("retry: {}\n\n", retry.as_millis()))
}

/// A comment that keeps proxies from timing the stream out, and flushes headers through
/// HTTP/2 proxies when a stream opens.
pub(crate) fn comment() -> Bytes {
    Bytes::from_static(b": \n\n")
}

/// What an [`SseStream`] streams.
pub(crate) trait EventSource: Send + 'static {
    /// The next event; `None` once the stream is complete.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<SseEvent>>;

    /// A handler asked to end the HTTP response early (SSE polling): the reconnect delay.
    fn close_requested(&self) -> Option<Duration> {
        None
    }

    /// Whether the stream ends (with a `retry` hint) when the server shuts down; streams
    /// still answering requests run to the end instead (within the shutdown grace).
    fn ends_on_shutdown(&self) -> bool {
        true
    }
}

/// Why a stream ends before its source does.
pub(crate) struct Stops {
    /// The server is shutting down.
    pub(crate) shutdown: CancellationToken,
    /// The session was closed (DELETE, timeout).
    pub(crate) session: Option<CancellationToken>,
}

/// A live SSE response body.
pub(crate) struct SseStream {
    source: Option<Box<dyn EventSource>>,
    out: VecDeque<Bytes>,
    keep_alive: Option<(Duration, Pin<Box<Sleep>>)>,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    session_closed: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    retry: Duration,
    done: bool,
    /// Kept alive as long as the body (an activity guard, a stream slot).
    _hold: Option<Box<dyn Send>>,
}

impl SseStream {
    /// A stream that first writes `prefix` (priming event, buffered events), then the
    /// source's events.
    pub(crate) fn new(
        source: Box<dyn EventSource>,
        prefix: VecDeque<Bytes>,
        keep_alive: Option<Duration>,
        retry: Duration,
        stops: Stops,
        hold: Option<Box<dyn Send>>,
    ) -> Self {
        SseStream {
            source: Some(source),
            out: prefix,
            keep_alive: keep_alive.map(|d| (d, Box::pin(tokio::time::sleep(d)))),
            shutdown: Box::pin(stops.shutdown.cancelled_owned()),
            session_closed: stops.session.map(|t| Box::pin(t.cancelled_owned())),
            retry,
            done: false,
            _hold: hold,
        }
    }

    /// Ends the response early, telling the client when to come back.
    fn stop(&mut self, retry: Duration) {
        self.out.push_back(self::retry(retry));
        self.done = true;
        // Dropping the source lets it decide whether its work goes on (see its `Drop`).
        self.source = None;
    }

    pub(crate) fn poll_chunk(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.out.pop_front() {
                return Poll::Ready(Some(b));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if this.shutdown.as_mut().poll(cx).is_ready()
                && this.source.as_ref().is_none_or(|s| s.ends_on_shutdown())
            {
                this.stop(this.retry);
                continue;
            }
            if let Some(c) = this.session_closed.as_mut()
                && c.as_mut().poll(cx).is_ready()
            {
                // The session is gone: no retry, the client must re-initialize.
                this.done = true;
                this.source = None;
                continue;
            }
            let Some(source) = this.source.as_mut() else {
                this.done = true;
                continue;
            };
            match source.poll_event(cx) {
                Poll::Ready(Some(ev)) => {
                    push_event(&mut this.out, ev);
                    if let Some((d, sleep)) = this.keep_alive.as_mut() {
                        sleep.as_mut().reset(Instant::now() + *d);
                    }
                }
                Poll::Ready(None) => {
                    this.source = None;
                    this.done = true;
                }
                Poll::Pending => {
                    if let Some(retry) = source.close_requested() {
                        this.stop(retry);
                        continue;
                    }
                    if let Some((d, sleep)) = this.keep_alive.as_mut()
                        && sleep.as_mut().poll(cx).is_ready()
                    {
                        sleep.as_mut().reset(Instant::now() + *d);
                        this.out.push_back(comment());
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}
