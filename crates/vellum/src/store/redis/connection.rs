//! [`Redis`]: one connection to Redis and this instance's identity, shared by the Redis
//! stores of the process. Besides the command connection it runs this instance's heartbeat
//! (so followers of its streams see it alive), the bus listener (pub/sub messages decoded
//! into [`BusMessage`]s for every [`RedisBus`](super::RedisBus) subscriber) and the
//! connection's supervisor (`supervisor.rs`: failovers, partitions).
//!
//! Not here: what a store does with the connection (each kind's `redis.rs` holds that), how
//! operations run and retry (`call.rs`), the links (`link.rs`), the URLs (`target.rs`), and
//! the Lua scripts (`scripts.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use redis::Value;

use super::call::{Wait, backend, retrying};
use super::link::Conn;
use super::supervisor::supervise;
use super::target::Target;
use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::store::bus::BusMessage;
use crate::store::error::StoreError;

/// Settings of the Redis backends.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisOptions {
    /// The prefix of every key and channel. Default: `vellum`.
    pub prefix: String,
    /// How long events and stream metadata live without new events (session keys are
    /// renewed by activity). Default: 1 hour.
    pub event_ttl: Duration,
    /// The most events kept per stream (approximately; oldest trimmed first). Default: 1000.
    pub max_events_per_stream: usize,
    /// The most streams kept per session (oldest dropped first). Default: 64.
    pub max_streams_per_session: usize,
    /// How often this instance proves it is alive; it counts as dead after three missed
    /// beats. Default: 1 s.
    pub heartbeat: Duration,
    /// The store timeout: how long one store operation may take, retries over a reconnect
    /// or a failover included, before it fails (and the request gets 503 with
    /// `Retry-After`). Default: 2 s.
    pub command_timeout: Duration,
    /// How often the topology is looked at while all is well (a cluster's slot map, the
    /// master the Sentinels name); after a failed command it is looked at at once. Default:
    /// 1 s.
    pub topology_interval: Duration,
    /// Replicas that must acknowledge each stored event and new session (`WAIT`) before it
    /// counts as written; 0 (the default) does not wait. See [`RedisOptions::wait_timeout`].
    pub wait_replicas: u32,
    /// How long a write waits for [`RedisOptions::wait_replicas`]: past it, the write is
    /// kept on the master alone, as without waiting. Default: 100 ms.
    pub wait_timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            prefix: "vellum".into(),
            event_ttl: Duration::from_secs(3600),
            max_events_per_stream: 1000,
            max_streams_per_session: 64,
            heartbeat: Duration::from_secs(1),
            command_timeout: Duration::from_secs(2),
            topology_interval: Duration::from_secs(1),
            wait_replicas: 0,
            wait_timeout: Duration::from_millis(100),
        }
    }
}

struct Inner {
    /// Whether this connection's session store is in use: then events are only written for
    /// sessions whose record exists (no keys are recreated for a session just deleted).
    sessions_here: AtomicBool,
    target: Arc<Target>,
    conn: Conn,
    options: RedisOptions,
    instance: String,
    bus: broadcast::Sender<BusMessage>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// A connection to Redis and this instance's identity: the source of the Redis event store,
/// session store and bus. Cheap to clone.
#[derive(Clone)]
pub struct Redis {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("instance", &self.inner.instance)
            .field("options", &self.inner.options)
            .finish()
    }
}

/// The bus envelope: who sent it, and the message.
#[derive(Serialize, Deserialize)]
pub(in crate::store) struct Envelope {
    pub(in crate::store) from: String,
    pub(in crate::store) message: BusMessage,
}

impl Redis {
    /// Connects, starts this instance's heartbeat, the bus listener and the supervisor of
    /// the connection. Fails at once, with the reason, when Redis is unreachable; later
    /// outages and failovers are survived (operations fail with [`StoreError::Backend`]
    /// within the store timeout meanwhile, and everything resumes when Redis answers again).
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Redis, ConfigError> {
        let unreachable = |reason: String| {
            ConfigError::from(ConfigKind::RedisUnreachable {
                url: url.to_owned(),
                reason,
            })
        };
        let target = Target::parse(url, options.command_timeout).map_err(|reason| {
            ConfigError::from(ConfigKind::RedisUrl {
                url: url.to_owned(),
                reason,
            })
        })?;
        let target = Arc::new(target);
        let link = tokio::time::timeout(options.command_timeout * 2, target.shared())
            .await
            .map_err(|_| unreachable("no answer in time".into()))?
            .map_err(|e| unreachable(e.to_string()))?;
        let conn = Conn::new(link, options.command_timeout, options.topology_interval);
        let mut raw = [0u8; 9];
        getrandom::fill(&mut raw)
            .map_err(|e| unreachable(format!("no randomness for the instance id: {e}")))?;
        let instance = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
        let (bus, _) = broadcast::channel(1024);
        let beat_key = format!("{}:i:{instance}", options.prefix);
        // The first beat, so followers see this instance alive at once.
        beat(&mut conn.clone(), &beat_key, options.heartbeat).await;
        let tasks = vec![
            tokio::spawn(heartbeat_loop(conn.clone(), beat_key, options.heartbeat)),
            tokio::spawn(bus_loop(
                target.clone(),
                format!("{}:bus", options.prefix),
                bus.clone(),
                conn.generations(),
            )),
            tokio::spawn(supervise(
                target.clone(),
                conn.clone(),
                options.topology_interval,
            )),
        ];
        Ok(Redis {
            inner: Arc::new(Inner {
                sessions_here: AtomicBool::new(false),
                target,
                conn,
                options,
                instance,
                bus,
                tasks,
            }),
        })
    }

    /// This instance's id.
    pub fn instance_id(&self) -> &str {
        &self.inner.instance
    }

    /// One round trip (`PING`): whether Redis answers now (a readiness check).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut c = self.inner.conn.clone();
        let timeout = self.inner.options.command_timeout;
        match tokio::time::timeout(timeout, redis::cmd("PING").query_async::<Value>(&mut c)).await {
            Ok(r) => r.map(|_| ()).map_err(backend),
            Err(_) => {
                self.inner.conn.note_timeout();
                Err(StoreError::backend(format!(
                    "Redis did not answer within the store timeout ({timeout:?})"
                )))
            }
        }
    }

    /// Sets `key` (the whole key: no prefix is added) for `ttl` unless it exists (`SET NX
    /// PX`): `true` when it was set, `false` when it was there. One atomic command, retried
    /// on a fresh link within the store timeout (a retry that finds its own first write
    /// answers `false`: callers that remember a first use count it as used). For caches of
    /// first uses, such as the DPoP replay cache.
    pub async fn set_if_absent(&self, key: &str, ttl: Duration) -> Result<bool, StoreError> {
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let set: Option<String> = retrying(self.conn(), |mut c| async move {
            redis::cmd("SET")
                .arg(key)
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(ms)
                .query_async(&mut c)
                .await
        })
        .await?;
        Ok(set.is_some())
    }

    /// Every key under the prefix (for tests and operators: after sessions end, only
    /// instance heartbeats remain).
    pub async fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.inner.conn.clone();
        let pattern = format!("{}:*", self.inner.options.prefix);
        if self.is_cluster() {
            // Routed to every master, answers combined (SCAN cursors are per node).
            return redis::cmd("KEYS")
                .arg(pattern)
                .query_async(&mut c)
                .await
                .map_err(backend);
        }
        let mut cursor: u64 = 0;
        let mut out = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut c)
                .await
                .map_err(backend)?;
            out.extend(batch);
            if next == 0 {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// The settings it was connected with.
    pub(in crate::store) fn options(&self) -> &RedisOptions {
        &self.inner.options
    }

    /// What it is connected to, for connections of their own (blocking reads, pub/sub).
    pub(in crate::store) fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Whether it is connected to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.inner.target.is_cluster()
    }

    /// What writes that must survive a failover wait for (`None`: no `WAIT`).
    pub(in crate::store) fn wait(&self) -> Option<Wait> {
        let o = &self.inner.options;
        (o.wait_replicas > 0).then_some(Wait {
            replicas: o.wait_replicas,
            timeout: o.wait_timeout,
        })
    }

    /// The shared command connection.
    pub(in crate::store) fn conn(&self) -> Conn {
        self.inner.conn.clone()
    }

    /// The prefix of every key of `session` (its hash tag included).
    pub(in crate::store) fn base(&self, session: &str) -> String {
        format!("{}:{{{session}}}", self.inner.options.prefix)
    }

    /// The bus listener's messages, from now on.
    pub(in crate::store) fn bus_messages(&self) -> broadcast::Receiver<BusMessage> {
        self.inner.bus.subscribe()
    }

    /// Records that this connection's session store is in use (see [`Redis::require_session`]).
    pub(in crate::store) fn mark_sessions_here(&self) {
        self.inner.sessions_here.store(true, Ordering::Release);
    }

    /// The scripts' flag (`"1"` or `"0"`): whether events may only be written for sessions
    /// whose record exists, which holds once this connection's session store is in use (no
    /// keys are then recreated for a session just deleted).
    pub(in crate::store) fn require_session(&self) -> &'static str {
        if self.inner.sessions_here.load(Ordering::Acquire) {
            "1"
        } else {
            "0"
        }
    }
}

async fn beat(conn: &mut Conn, key: &str, every: Duration) {
    let ttl = (every * 3).as_millis() as u64;
    // Errors (Redis down) are retried on the next beat.
    let _: Result<(), _> = conn
        .set_options(
            key,
            1,
            redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(ttl)),
        )
        .await;
}

/// Beats every `every`, and at once on a fresh link (after a failover the key may be gone,
/// and followers must not take this instance for dead).
async fn heartbeat_loop(mut conn: Conn, key: String, every: Duration) {
    let mut tick = tokio::time::interval(every);
    let mut fresh = conn.generations();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = fresh.changed() => {}
        }
        beat(&mut conn, &key, every).await;
    }
}

/// Keeps the bus subscription up: subscribes again when it ends, and afresh on every new
/// link (after a failover or a partition the old one may have missed messages). Once a
/// subscription stands again after one was lost, the subscribers get
/// [`BusMessage::Reconnected`]: what was published meanwhile never arrived here.
async fn bus_loop(
    target: Arc<Target>,
    channel: String,
    tx: broadcast::Sender<BusMessage>,
    mut fresh: tokio::sync::watch::Receiver<u64>,
) {
    let stood = Arc::new(AtomicBool::new(false));
    let mut backoff = Duration::from_millis(50);
    loop {
        let sent = tx.clone();
        let deliver = move |payload: Vec<u8>| {
            if let Ok(env) = serde_json::from_slice::<Envelope>(&payload) {
                let _ = sent.send(env.message);
            }
        };
        let (tx2, stood2) = (tx.clone(), stood.clone());
        let subscribed = move || {
            if stood2.swap(true, Ordering::AcqRel) {
                let _ = tx2.send(BusMessage::Reconnected);
            }
        };
        fresh.borrow_and_update();
        tokio::select! {
            r = target.listen(&channel, deliver, subscribed) => {
                if r.is_ok() {
                    backoff = Duration::from_millis(50);
                }
                // Lost (or refused): subscribe again after a capped backoff.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            _ = fresh.changed() => {}
        }
    }
}
