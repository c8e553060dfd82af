//! The connections a [`Redis`](super::Redis) handle talks through: a [`Link`] is one concrete
//! connection (to one node, to a cluster, or a plain one for blocking reads), and [`Conn`] is
//! the shared command connection, whose link the supervisor (`supervisor.rs`) replaces when
//! the topology changes (a failover) or the link stays broken while Redis answers on a fresh
//! connection (a partition healed, a client stuck in its own recovery).
//!
//! Every command through a [`Conn`] reports how it went: a connection-level failure marks
//! the link as failing (and wakes the supervisor at once), a success marks it healthy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, Value};
use tokio::sync::{Notify, watch};

use crate::sync::{read, write};

/// One concrete connection. Cheap to clone (all share the same sockets).
#[derive(Clone)]
pub(in crate::store) enum Link {
    /// A reconnecting connection to one node (one server, or a Sentinel-managed master).
    Node(ConnectionManager),
    /// A Redis Cluster: one connection per node, following the slot map.
    Cluster(ClusterConnection),
    /// A connection of its own to one node, without a response timeout (blocking reads).
    Plain(MultiplexedConnection),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Node(c) => c.req_packed_command(cmd),
            Link::Cluster(c) => c.req_packed_command(cmd),
            Link::Plain(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Node(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Plain(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Node(c) => c.get_db(),
            Link::Cluster(c) => c.get_db(),
            Link::Plain(c) => c.get_db(),
        }
    }
}

/// Whether `e` says the connection (or the node behind it) is not usable right now: a
/// lost or refused connection, a timeout, a cluster in the middle of a failover, a node that
/// turned replica (`READONLY`) or is still loading. These are worth retrying elsewhere and
/// tell the supervisor to look at the topology; an error in a command itself is not.
pub(in crate::store) fn unavailable(e: &RedisError) -> bool {
    use redis::ServerErrorKind as S;
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_cluster_error()
        || matches!(
            e.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(S::MasterDown | S::ReadOnly | S::BusyLoading)
        )
}

/// The shared command connection: its current link, and how that link is doing. Cheap to
/// clone.
#[derive(Clone)]
pub(in crate::store) struct Conn(Arc<Shared>);

struct Shared {
    link: RwLock<Link>,
    /// Milliseconds since `epoch` when the link started failing (0: it is healthy).
    failing_since: AtomicU64,
    /// Milliseconds since `epoch` when the link last recovered or was replaced (0: it never
    /// failed).
    recovered_at: AtomicU64,
    epoch: Instant,
    /// Woken on a failure, so the supervisor looks at once instead of at its next tick.
    wake: Notify,
    /// Counts link replacements; waiters for a fresh link watch it.
    generation: watch::Sender<u64>,
    /// The longest one store operation may take, retries included.
    timeout: Duration,
    /// A cluster's slot ranges and whether each has a replica (as the supervisor last saw).
    replicated: RwLock<Option<Vec<(u16, u16, bool)>>>,
    /// Milliseconds since `epoch` until which writes do not wait for replicas: one node's
    /// `WAIT` found none (they are looked for again after `recheck`).
    unreplicated_until: AtomicU64,
    recheck: Duration,
}

impl Conn {
    pub(in crate::store) fn new(link: Link, timeout: Duration, recheck: Duration) -> Conn {
        Conn(Arc::new(Shared {
            replicated: RwLock::new(None),
            unreplicated_until: AtomicU64::new(0),
            recheck,
            link: RwLock::new(link),
            failing_since: AtomicU64::new(0),
            recovered_at: AtomicU64::new(0),
            epoch: Instant::now(),
            wake: Notify::new(),
            generation: watch::Sender::new(0),
            timeout,
        }))
    }

    /// The link commands go through now.
    pub(in crate::store) fn link(&self) -> Link {
        read(&self.0.link).clone()
    }

    /// Puts `link` in place of the current one (commands in flight finish on the old one).
    pub(in crate::store) fn replace(&self, link: Link) {
        *write(&self.0.link) = link;
        self.0.recovered_at.store(self.now_ms(), Ordering::Release);
        self.0.failing_since.store(0, Ordering::Release);
        self.0.generation.send_modify(|g| *g += 1);
    }

    /// The store timeout: the longest one operation may take, retries included.
    pub(in crate::store) fn timeout(&self) -> Duration {
        self.0.timeout
    }

    /// How long the link has been failing (`None`: it is healthy).
    pub(in crate::store) fn failing_for(&self) -> Option<Duration> {
        match self.0.failing_since.load(Ordering::Acquire) {
            0 => None,
            since => Some(
                self.0
                    .epoch
                    .elapsed()
                    .saturating_sub(Duration::from_millis(since)),
            ),
        }
    }

    /// How long the link has worked without a failure (since it last recovered, or was
    /// replaced; `Duration::MAX` when it never failed): zero while it fails. A heartbeat missing for less than that may only be
    /// hidden by the outage everyone just had.
    pub(in crate::store) fn steady_for(&self) -> Duration {
        if self.0.failing_since.load(Ordering::Acquire) != 0 {
            return Duration::ZERO;
        }
        match self.0.recovered_at.load(Ordering::Acquire) {
            0 => Duration::MAX,
            since => self
                .0
                .epoch
                .elapsed()
                .saturating_sub(Duration::from_millis(since)),
        }
    }

    fn now_ms(&self) -> u64 {
        (self.0.epoch.elapsed().as_millis() as u64).max(1)
    }

    /// Records an operation that got no answer within the store timeout (its command was
    /// abandoned before the link's own timeout could report it).
    pub(in crate::store) fn note_timeout(&self) {
        let e = RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no answer within the store timeout",
        ));
        self.note::<()>(&Err(e));
    }

    /// Records how a command went.
    pub(in crate::store) fn note<T>(&self, result: &Result<T, RedisError>) {
        match result {
            Ok(_) => {
                if self.0.failing_since.load(Ordering::Relaxed) != 0 {
                    self.0.recovered_at.store(self.now_ms(), Ordering::Release);
                    self.0.failing_since.store(0, Ordering::Release);
                }
            }
            Err(e) if unavailable(e) => {
                let now = self.now_ms();
                let _ = self.0.failing_since.compare_exchange(
                    0,
                    now,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
                self.0.wake.notify_one();
            }
            Err(_) => {}
        }
    }

    /// Records a cluster's slot ranges and whether each has a replica.
    pub(in crate::store) fn set_replicated(&self, ranges: Vec<(u16, u16, bool)>) {
        *write(&self.0.replicated) = Some(ranges);
    }

    /// Whether a write of `key` should wait for replicas: there is one to wait for (a
    /// master without replicas would only make every write wait out the timeout).
    pub(in crate::store) fn replicas_for(&self, key: &[u8]) -> bool {
        if self.now_ms() < self.0.unreplicated_until.load(Ordering::Acquire) {
            return false;
        }
        match &*read(&self.0.replicated) {
            Some(ranges) => {
                let slot = slot_of(key);
                ranges
                    .iter()
                    .find(|(a, b, _)| (*a..=*b).contains(&slot))
                    .is_none_or(|(_, _, r)| *r)
            }
            None => true,
        }
    }

    /// A `WAIT` was acknowledged by fewer replicas than asked. One node (no slot map): its
    /// writes stop waiting until the next look; a cluster's map says where replicas are.
    pub(in crate::store) fn short_of_replicas(&self) {
        if read(&self.0.replicated).is_none() {
            let until = self.now_ms() + self.0.recheck.as_millis() as u64;
            self.0.unreplicated_until.store(until, Ordering::Release);
        }
    }

    /// Resolves when a failure was recorded (for the supervisor).
    pub(in crate::store) async fn failed(&self) {
        self.0.wake.notified().await
    }

    /// Link replacements from now on.
    pub(in crate::store) fn generations(&self) -> watch::Receiver<u64> {
        self.0.generation.subscribe()
    }
}

/// The Redis Cluster hash slot of `key` (of its `{hash tag}` when it has one).
pub(in crate::store) fn slot_of(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|b| *b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter()
                .position(|b| *b == b'}')
                .filter(|close| *close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(key);
    crc16::State::<crc16::XMODEM>::calculate(tagged) % 16384
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let mut link = self.link();
        Box::pin(async move {
            let r = link.req_packed_command(cmd).await;
            self.note(&r);
            r
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut link = self.link();
        Box::pin(async move {
            let r = link.req_packed_commands(pipeline, offset, count).await;
            self.note(&r);
            r
        })
    }

    fn get_db(&self) -> i64 {
        read(&self.0.link).get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::slot_of;

    #[test]
    fn slots_follow_hash_tags() {
        // CLUSTER KEYSLOT answers of Redis 7.0.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"vellum:{abc}:session"), slot_of(b"abc"));
        assert_eq!(slot_of(b"{}x"), 10595, "an empty tag: the whole key");
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
    }
}
