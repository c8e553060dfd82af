//! [`RedisReplayCache`]: the DPoP `jti` replay cache shared by every instance through Redis,
//! so that a proof accepted by one instance is refused by all the others.
//!
//! One key per accepted proof, written with `SET key 1 NX PX ttl`: the write and the
//! question "was it there?" are one atomic command, so two instances that receive the same
//! proof at the same moment cannot both accept it. The key expires with the proof's
//! remaining lifetime, so Redis holds no more proofs than are still acceptable.
//!
//! The connection is a [`Redis`] handle's, so every Redis URL works here as for the stores
//! (one node, a cluster, a Sentinel-managed master) and failovers are followed the same way.
//!
//! Not here: what makes the key and the lifetime (`dpop.rs`).

use std::time::Duration;

use super::dpop::{DpopReplayCache, ReplayFuture};
use crate::store::StoreError;
use crate::store::redis::{Redis, RedisOptions};

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
    redis: Redis,
    prefix: String,
}

impl std::fmt::Debug for RedisReplayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisReplayCache")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisReplayCache {
    /// Connects to `url` (any Redis URL the stores take: `redis://`, `rediss://`,
    /// `redis-cluster://…`, `redis-sentinel://…/MASTER_NAME`); keys are
    /// `<prefix>:dpop:{<digest>}`. Fails at once ([`StoreError::Backend`], with the
    /// reason) when the URL is not a Redis URL or Redis does not answer; later outages make
    /// proofs wait for the store timeout (2 s) and then get 503, never an unchecked pass.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, StoreError> {
        let options = RedisOptions {
            prefix: prefix.to_owned(),
            ..RedisOptions::default()
        };
        let redis = Redis::connect(url, options)
            .await
            .map_err(StoreError::backend)?;
        Ok(Self::on(&redis, prefix))
    }

    /// The cache on a connection the process has already (the stores' own), with keys
    /// `<prefix>:dpop:{<digest>}`.
    pub fn on(redis: &Redis, prefix: &str) -> Self {
        RedisReplayCache {
            redis: redis.clone(),
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
            let ttl = ttl.max(Duration::from_millis(1));
            self.redis.set_if_absent(&self.key(key), ttl).await
        })
    }
}
