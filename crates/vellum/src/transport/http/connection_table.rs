//! The connections [`serve`](super::serve) has open: each one's [`ConnectionState`] (requests
//! in progress, when it last went idle, answer bytes produced but not yet written, the signal
//! that closes it) and the [`ConnectionTable`] of them all, which makes room at the connection
//! cap (closing the connections idle the longest) and at the answer budget (closing the
//! connections whose peers stalled the longest).
//!
//! The request path touches only its own connection's atomics: a request's start and end are
//! one atomic add and one compare-and-swap; the table's lock is taken when a connection opens
//! or closes, and when room has to be made.
//!
//! Not here: what a connection's task does with its state (`connection_task.rs`), the
//! accounting of answer bytes (`answer_budget.rs`), the limits themselves
//! (`connection_limits.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use futures_util::task::AtomicWaker;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::sync::lock;

use super::body_reader::BodyExemption;
use super::connection_limits::ConnectionLimits;

/// The bits of [`ConnectionState::requests`] that count requests in progress; the bits
/// above them hold when the last one ended (milliseconds since the table's epoch).
const BUSY_BITS: u32 = 24;
const BUSY_MASK: u64 = (1 << BUSY_BITS) - 1;
/// The end stamp of a connection that has not finished a request yet.
const NEVER: u64 = u64::MAX >> BUSY_BITS;

/// A connection whose peer has taken none of its waiting bytes for this long may be closed
/// to make room in the answer budget.
const STALLED_MS: u64 = 1000;

/// The table scans for stalled connections at most this often (a flood of answers at the
/// budget must not turn into a scan per answer).
const RECLAIM_EVERY_MS: u64 = 10;

/// Signals to a connection's task.
pub(super) mod signal {
    /// Close now: chosen to make room, or stalled.
    pub(in super::super) const CLOSE: u8 = 1;
    /// The server shuts down: finish gracefully.
    pub(in super::super) const SHUTDOWN: u8 = 2;
    /// Answer bytes began waiting: the write timeout starts.
    pub(in super::super) const CHARGED: u8 = 4;
}

/// Where a connection stands, for its task and for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Activity {
    /// A request is being read or answered, or a stream is open.
    Busy,
    /// Nothing in progress since `since_ms`; `served` once a request has ended.
    Idle { since_ms: u64, served: bool },
}

/// The connections of one accept loop.
pub(super) struct ConnectionTable {
    epoch: Instant,
    pub(super) limits: ConnectionLimits,
    /// Where refusals and closes are logged (the handler's logger).
    pub(super) logger: Option<tracing::Dispatch>,
    max_connections: usize,
    open: Mutex<BTreeMap<u64, Arc<ConnectionState>>>,
    /// Open and not chosen to close.
    live: AtomicUsize,
    /// Open, those chosen to close included (their descriptors are still held).
    held: AtomicUsize,
    next_id: AtomicU64,
    /// Answer bytes produced but not yet written, across connections.
    unsent: AtomicUsize,
    /// When the table last looked for stalled connections.
    last_reclaim_ms: AtomicU64,
    /// A connection closed.
    closed: Notify,
}

impl ConnectionTable {
    /// The table of an accept loop serving with `limits`, logging to `logger`.
    pub(super) fn new(limits: ConnectionLimits, logger: Option<tracing::Dispatch>) -> Arc<Self> {
        Arc::new(ConnectionTable {
            epoch: Instant::now(),
            logger,
            max_connections: limits.resolved_max_connections(),
            limits,
            open: Mutex::new(BTreeMap::new()),
            live: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
            unsent: AtomicUsize::new(0),
            last_reclaim_ms: AtomicU64::new(0),
            closed: Notify::new(),
        })
    }

    /// Milliseconds since the table began (the connections' clock).
    pub(super) fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(NEVER - 1)
    }

    /// The instant `ms` on the connections' clock (a year away at most: "never").
    pub(super) fn instant(&self, ms: u64) -> Instant {
        const YEAR_MS: u64 = 365 * 24 * 3600 * 1000;
        let ms = ms.min(self.now_ms().saturating_add(YEAR_MS));
        self.epoch + std::time::Duration::from_millis(ms)
    }

    /// Open connections (those being closed included).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.open).len()
    }

    /// Answer bytes waiting to be written, across connections.
    #[cfg(test)]
    pub(super) fn unsent(&self) -> usize {
        self.unsent.load(Ordering::Relaxed)
    }

    /// Takes a just-accepted connection in: at the cap, the connections idle the longest
    /// are closed to make room; `None` when none is idle (the caller closes the new one).
    pub(super) fn open(self: &Arc<Self>) -> Option<Arc<ConnectionState>> {
        if self.live.load(Ordering::Relaxed) >= self.max_connections && self.close_idle() == 0 {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnectionState {
            id,
            table: self.clone(),
            accepted_ms: self.now_ms(),
            requests: AtomicU64::new(NEVER << BUSY_BITS),
            unsent: AtomicUsize::new(0),
            progress_ms: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            signals: AtomicU8::new(0),
            task: AtomicWaker::new(),
            room: Mutex::new(Vec::new()),
            waiting: AtomicBool::new(false),
            exemption: OnceLock::new(),
        });
        lock(&self.open).insert(id, state.clone());
        self.live.fetch_add(1, Ordering::Relaxed);
        self.held.fetch_add(1, Ordering::Relaxed);
        Some(state)
    }

    /// Forgets a connection whose task ended.
    fn forget(&self, state: &ConnectionState) {
        lock(&self.open).remove(&state.id);
        self.held.fetch_sub(1, Ordering::Relaxed);
        if !state.closing.swap(true, Ordering::Relaxed) {
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
        self.closed.notify_waiters();
    }

    /// Whether the connections chosen to close but not closed yet hold so many descriptors
    /// that accepting should wait for them (an eighth of the cap past it).
    pub(super) fn crowded(&self) -> bool {
        self.held.load(Ordering::Relaxed) > self.max_connections + self.max_connections / 8
    }

    /// Closes the connections idle the longest, a batch at a time (a connection that never
    /// sent a request is idle since it was accepted); how many were chosen.
    pub(super) fn close_idle(&self) -> usize {
        let batch = (self.max_connections / 64).max(1);
        let open = lock(&self.open);
        let mut idle: Vec<(u64, &Arc<ConnectionState>)> = open
            .values()
            .filter(|c| !c.closing.load(Ordering::Relaxed))
            .filter_map(|c| match c.activity() {
                Activity::Idle { since_ms, .. } => Some((since_ms, c)),
                Activity::Busy => None,
            })
            .collect();
        if idle.len() > batch {
            idle.select_nth_unstable_by_key(batch - 1, |(since, _)| *since);
            idle.truncate(batch);
        }
        idle.into_iter().filter(|(_, c)| c.close()).count()
    }

    /// Makes room for `needed` more answer bytes past the budget by closing connections
    /// whose peers have taken nothing for [`STALLED_MS`] or more, the longest stalled
    /// first (counting the bytes of connections already closing as freed).
    fn reclaim(&self, needed: usize) {
        let now = self.now_ms();
        let last = self.last_reclaim_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) < RECLAIM_EVERY_MS && last != 0 {
            return;
        }
        self.last_reclaim_ms.store(now.max(1), Ordering::Relaxed);
        let open = lock(&self.open);
        let mut freed = 0usize;
        let mut stalled = Vec::new();
        for c in open.values() {
            let unsent = c.unsent.load(Ordering::Relaxed);
            if unsent == 0 {
                continue;
            }
            if c.closing.load(Ordering::Relaxed) {
                freed = freed.saturating_add(unsent);
                continue;
            }
            let progress = c.progress_ms.load(Ordering::Relaxed);
            if now.saturating_sub(progress) >= STALLED_MS {
                stalled.push((progress, unsent, c));
            }
        }
        stalled.sort_unstable_by_key(|(progress, _, _)| *progress);
        for (_, unsent, c) in stalled {
            if freed >= needed {
                break;
            }
            if c.close() {
                freed = freed.saturating_add(unsent);
            }
        }
    }

    /// Signals every connection to finish gracefully (the server shuts down).
    pub(super) fn shut_down(&self) {
        for c in lock(&self.open).values() {
            c.raise(signal::SHUTDOWN);
        }
    }

    /// Waits until a connection closes, or `limit` passes.
    pub(super) async fn some_closed(&self, limit: std::time::Duration) {
        let _ = tokio::time::timeout(limit, self.closed.notified()).await;
    }

    /// Waits until every connection has closed.
    pub(super) async fn all_closed(&self) {
        loop {
            let closed = self.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            if lock(&self.open).is_empty() {
                return;
            }
            closed.await;
        }
    }
}

/// One open connection.
pub(super) struct ConnectionState {
    id: u64,
    table: Arc<ConnectionTable>,
    accepted_ms: u64,
    /// Requests in progress (the low [`BUSY_BITS`]) and when the last one ended (above).
    requests: AtomicU64,
    /// Answer bytes produced but not yet written.
    unsent: AtomicUsize,
    /// When the peer last took waiting bytes (or bytes began to wait).
    progress_ms: AtomicU64,
    /// Chosen to close (no longer counted as live).
    closing: AtomicBool,
    signals: AtomicU8,
    /// The connection's task, woken by signals.
    task: AtomicWaker,
    /// Requests and streams waiting for room in the answer budget.
    room: Mutex<Vec<Waker>>,
    waiting: AtomicBool,
    /// The one body of this connection the body budget does not count (HTTP/2 only: an
    /// HTTP/1.1 connection carries one body at a time anyway).
    exemption: OnceLock<Arc<BodyExemption>>,
}

impl ConnectionState {
    /// The table this connection belongs to.
    pub(super) fn table(&self) -> &ConnectionTable {
        &self.table
    }

    /// When it was accepted (ms on the table's clock).
    pub(super) fn accepted_ms(&self) -> u64 {
        self.accepted_ms
    }

    /// A request's head arrived: it is in progress until the returned guard is dropped
    /// (with the response body, or the response future that never gave one).
    pub(super) fn begin(self: &Arc<Self>) -> RequestGuard {
        self.requests.fetch_add(1, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    fn end(&self) {
        let now = self.table.now_ms();
        let mut v = self.requests.load(Ordering::Relaxed);
        loop {
            let busy = v & BUSY_MASK;
            let next = if busy <= 1 { now << BUSY_BITS } else { v - 1 };
            match self
                .requests
                .compare_exchange_weak(v, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => v = seen,
            }
        }
    }

    /// Whether anything is in progress, and since when nothing is.
    pub(super) fn activity(&self) -> Activity {
        let v = self.requests.load(Ordering::Acquire);
        if v & BUSY_MASK > 0 {
            return Activity::Busy;
        }
        match v >> BUSY_BITS {
            NEVER => Activity::Idle {
                since_ms: self.accepted_ms,
                served: false,
            },
            ended => Activity::Idle {
                since_ms: ended,
                served: true,
            },
        }
    }

    /// The shared body exemption of this (HTTP/2) connection.
    pub(super) fn body_exemption(&self) -> Arc<BodyExemption> {
        self.exemption.get_or_init(BodyExemption::new).clone()
    }

    /// Chooses this connection to close; false if it already was.
    fn close(&self) -> bool {
        if self.closing.swap(true, Ordering::Relaxed) {
            return false;
        }
        self.table.live.fetch_sub(1, Ordering::Relaxed);
        self.raise(signal::CLOSE);
        true
    }

    /// Closes this connection at once (its peer stalled).
    pub(super) fn close_now(&self) {
        self.close();
    }

    fn raise(&self, s: u8) {
        self.signals.fetch_or(s, Ordering::Release);
        self.task.wake();
    }

    /// The signals raised since the last call (the task's waker registered first, so a
    /// signal raised meanwhile wakes it).
    pub(super) fn take_signals(&self, cx: &mut Context<'_>) -> u8 {
        self.task.register(cx.waker());
        self.signals.swap(0, Ordering::Acquire)
    }

    /// Answer bytes waiting to be written, and when the peer last took some.
    pub(super) fn unsent(&self) -> (usize, u64) {
        (
            self.unsent.load(Ordering::Relaxed),
            self.progress_ms.load(Ordering::Relaxed),
        )
    }

    /// Whether new work on this connection must wait for its peer to read: past its own
    /// budget, or holding bytes while the total is past its budget.
    pub(super) fn over_budget(&self) -> bool {
        let mine = self.unsent.load(Ordering::Relaxed);
        if mine == 0 {
            return false;
        }
        let limits = &self.table.limits;
        limits
            .max_unsent_bytes_per_connection
            .is_some_and(|m| mine >= m)
            || limits
                .max_unsent_bytes
                .is_some_and(|m| self.table.unsent.load(Ordering::Relaxed) >= m)
    }

    /// Ready when this connection is within its budget; else the waker is kept until the
    /// peer reads (or the connection closes).
    pub(super) fn poll_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.over_budget() {
            return Poll::Ready(());
        }
        {
            let mut room = lock(&self.room);
            if !room.iter().any(|w| w.will_wake(cx.waker())) {
                room.push(cx.waker().clone());
            }
            self.waiting.store(true, Ordering::SeqCst);
        }
        // Bytes freed between the check and the registration would wake nobody.
        if self.over_budget() {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// Counts `n` answer bytes as waiting to be written.
    pub(super) fn charge(&self, n: usize) {
        if self.unsent.fetch_add(n, Ordering::Relaxed) == 0 {
            self.progress_ms
                .store(self.table.now_ms(), Ordering::Relaxed);
            self.raise(signal::CHARGED);
        }
        self.table.unsent.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a finished answer of `n` bytes as waiting, within the total budget; false
    /// when there is no room. Stalled connections are then closed to make room for the
    /// next answers (their bytes are freed once their tasks have dropped them, so this
    /// answer does not count on them: the budget holds at every moment).
    pub(super) fn try_charge(&self, n: usize) -> bool {
        if let Some(max) = self.table.limits.max_unsent_bytes {
            let total = self.table.unsent.load(Ordering::Relaxed);
            let after = total.saturating_add(n);
            if after > max {
                self.table.reclaim(after - max);
                return false;
            }
        }
        self.charge(n);
        true
    }

    /// `n` waiting bytes were written (or dropped with the connection).
    pub(super) fn release(&self, n: usize) {
        self.unsent.fetch_sub(n, Ordering::Relaxed);
        self.table.unsent.fetch_sub(n, Ordering::Relaxed);
        self.progressed();
        if self.waiting.load(Ordering::SeqCst) {
            let wakers = std::mem::take(&mut *lock(&self.room));
            self.waiting.store(false, Ordering::SeqCst);
            for w in wakers {
                w.wake();
            }
        }
    }

    /// The peer took some waiting bytes.
    pub(super) fn progressed(&self) {
        self.progress_ms
            .store(self.table.now_ms(), Ordering::Relaxed);
    }
}

/// A request in progress on its connection (see [`ConnectionState::begin`]).
pub(super) struct RequestGuard(Arc<ConnectionState>);

impl RequestGuard {
    /// The connection.
    pub(super) fn connection(&self) -> &Arc<ConnectionState> {
        &self.0
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Forgets its connection when the connection's task ends.
pub(super) struct Registered(pub(super) Arc<ConnectionState>);

impl Drop for Registered {
    fn drop(&mut self) {
        self.0.table.forget(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(max: usize) -> Arc<ConnectionTable> {
        ConnectionTable::new(
            ConnectionLimits::default()
                .max_connections(Some(max))
                .max_unsent_bytes(Some(100))
                .max_unsent_bytes_per_connection(Some(60)),
            None,
        )
    }

    #[test]
    fn requests_make_a_connection_busy_and_their_end_stamps_it_idle() {
        let t = table(10);
        let c = t.open().unwrap();
        assert!(matches!(c.activity(), Activity::Idle { served: false, .. }));
        let a = c.begin();
        let b = c.begin();
        assert_eq!(c.activity(), Activity::Busy);
        drop(a);
        assert_eq!(c.activity(), Activity::Busy);
        drop(b);
        assert!(matches!(c.activity(), Activity::Idle { served: true, .. }));
    }

    #[test]
    fn at_the_cap_the_longest_idle_connections_make_room() {
        let t = table(2);
        let old = t.open().unwrap();
        let busy = t.open().unwrap();
        let _guard = busy.begin();
        let new = t.open().expect("room is made");
        assert!(
            old.closing.load(Ordering::Relaxed),
            "the idle one was chosen"
        );
        assert!(!busy.closing.load(Ordering::Relaxed));
        // Now both live connections are busy: a newcomer is refused.
        let _g2 = new.begin();
        assert!(t.open().is_none());
        drop(Registered(old));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn the_answer_budget_counts_per_connection_and_in_total() {
        let t = table(10);
        let a = t.open().unwrap();
        let b = t.open().unwrap();
        assert!(a.try_charge(60));
        assert!(a.over_budget(), "a holds its whole budget");
        assert!(!b.over_budget(), "b holds nothing: it may start");
        assert!(b.try_charge(40));
        // The total is full and nobody stalled long enough to be closed.
        assert!(!b.try_charge(1));
        assert!(b.over_budget());
        a.release(60);
        assert!(!a.over_budget());
        assert!(!b.over_budget());
        assert_eq!(t.unsent(), 40);
    }
}
