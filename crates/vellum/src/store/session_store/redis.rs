//! [`RedisSessionStore`]: each session record a JSON string key that expires with the
//! session's time to live; deleting a session drops every key it has. Key layout: the
//! `redis` module's docs.

use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::AsyncCommands;

use super::{SessionRecord, SessionStore};
use crate::store::error::StoreError;
use crate::store::redis::{Call, Redis, retrying, scripts};

impl Redis {
    /// The session store on this connection.
    pub fn session_store(&self) -> RedisSessionStore {
        self.mark_sessions_here();
        RedisSessionStore(self.clone())
    }
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
        let wait = self.0.wait();
        Box::pin(async move {
            let json = json.map_err(|e| StoreError::backend(e.to_string()))?;
            let ms = ttl.as_millis() as u64;
            // `NX`: run twice (a retry over a lost answer), the second finds it there.
            retrying(conn, |mut c| {
                let mut set = redis::cmd("SET");
                set.arg(&key).arg(&json).arg("NX").arg("PX").arg(ms);
                let wait = wait.filter(|_| c.replicas_for(key.as_bytes()));
                let mut pipe = redis::pipe();
                if let Some(w) = wait {
                    // A new session survives a failover once a replica has it. Nothing
                    // ignored: a cluster connection follows a `MOVED` only in the answers
                    // it hands back.
                    pipe.add_command(set.clone())
                        .cmd("WAIT")
                        .arg(w.replicas)
                        .arg(w.timeout.as_millis() as u64);
                }
                async move {
                    if let Some(w) = wait {
                        let (_, acked) = pipe.query_async::<(Option<String>, i64)>(&mut c).await?;
                        if acked < i64::from(w.replicas) {
                            c.short_of_replicas();
                        }
                        Ok(())
                    } else {
                        set.query_async::<Option<String>>(&mut c).await.map(|_| ())
                    }
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
                    .map_err(|e| StoreError::backend(format!("corrupt session record: {e}"))),
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
            let json = json.map_err(|e| StoreError::backend(e.to_string()))?;
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
