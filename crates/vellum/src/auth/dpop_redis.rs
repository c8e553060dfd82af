//! [`RedisReplayCache`]: the DPoP `jti` replay cache shared by every instance through Redis,
//! so that a proof accepted by one instance is refused by all the others.
//!
//! One key per accepted proof, written with `SET key 1 NX PX ttl`: the write and the
//! question "was it there?" are one atomic command, so two instances that receive the same
//! proof at the same moment cannot both accept it. The key expires with the proof's
//! remaining lifetime, so Redis holds no more proofs than are still acceptable.
//!
//! It has a connection of its own ([`RedisReplayCache::connect`], one node), or shares the
//! stores' [`Redis`] handle ([`RedisReplayCache::shared`]: one node, a cluster, whatever
//! that handle's URL names), so one URL serves every store of a process.
//!
//! Not here: what makes the key and the lifetime (`dpop.rs`).

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::dpop::{DpopReplayCache, ReplayCacheError, ReplayFuture};
use crate::store::redis::Redis;

/// A [`DpopReplayCache`] in Redis: several resource-server instances given the same Redis
/// (and prefix) accept each proof once between them.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use vellum::auth::RedisReplayCache;
///
/// let cache = RedisReplayCache::connect("redis://127.0.0.1:6379", "vellum").await?;
/// // AuthLayer::builder(..).dpop_replay_cache(Arc::new(cache))
/// # let _ = Arc::new(cache);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisReplayCache {
    conn: Backend,
    prefix: String,
}

/// Where the commands go.
#[derive(Clone)]
enum Backend {
    /// A connection of this cache's own.
    Own(ConnectionManager),
    /// The stores' connection.
    Shared(Redis),
}

impl std::fmt::Debug for RedisReplayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisReplayCache")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisReplayCache {
    /// Connects to `url` (`redis://` or `rediss://`); keys are `<prefix>:dpop:{<digest>}`.
    /// Fails at once ([`ReplayCacheError::Backend`], with the reason) when the URL is not a
    /// Redis URL or Redis does not answer; later outages make proofs wait for one command
    /// timeout (2 s) and then get 503, never an unchecked pass.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, ReplayCacheError> {
        let client = redis::Client::open(url)
            .map_err(|e| ReplayCacheError::Backend(format!("invalid Redis URL {url:?}: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|e| ReplayCacheError::Backend(format!("cannot reach Redis at {url}: {e}")))?;
        Ok(RedisReplayCache {
            conn: Backend::Own(conn),
            prefix: prefix.to_owned(),
        })
    }

    /// On the stores' connection `redis` (see [`Redis::connect`]: one node or a Redis
    /// Cluster), so a process given one Redis URL keeps its sessions, events, tasks, rate
    /// limits and DPoP proofs there with one connection. Keys are `<prefix>:dpop:{<digest>}`;
    /// outages behave as with [`connect`](Self::connect) (the handle's command timeout, then
    /// 503).
    pub fn shared(redis: &Redis, prefix: &str) -> Self {
        RedisReplayCache {
            conn: Backend::Shared(redis.clone()),
            prefix: prefix.to_owned(),
        }
    }

    /// The Redis key of a proof. The digest is the hash tag: in a Redis Cluster the keys
    /// spread over every slot, and a key's one command goes to one node.
    fn key(&self, digest: &str) -> String {
        format!("{}:dpop:{{{digest}}}", self.prefix)
    }
}

impl DpopReplayCache for RedisReplayCache {
    fn first_use<'a>(&'a self, key: &'a str, ttl: Duration) -> ReplayFuture<'a> {
        Box::pin(async move {
            // At least a millisecond: PX 0 is an error.
            let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.key(key)).arg(1).arg("NX").arg("PX").arg(ms);
            let set: Option<String> = match &self.conn {
                Backend::Own(conn) => cmd
                    .query_async(&mut conn.clone())
                    .await
                    .map_err(|e| ReplayCacheError::Backend(e.to_string()))?,
                Backend::Shared(redis) => redis
                    .query(&cmd)
                    .await
                    .map_err(|e| ReplayCacheError::Backend(e.to_string()))?,
            };
            // `OK` when the key was written (first use), nil when it was already there.
            Ok(set.is_some())
        })
    }
}
