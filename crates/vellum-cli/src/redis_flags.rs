//! The Redis flags of `vellum serve` that are not about one store: how long a Redis
//! operation may take, how failovers are followed, whether writes wait for replicas; and
//! the one connection per Redis URL that every store given that URL shares.
//!
//! The URLs themselves (`redis://`, `redis-cluster://`, `redis-sentinel://…/MASTER_NAME`)
//! are parsed by the library, in one place (`vellum::store::redis`).

use std::time::Duration;

use clap::Args;
use vellum::store::redis::{Redis, RedisOptions};

/// How Redis operations are bounded and failovers followed (docs/cluster.md, "Failures").
#[derive(Args, Debug)]
pub(crate) struct RedisArgs {
    /// The store timeout: the longest one Redis operation may take, retries over a
    /// reconnect or a failover included; past it the request gets 503 with Retry-After.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "2s")]
    redis_timeout: Duration,
    /// How often the Redis topology is checked while all is well (a cluster's slot map, the
    /// master the Sentinels name); a failed command has it checked at once.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "1s")]
    redis_topology_interval: Duration,
    /// Replicas that must acknowledge each stored event and new session (Redis `WAIT`)
    /// before it counts as written, so a failover cannot lose it (0: do not wait).
    #[arg(long, value_name = "N", default_value_t = 0)]
    redis_wait_replicas: u32,
    /// How long a write waits for `--redis-wait-replicas`; past it the write is kept on the
    /// master alone, as without waiting.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "100ms")]
    redis_wait_timeout: Duration,
}

/// Connects to each Redis URL once, with the Redis flags' settings.
pub(crate) struct RedisPool {
    connected: Vec<(String, Redis)>,
    options: RedisOptions,
}

impl RedisPool {
    /// A pool for `args`; stream events and metadata live `event_ttl` (the session
    /// timeout) when given.
    pub(crate) fn new(args: &RedisArgs, event_ttl: Option<Duration>) -> RedisPool {
        let mut options = RedisOptions::default();
        if let Some(ttl) = event_ttl {
            options.event_ttl = ttl;
        }
        options.command_timeout = args.redis_timeout;
        options.topology_interval = args.redis_topology_interval;
        options.wait_replicas = args.redis_wait_replicas;
        options.wait_timeout = args.redis_wait_timeout;
        RedisPool {
            connected: Vec::new(),
            options,
        }
    }

    /// The connection to `url`, made at the first call.
    pub(crate) async fn get(&mut self, url: &str) -> anyhow::Result<Redis> {
        if let Some((_, r)) = self.connected.iter().find(|(u, _)| u == url) {
            return Ok(r.clone());
        }
        let r = Redis::connect(url, self.options.clone()).await?;
        self.connected.push((url.to_owned(), r.clone()));
        Ok(r)
    }

    /// Every connection made (readiness checks each).
    pub(crate) fn into_connections(self) -> Vec<Redis> {
        self.connected.into_iter().map(|(_, r)| r).collect()
    }
}
