//! `RedisRateLimiter`: buckets shared by every instance on one Redis, one atomic script per
//! admission (the clock is Redis's `TIME`, so instances' clocks do not matter). Each key is
//! `<prefix>:rl:{<key>}`: its own hash tag, so a bucket lives in one slot of a cluster; it
//! expires once it would be full again.

use std::sync::LazyLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::Script;

use super::{Admission, RateLimit, RateLimiter};
use crate::store::StoreError;
use crate::store::redis::{Redis, backend};

/// ARGV = rate per second, burst, ttl ms. Returns 0 when a token was taken, else the
/// milliseconds until the next one.
static ADMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local rate, burst, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(b[1]), tonumber(b[2])
if tokens == nil or at == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.max(1, math.ceil((1 - tokens) * 1000 / rate)) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return wait
"#,
    )
});

/// Token buckets shared through Redis (see the module documentation).
#[derive(Clone, Debug)]
pub struct RedisRateLimiter {
    redis: Redis,
}

impl Redis {
    /// Rate-limit buckets shared by every instance on this Redis.
    pub fn rate_limiter(&self) -> RedisRateLimiter {
        RedisRateLimiter {
            redis: self.clone(),
        }
    }
}

impl RateLimiter for RedisRateLimiter {
    fn admit(
        &self,
        key: &str,
        limit: RateLimit,
    ) -> BoxFuture<'static, Result<Admission, StoreError>> {
        let limit = limit.usable();
        let name = format!("{}:rl:{{{key}}}", self.redis.options().prefix);
        let ttl = (limit.refill_time().as_millis() as u64).saturating_add(1000);
        let mut conn = self.redis.conn();
        Box::pin(async move {
            let wait: u64 = ADMIT
                .key(name)
                .arg(limit.per_second)
                .arg(limit.burst)
                .arg(ttl)
                .invoke_async(&mut conn)
                .await
                .map_err(backend)?;
            Ok(match wait {
                0 => Admission::Allowed,
                ms => Admission::Limited {
                    retry_after: Duration::from_millis(ms),
                },
            })
        })
    }
}
