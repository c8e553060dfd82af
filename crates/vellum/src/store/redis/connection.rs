//! [`Redis`]: one connection to Redis and this instance's identity, shared by the three Redis
//! stores of the process. Besides the command connection it runs this instance's heartbeat
//! (so followers of its streams see it alive) and the bus listener (pub/sub messages decoded
//! into [`BusMessage`]s for every [`RedisBus`](super::RedisBus) subscriber).
//!
//! Not here: what a store does with the connection (each kind's `redis.rs` holds that), and
//! the Lua scripts (`scripts.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::target::{Conn, Target};
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
    /// How long one Redis command may take before it fails. Default: 2 s.
    pub command_timeout: Duration,
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
        }
    }
}

/// Why Redis could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisSetupError {
    /// The URL is not a Redis URL.
    #[error("invalid Redis URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Redis did not answer.
    #[error("cannot reach Redis at {url}: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// The connection error.
        reason: String,
    },
}

struct Inner {
    /// Whether this connection's session store is in use: then events are only written for
    /// sessions whose record exists (no keys are recreated for a session just deleted).
    sessions_here: AtomicBool,
    target: Target,
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

/// A Redis failure as a store error.
pub(in crate::store) fn backend(e: redis::RedisError) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Runs a command, once more on a broken connection: the connection manager reconnects in
/// the meantime, so the first request after a Redis restart does not fail.
pub(in crate::store) async fn retrying<T, F, Fut>(conn: Conn, op: F) -> Result<T, StoreError>
where
    F: Fn(Conn) -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<T>>,
{
    match op(conn.clone()).await {
        Ok(v) => Ok(v),
        Err(e)
            if e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_cluster_error() =>
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
            op(conn).await.map_err(backend)
        }
        Err(e) => Err(backend(e)),
    }
}

/// A script call with owned arguments, repeatable (for [`retrying`]).
///
/// On a cluster a script runs on the node owning its keys' slot, so it must declare a key:
/// the one given with [`Call::key`], or else its first argument (every script of the stores
/// takes the `<prefix>:{<session>}` base first, which hashes to the session's slot). Keys
/// the script derives from that base carry the same hash tag, so a script touches one slot.
#[derive(Clone)]
pub(in crate::store) struct Call {
    script: &'static redis::Script,
    key: Option<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Call {
    pub(in crate::store) fn new(script: &'static redis::Script) -> Self {
        Call {
            script,
            key: None,
            args: Vec::new(),
        }
    }

    /// Declares `k` as the script's `KEYS[1]` (instead of its first argument).
    #[allow(dead_code)] // for stores whose first argument is not in the slot they touch
    pub(in crate::store) fn key(mut self, k: impl redis::ToRedisArgs) -> Self {
        self.key = k.to_redis_args().into_iter().next();
        self
    }

    pub(in crate::store) fn arg(mut self, a: impl redis::ToRedisArgs) -> Self {
        self.args.extend(a.to_redis_args());
        self
    }

    pub(in crate::store) async fn run<T: redis::FromRedisValue>(
        self,
        conn: Conn,
    ) -> Result<T, StoreError> {
        let key = self.key.as_ref().or(self.args.first());
        retrying(conn, |mut c| {
            let mut inv = self.script.prepare_invoke();
            if let Some(k) = key {
                inv.key(k.as_slice());
            }
            for a in &self.args {
                inv.arg(a.as_slice());
            }
            async move { inv.invoke_async(&mut c).await }
        })
        .await
    }
}

/// The bus envelope: who sent it, and the message.
#[derive(Serialize, Deserialize)]
pub(in crate::store) struct Envelope {
    pub(in crate::store) from: String,
    pub(in crate::store) message: BusMessage,
}

impl Redis {
    /// Connects, starts this instance's heartbeat and bus listener. Fails at once, with the
    /// reason, when Redis is unreachable; later outages are survived (commands fail with
    /// [`StoreError::Backend`] meanwhile, and everything resumes when Redis is back).
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Redis, RedisSetupError> {
        let target = Target::parse(url).map_err(|reason| RedisSetupError::InvalidUrl {
            url: url.to_owned(),
            reason,
        })?;
        let conn = target.shared(options.command_timeout).await.map_err(|e| {
            RedisSetupError::Unreachable {
                url: url.to_owned(),
                reason: e.to_string(),
            }
        })?;
        let mut raw = [0u8; 9];
        getrandom::fill(&mut raw).map_err(|e| RedisSetupError::Unreachable {
            url: url.to_owned(),
            reason: format!("no randomness for the instance id: {e}"),
        })?;
        let instance = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
        let (bus, _) = broadcast::channel(1024);
        let heartbeat = tokio::spawn(heartbeat_loop(
            conn.clone(),
            format!("{}:i:{instance}", options.prefix),
            options.heartbeat,
        ));
        let listener = tokio::spawn(bus_loop(
            target.clone(),
            format!("{}:bus", options.prefix),
            bus.clone(),
        ));
        // The first beat, so followers see this instance alive at once.
        let mut c = conn.clone();
        let beat_ms = (options.heartbeat * 3).as_millis() as u64;
        let _: Result<(), _> = c
            .set_options(
                format!("{}:i:{instance}", options.prefix),
                1,
                redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(beat_ms)),
            )
            .await;
        Ok(Redis {
            inner: Arc::new(Inner {
                sessions_here: AtomicBool::new(false),
                target,
                conn,
                options,
                instance,
                bus,
                tasks: vec![heartbeat, listener],
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
        redis::cmd("PING")
            .query_async::<String>(&mut c)
            .await
            .map(|_| ())
            .map_err(backend)
    }

    /// One command on the shared connection (routed by its first key on a cluster), once
    /// more after a reconnect: for a store of another module that keeps one kind of key here
    /// (the DPoP replay cache of `auth`).
    #[cfg(feature = "auth")]
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, StoreError> {
        retrying(
            self.conn(),
            |mut c| async move { cmd.query_async(&mut c).await },
        )
        .await
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

async fn heartbeat_loop(mut conn: Conn, key: String, every: Duration) {
    let ttl = (every * 3).as_millis() as u64;
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        // Errors (Redis down) are retried on the next beat.
        let _: Result<(), _> = conn
            .set_options(
                &key,
                1,
                redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(ttl)),
            )
            .await;
    }
}

async fn bus_loop(target: Target, channel: String, tx: broadcast::Sender<BusMessage>) {
    let mut backoff = Duration::from_millis(50);
    loop {
        let sent = tx.clone();
        let deliver = move |payload: Vec<u8>| {
            if let Ok(env) = serde_json::from_slice::<Envelope>(&payload) {
                let _ = sent.send(env.message);
            }
        };
        if target.listen(&channel, deliver).await.is_ok() {
            backoff = Duration::from_millis(50);
        }
        // Connection lost (or refused): reconnect with a capped backoff.
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}
