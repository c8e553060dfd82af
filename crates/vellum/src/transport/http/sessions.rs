//! The HTTP side of legacy sessions: the table of live sessions, their activity (for the
//! idle timeout), and the streams of each that a client can resume or attach to.
//!
//! Idle expiry is one sweeper task for the whole table, not a timer per session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::server::session::{Session, StandaloneSink};
use crate::store::{EventId, EventStore, StreamId};

use super::sse::SseEvent;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Critical sections are single map operations: a poisoned map is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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
    /// Where a resumed GET receives live events.
    pub(crate) sink: Option<mpsc::Sender<SseEvent>>,
}

/// The attachable streams of one session.
#[derive(Default)]
pub(crate) struct LiveStreams {
    slots: Mutex<HashMap<StreamId, LiveSlot>>,
    /// The newest event id of the standalone stream (for a new GET's priming event).
    standalone_head: AtomicU64,
}

/// How many live events may wait for a slow GET reader before the sender waits.
const LIVE_BUFFER: usize = 64;

impl LiveStreams {
    /// Registers a POST stream as attached to its response.
    pub(crate) fn open(&self, stream: StreamId) {
        lock(&self.slots).insert(
            stream,
            LiveSlot {
                attached: true,
                sink: None,
            },
        );
    }

    /// Forgets a finished POST stream (ending a GET that was reading it).
    pub(crate) fn finish(&self, stream: StreamId) {
        lock(&self.slots).remove(&stream);
    }

    /// The POST response went away: the stream may now be resumed by a GET.
    pub(crate) fn release(&self, stream: StreamId) {
        if let Some(s) = lock(&self.slots).get_mut(&stream) {
            s.attached = false;
            s.sink = None;
        }
    }

    /// Attaches a GET. `Ok(None)` when the stream is not live (finished or unknown: replay
    /// only); `Err` when another connection already reads it.
    pub(crate) fn attach(&self, stream: StreamId) -> Result<Option<mpsc::Receiver<SseEvent>>, ()> {
        let mut slots = lock(&self.slots);
        let slot = match slots.get_mut(&stream) {
            Some(s) => s,
            None if stream == StreamId::STANDALONE => slots.entry(stream).or_default(),
            None => return Ok(None),
        };
        if slot.attached {
            return Err(());
        }
        let (tx, rx) = mpsc::channel(LIVE_BUFFER);
        slot.attached = true;
        slot.sink = Some(tx);
        Ok(Some(rx))
    }

    /// The sender of the GET reading `stream`, if one is attached.
    pub(crate) fn sink(&self, stream: StreamId) -> Option<mpsc::Sender<SseEvent>> {
        lock(&self.slots).get(&stream).and_then(|s| s.sink.clone())
    }

    pub(crate) fn standalone_head(&self) -> u64 {
        self.standalone_head.load(Ordering::Acquire)
    }
}

/// Detaches a GET from its stream when the GET's response ends.
pub(crate) struct Attachment {
    pub(crate) live: Arc<LiveStreams>,
    pub(crate) stream: StreamId,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let mut slots = lock(&self.live.slots);
        if let Some(s) = slots.get_mut(&self.stream) {
            s.attached = false;
            s.sink = None;
        }
    }
}

/// Delivers a session's unsolicited messages to its standalone GET stream, storing them
/// first when there is an event store.
struct Standalone {
    session_id: Arc<str>,
    live: Arc<LiveStreams>,
    store: Option<Arc<dyn EventStore>>,
}

impl StandaloneSink for Standalone {
    fn send(&self, message: Bytes) -> BoxFuture<'static, Result<(), Error>> {
        let live = self.live.clone();
        let stored = self
            .store
            .as_ref()
            .map(|s| s.append(&self.session_id, StreamId::STANDALONE, message.clone()));
        Box::pin(async move {
            let id = match stored {
                Some(f) => {
                    let id = f.await.map_err(|e| Error::Transport(e.to_string()))?;
                    live.standalone_head.fetch_max(id.seq, Ordering::AcqRel);
                    Some(id)
                }
                None => None,
            };
            if let Some(tx) = live.sink(StreamId::STANDALONE) {
                // A full buffer means the reader stalls; with a store it can resume later.
                let _ = tx.try_send(SseEvent { id, message });
            }
            Ok(())
        })
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
    /// Cancelled when the session ends; every stream of the session watches it.
    pub(crate) closed: CancellationToken,
    active: AtomicU32,
    /// Milliseconds since the table's epoch at the last activity.
    last_active: AtomicU64,
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

/// All live sessions of one handler.
pub(crate) struct SessionTable {
    map: RwLock<HashMap<Arc<str>, Arc<HttpSession>>>,
    /// Live sessions per owner (for the per-principal cap).
    per_owner: Mutex<HashMap<Owner, usize>>,
    epoch: Instant,
    sweeper: AtomicBool,
}

/// When the sweeper closes sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expiry {
    /// Idle longer than this (no request, no open stream).
    pub(crate) idle: Option<Duration>,
    /// No `notifications/initialized` this long after creation.
    pub(crate) handshake: Option<Duration>,
}

impl SessionTable {
    pub(crate) fn new() -> Self {
        SessionTable {
            map: RwLock::new(HashMap::new()),
            per_owner: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
            sweeper: AtomicBool::new(false),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Arc<str>, Arc<HttpSession>>> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.read().get(id).cloned()
    }

    /// Builds the HTTP session around a core session (not yet in the table).
    pub(crate) fn make(
        &self,
        id: Arc<str>,
        core: Arc<Session>,
        owner: Option<Owner>,
        store: Option<Arc<dyn EventStore>>,
    ) -> Arc<HttpSession> {
        let live = Arc::new(LiveStreams::default());
        core.set_standalone(Arc::new(Standalone {
            session_id: id.clone(),
            live: live.clone(),
            store,
        }));
        let now = self.epoch.elapsed().as_millis() as u64;
        Arc::new(HttpSession {
            id,
            core,
            live,
            owner,
            created: now,
            closed: CancellationToken::new(),
            active: AtomicU32::new(0),
            last_active: AtomicU64::new(now),
        })
    }

    /// How many live sessions `owner` holds.
    pub(crate) fn owned_by(&self, owner: &Owner) -> usize {
        lock(&self.per_owner).get(owner).copied().unwrap_or(0)
    }

    pub(crate) fn insert(&self, session: Arc<HttpSession>) {
        if let Some(o) = &session.owner {
            *lock(&self.per_owner).entry(o.clone()).or_default() += 1;
        }
        self.write().insert(session.id.clone(), session);
    }

    fn removed(&self, s: &HttpSession, store: Option<&Arc<dyn EventStore>>) {
        if let Some(o) = &s.owner {
            let mut per = lock(&self.per_owner);
            if let Some(n) = per.get_mut(o) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    per.remove(o);
                }
            }
        }
        close_session(s, store);
    }

    /// Removes and closes a session; false if it was not there.
    pub(crate) fn close(&self, id: &str, store: Option<&Arc<dyn EventStore>>) -> bool {
        let Some(s) = self.write().remove(id) else {
            return false;
        };
        self.removed(&s, store);
        true
    }

    /// Closes every session (shutdown).
    pub(crate) fn close_all(&self, store: Option<&Arc<dyn EventStore>>) {
        let all: Vec<_> = self.write().drain().map(|(_, s)| s).collect();
        for s in all {
            self.removed(&s, store);
        }
    }

    /// Starts the sweeper once (needs a runtime; the handler calls it from a request).
    pub(crate) fn start_sweeper(
        self: &Arc<Self>,
        expiry: Expiry,
        store: Option<Arc<dyn EventStore>>,
    ) {
        let shortest = match (expiry.idle, expiry.handshake) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
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
                table.sweep(expiry, store.as_ref());
            }
        });
    }

    fn expired(&self, s: &HttpSession, expiry: Expiry, now: u64) -> bool {
        if s.active.load(Ordering::Acquire) != 0 {
            return false;
        }
        let idle = expiry.idle.is_some_and(|t| {
            now.saturating_sub(s.last_active.load(Ordering::Acquire)) >= t.as_millis() as u64
        });
        let abandoned = expiry.handshake.is_some_and(|t| {
            !s.core.handshake_complete() && now.saturating_sub(s.created) >= t.as_millis() as u64
        });
        idle || abandoned
    }

    fn sweep(&self, expiry: Expiry, store: Option<&Arc<dyn EventStore>>) {
        let now = self.epoch.elapsed().as_millis() as u64;
        let candidates: Vec<Arc<str>> = self
            .read()
            .values()
            .filter(|s| self.expired(s, expiry, now))
            .map(|s| s.id.clone())
            .collect();
        for id in candidates {
            // Re-check under the write lock: a request may have started meanwhile.
            let removed = {
                let mut map = self.write();
                match map.get(&id) {
                    Some(s) if self.expired(s, expiry, now) => map.remove(&id),
                    _ => None,
                }
            };
            if let Some(s) = removed {
                self.removed(&s, store);
            }
        }
    }
}

fn close_session(s: &HttpSession, store: Option<&Arc<dyn EventStore>>) {
    s.core.close();
    s.closed.cancel();
    if let Some(store) = store {
        let f = store.session_closed(&s.id);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(f);
        }
    }
}
