//! [`PostEvents`]: the requests of one POST being served, as the stream of events their
//! response carries (messages their handlers emit, then each final answer). Once the stream
//! is resumable, events get ids (from the event store, or numbered here) and are stored; when
//! the response goes away before its legacy requests finish, they go on in the background
//! and a GET may resume their stream.
//!
//! Not here: deciding JSON or SSE (`respond.rs`) and writing SSE (`sse_writer.rs`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ErrorObject, RequestId, encode_error};
use crate::server::{Exchange, Outcome, Step};
use crate::store::{EventId, EventStore, StoreError, StreamId};

use super::live_streams::LiveStreams;
use super::session_table::ActivityGuard;
use super::sse_writer::{EventSource, SseEvent};
use super::trace::RequestTrace;

/// A resumable POST stream: its id, and where its events are stored (`None`: ids are
/// numbered here, and a resume works on this instance for events after a close the server
/// asked for).
pub(crate) struct StoredStream {
    pub(crate) store: Option<Arc<dyn EventStore>>,
    pub(crate) session: Arc<str>,
    pub(crate) stream: StreamId,
    pub(crate) live: Arc<LiveStreams>,
}

/// What an event of a POST stream is to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A message on the way (a notification, a request to the client): the request goes on.
    Message,
    /// The request's result.
    Reply,
    /// The request's JSON-RPC error, with its code.
    Error(i64),
    /// The request was cancelled (by the client, or by its session's end): a stream sends
    /// nothing for it; only a JSON body, which must answer something, carries its error
    /// ([`cancelled_error`]).
    Cancelled,
}

impl EventKind {
    /// The request's last event: its answer (or its cancellation).
    pub(crate) fn is_final(self) -> bool {
        self != EventKind::Message
    }

    /// The JSON-RPC error code the request ended with, if it failed.
    pub(crate) fn error_code(self) -> Option<i64> {
        match self {
            EventKind::Error(code) => Some(code),
            EventKind::Cancelled => Some(cancelled_error().code),
            EventKind::Message | EventKind::Reply => None,
        }
    }
}

/// One event of a POST stream, with what the response logic needs to know about it.
#[derive(Debug)]
pub(crate) struct PostEvent {
    pub(crate) event: SseEvent,
    pub(crate) kind: EventKind,
}

/// A message not yet handed out: produced before the stream became resumable, or waiting
/// for the store to give it an id.
struct Unsent {
    message: Bytes,
    kind: EventKind,
}

impl Unsent {
    fn into_event(self, id: Option<EventId>) -> PostEvent {
        PostEvent {
            event: SseEvent {
                id,
                message: self.message,
            },
            kind: self.kind,
        }
    }
}

/// A message the store is appending, and the id it will carry.
struct Appending {
    id: BoxFuture<'static, Result<EventId, StoreError>>,
    unsent: Unsent,
}

/// How long a request running detached (its client gone, to resume elsewhere) keeps trying
/// to store an event, or to mark its stream complete, while the event store is unreachable:
/// nobody reads these events live, so an event that is not stored is lost to the resume,
/// and a stream never marked complete keeps its followers waiting for the writer to die.
const DETACHED_PATIENCE: Duration = Duration::from_secs(30);

/// Runs `op` until it succeeds, fails for good (not [`StoreError::Backend`]), or
/// [`DETACHED_PATIENCE`] is over.
async fn patiently<T, F, Fut>(op: F) -> Result<T, StoreError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let started = tokio::time::Instant::now();
    loop {
        match op().await {
            Err(StoreError::Backend(_)) if started.elapsed() < DETACHED_PATIENCE => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => return other,
        }
    }
}

/// The answer a JSON body gives for a request that was cancelled before it finished.
fn cancelled_error() -> ErrorObject {
    ErrorObject::internal(
        "Request cancelled: the client cancelled it or its session ended before it finished",
    )
}

/// The requests of one POST being served, as a stream of events.
pub(crate) struct PostEvents {
    /// The requests, each with its span when the handler logs.
    exchanges: Vec<(Exchange, Option<RequestTrace>)>,
    stored: Option<StoredStream>,
    /// The last event number given out: by the store (the next append expects the one
    /// after it), or here when events are numbered here.
    local_seq: u64,
    /// Events produced before the stream became resumable, to emit (with ids) first.
    requeued: VecDeque<Unsent>,
    appending: Option<Appending>,
    /// Present for legacy sessions: keeps the session active while requests run, and lets
    /// the requests go on after the response is gone.
    session: Option<ActivityGuard>,
    done: bool,
    /// Already running in the background (never detach twice).
    detached: bool,
    /// Where the next poll starts among the requests: one past the last that produced an
    /// event, so that serving a batch of n requests costs O(n) polls, not O(n²).
    cursor: usize,
    /// Cancelled when a resume takes the stream over: the response then ends, and its
    /// requests go on in the background for the GET that resumed them.
    taken_over: Option<CancellationToken>,
}

impl PostEvents {
    pub(crate) fn new(
        exchanges: Vec<(Exchange, Option<RequestTrace>)>,
        session: Option<ActivityGuard>,
    ) -> Self {
        PostEvents {
            exchanges,
            stored: None,
            local_seq: 0,
            requeued: VecDeque::new(),
            appending: None,
            session,
            done: false,
            detached: false,
            cursor: 0,
            taken_over: None,
        }
    }

    /// The ids of the requests on this stream.
    pub(crate) fn request_ids(&self) -> Vec<RequestId> {
        self.exchanges
            .iter()
            .map(|(e, _)| e.shared().id.clone())
            .collect()
    }

    /// True when a running handler asked to end its stream early (SSE polling).
    pub(crate) fn close_requested_any(&self) -> bool {
        self.exchanges
            .iter()
            .any(|(e, _)| !e.is_finished() && e.shared().close_requested().is_some())
    }

    /// Makes the stream resumable from here on; `earlier` (the events already produced)
    /// are emitted again first, now with ids. The response ends once `taken_over` is
    /// cancelled.
    pub(crate) fn make_resumable(
        &mut self,
        stored: StoredStream,
        earlier: Vec<PostEvent>,
        taken_over: CancellationToken,
    ) {
        self.stored = Some(stored);
        self.taken_over = Some(taken_over);
        self.requeued = earlier
            .into_iter()
            .filter(|e| e.kind != EventKind::Cancelled)
            .map(|e| Unsent {
                message: e.event.message,
                kind: e.kind,
            })
            .collect();
    }

    /// Hands a message out as an event: at once (with an id numbered here when the stream is
    /// resumable without a store), or, with an event store, once the store gave it its id
    /// (`None` now: the next poll hands it out).
    fn emit(&mut self, unsent: Unsent) -> Option<PostEvent> {
        let id = match &self.stored {
            Some(StoredStream {
                store: Some(store),
                session,
                stream,
                ..
            }) => {
                super::metrics::event_stored(unsent.message.len());
                let expected = self.local_seq + 1;
                let id = if self.detached {
                    // Nobody reads it live: storing it is the only delivery it gets.
                    let (store, session, stream, m) = (
                        store.clone(),
                        session.clone(),
                        *stream,
                        unsent.message.clone(),
                    );
                    Box::pin(async move {
                        patiently(|| store.append_expecting(&session, stream, m.clone(), expected))
                            .await
                    })
                } else {
                    store.append_expecting(session, *stream, unsent.message.clone(), expected)
                };
                self.appending = Some(Appending { id, unsent });
                return None;
            }
            Some(s) => {
                self.local_seq += 1;
                Some(EventId {
                    stream: s.stream,
                    seq: self.local_seq,
                })
            }
            None => None,
        };
        Some(unsent.into_event(id))
    }

    /// The next event.
    pub(crate) fn poll_post_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<PostEvent>> {
        loop {
            if let Some(appending) = &mut self.appending {
                // A store failure must not lose the live message: it goes out without an id
                // (its write may still have landed, its answer lost: a resume from an
                // earlier id may then carry it again; the next append does not reuse its
                // position, see `EventStore::append_expecting`).
                let id = std::task::ready!(appending.id.as_mut().poll(cx)).ok();
                if let Some(id) = id {
                    self.local_seq = id.seq;
                }
                if let Some(Appending { unsent, .. }) = self.appending.take() {
                    return Poll::Ready(Some(unsent.into_event(id)));
                }
            }
            let next = match self.requeued.pop_front() {
                Some(unsent) => unsent,
                None if self.done => return Poll::Ready(None),
                None => match self.poll_requests(cx) {
                    Poll::Ready(Produced::Event(ev)) => return Poll::Ready(Some(ev)),
                    Poll::Ready(Produced::Unsent(unsent)) => unsent,
                    Poll::Ready(Produced::AllFinished) => {
                        self.finish();
                        continue;
                    }
                    Poll::Pending => return Poll::Pending,
                },
            };
            if let Some(ev) = self.emit(next) {
                return Poll::Ready(Some(ev));
            }
        }
    }

    /// Polls the unfinished requests, from the cursor on, for the next thing one of them has
    /// to say.
    fn poll_requests(&mut self, cx: &mut Context<'_>) -> Poll<Produced> {
        let mut pending = false;
        let n = self.exchanges.len();
        for k in 0..n {
            let i = (self.cursor + k) % n;
            let (ex, trace) = &mut self.exchanges[i];
            if ex.is_finished() {
                continue;
            }
            let step = match trace {
                Some(t) => t.in_scope(|| ex.poll_step(cx)),
                None => ex.poll_step(cx),
            };
            match step {
                Poll::Ready(Some(Step::Message(message))) => {
                    // The same request may have more to say: start with it next time.
                    self.cursor = i;
                    return Poll::Ready(Produced::Unsent(Unsent {
                        message,
                        kind: EventKind::Message,
                    }));
                }
                Poll::Ready(Some(Step::Finished(outcome))) => {
                    self.cursor = i + 1;
                    if let Some(t) = trace.as_mut() {
                        t.finish(match &outcome {
                            Outcome::Error(e) => Some(e.code),
                            _ => None,
                        });
                    }
                    return Poll::Ready(answer(&ex.shared().id, outcome));
                }
                Poll::Ready(None) => {}
                Poll::Pending => pending = true,
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(Produced::AllFinished)
        }
    }

    /// Every request finished: the stream is complete (its store closes it).
    fn finish(&mut self) {
        self.done = true;
        if let Some(s) = &self.stored {
            s.live.finish(s.stream);
            if let Some(store) = &s.store {
                let (store, session, stream) = (store.clone(), s.session.clone(), s.stream);
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    // Followers on other instances end only once it is marked complete.
                    rt.spawn(
                        async move { patiently(|| store.close_stream(&session, stream)).await },
                    );
                }
            }
        }
    }

    /// The first `retry` a handler asked for when closing its stream (needs a store).
    fn close_request(&self) -> Option<Duration> {
        self.stored.as_ref()?;
        self.exchanges
            .iter()
            .filter(|(e, _)| !e.is_finished())
            .find_map(|(e, _)| e.shared().close_requested())
    }

    /// Moves the unfinished requests into a background task (legacy: a disconnect is not a
    /// cancellation); their later events go to the store and to a GET that resumes them.
    fn run_detached(&mut self) {
        let Some(guard) = self.session.take() else {
            return; // Modern: closing the stream cancels the requests; dropping does it.
        };
        let closed = guard.session().closed.clone();
        if closed.is_cancelled() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Past the session's room for detached requests, they end with their connection
        // (dropped here: cancelled), so a client cannot pile up work by hanging up.
        let unfinished = self
            .exchanges
            .iter()
            .filter(|(e, _)| !e.is_finished())
            .count();
        let Some(mut place) = guard.session().detach(unfinished) else {
            return;
        };
        if let Some(s) = &self.stored {
            s.live.release(s.stream);
        }
        let mut rest = PostEvents {
            exchanges: std::mem::take(&mut self.exchanges),
            stored: self.stored.take(),
            local_seq: self.local_seq,
            requeued: std::mem::take(&mut self.requeued),
            appending: self.appending.take(),
            session: Some(guard),
            done: false,
            detached: true,
            cursor: 0,
            taken_over: None,
        };
        rt.spawn(async move {
            let drive = async {
                while let Some(ev) = std::future::poll_fn(|cx| rest.poll_post_event(cx)).await {
                    if ev.kind.is_final() {
                        place.finished_one();
                    }
                    // Held for (or handed to) the GET that resumes the stream; a full buffer
                    // drops it (with an event store, the resume replays it from there).
                    let sink = rest.stored.as_ref().and_then(|s| s.live.sink(s.stream));
                    if let Some(q) = sink {
                        q.try_send(ev.event);
                    }
                }
            };
            tokio::select! {
                _ = drive => {}
                _ = closed.cancelled() => {}
            }
        });
    }
}

/// What a round over the requests of a POST produced.
enum Produced {
    /// A message or an answer, still to be handed out (it may need an id).
    Unsent(Unsent),
    /// An event to hand out as it is (a cancelled request's, never stored).
    Event(PostEvent),
    /// Every request has finished.
    AllFinished,
}

/// A finished request's last word.
fn answer(id: &RequestId, outcome: Outcome) -> Produced {
    match outcome {
        Outcome::Reply(message) => Produced::Unsent(Unsent {
            message,
            kind: EventKind::Reply,
        }),
        Outcome::Error(e) => Produced::Unsent(Unsent {
            message: encode_error(Some(id), &e),
            kind: EventKind::Error(e.code),
        }),
        // Never stored, never streamed: see `EventKind::Cancelled`.
        Outcome::Silent => Produced::Event(PostEvent {
            event: SseEvent {
                id: None,
                message: encode_error(Some(id), &cancelled_error()),
            },
            kind: EventKind::Cancelled,
        }),
    }
}

impl EventSource for PostEvents {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<SseEvent>> {
        loop {
            match self.poll_post_event(cx) {
                Poll::Ready(Some(e)) if e.kind == EventKind::Cancelled => continue,
                other => return other.map(|o| o.map(|e| e.event)),
            }
        }
    }

    fn close_requested(&self) -> Option<Duration> {
        self.close_request()
    }

    fn taken_over(&self) -> Option<CancellationToken> {
        // Ending the response drops this, which detaches the requests still running.
        self.taken_over.clone()
    }

    fn ends_on_shutdown(&self) -> bool {
        // Requests still running finish; a `subscriptions/listen` never does, so it ends.
        self.exchanges.iter().all(|(e, _)| {
            e.is_finished() || e.shared().method == crate::protocol::methods::SUBSCRIPTIONS_LISTEN
        })
    }
}

impl Drop for PostEvents {
    fn drop(&mut self) {
        if !self.done && !self.detached {
            self.run_detached();
        }
        if let Some(s) = &self.stored
            && !self.detached
        {
            // Never leave a slot claiming to be attached to a response that is gone.
            s.live.release(s.stream);
        }
    }
}
