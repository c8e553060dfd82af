//! [`RedisEventStore`]: events in Redis Streams, one stream key per SSE stream, readable and
//! followable from every instance (a follower ends when the stream is complete, or fails when
//! its writer's heartbeat stops). Key layout: the `redis` module's docs.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use redis::Value;

use super::{EventId, EventStore, StoredEvent, StreamId};
use crate::protocol::RequestId;
use crate::store::error::StoreError;
use crate::store::redis::{Call, Link, Redis, backend, retrying, scripts};

impl Redis {
    /// The event store on this connection.
    pub fn event_store(&self) -> RedisEventStore {
        RedisEventStore(self.clone())
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
            .arg(r.instance_id())
            .arg(serde_json::to_string(requests).unwrap_or_else(|_| "[]".into()))
            .arg(r.options().event_ttl.as_millis() as u64)
            .arg(r.options().max_streams_per_session)
            .arg(r.require_session())
            .replicated(r.wait());
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
        self.append_expecting(session, stream, message, 0)
    }

    fn append_expecting(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
        expected: u64,
    ) -> BoxFuture<'static, Result<EventId, StoreError>> {
        let r = &self.0;
        let call = Call::new(&scripts::APPEND)
            .arg(r.base(session))
            .arg(stream.0)
            .arg(message.as_ref())
            .arg(r.options().event_ttl.as_millis() as u64)
            .arg(r.options().max_events_per_stream)
            .arg(r.require_session())
            .arg(expected)
            .replicated(r.wait());
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
        let instances = format!("{}:i:", r.options().prefix);
        Some(async_stream_follow(r, base, stream_key, instances, after))
    }
}

fn parse_replay(v: Value, stream: StreamId) -> Result<Vec<StoredEvent>, StoreError> {
    let Value::Array(items) = v else {
        return Err(StoreError::backend("unexpected replay reply"));
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
            redis::from_redis_value(seq).map_err(|e| StoreError::backend(e.to_string()))?;
        let msg: Vec<u8> =
            redis::from_redis_value(msg).map_err(|e| StoreError::backend(e.to_string()))?;
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
    conn: Option<Link>,
    pending: std::collections::VecDeque<StoredEvent>,
    finished: bool,
    /// Since when reads fail: they are retried on a fresh connection within the store
    /// timeout (a failover, a reconnect), then the follower fails.
    failing_since: Option<Instant>,
    /// Since when the writer's heartbeat is missing (see `writer_gone`).
    missing_since: Option<Instant>,
}

/// The pause before a failed read is retried on a fresh connection.
const FOLLOW_RETRY: Duration = Duration::from_millis(200);

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
        failing_since: None,
        missing_since: None,
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
                Ok(()) => st.failing_since = None,
                Err(StoreError::Backend(_))
                    if st.failing_since.get_or_insert_with(Instant::now).elapsed()
                        < st.redis.conn().timeout() =>
                {
                    st.conn = None;
                    tokio::time::sleep(FOLLOW_RETRY).await;
                }
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
        st.conn = Some(
            st.redis
                .target()
                .dedicated(Duration::from_secs(1))
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
    let got = contiguous(st.last.seq, parse_xread(reply, st.last.stream)?)?;
    let got_any = !got.is_empty();
    st.pending.extend(got);
    if got_any {
        return Ok(());
    }
    // Two round trips, not one script: the writer's heartbeat key is in another slot.
    let (done, owner, requests): (i64, String, String) = Call::new(&scripts::STATUS)
        .arg(&st.base)
        .arg(st.last.stream.0)
        .run(st.redis.conn())
        .await?;
    let alive = if owner.is_empty() {
        1
    } else {
        let key = format!("{}{owner}", st.instances);
        retrying(st.redis.conn(), |mut c| {
            let key = key.clone();
            async move {
                redis::cmd("EXISTS")
                    .arg(key)
                    .query_async::<i64>(&mut c)
                    .await
            }
        })
        .await?
    };
    if done == 1 {
        // The last events may have landed between the read above and the status: drain.
        let rest: Value = redis::cmd("XRANGE")
            .arg(&st.stream_key)
            .arg(format!("(0-{}", st.last.seq))
            .arg("+")
            .query_async(conn)
            .await
            .map_err(backend)?;
        st.pending
            .extend(contiguous(st.last.seq, parse_range(rest, st.last.stream)?)?);
        st.finished = true;
    } else if alive == 0 {
        if writer_gone(st) {
            let requests: Vec<RequestId> = serde_json::from_str(&requests).unwrap_or_default();
            return Err(StoreError::WriterGone { requests });
        }
    } else {
        st.missing_since = None;
    }
    Ok(())
}

/// Whether a writer whose heartbeat is missing now counts as gone: only once it stayed
/// missing two beats longer, while this instance's own link worked for three beats (the
/// heartbeat's lifetime). An outage or a failover hides every instance's heartbeats for a
/// while; a writer that lives beats again as soon as its link is back, and this instance's
/// supervisor notices a failover (and restarts the three beats) well within two beats.
fn writer_gone(st: &mut FollowState) -> bool {
    let beat = st.redis.options().heartbeat;
    let first = *st.missing_since.get_or_insert_with(Instant::now);
    first.elapsed() >= beat * 2 && st.redis.conn().steady_for() >= beat * 3
}

/// `events` if they follow `after` without a hole; a hole (events a failover lost, the
/// writer went on past them) ends the follower: never a silently partial stream (the
/// client's next resume hears why).
fn contiguous(after: u64, events: Vec<StoredEvent>) -> Result<Vec<StoredEvent>, StoreError> {
    let holes = events
        .iter()
        .zip(after + 1..)
        .any(|(ev, want)| ev.id.seq != want);
    if holes {
        return Err(StoreError::Evicted);
    }
    Ok(events)
}

fn parse_range(v: Value, stream: StreamId) -> Result<Vec<StoredEvent>, StoreError> {
    let reply: redis::streams::StreamRangeReply =
        redis::from_redis_value(v).map_err(|e| StoreError::backend(e.to_string()))?;
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
        .ok_or_else(|| StoreError::backend(format!("unexpected stream id {}", id.id)))?;
    let message: Vec<u8> = id
        .map
        .get("m")
        .map(|v| redis::from_redis_value(v.clone()))
        .transpose()
        .map_err(|e| StoreError::backend(e.to_string()))?
        .unwrap_or_default();
    Ok(StoredEvent {
        id: EventId { stream, seq },
        message: Bytes::from(message),
    })
}

fn parse_xread(v: Value, stream: StreamId) -> Result<Vec<StoredEvent>, StoreError> {
    let reply: Option<redis::streams::StreamReadReply> =
        redis::from_redis_value(v).map_err(|e| StoreError::backend(e.to_string()))?;
    let mut out = Vec::new();
    for key in reply.map(|r| r.keys).unwrap_or_default() {
        for id in key.ids {
            out.push(stored_event(id, stream)?);
        }
    }
    Ok(out)
}
