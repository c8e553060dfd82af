//! The store flags of `vellum serve`: `--redis URL` puts every store in Redis at once
//! (sessions and the bus, events, tasks, rate limits, DPoP replay); `--session-store`,
//! `--event-store`, `--task-store`, `--rate-limit-store` and `--auth-dpop-replay` override it
//! one store at a time (`memory` keeps that store in this process). Each Redis URL is
//! connected once, whichever stores name it.
//!
//! A URL is Redis when the store's own parser says so ([`vellum::store::redis::is_redis_url`]:
//! `redis://`, `rediss://`, `redis-cluster://…`), so a scheme the stores learn is accepted here
//! without a change.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use vellum::store::MemoryEventStore;
use vellum::store::redis::{URL_FORMS as REDIS_URLS, is_redis_url};

use crate::redis_flags::RedisPool;

/// The store each flag names, `--redis` filling in those not given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreFlags<'a> {
    pub(crate) redis: Option<&'a str>,
    pub(crate) event_store: Option<&'a str>,
    pub(crate) session_store: Option<&'a str>,
    pub(crate) task_store: Option<&'a str>,
    pub(crate) rate_limit_store: Option<&'a str>,
    pub(crate) dpop_replay: Option<&'a str>,
}

impl<'a> StoreFlags<'a> {
    /// The flag's own value, else `--redis`.
    fn or_redis(&self, own: Option<&'a str>) -> Option<&'a str> {
        own.or(self.redis)
    }

    /// Where events are kept (`None`: no event store).
    pub(crate) fn event_store(&self) -> Option<&'a str> {
        self.or_redis(self.event_store)
    }

    /// The Redis URL of the session store and the bus (`None`: sessions in this process).
    pub(crate) fn session_store(&self) -> anyhow::Result<Option<&'a str>> {
        redis_or_memory("--session-store", self.or_redis(self.session_store))
    }

    /// The Redis URL of the task store (`None`: tasks in this process).
    pub(crate) fn task_store(&self) -> anyhow::Result<Option<&'a str>> {
        redis_or_memory("--task-store", self.or_redis(self.task_store))
    }

    /// The Redis URL of the rate limiter (`None`: buckets in this process). `limited`: whether
    /// any limit is configured; `--redis` alone asks for no limit, `--rate-limit-store` does.
    pub(crate) fn rate_limit_store(&self, limited: bool) -> anyhow::Result<Option<&'a str>> {
        if self.rate_limit_store.is_some() && !limited {
            bail!(
                "--rate-limit-store needs a limit to hold: --rate-limit, --rate-limit-method or --rate-limit-tool"
            );
        }
        if !limited {
            return Ok(None);
        }
        redis_or_memory("--rate-limit-store", self.or_redis(self.rate_limit_store))
    }

    /// The Redis URL of the DPoP replay cache (`None`: proofs remembered in this process).
    pub(crate) fn dpop_replay(&self) -> anyhow::Result<Option<&'a str>> {
        redis_or_memory("--auth-dpop-replay", self.or_redis(self.dpop_replay))
    }
}

/// `memory` (or nothing) is `None`; a Redis URL is itself; anything else is an error naming
/// `flag`.
fn redis_or_memory<'a>(flag: &str, spec: Option<&'a str>) -> anyhow::Result<Option<&'a str>> {
    match spec {
        None | Some("memory") => Ok(None),
        Some(url) if is_redis_url(url) => Ok(Some(url)),
        Some(other) => {
            bail!("{flag}: expected memory or a Redis URL ({REDIS_URLS}), got {other:?}")
        }
    }
}

/// The value of `--redis`: a URL the Redis stores accept.
pub(crate) fn parse_redis_url(url: &str) -> Result<String, String> {
    if is_redis_url(url) {
        Ok(url.to_owned())
    } else {
        Err(format!("expected a Redis URL ({REDIS_URLS}), got {url:?}"))
    }
}

/// The event store `spec` names: `memory[:BYTES]` or a Redis URL.
pub(crate) async fn event_store(
    spec: &str,
    redis: &mut RedisPool,
) -> anyhow::Result<Arc<dyn vellum::store::EventStore>> {
    if is_redis_url(spec) {
        return Ok(Arc::new(redis.get(spec).await?.event_store()));
    }
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    match kind {
        "memory" => {
            let bytes = if arg.is_empty() {
                MemoryEventStore::DEFAULT_MAX_BYTES
            } else {
                arg.parse().with_context(|| {
                    format!("--event-store memory:BYTES: {arg:?} is not a byte count")
                })?
            };
            Ok(Arc::new(MemoryEventStore::new(bytes)))
        }
        other => {
            bail!("--event-store: unknown store {other:?} (expected memory[:BYTES], {REDIS_URLS})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only_redis(url: &str) -> StoreFlags<'_> {
        StoreFlags {
            redis: Some(url),
            event_store: None,
            session_store: None,
            task_store: None,
            rate_limit_store: None,
            dpop_replay: None,
        }
    }

    #[test]
    fn redis_alone_names_every_store() {
        let url = "redis-cluster://127.0.0.1:7000,127.0.0.1:7001";
        let f = only_redis(url);
        assert_eq!(f.event_store(), Some(url));
        assert_eq!(f.session_store().unwrap(), Some(url));
        assert_eq!(f.task_store().unwrap(), Some(url));
        assert_eq!(f.rate_limit_store(true).unwrap(), Some(url));
        assert_eq!(f.dpop_replay().unwrap(), Some(url));
        // No limit configured: nothing to keep.
        assert_eq!(f.rate_limit_store(false).unwrap(), None);
    }

    #[test]
    fn a_store_flag_overrides_redis() {
        let f = StoreFlags {
            event_store: Some("memory:1000"),
            task_store: Some("memory"),
            session_store: Some("redis://127.0.0.1:6380"),
            ..only_redis("redis://127.0.0.1:6379")
        };
        assert_eq!(f.event_store(), Some("memory:1000"));
        assert_eq!(f.task_store().unwrap(), None);
        assert_eq!(f.session_store().unwrap(), Some("redis://127.0.0.1:6380"));
        assert_eq!(f.dpop_replay().unwrap(), Some("redis://127.0.0.1:6379"));
    }

    #[test]
    fn a_store_that_is_not_redis_is_an_error_naming_its_flag() {
        let f = StoreFlags {
            task_store: Some("postgres://x"),
            ..only_redis("redis://127.0.0.1:6379")
        };
        let e = f.task_store().unwrap_err().to_string();
        assert!(
            e.contains("--task-store") && e.contains("postgres://x"),
            "{e}"
        );
    }

    #[test]
    fn the_redis_flag_takes_only_redis_urls() {
        assert!(parse_redis_url("redis://127.0.0.1:6379").is_ok());
        assert!(parse_redis_url("redis-cluster://127.0.0.1:7000").is_ok());
        let e = parse_redis_url("http://127.0.0.1:6379").unwrap_err();
        assert!(e.contains("http://127.0.0.1:6379"), "{e}");
    }
}
