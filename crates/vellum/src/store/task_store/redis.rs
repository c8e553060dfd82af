//! [`RedisTaskStore`]: every task one Redis hash, so every instance sharing the Redis answers
//! for every task, and a task whose instance died is failed by whichever instance looks at it
//! next.
//!
//! | key | type | what |
//! |---|---|---|
//! | `P:{t:ID}` | hash | `rec` (the record, JSON), `ver` (bumped by every write), `status`, `inst` (the running instance), `beat` (its last heartbeat, Redis time in ms); expires with the task's ttl, never while it runs |
//! | `P:{o:OWNER}:tasks` | sorted set | the ids of one owner's legacy tasks (for `tasks/list`), by creation time; expires with the newest |
//!
//! Every script touches one key (so one hash slot). Writes are optimistic: read the record
//! and its version, change it here, write it back only if the version did not move (else read
//! again). The running instance refreshes `beat` of each of its tasks every third of the
//! heartbeat window; a reader that finds a running task whose beat is older than the window
//! fails it ("the instance running it stopped"). Times come from Redis (`TIME`), so the
//! instances' clocks do not matter. Signals ride the message bus.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::Script;
use tokio::sync::broadcast;

use super::memory::{apply, record_answers};
use super::{Answered, TaskOutcome, TaskRecord, TaskSignal, TaskStore, TaskTransition};
use crate::protocol::{ErrorObject, InputResponses, TaskStatus};
use crate::store::bus::{BusMessage, MessageBus, TaskEvent};
use crate::store::error::StoreError;
use crate::store::redis::{Conn, Redis, retrying};
use crate::sync::lock;

/// KEYS[1] task; ARGV record, status, instance, ttl ms.
static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'rec', ARGV[1], 'ver', 1, 'status', ARGV[2], 'inst', ARGV[3], 'beat', now)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
",
    )
});

/// KEYS[1] task. Returns `{record, version, status, ms since the last beat}`, or `{}`.
static READ: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('HMGET', KEYS[1], 'rec', 'ver', 'status', 'beat')
if not v[1] then return {} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {v[1], v[2], v[3], tostring(now - tonumber(v[4] or '0'))}
",
    )
});

/// KEYS[1] task; ARGV version read, new record, new status. 1 when written, 0 when the
/// version moved (or the task is gone).
static WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'ver') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'status', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'ver', 1)
return 1
",
    )
});

/// KEYS[1] task; ARGV instance, ms to keep it at least. 1 while the task runs on that
/// instance (beat recorded), 0 otherwise.
static BEAT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('HMGET', KEYS[1], 'status', 'inst')
if not v[1] or v[2] ~= ARGV[1] or v[1] == 'completed' or v[1] == 'failed' or v[1] == 'cancelled' then
  return 0
end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'beat', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
",
    )
});

/// KEYS[1] owner index; ARGV score, id, ttl ms (the index lives as long as its newest task).
static INDEX: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
",
    )
});

/// Runs a script on its keys, once more on a broken connection.
async fn run<T: redis::FromRedisValue>(
    conn: Conn,
    script: &'static Script,
    keys: &[&str],
    args: &[&str],
) -> Result<T, StoreError> {
    retrying(conn, |mut c| {
        let mut inv = script.prepare_invoke();
        for k in keys {
            inv.key(*k);
        }
        for a in args {
            inv.arg(*a);
        }
        async move { inv.invoke_async(&mut c).await }
    })
    .await
}

fn status_name(s: TaskStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::backend(format!("corrupt task record: {e}"))
}

impl Redis {
    /// The task store on this connection. A task whose instance stops beating for
    /// `heartbeat_window` is failed by the next instance that reads it. Call it inside a
    /// Tokio runtime (it starts this instance's task heartbeat and the signal listener).
    pub fn task_store(&self, heartbeat_window: Duration) -> RedisTaskStore {
        let (tx, _) = broadcast::channel(1024);
        let store = RedisTaskStore {
            inner: Arc::new(Shared {
                redis: self.clone(),
                window: heartbeat_window.max(Duration::from_millis(300)),
                running: Mutex::default(),
                tx,
            }),
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(beat_loop(Arc::downgrade(&store.inner)));
            rt.spawn(signal_loop(
                self.bus_messages(),
                Arc::downgrade(&store.inner),
            ));
        }
        store
    }
}

struct Shared {
    redis: Redis,
    window: Duration,
    /// Tasks running on this instance (their beats).
    running: Mutex<HashSet<String>>,
    tx: broadcast::Sender<TaskSignal>,
}

/// [`TaskStore`] on Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisTaskStore {
    inner: Arc<Shared>,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("instance", &self.inner.redis.instance_id())
            .field("heartbeat_window", &self.inner.window)
            .finish_non_exhaustive()
    }
}

async fn beat_loop(shared: Weak<Shared>) {
    let (every, mut fresh) = match shared.upgrade() {
        Some(s) => (s.window / 3, s.redis.conn().generations()),
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    loop {
        // Also at once on a fresh link: a failover may have kept the beats from landing.
        tokio::select! {
            _ = tick.tick() => {}
            _ = fresh.changed() => {}
        }
        let Some(s) = shared.upgrade() else { return };
        let ids: Vec<String> = lock(&s.running).iter().cloned().collect();
        let keep = (s.window * 3).as_millis().to_string();
        for id in ids {
            let key = s.key(&id);
            let r: Result<i64, _> = run(
                s.redis.conn(),
                &BEAT,
                &[&key],
                &[s.redis.instance_id(), &keep],
            )
            .await;
            // Errors (Redis down) are retried on the next beat; 0: no longer runs here.
            if matches!(r, Ok(0)) {
                lock(&s.running).remove(&id);
            }
        }
    }
}

async fn signal_loop(mut rx: broadcast::Receiver<BusMessage>, shared: Weak<Shared>) {
    loop {
        match rx.recv().await {
            Ok(BusMessage::Task(signal)) => {
                let Some(s) = shared.upgrade() else { return };
                let _ = s.tx.send(signal);
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

impl Shared {
    fn key(&self, id: &str) -> String {
        format!("{}:{{t:{id}}}", self.redis.options().prefix)
    }

    fn index(&self, owner: &str) -> String {
        format!("{}:{{o:{owner}}}:tasks", self.redis.options().prefix)
    }

    /// The record, its version, and whether its instance stopped beating.
    async fn read(&self, id: &str) -> Result<Option<(TaskRecord, String, bool)>, StoreError> {
        let v: Vec<String> = run(self.redis.conn(), &READ, &[&self.key(id)], &[]).await?;
        let [rec, ver, _status, age] = v.as_slice() else {
            return Ok(None);
        };
        let record: TaskRecord = serde_json::from_str(rec).map_err(corrupt)?;
        let silent = age.parse::<u128>().unwrap_or(0) > self.window.as_millis();
        // A beat missed while Redis was unreachable (this instance's link not steady for a
        // whole window) says nothing: the running instance could not beat either.
        let steady = self.redis.conn().steady_for() >= self.window;
        let dead = silent && steady && !record.task.status.is_terminal();
        Ok(Some((record, ver.clone(), dead)))
    }

    async fn write(&self, id: &str, ver: &str, record: &TaskRecord) -> Result<bool, StoreError> {
        let json = serde_json::to_string(record).map_err(corrupt)?;
        let status = status_name(record.task.status);
        let n: i64 = run(
            self.redis.conn(),
            &WRITE,
            &[&self.key(id)],
            &[ver, &json, &status],
        )
        .await?;
        if record.task.status.is_terminal() {
            lock(&self.running).remove(id);
        }
        Ok(n == 1)
    }

    /// Reads, changes and writes back a record until no other writer came between.
    async fn update<R>(
        &self,
        id: &str,
        mut f: impl FnMut(&mut TaskRecord) -> (bool, R),
    ) -> Result<Option<R>, StoreError> {
        for _ in 0..32 {
            let Some((mut record, ver, _)) = self.read(id).await? else {
                return Ok(None);
            };
            let (changed, r) = f(&mut record);
            if !changed || self.write(id, &ver, &record).await? {
                return Ok(Some(r));
            }
        }
        Err(StoreError::backend(format!(
            "task {id}: too many concurrent writers"
        )))
    }

    async fn publish(&self, signal: TaskSignal) -> Result<(), StoreError> {
        self.redis.bus().publish(BusMessage::Task(signal)).await
    }
}

/// The error of a task whose instance stopped beating.
fn lost(window: Duration) -> (String, ErrorObject) {
    let message = format!(
        "The server instance running this task stopped (no heartbeat for {} ms); the task did not finish",
        window.as_millis()
    );
    (message.clone(), ErrorObject::internal(message))
}

impl TaskStore for RedisTaskStore {
    fn instance_id(&self) -> &str {
        self.inner.redis.instance_id()
    }

    fn create(
        &self,
        record: &TaskRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let s = self.inner.clone();
        let record = record.clone();
        Box::pin(async move {
            let id = record.task.task_id.clone();
            let json = serde_json::to_string(&record).map_err(corrupt)?;
            let ttl_ms = ttl.as_millis().max(1).to_string();
            let status = status_name(record.task.status);
            let _: i64 = run(
                s.redis.conn(),
                &CREATE,
                &[&s.key(&id)],
                &[&json, &status, &record.instance, &ttl_ms],
            )
            .await?;
            // Beaten from now on (not before the key exists: a beat would find no task).
            if record.instance == s.redis.instance_id() {
                lock(&s.running).insert(id.clone());
            }
            if !record.modern {
                let score = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
                    .to_string();
                let _: i64 = run(
                    s.redis.conn(),
                    &INDEX,
                    &[&s.index(&record.owner)],
                    &[&score, &id, &ttl_ms],
                )
                .await?;
            }
            Ok(())
        })
    }

    fn load(
        &self,
        id: &str,
        updated: &str,
    ) -> BoxFuture<'static, Result<Option<TaskRecord>, StoreError>> {
        let s = self.inner.clone();
        let (id, updated) = (id.to_owned(), updated.to_owned());
        Box::pin(async move {
            let Some((record, _, dead)) = s.read(&id).await? else {
                return Ok(None);
            };
            if !dead {
                return Ok(Some(record));
            }
            let (message, error) = lost(s.window);
            let mut failed = false;
            let record = s
                .update(&id, |r| {
                    failed = apply(
                        r,
                        TaskTransition::Finish {
                            status: TaskStatus::Failed,
                            message: Some(message.clone()),
                            outcome: Some(TaskOutcome::Error(error.clone())),
                        },
                        &updated,
                    );
                    (failed, r.clone())
                })
                .await?;
            if failed {
                let _ = s
                    .publish(TaskSignal {
                        task: id.clone(),
                        event: TaskEvent::StatusChanged,
                    })
                    .await;
            }
            Ok(record)
        })
    }

    fn list(&self, owner: &str) -> BoxFuture<'static, Result<Vec<TaskRecord>, StoreError>> {
        let s = self.inner.clone();
        let index = s.index(owner);
        let owner = owner.to_owned();
        Box::pin(async move {
            let ids: Vec<String> = retrying(s.redis.conn(), |mut c| {
                let index = index.clone();
                async move {
                    redis::cmd("ZRANGE")
                        .arg(index)
                        .arg(0)
                        .arg(-1)
                        .query_async(&mut c)
                        .await
                }
            })
            .await?;
            let mut out = Vec::with_capacity(ids.len());
            let now = super::iso8601(std::time::SystemTime::now());
            for id in ids {
                let loaded = TaskStore::load(&RedisTaskStore { inner: s.clone() }, &id, &now);
                match loaded.await? {
                    Some(r) if r.owner == owner => out.push(r),
                    Some(_) => {}
                    None => {
                        let _: Result<i64, _> = retrying(s.redis.conn(), |mut c| {
                            let (index, id) = (index.clone(), id.clone());
                            async move {
                                redis::cmd("ZREM")
                                    .arg(index)
                                    .arg(id)
                                    .query_async(&mut c)
                                    .await
                            }
                        })
                        .await;
                    }
                }
            }
            Ok(out)
        })
    }

    fn transition(
        &self,
        id: &str,
        change: TaskTransition,
        updated: &str,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let s = self.inner.clone();
        let (id, updated) = (id.to_owned(), updated.to_owned());
        Box::pin(async move {
            let applied = s
                .update(&id, |r| {
                    let ok = apply(r, change.clone(), &updated);
                    (ok, ok)
                })
                .await?;
            Ok(applied.unwrap_or(false))
        })
    }

    fn answer(
        &self,
        id: &str,
        answers: InputResponses,
    ) -> BoxFuture<'static, Result<Answered, StoreError>> {
        let s = self.inner.clone();
        let id = id.to_owned();
        Box::pin(async move {
            let done = s
                .update(&id, |r| {
                    let a = record_answers(r, answers.clone());
                    (matches!(a, Answered::Recorded { any: true, .. }), a)
                })
                .await?;
            Ok(done.unwrap_or(Answered::Unknown))
        })
    }

    fn signal(&self, signal: TaskSignal) -> BoxFuture<'static, Result<(), StoreError>> {
        let s = self.inner.clone();
        Box::pin(async move { s.publish(signal).await })
    }

    fn signals(&self) -> broadcast::Receiver<TaskSignal> {
        self.inner.tx.subscribe()
    }
}
