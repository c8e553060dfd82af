//! The streams of one legacy session that a GET can read: the standalone stream, and POST
//! streams whose response was cut short while their requests still run. A stream has at
//! most one reader; a resume (`Last-Event-ID`) takes a stream over from a reader, GET or
//! POST response, whose connection the client already gave up.
//!
//! Not here: the events themselves and their store (`post_events.rs`, `resume_stream.rs`,
//! the event store), and the sessions (`session_table.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::server::Outbox;
use crate::store::StreamId;
use crate::sync::lock;

use super::sse_writer::SseEvent;

/// A stream a GET can attach to: the standalone stream, or a POST stream whose response
/// was cut short while its requests still run.
#[derive(Default)]
pub(crate) struct LiveSlot {
    /// A connection is reading this stream now.
    pub(crate) attached: bool,
    /// When a GET reads it: that reader's number and how to make it let go.
    reader: Option<(u64, CancellationToken)>,
    /// When the POST response that opened it still writes it: how to make that response end
    /// (its requests then go on in the background, and it lets go).
    writer: Option<CancellationToken>,
    /// The events for the GET reading (or about to resume) this stream.
    pub(crate) sink: Option<LiveQueue>,
    /// All its requests are answered (kept only until a GET reads what is held).
    pub(crate) finished: bool,
}

#[derive(Default)]
struct Slots {
    map: HashMap<StreamId, LiveSlot>,
    /// Finished streams holding unread events, oldest first.
    unread: VecDeque<StreamId>,
}

/// How many finished streams with unread events a session keeps for a late GET.
const MAX_UNREAD_STREAMS: usize = 16;

/// The attachable streams of one session.
#[derive(Default)]
pub(crate) struct LiveStreams {
    slots: Mutex<Slots>,
    /// The newest event id of the standalone stream (for a new GET's priming event).
    standalone_head: AtomicU64,
    /// The last stream number given out here (streams without an event store).
    local_streams: AtomicU64,
    /// The last reader number given out (tells a replaced GET from its successor).
    readers: AtomicU64,
    /// Woken whenever a stream loses its reader.
    let_go: tokio::sync::Notify,
}

/// A GET attached to a live stream.
pub(crate) struct Attached {
    /// The stream's live events.
    pub(crate) queue: LiveQueue,
    /// Detaches the GET when dropped.
    pub(crate) attachment: Attachment,
    /// Cancelled when a newer GET resuming the same stream takes it over.
    pub(crate) superseded: CancellationToken,
}

/// Why a GET cannot attach.
#[derive(Debug)]
pub(crate) struct StreamBusy;

/// The live events of a stream, read by the GET attached to it. (An empty queue allocates
/// nothing: thousands of idle GET streams cost almost nothing here.)
pub(crate) type LiveQueue = Arc<Outbox<SseEvent>>;

impl LiveStreams {
    /// A new stream number, for streams whose ids are given out here.
    pub(crate) fn next_local_stream(&self) -> StreamId {
        StreamId(self.local_streams.fetch_add(1, Ordering::AcqRel) + 1)
    }

    /// Registers a POST stream as attached to its response. The response ends when the
    /// token is cancelled: a resume took its stream over.
    pub(crate) fn open(&self, stream: StreamId) -> CancellationToken {
        let superseded = CancellationToken::new();
        lock(&self.slots).map.insert(
            stream,
            LiveSlot {
                attached: true,
                reader: None,
                writer: Some(superseded.clone()),
                sink: None,
                finished: false,
            },
        );
        superseded
    }

    /// All requests of a POST stream are answered. A GET reading it ends once it has read
    /// what is queued; events nobody read yet are kept for a late GET (a few streams per
    /// session), else the stream is forgotten.
    pub(crate) fn finish(&self, stream: StreamId) {
        let mut slots = lock(&self.slots);
        let Some(slot) = slots.map.get_mut(&stream) else {
            return;
        };
        self.let_go.notify_waiters();
        if let Some(q) = &slot.sink {
            q.close();
        }
        if slot.attached || slot.sink.is_none() {
            slots.map.remove(&stream);
            return;
        }
        slot.finished = true;
        slots.unread.push_back(stream);
        while slots.unread.len() > MAX_UNREAD_STREAMS {
            if let Some(old) = slots.unread.pop_front() {
                slots.map.remove(&old);
            }
        }
    }

    /// The POST response went away while its requests run: the stream may now be resumed
    /// by a GET, and until then its events are held here.
    pub(crate) fn release(&self, stream: StreamId) {
        if let Some(s) = lock(&self.slots).map.get_mut(&stream) {
            s.attached = false;
            s.writer = None;
            s.sink.get_or_insert_with(LiveQueue::default);
        }
        self.let_go.notify_waiters();
    }

    /// Attaches a GET. `Ok(None)` when the stream is not live here (finished or unknown:
    /// replay only); `Err` when another connection already reads it. With `take_over` (a
    /// resume: the client lost the connection that reads it, though the server may not know
    /// yet: an idle stream writes nothing, so a dead connection goes unseen, the more so
    /// behind a proxy) a GET reading the stream is replaced at once, and a POST response
    /// still writing it is told to end: `Err` until it has let go (see
    /// [`attach_within`](Self::attach_within)).
    pub(crate) fn attach(
        self: &Arc<Self>,
        stream: StreamId,
        take_over: bool,
    ) -> Result<Option<Attached>, StreamBusy> {
        let mut slots = lock(&self.slots);
        let slot = match slots.map.get_mut(&stream) {
            Some(s) => s,
            None if stream == StreamId::STANDALONE => slots.map.entry(stream).or_default(),
            None => return Ok(None),
        };
        if slot.attached {
            match (&slot.reader, &slot.writer, take_over) {
                (Some((_, old)), _, true) => old.cancel(),
                (None, Some(response), true) => {
                    response.cancel();
                    return Err(StreamBusy);
                }
                _ => return Err(StreamBusy),
            }
        }
        let number = self.readers.fetch_add(1, Ordering::AcqRel) + 1;
        let superseded = CancellationToken::new();
        slot.attached = true;
        slot.reader = Some((number, superseded.clone()));
        super::metrics::stream_readers(1.0);
        Ok(Some(Attached {
            queue: slot.sink.get_or_insert_with(LiveQueue::default).clone(),
            attachment: Attachment {
                live: self.clone(),
                stream,
                reader: number,
            },
            superseded,
        }))
    }

    /// [`attach`](Self::attach), waiting up to `patience` for the stream's reader to let go:
    /// a client resumes the moment its connection drops, usually before the server has seen
    /// the drop.
    pub(crate) async fn attach_within(
        self: &Arc<Self>,
        stream: StreamId,
        take_over: bool,
        patience: Duration,
    ) -> Result<Option<Attached>, StreamBusy> {
        let deadline = Instant::now() + patience;
        loop {
            let let_go = self.let_go.notified();
            tokio::pin!(let_go);
            // Registered before the check, so a release between the two is not missed.
            let_go.as_mut().enable();
            match self.attach(stream, take_over) {
                Err(StreamBusy) if Instant::now() < deadline => {
                    if tokio::time::timeout_at(deadline, let_go).await.is_err() {
                        return self.attach(stream, take_over);
                    }
                }
                done => return done,
            }
        }
    }

    /// The queue for `stream`'s reader: the attached GET's, or (for a released POST stream)
    /// the one holding events for the next GET. `None` for a standalone stream nobody reads.
    pub(crate) fn sink(&self, stream: StreamId) -> Option<LiveQueue> {
        lock(&self.slots)
            .map
            .get(&stream)
            .and_then(|s| s.sink.clone())
    }

    pub(crate) fn standalone_head(&self) -> u64 {
        self.standalone_head.load(Ordering::Acquire)
    }

    /// Records a new standalone event id (for the next GET's priming event).
    pub(crate) fn advance_standalone(&self, seq: u64) {
        self.standalone_head.fetch_max(seq, Ordering::AcqRel);
    }
}

/// Detaches a GET from its stream when the GET's response ends.
pub(crate) struct Attachment {
    live: Arc<LiveStreams>,
    stream: StreamId,
    reader: u64,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        super::metrics::stream_readers(-1.0);
        let mut slots = lock(&self.live.slots);
        let Some(s) = slots.map.get_mut(&self.stream) else {
            return;
        };
        if s.reader.as_ref().is_none_or(|(n, _)| *n != self.reader) {
            return; // A newer GET took the stream over.
        }
        self.live.let_go.notify_waiters();
        s.attached = false;
        s.reader = None;
        if self.stream == StreamId::STANDALONE {
            // Nobody reads the standalone stream now (it may be read on another instance).
            s.sink = None;
        } else if s.finished {
            slots.map.remove(&self.stream);
            slots.unread.retain(|x| *x != self.stream);
        }
    }
}
