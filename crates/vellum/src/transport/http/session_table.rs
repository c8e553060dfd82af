//! The HTTP side of legacy sessions: the table of live sessions, their activity (for the
//! idle timeout), committing a new session once its `initialize` succeeded, and the
//! messages other instances send about them.
//!
//! Expiry is one sweeper task for the whole table, not a timer per session. With a session
//! store the table is a cache: the store is the truth, the sweeper renews the store's TTL of
//! sessions in use here and drops local copies of sessions that ended elsewhere.
//!
//! Not here: the streams of a session (`live_streams.rs`), its hooks (`session_hooks.rs`),
//! and which session a request names (`session_routing.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::protocol::{CancelledParams, Message, decode_message};
use crate::server::Session;
use crate::store::{BusMessage, EventId, StoreError, StreamId};
use crate::sync::{lock, read, write};

use super::cluster::{Cluster, spawn};
use super::live_streams::LiveStreams;
pub(crate) use super::session_caps::Expiry;
use super::session_caps::{Expiring, Holder, SessionCaps, SessionSlot};
use super::session_hooks::{HttpHooks, Owner};
use super::sse_writer::SseEvent;

/// Mints a session id: 32 bytes from the OS CSPRNG, base64url (43 visible ASCII chars).
pub(crate) fn new_session_id() -> Result<Arc<str>, getrandom::Error> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw)?;
    Ok(Arc::from(URL_SAFE_NO_PAD.encode(raw)))
}

/// One live legacy session over HTTP.
pub(crate) struct HttpSession {
    pub(crate) id: Arc<str>,
    pub(crate) core: Arc<Session>,
    pub(crate) live: Arc<LiveStreams>,
    /// The authenticated principal that created the session, if any.
    pub(crate) owner: Option<Owner>,
    /// Whom the session counts against: its owner (the per-principal cap), else the client
    /// address (its key) that created it (the per-address cap).
    holder: Option<Holder>,
    /// A new session's reserved place under the caps, until it enters the table.
    slot: Mutex<Option<SessionSlot>>,
    /// Milliseconds since the table's epoch when the session was created.
    created: u64,
    /// Cancelled when the session ends here; every stream of the session watches it.
    pub(crate) closed: CancellationToken,
    active: AtomicU32,
    /// Milliseconds since the table's epoch at the last activity.
    last_active: AtomicU64,
    /// Milliseconds since the table's epoch when the store's TTL was last renewed.
    last_touch: AtomicU64,
    /// Requests still running whose POST connection went (they go on in the background, so
    /// a GET may resume their stream): they no longer count against the in-flight cap.
    detached: AtomicUsize,
    /// The most requests that may run detached (the in-flight cap); more are cancelled
    /// when their connection goes.
    max_detached: Option<usize>,
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

    /// The requests in flight that a live connection still waits for (what the in-flight
    /// cap counts: a request whose connection went no longer does).
    pub(crate) fn attached_inflight(&self) -> usize {
        self.core
            .inflight_count()
            .saturating_sub(self.detached.load(Ordering::Acquire))
    }

    /// Lets `n` requests run on after their connection went, within `max_detached`;
    /// `None` when there is no room (they are to be cancelled instead).
    pub(crate) fn detach(self: &Arc<Self>, n: usize) -> Option<DetachedGuard> {
        let room = |d: usize| {
            d.checked_add(n)
                .filter(|total| self.max_detached.is_none_or(|max| *total <= max))
        };
        self.detached
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, room)
            .ok()?;
        Some(DetachedGuard {
            session: self.clone(),
            remaining: n,
        })
    }

    pub(crate) fn event_id_of_standalone_head(&self) -> EventId {
        EventId {
            stream: StreamId::STANDALONE,
            seq: self.live.standalone_head(),
        }
    }
}

impl Expiring for HttpSession {
    fn expires_at(&self, expiry: &Expiry) -> Option<u64> {
        if self.active.load(Ordering::Acquire) != 0 {
            return None;
        }
        expiry.at(
            self.created,
            self.last_active.load(Ordering::Acquire),
            self.core.handshake_complete(),
        )
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

/// Requests of a session running on after their connection went; each one that finishes
/// (or the guard's drop, for the rest) gives its place back.
pub(crate) struct DetachedGuard {
    session: Arc<HttpSession>,
    remaining: usize,
}

impl DetachedGuard {
    /// One of the requests finished.
    pub(crate) fn finished_one(&mut self) {
        if self.remaining > 0 {
            self.remaining -= 1;
            self.session.detached.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for DetachedGuard {
    fn drop(&mut self) {
        if self.remaining > 0 {
            self.session
                .detached
                .fetch_sub(self.remaining, Ordering::AcqRel);
        }
    }
}

/// All live sessions of one handler (with a session store: the ones served here lately).
pub(crate) struct SessionTable {
    map: RwLock<HashMap<Arc<str>, Arc<HttpSession>>>,
    pub(crate) cluster: Arc<Cluster>,
    epoch: Instant,
    sweeper: AtomicBool,
    /// The in-flight cap per session, also the most requests one may run detached.
    max_in_flight: Option<usize>,
    /// Sessions per holder, the slots reserved, and when the soonest expire.
    pub(crate) caps: Arc<SessionCaps>,
}

impl SessionTable {
    pub(crate) fn new(cluster: Arc<Cluster>, max_in_flight: Option<usize>, expiry: Expiry) -> Self {
        SessionTable {
            map: RwLock::new(HashMap::new()),
            cluster,
            epoch: Instant::now(),
            sweeper: AtomicBool::new(false),
            max_in_flight,
            caps: Arc::new(SessionCaps::new(expiry)),
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

    /// Milliseconds since the table's epoch.
    pub(crate) fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Builds the HTTP session around a core session (not yet in the table); `slot`: a new
    /// session's reserved place, held until it enters the table.
    pub(crate) fn make(
        &self,
        id: Arc<str>,
        core: Arc<Session>,
        owner: Option<Owner>,
        address: Option<IpAddr>,
        slot: Option<SessionSlot>,
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
            holder: match &owner {
                Some(o) => Some(Holder::Owner(o.clone())),
                None => address.map(Holder::Address),
            },
            slot: Mutex::new(slot),
            owner,
            created: now,
            closed: CancellationToken::new(),
            active: AtomicU32::new(0),
            last_active: AtomicU64::new(now),
            last_touch: AtomicU64::new(now),
            detached: AtomicUsize::new(0),
            max_detached: self.max_in_flight,
        })
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
        super::metrics::session_opened();
        // Busy now (its `initialize` is being answered), idle soon: its expiry if it were.
        let expires = self.caps.expiry.at(
            session.created,
            session.last_active.load(Ordering::Acquire),
            session.core.handshake_complete(),
        );
        let weak: Weak<HttpSession> = Arc::downgrade(&session);
        self.caps
            .added(&session.id, session.holder.as_ref(), weak, expires);
        // Counted in the table now: its reserved place goes.
        drop(lock(&session.slot).take());
        session
    }

    /// Settles a new session once its `initialize` was answered: when it succeeded
    /// (`initialized`), the session is stored (shared sessions exist in the store before
    /// their id is handed out) and enters the table; otherwise it ends and whatever its
    /// stream stored is forgotten. `Ok(true)`: the session exists now.
    pub(crate) async fn commit(
        &self,
        session: &Arc<HttpSession>,
        initialized: bool,
    ) -> Result<bool, StoreError> {
        if initialized && let Some(mut record) = session.core.record() {
            record.owner = session.owner.clone();
            if let Err(e) = self.cluster.create(&session.id, &record).await {
                self.abandon(session);
                return Err(e);
            }
        }
        if !initialized {
            self.abandon(session);
            return Ok(false);
        }
        // A fresh random id cannot be in the table yet.
        self.insert(session.clone());
        Ok(true)
    }

    /// Ends a session that never entered the table.
    fn abandon(&self, session: &HttpSession) {
        drop(lock(&session.slot).take());
        session.core.close();
        drop(self.cluster.session_ended(&session.id));
    }

    /// Removes a session from this table and stops its work here.
    fn drop_local(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = self.write().remove(id)?;
        super::metrics::session_closed(self.now().saturating_sub(s.created));
        self.caps.removed(&s.id, s.holder.as_ref());
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
    pub(crate) fn on_bus(self: &Arc<Self>, message: BusMessage) {
        if message == BusMessage::Reconnected {
            return self.revalidate_all();
        }
        let Some(s) = self.get(message.session()) else {
            return;
        };
        match message {
            BusMessage::SessionClosed { .. } => self.evict(&s.id),
            other => self.apply_bus(&s, other),
        }
    }

    /// The bus was cut off and stands again: a session closed or changed elsewhere meanwhile
    /// was never announced here, so every session held here is read again from the store
    /// (one at a time: a burst of reads must not crowd out requests).
    fn revalidate_all(self: &Arc<Self>) {
        let Some(store) = self.cluster.sessions.clone() else {
            return;
        };
        let held: Vec<Arc<HttpSession>> = self.read().values().cloned().collect();
        let table = Arc::downgrade(self);
        spawn(async move {
            for s in held {
                match store.load(&s.id).await {
                    Ok(Some(record)) => s.core.apply(&record),
                    Ok(None) => match table.upgrade() {
                        Some(t) => t.evict(&s.id),
                        None => return,
                    },
                    // Unreachable again: the next reconnection reads them all once more.
                    Err(_) => return,
                }
            }
        });
    }

    /// Acts on a bus message about a session served here.
    fn apply_bus(&self, s: &Arc<HttpSession>, message: BusMessage) {
        match message {
            BusMessage::ClientResponse { message, .. } => {
                if let Ok(Message::Response(r)) = decode_message(&Bytes::from(message))
                    && let Some(id) = &r.id
                {
                    s.core.resolve(id, r.outcome);
                }
            }
            BusMessage::Cancel { message, .. } => {
                if let Ok(Message::Notification(n)) = decode_message(&Bytes::from(message))
                    && let Some(p) = n.params.and_then(|p| p.parse::<CancelledParams>().ok())
                {
                    s.core.cancel_inflight(&p.request_id);
                }
            }
            BusMessage::Standalone { .. } => {
                let id = message.event_id();
                if let (Some(tx), Some(m)) =
                    (s.live.sink(StreamId::STANDALONE), message.message_bytes())
                {
                    if let Some(id) = id {
                        s.live.advance_standalone(id.seq);
                    }
                    let _ = tx.try_send(SseEvent { id, message: m });
                }
            }
            BusMessage::SessionChanged { session } => {
                let (Some(store), core) = (self.cluster.sessions.clone(), s.core.clone()) else {
                    return;
                };
                spawn(async move {
                    if let Ok(Some(record)) = store.load(&session).await {
                        core.apply(&record);
                    }
                });
            }
            // Closing is `on_bus`'s; tasks are the task store's; server-wide announcements
            // (list changes, resource updates) are the server's own.
            _ => {}
        }
    }

    /// Requests still running here after their connection went (a client that dropped its
    /// stream to resume it elsewhere): shutdown gives them the request grace too.
    pub(crate) fn detached(&self) -> usize {
        self.read()
            .values()
            .map(|s| s.detached.load(Ordering::Acquire))
            .sum()
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
        if s.core.is_closed() {
            // The server ended it (a gateway whose upstream went).
            return Some(true);
        }
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
        let mut soonest = None::<u64>;
        for s in self.read().values() {
            match self.verdict(s, expiry, now) {
                Some(end) => ending.push((s.id.clone(), end)),
                None => {
                    if let Some(at) = s.expires_at(&expiry) {
                        soonest = Some(soonest.map_or(at, |x| x.min(at)));
                    }
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
        self.caps.swept(soonest);
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
