//! Running store operations on the shared connection: [`retrying`] bounds each by the store
//! timeout and retries it on a fresh link when the link fails (a reconnect, a failover), and
//! [`Call`] is a script call that can also wait for replicas (`WAIT`).
//!
//! A retried operation may have run once already (its answer lost with the connection), so
//! every operation of the stores is safe to run twice: writes are conditional (`SET NX`, a
//! version check, an append that knows the sequence number it expects) or idempotent.

use std::time::Duration;

use redis::{FromRedisValue, RedisResult, ServerErrorKind};

use super::link::{Conn, unavailable};
use crate::store::error::StoreError;

/// A Redis failure as a store error.
pub(in crate::store) fn backend(e: redis::RedisError) -> StoreError {
    StoreError::backend(e.to_string())
}

/// Runs `op` within the store timeout. When the link fails (lost, refused, a node mid
/// failover), it runs again as soon as the supervisor put a fresh link in place, or after a
/// short pause, for as long as the timeout allows; an attempt still waiting on a link that
/// was just replaced is abandoned for the fresh one.
pub(in crate::store) async fn retrying<T, F, Fut>(conn: Conn, op: F) -> Result<T, StoreError>
where
    F: Fn(Conn) -> Fut,
    Fut: std::future::Future<Output = RedisResult<T>>,
{
    let timeout = conn.timeout();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut fresh = conn.generations();
    let mut pause = Duration::from_millis(50);
    loop {
        fresh.borrow_and_update();
        let attempt = tokio::time::timeout_at(deadline, op(conn.clone()));
        let result = tokio::select! {
            r = attempt => match r {
                Ok(r) => r,
                Err(_) => {
                    conn.note_timeout();
                    return Err(StoreError::backend(format!(
                        "Redis did not answer within the store timeout ({timeout:?})"
                    )));
                }
            },
            _ = fresh.changed() => continue,
        };
        match result {
            Ok(v) => return Ok(v),
            Err(e) if unavailable(&e) => {
                let wake = tokio::time::Instant::now() + pause;
                if wake >= deadline {
                    return Err(backend(e));
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(wake) => {}
                    _ = fresh.changed() => {}
                }
                pause = (pause * 2).min(Duration::from_millis(400));
            }
            Err(e) => return Err(backend(e)),
        }
    }
}

/// Waiting for replicas after a write: how many, for how long.
#[derive(Clone, Copy, Debug)]
pub(in crate::store) struct Wait {
    pub(in crate::store) replicas: u32,
    pub(in crate::store) timeout: Duration,
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
    wait: Option<Wait>,
}

impl Call {
    pub(in crate::store) fn new(script: &'static redis::Script) -> Self {
        Call {
            script,
            key: None,
            args: Vec::new(),
            wait: None,
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

    /// After the script, waits for `wait` (when set): `WAIT` in the same pipeline, so it
    /// runs on the node that ran the script, right after it.
    pub(in crate::store) fn replicated(mut self, wait: Option<Wait>) -> Self {
        self.wait = wait;
        self
    }

    pub(in crate::store) async fn run<T: FromRedisValue>(
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
            let wait = self
                .wait
                .filter(|w| w.replicas > 0 && key.is_some_and(|k| c.replicas_for(k)));
            let (script, args) = (self.script, &self.args);
            async move {
                let Some(wait) = wait else {
                    return inv.invoke_async(&mut c).await;
                };
                let mut pipe = redis::pipe();
                let eval = pipe.cmd("EVALSHA").arg(script.get_hash());
                match key {
                    Some(k) => eval.arg(1).arg(k.as_slice()),
                    None => eval.arg(0),
                };
                for a in args {
                    eval.arg(a.as_slice());
                }
                // Nothing ignored: a cluster connection follows a `MOVED` only in the
                // answers it hands back.
                pipe.cmd("WAIT")
                    .arg(wait.replicas)
                    .arg(wait.timeout.as_millis() as u64);
                let answer = match pipe.query_async::<(T, i64)>(&mut c).await {
                    // A node that never ran the script (a replica just promoted): load it.
                    Err(e) if e.kind() == ServerErrorKind::NoScript.into() => {
                        inv.load_async(&mut c).await?;
                        pipe.query_async::<(T, i64)>(&mut c).await
                    }
                    other => other,
                };
                answer.map(|(v, acked)| {
                    if acked < i64::from(wait.replicas) {
                        c.short_of_replicas();
                    }
                    v
                })
            }
        })
        .await
    }
}
