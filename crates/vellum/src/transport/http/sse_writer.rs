//! The one place that writes Server-Sent Events: event framing, priming events, `retry`,
//! keep-alive comments, and [`SseStream`], the body that drives an [`EventSource`] and
//! ends it cleanly (client gone, session closed, server shutting down).
//!
//! Not here: where events come from (`post_events.rs`, `resume_stream.rs`).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut as _, Bytes, BytesMut};
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
/// always suffices.) For bodies written whole (with a `Content-Length`, so no HTTP
/// chunks): the pieces go out in one vectored write.
pub(crate) fn push_event(out: &mut VecDeque<Bytes>, ev: SseEvent) {
    match ev.id {
        Some(id) => out.push_back(Bytes::from(format!("id: {id}\ndata: "))),
        None => out.push_back(Bytes::from_static(DATA)),
    }
    out.push_back(ev.message);
    out.push_back(Bytes::from_static(END));
}

/// A body written whole with this many pieces or fewer goes out as it is (one vectored
/// write); hyper flushes every 16 queued pieces, so longer bodies are gathered.
const FEW_PIECES: usize = 8;

/// A piece at least this long is written from where it is (a large result is never
/// copied); shorter pieces next to each other are copied into one.
const COPY_BELOW: usize = 16 * 1024;

/// Gathers the pieces of a body written whole (an SSE exchange that finished at once) so
/// that it goes out in one write: runs of small pieces (event framing, progress
/// notifications) become one buffer each, large ones stay as they are.
pub(crate) fn gather(pieces: VecDeque<Bytes>) -> VecDeque<Bytes> {
    if pieces.len() <= FEW_PIECES {
        return pieces;
    }
    let mut out = VecDeque::new();
    let mut run = BytesMut::new();
    for piece in pieces {
        if piece.len() >= COPY_BELOW {
            if !run.is_empty() {
                out.push_back(run.split().freeze());
            }
            out.push_back(piece);
        } else {
            run.extend_from_slice(&piece);
        }
    }
    if !run.is_empty() {
        out.push_back(run.freeze());
    }
    out
}

/// Frames one message event at the end of `buf`: a live stream writes each of its HTTP
/// chunks from one buffer, so an event is one chunk (and events ready together share it).
fn frame_event(buf: &mut BytesMut, ev: &SseEvent) {
    // "id: " + two u64 and a dash + "\n": at most 45 bytes.
    buf.reserve(ev.id.map_or(0, |_| 48) + DATA.len() + ev.message.len() + END.len());
    if let Some(id) = ev.id {
        // Writing into a BytesMut cannot fail.
        let _ = writeln!(buf, "id: {id}");
    }
    buf.extend_from_slice(DATA);
    buf.extend_from_slice(&ev.message);
    buf.extend_from_slice(END);
}

/// A live stream stops gathering ready events into one chunk past this size, so that a
/// burst of events is neither held back nor buffered whole.
const CHUNK_GATHER: usize = 64 * 1024;

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

    /// Cancelled when a resume takes the stream over (another connection reads it now):
    /// the response then ends, without a `retry` hint. Read once, when the stream starts.
    fn taken_over(&self) -> Option<CancellationToken> {
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
    taken_over: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
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
            taken_over: source.taken_over().map(|t| Box::pin(t.cancelled_owned())),
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

    /// The next HTTP chunk: everything ready now (queued pieces, then the source's ready
    /// events, up to [`CHUNK_GATHER`]) in one buffer, so one SSE event is one chunk.
    pub(crate) fn poll_chunk(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        let mut buf = BytesMut::new();
        loop {
            if !this.out.is_empty() {
                if buf.is_empty() && this.out.len() == 1 && this.done {
                    // A last piece alone (a `retry` hint): no copy.
                    return Poll::Ready(this.out.pop_front());
                }
                for piece in this.out.drain(..) {
                    buf.put(piece);
                }
            }
            if buf.len() >= CHUNK_GATHER {
                return Poll::Ready(Some(buf.freeze()));
            }
            if this.done {
                return Poll::Ready((!buf.is_empty()).then(|| buf.freeze()));
            }
            if this.shutdown.as_mut().poll(cx).is_ready()
                && this.source.as_ref().is_none_or(|s| s.ends_on_shutdown())
            {
                this.stop(this.retry);
                continue;
            }
            let ended = |f: &mut Option<Pin<Box<WaitForCancellationFutureOwned>>>,
                         cx: &mut Context<'_>| {
                f.as_mut().is_some_and(|f| f.as_mut().poll(cx).is_ready())
            };
            if ended(&mut this.session_closed, cx) || ended(&mut this.taken_over, cx) {
                // The session is gone (the client must re-initialize), or another connection
                // reads the stream now: no retry either way.
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
                    frame_event(&mut buf, &ev);
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
                    if !buf.is_empty() {
                        // Written now; the keep-alive was reset by what it holds.
                        return Poll::Ready(Some(buf.freeze()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StreamId;

    /// A source with some events ready now, then nothing until the test ends it.
    struct Ready(VecDeque<SseEvent>, bool);

    impl EventSource for Ready {
        fn poll_event(&mut self, _cx: &mut Context<'_>) -> Poll<Option<SseEvent>> {
            match self.0.pop_front() {
                Some(ev) => Poll::Ready(Some(ev)),
                None if self.1 => Poll::Ready(None),
                None => Poll::Pending,
            }
        }
    }

    fn event(seq: u64, message: &'static str) -> SseEvent {
        SseEvent {
            id: Some(EventId {
                stream: StreamId(7),
                seq,
            }),
            message: Bytes::from_static(message.as_bytes()),
        }
    }

    fn stream(source: Ready, prefix: VecDeque<Bytes>) -> Pin<Box<SseStream>> {
        let stops = Stops {
            shutdown: CancellationToken::new(),
            session: None,
        };
        Box::pin(SseStream::new(
            Box::new(source),
            prefix,
            None,
            Duration::from_secs(1),
            stops,
            None,
        ))
    }

    #[test]
    fn events_ready_together_are_one_chunk() {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let source = Ready(
            VecDeque::from([event(1, "{\"a\":1}"), event(2, "{}")]),
            false,
        );
        let mut s = stream(
            source,
            VecDeque::from([priming(
                EventId::start_of(StreamId(7)),
                Duration::from_millis(5),
            )]),
        );
        let Poll::Ready(Some(chunk)) = s.as_mut().poll_chunk(&mut cx) else {
            panic!("a chunk is ready");
        };
        assert_eq!(
            &chunk[..],
            b"id: 7-0\nretry: 5\ndata: \n\nid: 7-1\ndata: {\"a\":1}\n\nid: 7-2\ndata: {}\n\n"
        );
        assert!(s.as_mut().poll_chunk(&mut cx).is_pending());
    }

    #[test]
    fn whole_bodies_are_gathered_without_copying_large_pieces() {
        let few: VecDeque<Bytes> = [b"a", b"b", b"c"]
            .map(|b: &'static [u8; 1]| Bytes::from_static(b))
            .into();
        assert_eq!(gather(few.clone()), few);
        let big = Bytes::from(vec![b'x'; COPY_BELOW]);
        let mut many: VecDeque<Bytes> = (0..20).map(|_| Bytes::from_static(b"ab")).collect();
        many.insert(10, big.clone());
        let out = gather(many);
        assert_eq!(out.len(), 3);
        assert_eq!((out[0].len(), out[2].len()), (20, 20));
        // The large piece is the same buffer, not a copy.
        assert_eq!(out[1].as_ptr(), big.as_ptr());
    }

    #[test]
    fn a_stream_ends_after_its_last_chunk() {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut ev = event(1, "{}");
        ev.id = None;
        let mut s = stream(Ready(VecDeque::from([ev]), true), VecDeque::new());
        let Poll::Ready(Some(chunk)) = s.as_mut().poll_chunk(&mut cx) else {
            panic!("a chunk is ready");
        };
        assert_eq!(&chunk[..], b"data: {}\n\n");
        assert!(matches!(s.as_mut().poll_chunk(&mut cx), Poll::Ready(None)));
    }
}
