//! The HTTP side of legacy sessions: the table of live sessions, their activity (for the
//! idle timeout), and the streams of each that a client can resume or attach to.
//!
//! Expiry is one sweeper task for the whole table, not a timer per session. With a session
//! store the table is a cache: the store is the truth, the sweeper renews the store's TTL of
//! sessions in use here and drops local copies of sessions that ended elsewhere.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::server::outbox::Outbox;
use crate::server::session::Session;
use crate::store::{BusMessage, EventId, StreamId};
use crate::sync::{lock, read, write};

use super::cluster::{Cluster, HttpHooks};
use super::sse::SseEvent;

/// Mints a session id: 32 bytes from the OS CSPRNG, base64url (43 visible ASCII chars).
pub(crate) fn new_session_id() -> Result<Arc<str>, getrandom::Error> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw)?;
    Ok(Arc::from(URL_SAFE_NO_PAD.encode(raw)))
}

/// A stream a GET can attach to: the standalone stream, or a POST stream whose response
/// was cut short while its requests still run.
#[derive(Default)]
pub(crate) struct LiveSlot {
    /// A connection is reading this stream now.
    pub(crate) attached: bool,
    /// When a GET reads it: that reader's number and how to make it let go.
    reader: Option<(u64, CancellationToken)>,
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

    /// Registers a POST stream as attached to its response.
    pub(crate) fn open(&self, stream: StreamId) {
        lock(&self.slots).map.insert(
            stream,
            LiveSlot {
                attached: true,
                reader: None,
                sink: None,
                finished: false,
            },
        );
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
            s.sink.get_or_insert_with(LiveQueue::default);
        }
        self.let_go.notify_waiters();
    }

    /// Attaches a GET. `Ok(None)` when the stream is not live here (finished or unknown:
    /// replay only); `Err` when another connection already reads it. With `take_over` (a
    /// resume: the client lost the connection that reads it, though the server may not know
    /// yet) a GET reading the stream is replaced; a POST response still writing it is not.
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
            match (&slot.reader, take_over) {
                (Some((_, old)), true) => old.cancel(),
                _ => return Err(StreamBusy),
            }
        }
        let number = self.readers.fetch_add(1, Ordering::AcqRel) + 1;
        let superseded = CancellationToken::new();
        slot.attached = true;
        slot.reader = Some((number, superseded.clone()));
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

/// Who owns a session: the `(issuer, subject)` of the principal that created it.
pub(crate) type Owner = (String, String);

/// One live legacy session over HTTP.
pub(crate) struct HttpSession {
    pub(crate) id: Arc<str>,
    pub(crate) core: Arc<Session>,
    pub(crate) live: Arc<LiveStreams>,
    /// The authenticated principal that created the session, if any.
    pub(crate) owner: Option<Owner>,
    /// Milliseconds since the table's epoch when the session was created.
    created: u64,
    /// Cancelled when the session ends here; every stream of the session watches it.
    pub(crate) closed: CancellationToken,
    active: AtomicU32,
    /// Milliseconds since the table's epoch at the last activity.
    last_active: AtomicU64,
    /// Milliseconds since the table's epoch when the store's TTL was last renewed.
    last_touch: AtomicU64,
}

impl HttpSession {
    /// Marks the session busy until the guard drops.
    pub(crate) fn activity(self: &Arc<Self>, table: &SessionTable) -> ActivityGuard {
        self.active.fetch_add(1, Ordering::AcqRel);
        ActivityGuard {
            session: self.clone(),
            epoch: table.epoch,
        }
    }

    pub(crate) fn event_id_of_standalone_head(&self) -> EventId {
        EventId {
            stream: StreamId::STANDALONE,
            seq: self.live.standalone_head(),
        }
    }
}

/// Keeps a session "active" (not idle) while held.
pub(crate) struct ActivityGuard {
    session: Arc<HttpSession>,
    epoch: Instant,
}

impl ActivityGuard {
    pub(crate) fn session(&self) -> &Arc<HttpSession> {
        &self.session
    }
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.session.last_active.store(now, Ordering::Release);
        self.session.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// When the sweeper closes sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expiry {
    /// Idle longer than this (no request, no open stream).
    pub(crate) idle: Option<Duration>,
    /// No `notifications/initialized` this long after creation.
    pub(crate) handshake: Option<Duration>,
}

/// All live sessions of one handler (with a session store: the ones served here lately).
pub(crate) struct SessionTable {
    map: RwLock<HashMap<Arc<str>, Arc<HttpSession>>>,
    /// Live sessions per owner (for the per-principal cap).
    per_owner: Mutex<HashMap<Owner, usize>>,
    pub(crate) cluster: Arc<Cluster>,
    epoch: Instant,
    sweeper: AtomicBool,
}

impl SessionTable {
    pub(crate) fn new(cluster: Arc<Cluster>) -> Self {
        SessionTable {
            map: RwLock::new(HashMap::new()),
            per_owner: Mutex::new(HashMap::new()),
            cluster,
            epoch: Instant::now(),
            sweeper: AtomicBool::new(false),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        read(&self.map)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        write(&self.map)
    }

    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.read().get(id).cloned()
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Builds the HTTP session around a core session (not yet in the table).
    pub(crate) fn make(
        &self,
        id: Arc<str>,
        core: Arc<Session>,
        owner: Option<Owner>,
    ) -> Arc<HttpSession> {
        let live = Arc::new(LiveStreams::default());
        core.set_hooks(Arc::new(HttpHooks::new(
            id.clone(),
            live.clone(),
            owner.clone(),
            self.cluster.clone(),
        )));
        let now = self.now();
        Arc::new(HttpSession {
            id,
            core,
            live,
            owner,
            created: now,
            closed: CancellationToken::new(),
            active: AtomicU32::new(0),
            last_active: AtomicU64::new(now),
            last_touch: AtomicU64::new(now),
        })
    }

    /// How many live sessions `owner` holds here.
    pub(crate) fn owned_by(&self, owner: &Owner) -> usize {
        lock(&self.per_owner).get(owner).copied().unwrap_or(0)
    }

    /// Adds a session; if another copy of the same session got in first (two requests
    /// restoring it at once), keeps that one and returns it.
    pub(crate) fn insert(&self, session: Arc<HttpSession>) -> Arc<HttpSession> {
        {
            let mut map = self.write();
            if let Some(existing) = map.get(&session.id) {
                let existing = existing.clone();
                drop(map);
                session.core.close();
                return existing;
            }
            map.insert(session.id.clone(), session.clone());
        }
        if let Some(o) = &session.owner {
            *lock(&self.per_owner).entry(o.clone()).or_default() += 1;
        }
        session
    }

    /// Removes a session from this table and stops its work here.
    fn drop_local(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = self.write().remove(id)?;
        if let Some(o) = &s.owner {
            let mut per = lock(&self.per_owner);
            if let Some(n) = per.get_mut(o) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    per.remove(o);
                }
            }
        }
        s.core.close();
        s.closed.cancel();
        Some(s)
    }

    /// Ends a session for good (DELETE, expiry): here, in the stores, and on every other
    /// instance. The handle finishes once the stores and the other instances were told.
    pub(crate) fn close(&self, id: &str) -> tokio::task::JoinHandle<()> {
        self.drop_local(id);
        self.cluster.session_ended(id)
    }

    /// Forgets the local copy only (the session lives on in the store and elsewhere).
    pub(crate) fn evict(&self, id: &str) {
        self.drop_local(id);
    }

    /// A message from another instance about one of our sessions.
    pub(crate) fn on_bus(&self, message: BusMessage) {
        let Some(s) = self.get(message.session()) else {
            return;
        };
        match message {
            BusMessage::SessionClosed { .. } => self.evict(&s.id),
            other => self.cluster.apply_bus(&s, other),
        }
    }

    /// Shutdown: with a session store sessions outlive this instance, so only local copies
    /// go; without one, every session ends.
    pub(crate) fn close_all(&self) {
        let ids: Vec<Arc<str>> = self.read().keys().cloned().collect();
        for id in ids {
            if self.cluster.sessions.is_some() {
                self.evict(&id);
            } else {
                drop(self.close(&id));
            }
        }
    }

    /// Starts the sweeper once (needs a runtime; the handler calls it from a request).
    pub(crate) fn start_sweeper(self: &Arc<Self>, expiry: Expiry) {
        let ttl = self.cluster.sessions.as_ref().map(|_| self.cluster.ttl);
        let shortest = [expiry.idle, expiry.handshake, ttl]
            .into_iter()
            .flatten()
            .min();
        let Some(shortest) = shortest else { return };
        if self.sweeper.swap(true, Ordering::AcqRel) {
            return;
        }
        let table: Weak<SessionTable> = Arc::downgrade(self);
        let period = (shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(table) = table.upgrade() else { return };
                table.sweep(expiry).await;
            }
        });
    }

    /// Why a session should go: `Some(true)` ends it, `Some(false)` only drops the copy.
    fn verdict(&self, s: &HttpSession, expiry: Expiry, now: u64) -> Option<bool> {
        if s.active.load(Ordering::Acquire) != 0 {
            return None;
        }
        let abandoned = expiry.handshake.is_some_and(|t| {
            !s.core.handshake_complete() && now.saturating_sub(s.created) >= t.as_millis() as u64
        });
        if abandoned {
            return Some(true);
        }
        let idle = expiry.idle.is_some_and(|t| {
            now.saturating_sub(s.last_active.load(Ordering::Acquire)) >= t.as_millis() as u64
        });
        // With a store, the store's TTL ends idle sessions everywhere; here the copy goes.
        idle.then_some(self.cluster.sessions.is_none())
    }

    async fn sweep(&self, expiry: Expiry) {
        let now = self.now();
        let mut ending = Vec::new();
        let mut touching = Vec::new();
        for s in self.read().values() {
            match self.verdict(s, expiry, now) {
                Some(end) => ending.push((s.id.clone(), end)),
                None => {
                    // Renew the store's TTL of sessions in use here since the last renewal.
                    let busy = s.active.load(Ordering::Acquire) > 0;
                    let used = s.last_active.load(Ordering::Acquire)
                        > s.last_touch.load(Ordering::Acquire);
                    if self.cluster.sessions.is_some() && (busy || used) {
                        touching.push(s.clone());
                    }
                }
            }
        }
        for (id, end) in ending {
            // Re-check under the write lock: a request may have started meanwhile.
            let still = self
                .get(&id)
                .is_some_and(|s| self.verdict(&s, expiry, self.now()).is_some());
            if still {
                if end {
                    drop(self.close(&id));
                } else {
                    self.evict(&id);
                }
            }
        }
        for s in touching {
            s.last_touch.store(now, Ordering::Release);
            if !self.cluster.touch(&s.id).await {
                // Gone from the store: it ended or expired elsewhere.
                self.evict(&s.id);
            }
        }
    }
}
