//! [`RateLimiter`]: token buckets by key (a principal, a client address), for the
//! Streamable HTTP handler's per-principal rate limit. [`MemoryRateLimiter`] holds the
//! buckets of one process; `RedisRateLimiter` (feature `redis`) shares them between
//! instances, one atomic script per admission.
//!
//! Not here: what the key is and what a refusal looks like on the wire (the handler).

pub(crate) mod memory;
#[cfg(feature = "redis")]
pub(crate) mod redis;

use std::time::Duration;

use futures_util::future::BoxFuture;

use super::StoreError;

/// A token bucket's shape: `per_second` tokens flow in, at most `burst` are held; a request
/// takes one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Tokens added per second (the sustained rate; above zero).
    pub per_second: f64,
    /// The most tokens held (the burst a quiet client may send at once; at least 1).
    pub burst: u32,
}

impl RateLimit {
    /// `per_second` sustained, bursts of `burst` (at least 1; a non-positive or non-finite
    /// rate becomes one token a day, so nothing is unlimited by accident).
    pub fn new(per_second: f64, burst: u32) -> Self {
        let per_second = if per_second.is_finite() && per_second > 0.0 {
            per_second
        } else {
            1.0 / 86_400.0
        };
        RateLimit {
            per_second,
            burst: burst.max(1),
        }
    }

    /// `n` tokens a second with bursts of one second's worth (`n`, at least 1): what
    /// `vellum serve --rate-limit N/s` sets without `--rate-burst`.
    pub fn per_second(n: u32) -> Self {
        RateLimit::new(f64::from(n), n)
    }

    /// How long a bucket takes to fill from empty: how long a key is worth remembering.
    pub fn refill_time(&self) -> Duration {
        let l = self.usable();
        Duration::from_secs_f64((f64::from(l.burst) / l.per_second).min(86_400.0 * 365.0))
    }

    /// The limit as [`new`](Self::new) would make it: the fields are public, and a rate that
    /// is not above zero (or not finite) would make every wait a panic or a division by zero.
    pub(crate) fn usable(self) -> RateLimit {
        RateLimit::new(self.per_second, self.burst)
    }
}

/// What a bucket said to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// A token was taken.
    Allowed,
    /// No token: the next one comes after this long.
    Limited {
        /// When to try again.
        retry_after: Duration,
    },
}

/// Token buckets by key.
pub trait RateLimiter: Send + Sync + std::fmt::Debug + 'static {
    /// Takes a token from `key`'s bucket (a full one when the key is new).
    fn admit(
        &self,
        key: &str,
        limit: RateLimit,
    ) -> BoxFuture<'static, Result<Admission, StoreError>>;
}
