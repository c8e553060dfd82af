//! Redis behind the stores and the bus, so several server instances share sessions (no
//! sticky routing needed) and sessions survive restarts.
//!
//! One [`Redis`] handle per process gives the [`EventStore`], the [`SessionStore`] and the
//! [`MessageBus`]. Layout (all keys of a session share the hash tag `{session}`):
//!
//! | key | type | what |
//! |---|---|---|
//! | `P:{S}:session` | string | the session record (JSON), expiring after the session TTL |
//! | `P:{S}:s:N` | stream | events of stream N (`0` = standalone), ids `0-seq`, capped |
//! | `P:{S}:m:N` | hash | stream N's writer instance, requests, last seq, done flag |
//! | `P:{S}:streams`, `P:{S}:next` | list, counter | the session's streams (capped) |
//! | `P:i:INSTANCE` | string | an instance's heartbeat (expires when it dies) |
//! | `P:bus` | pub/sub | the bus between instances |
//!
//! Every key expires with its session, so an abandoned session leaves nothing behind.
//! Events are kept in Redis Streams; pub/sub only carries the bus (messages are small and
//! re-sent by design where it matters: a lost `SessionChanged` is repaired by the next).

mod scripts;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Value};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::bus::{BusMessage, MessageBus};
use super::event::{EventId, EventStore, StoreError, StoredEvent, StreamId};
use super::session::{SessionRecord, SessionStore};
use crate::protocol::RequestId;

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
    sessions_here: std::sync::atomic::AtomicBool,
    client: redis::Client,
    conn: ConnectionManager,
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

fn backend(e: redis::RedisError) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Runs a command, once more on a broken connection: the connection manager reconnects in
/// the meantime, so the first request after a Redis restart does not fail.
async fn retrying<T, F, Fut>(conn: ConnectionManager, op: F) -> Result<T, StoreError>
where
    F: Fn(ConnectionManager) -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<T>>,
{
    match op(conn.clone()).await {
        Ok(v) => Ok(v),
        Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            op(conn).await.map_err(backend)
        }
        Err(e) => Err(backend(e)),
    }
}

/// A script call with owned arguments, repeatable (for [`retrying`]).
#[derive(Clone)]
struct Call {
    script: &'static redis::Script,
    args: Vec<Vec<u8>>,
}

impl Call {
    fn new(script: &'static redis::Script) -> Self {
        Call {
            script,
            args: Vec::new(),
        }
    }

    fn arg(mut self, a: impl redis::ToRedisArgs) -> Self {
        self.args.extend(a.to_redis_args());
        self
    }

    async fn run<T: redis::FromRedisValue>(self, conn: ConnectionManager) -> Result<T, StoreError> {
        retrying(conn, |mut c| {
            let mut inv = self.script.prepare_invoke();
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
struct Envelope {
    from: String,
    message: BusMessage,
}

impl Redis {
    /// Connects, starts this instance's heartbeat and bus listener. Fails at once, with the
    /// reason, when Redis is unreachable; later outages are survived (commands fail with
    /// [`StoreError::Backend`] meanwhile, and everything resumes when Redis is back).
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Redis, RedisSetupError> {
        let client = redis::Client::open(url).map_err(|e| RedisSetupError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(options.command_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_with_config(client.clone(), config)
            .await
            .map_err(|e| RedisSetupError::Unreachable {
                url: url.to_owned(),
                reason: e.to_string(),
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
            client.clone(),
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
                sessions_here: std::sync::atomic::AtomicBool::new(false),
                client,
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

    /// The event store on this connection.
    pub fn event_store(&self) -> RedisEventStore {
        RedisEventStore(self.clone())
    }

    /// The session store on this connection.
    pub fn session_store(&self) -> RedisSessionStore {
        self.inner
            .sessions_here
            .store(true, std::sync::atomic::Ordering::Release);
        RedisSessionStore(self.clone())
    }

    fn require_session(&self) -> &'static str {
        if self
            .inner
            .sessions_here
            .load(std::sync::atomic::Ordering::Acquire)
        {
            "1"
        } else {
            "0"
        }
    }

    /// The bus on this connection.
    pub fn bus(&self) -> RedisBus {
        RedisBus(self.clone())
    }

    /// Every key under the prefix (for tests and operators: after sessions end, only
    /// instance heartbeats remain).
    pub async fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.inner.conn.clone();
        let mut cursor: u64 = 0;
        let mut out = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}:*", self.inner.options.prefix))
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

    fn base(&self, session: &str) -> String {
        format!("{}:{{{session}}}", self.inner.options.prefix)
    }

    fn conn(&self) -> ConnectionManager {
        self.inner.conn.clone()
    }
}

async fn heartbeat_loop(mut conn: ConnectionManager, key: String, every: Duration) {
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

async fn bus_loop(client: redis::Client, channel: String, tx: broadcast::Sender<BusMessage>) {
    let mut backoff = Duration::from_millis(50);
    loop {
        if let Ok(mut pubsub) = client.get_async_pubsub().await
            && pubsub.subscribe(&channel).await.is_ok()
        {
            backoff = Duration::from_millis(50);
            let mut messages = pubsub.on_message();
            while let Some(msg) = messages.next().await {
                let Ok(payload) = msg.get_payload::<String>() else {
                    continue;
                };
                if let Ok(env) = serde_json::from_str::<Envelope>(&payload) {
                    let _ = tx.send(env.message);
                }
            }
        }
        // Connection lost (or refused): reconnect with a capped backoff.
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

/// [`EventStore`] on Redis Streams, readable (and followable) from every instance.
#[derive(Clone, Debug)]
pub struct RedisEventStore(Redis);

impl EventStore for RedisEventStore {
    fn open_stream(
        &self,
        session: &str,
        requests: &[RequestId],
    ) -> BoxFuture<'static, Result<StreamId, StoreError>> {
        let r = &self.0;
        let call = Call::new(&scripts::OPEN)
            .arg(r.base(session))
            .arg(&r.inner.instance)
            .arg(serde_json::to_string(requests).unwrap_or_else(|_| "[]".into()))
            .arg(r.inner.options.event_ttl.as_millis() as u64)
            .arg(r.inner.options.max_streams_per_session)
            .arg(r.require_session());
        let conn = r.conn();
        Box::pin(async move {
            let n: i64 = call.run(conn).await?;
            if n < 0 {
                return Err(StoreError::UnknownStream);
            }
            Ok(StreamId(n as u64))
        })
    }

    fn append(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
    ) -> BoxFuture<'static, Result<EventId, StoreError>> {
        let r = &self.0;
        let call = Call::new(&scripts::APPEND)
            .arg(r.base(session))
            .arg(stream.0)
            .arg(message.as_ref())
            .arg(r.inner.options.event_ttl.as_millis() as u64)
            .arg(r.inner.options.max_events_per_stream)
            .arg(r.require_session());
        let conn = r.conn();
        Box::pin(async move {
            let seq: i64 = call.run(conn).await?;
            if seq < 0 {
                return Err(StoreError::UnknownStream);
            }
            Ok(EventId {
                stream,
                seq: seq as u64,
            })
        })
    }

    fn replay_after(
        &self,
        session: &str,
        after: EventId,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>, StoreError>> {
        let call = Call::new(&scripts::REPLAY)
            .arg(self.0.base(session))
            .arg(after.stream.0)
            .arg(after.seq);
        let conn = self.0.conn();
        Box::pin(async move {
            let v: Value = call.run(conn).await?;
            parse_replay(v, after.stream)
        })
    }

    fn session_closed(&self, session: &str) -> BoxFuture<'static, Result<(), StoreError>> {
        let call = Call::new(&scripts::DROP).arg(self.0.base(session)).arg("0");
        let conn = self.0.conn();
        Box::pin(async move {
            let _: i64 = call.run(conn).await?;
            Ok(())
        })
    }

    fn close_stream(
        &self,
        session: &str,
        stream: StreamId,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let call = Call::new(&scripts::CLOSE)
            .arg(self.0.base(session))
            .arg(stream.0);
        let conn = self.0.conn();
        Box::pin(async move {
            let _: i64 = call.run(conn).await?;
            Ok(())
        })
    }

    fn follow(
        &self,
        session: &str,
        after: EventId,
    ) -> Option<BoxStream<'static, Result<StoredEvent, StoreError>>> {
        let r = self.0.clone();
        let base = r.base(session);
        let stream_key = format!("{base}:s:{}", after.stream.0);
        let instances = format!("{}:i:", r.inner.options.prefix);
        Some(async_stream_follow(r, base, stream_key, instances, after))
    }
}

fn parse_replay(v: Value, stream: StreamId) -> Result<Vec<StoredEvent>, StoreError> {
    let Value::Array(items) = v else {
        return Err(StoreError::Backend("unexpected replay reply".into()));
    };
    let mut it = items.into_iter();
    match it.next() {
        Some(Value::Int(0)) => {}
        Some(Value::Int(-2)) => return Err(StoreError::Evicted),
        _ => return Err(StoreError::UnknownStream),
    }
    let mut out = Vec::new();
    while let (Some(seq), Some(msg)) = (it.next(), it.next()) {
        let seq: u64 =
            redis::from_redis_value(seq).map_err(|e| StoreError::Backend(e.to_string()))?;
        let msg: Vec<u8> =
            redis::from_redis_value(msg).map_err(|e| StoreError::Backend(e.to_string()))?;
        out.push(StoredEvent {
            id: EventId { stream, seq },
            message: Bytes::from(msg),
        });
    }
    Ok(out)
}

/// The state of the stream being followed.
struct FollowState {
    redis: Redis,
    base: String,
    stream_key: String,
    instances: String,
    last: EventId,
    conn: Option<redis::aio::MultiplexedConnection>,
    pending: std::collections::VecDeque<StoredEvent>,
    finished: bool,
}

/// Follows a stream: blocking reads on a dedicated connection (no response timeout, so it
/// never stalls the shared one), and after each read the stream's state: complete, or its
/// writer dead.
fn async_stream_follow(
    redis: Redis,
    base: String,
    stream_key: String,
    instances: String,
    after: EventId,
) -> BoxStream<'static, Result<StoredEvent, StoreError>> {
    let state = FollowState {
        redis,
        base,
        stream_key,
        instances,
        last: after,
        conn: None,
        pending: Default::default(),
        finished: false,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.pending.pop_front() {
                st.last = ev.id;
                return Some((Ok(ev), st));
            }
            if st.finished {
                return None;
            }
            match follow_step(&mut st).await {
                Ok(()) => {}
                Err(e) => {
                    st.finished = true;
                    return Some((Err(e), st));
                }
            }
        }
    })
    .boxed()
}

async fn follow_step(st: &mut FollowState) -> Result<(), StoreError> {
    if st.conn.is_none() {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        st.conn = Some(
            st.redis
                .inner
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(backend)?,
        );
    }
    let Some(conn) = st.conn.as_mut() else {
        return Ok(());
    };
    // Wait up to a second for new events.
    let reply: Value = redis::cmd("XREAD")
        .arg("COUNT")
        .arg(256)
        .arg("BLOCK")
        .arg(1000)
        .arg("STREAMS")
        .arg(&st.stream_key)
        .arg(format!("0-{}", st.last.seq))
        .query_async(conn)
        .await
        .map_err(backend)?;
    let got = parse_xread(reply, st.last.stream)?;
    let got_any = !got.is_empty();
    st.pending.extend(got);
    if got_any {
        return Ok(());
    }
    let (done, alive, requests): (i64, i64, String) = Call::new(&scripts::STATUS)
        .arg(&st.base)
        .arg(st.last.stream.0)
        .arg(&st.instances)
        .run(st.redis.conn())
        .await?;
    if done == 1 {
        // The last events may have landed between the read above and the status: drain.
        let rest: Value = redis::cmd("XRANGE")
            .arg(&st.stream_key)
            .arg(format!("(0-{}", st.last.seq))
            .arg("+")
            .query_async(conn)
            .await
            .map_err(backend)?;
        st.pending.extend(parse_range(rest, st.last.stream)?);
        st.finished = true;
    } else if alive == 0 {
        let requests: Vec<RequestId> = serde_json::from_str(&requests).unwrap_or_default();
        return Err(StoreError::WriterGone { requests });
    }
    Ok(())
}

fn parse_range(v: Value, stream: StreamId) -> Result<Vec<StoredEvent>, StoreError> {
    let reply: redis::streams::StreamRangeReply =
        redis::from_redis_value(v).map_err(|e| StoreError::Backend(e.to_string()))?;
    reply
        .ids
        .into_iter()
        .map(|id| stored_event(id, stream))
        .collect()
}

fn stored_event(id: redis::streams::StreamId, stream: StreamId) -> Result<StoredEvent, StoreError> {
    let seq = id
        .id
        .rsplit_once('-')
        .and_then(|(_, s)| s.parse().ok())
        .ok_or_else(|| StoreError::Backend(format!("unexpected stream id {}", id.id)))?;
    let message: Vec<u8> = id
        .map
        .get("m")
        .map(|v| redis::from_redis_value(v.clone()))
        .transpose()
        .map_err(|e| StoreError::Backend(e.to_string()))?
        .unwrap_or_default();
    Ok(StoredEvent {
        id: EventId { stream, seq },
        message: Bytes::from(message),
    })
}

fn parse_xread(v: Value, stream: StreamId) -> Result<Vec<StoredEvent>, StoreError> {
    let reply: Option<redis::streams::StreamReadReply> =
        redis::from_redis_value(v).map_err(|e| StoreError::Backend(e.to_string()))?;
    let mut out = Vec::new();
    for key in reply.map(|r| r.keys).unwrap_or_default() {
        for id in key.ids {
            out.push(stored_event(id, stream)?);
        }
    }
    Ok(out)
}

/// [`SessionStore`] on Redis.
#[derive(Clone, Debug)]
pub struct RedisSessionStore(Redis);

impl SessionStore for RedisSessionStore {
    fn create(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let conn = self.0.conn();
        let key = format!("{}:session", self.0.base(id));
        let json = serde_json::to_string(record);
        Box::pin(async move {
            let json = json.map_err(|e| StoreError::Backend(e.to_string()))?;
            let ms = ttl.as_millis() as u64;
            retrying(conn, |mut c| {
                let (key, json) = (key.clone(), json.clone());
                async move {
                    redis::cmd("SET")
                        .arg(key)
                        .arg(json)
                        .arg("NX")
                        .arg("PX")
                        .arg(ms)
                        .query_async::<Option<String>>(&mut c)
                        .await
                }
            })
            .await?;
            Ok(())
        })
    }

    fn load(&self, id: &str) -> BoxFuture<'static, Result<Option<SessionRecord>, StoreError>> {
        let conn = self.0.conn();
        let key = format!("{}:session", self.0.base(id));
        Box::pin(async move {
            let json: Option<String> = retrying(conn, |mut c| {
                let key = key.clone();
                async move { c.get(key).await }
            })
            .await?;
            match json {
                None => Ok(None),
                Some(j) => serde_json::from_str(&j)
                    .map(Some)
                    .map_err(|e| StoreError::Backend(format!("corrupt session record: {e}"))),
            }
        })
    }

    fn save(
        &self,
        id: &str,
        record: &SessionRecord,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let conn = self.0.conn();
        let key = format!("{}:session", self.0.base(id));
        let json = serde_json::to_string(record);
        Box::pin(async move {
            let json = json.map_err(|e| StoreError::Backend(e.to_string()))?;
            let ok: Option<String> = retrying(conn, |mut c| {
                let (key, json) = (key.clone(), json.clone());
                async move {
                    redis::cmd("SET")
                        .arg(key)
                        .arg(json)
                        .arg("XX")
                        .arg("KEEPTTL")
                        .query_async(&mut c)
                        .await
                }
            })
            .await?;
            Ok(ok.is_some())
        })
    }

    fn touch(&self, id: &str, ttl: Duration) -> BoxFuture<'static, Result<bool, StoreError>> {
        let call = Call::new(&scripts::TOUCH)
            .arg(self.0.base(id))
            .arg(ttl.as_millis() as u64);
        let conn = self.0.conn();
        Box::pin(async move {
            let alive: i64 = call.run(conn).await?;
            Ok(alive == 1)
        })
    }

    fn delete(&self, id: &str) -> BoxFuture<'static, Result<bool, StoreError>> {
        let call = Call::new(&scripts::DROP).arg(self.0.base(id)).arg("1");
        let conn = self.0.conn();
        Box::pin(async move {
            let n: i64 = call.run(conn).await?;
            Ok(n > 0)
        })
    }
}

/// [`MessageBus`] on Redis pub/sub.
#[derive(Clone, Debug)]
pub struct RedisBus(Redis);

impl MessageBus for RedisBus {
    fn instance_id(&self) -> &str {
        &self.0.inner.instance
    }

    fn publish(&self, message: BusMessage) -> BoxFuture<'static, Result<(), StoreError>> {
        let conn = self.0.conn();
        let channel = format!("{}:bus", self.0.inner.options.prefix);
        let env = serde_json::to_string(&Envelope {
            from: self.0.inner.instance.clone(),
            message,
        });
        Box::pin(async move {
            let env = env.map_err(|e| StoreError::Backend(e.to_string()))?;
            let _: i64 = retrying(conn, |mut c| {
                let (channel, env) = (channel.clone(), env.clone());
                async move { c.publish(channel, env).await }
            })
            .await?;
            Ok(())
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<BusMessage> {
        self.0.inner.bus.subscribe()
    }
}
