//! [`MemoryRateLimiter`]: the buckets of one process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use super::{Admission, RateLimit, RateLimiter};
use crate::store::StoreError;

/// Past this many keys, full buckets are forgotten (a full bucket is what a new key gets
/// anyway), so a stream of new client addresses cannot grow the map without bound.
const PRUNE_AT: usize = 10_000;

/// Token buckets in this process (each instance limits on its own).
#[derive(Debug, Default)]
pub struct MemoryRateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl MemoryRateLimiter {
    /// No buckets yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes a token now (the synchronous core of [`RateLimiter::admit`]).
    pub fn admit_now(&self, key: &str, limit: RateLimit) -> Admission {
        let now = Instant::now();
        let burst = f64::from(limit.burst);
        let mut map = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= PRUNE_AT && !map.contains_key(key) {
            map.retain(|_, b| level(b, now, limit) < burst);
        }
        let b = map.entry(key.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let tokens = level(b, now, limit);
        if tokens >= 1.0 {
            *b = Bucket {
                tokens: tokens - 1.0,
                at: now,
            };
            Admission::Allowed
        } else {
            *b = Bucket { tokens, at: now };
            Admission::Limited {
                retry_after: Duration::from_secs_f64((1.0 - tokens) / limit.per_second),
            }
        }
    }
}

/// A bucket's tokens at `now`.
fn level(b: &Bucket, now: Instant, limit: RateLimit) -> f64 {
    let flowed = now.saturating_duration_since(b.at).as_secs_f64() * limit.per_second;
    (b.tokens + flowed).min(f64::from(limit.burst))
}

impl RateLimiter for MemoryRateLimiter {
    fn admit(
        &self,
        key: &str,
        limit: RateLimit,
    ) -> BoxFuture<'static, Result<Admission, StoreError>> {
        let a = self.admit_now(key, limit);
        Box::pin(std::future::ready(Ok(a)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_refusals_with_the_wait() {
        let l = MemoryRateLimiter::new();
        let limit = RateLimit::new(0.5, 2);
        assert_eq!(l.admit_now("a", limit), Admission::Allowed);
        assert_eq!(l.admit_now("a", limit), Admission::Allowed);
        match l.admit_now("a", limit) {
            Admission::Limited { retry_after } => {
                assert!(retry_after > Duration::from_millis(1500), "{retry_after:?}");
                assert!(retry_after <= Duration::from_secs(2), "{retry_after:?}");
            }
            other => panic!("{other:?}"),
        }
        // Another key has its own bucket.
        assert_eq!(l.admit_now("b", limit), Admission::Allowed);
    }
}
