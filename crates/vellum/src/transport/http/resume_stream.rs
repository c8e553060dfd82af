//! [`ResumeStream`]: a GET reading a stream of its session: the standalone stream, or a
//! POST stream resumed with `Last-Event-ID`. First what the client missed (replayed from the
//! event store), then live events, each exactly once.
//!
//! Not here: attaching to a stream (`live_streams.rs`) and the GET's checks (`get.rs`).

use std::collections::VecDeque;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::protocol::ErrorObject;
use crate::protocol::encode_error;
use crate::store::{EventId, StoreError, StoredEvent};

use super::live_streams::{Attachment, LiveQueue};
use super::session_table::ActivityGuard;
use super::sse_writer::{EventSource, SseEvent};

/// Where a GET's live events come from after the replay.
pub(crate) enum Live {
    /// Nothing more: the stream is finished (replay only).
    None,
    /// A stream this instance writes.
    Local(LiveQueue),
    /// A stream another instance writes, followed through the event store.
    Follow(BoxStream<'static, Result<StoredEvent, StoreError>>),
}

/// A GET reading a stream: first what the client missed (from the store), then live events
/// (if the stream is still live), each exactly once.
pub(crate) struct ResumeStream {
    replay: VecDeque<StoredEvent>,
    live: Live,
    /// Errors to send for requests whose instance died (followed streams).
    orphans: VecDeque<Bytes>,
    /// The last seq delivered, so live events that the replay already had are skipped.
    last_seq: Option<u64>,
    /// Set when this GET reads a live stream here: cancelled when a newer GET takes it over.
    taken_over: Option<CancellationToken>,
    _attachment: Option<Attachment>,
    _activity: ActivityGuard,
}

impl ResumeStream {
    pub(crate) fn new(
        replay: Vec<StoredEvent>,
        after: Option<EventId>,
        live: Live,
        attachment: Option<(Attachment, CancellationToken)>,
        activity: ActivityGuard,
    ) -> Self {
        let (attachment, taken_over) = attachment.unzip();
        ResumeStream {
            replay: replay.into(),
            live,
            orphans: VecDeque::new(),
            last_seq: after.map(|a| a.seq),
            taken_over,
            _attachment: attachment,
            _activity: activity,
        }
    }

    fn fresh(&mut self, id: Option<EventId>) -> bool {
        if let (Some(id), Some(last)) = (id, self.last_seq)
            && id.seq <= last
        {
            return false; // Already delivered.
        }
        if let Some(id) = id {
            self.last_seq = Some(id.seq);
        }
        true
    }
}

impl EventSource for ResumeStream {
    fn taken_over(&self) -> Option<CancellationToken> {
        self.taken_over.clone()
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<SseEvent>> {
        if let Some(ev) = self.replay.pop_front() {
            self.last_seq = Some(ev.id.seq);
            return Poll::Ready(Some(SseEvent {
                id: Some(ev.id),
                message: ev.message,
            }));
        }
        if let Some(m) = self.orphans.pop_front() {
            return Poll::Ready(Some(SseEvent {
                id: None,
                message: m,
            }));
        }
        loop {
            let ev = match &mut self.live {
                Live::None => return Poll::Ready(None),
                Live::Local(q) => match q.poll_recv(cx) {
                    Poll::Ready(Some(ev)) => ev,
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                },
                Live::Follow(st) => match st.as_mut().poll_next(cx) {
                    Poll::Ready(Some(Ok(ev))) => SseEvent {
                        id: Some(ev.id),
                        message: ev.message,
                    },
                    Poll::Ready(Some(Err(StoreError::WriterGone { requests }))) => {
                        // The instance serving these requests died: they will never be
                        // answered, so say so instead of leaving the client waiting.
                        let e = ErrorObject::internal(
                            "the server instance handling this request stopped before answering",
                        );
                        self.orphans = requests
                            .iter()
                            .map(|id| encode_error(Some(id), &e))
                            .collect();
                        self.live = Live::None;
                        match self.orphans.pop_front() {
                            Some(m) => {
                                return Poll::Ready(Some(SseEvent {
                                    id: None,
                                    message: m,
                                }));
                            }
                            None => return Poll::Ready(None),
                        }
                    }
                    Poll::Ready(Some(Err(_))) | Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                },
            };
            if self.fresh(ev.id) {
                return Poll::Ready(Some(ev));
            }
        }
    }
}
