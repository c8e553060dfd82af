//! [`MemoryRateLimiter`]: the buckets of one process.
//!
//! O(1) per admission at any number of keys, in bounded memory: the keys are spread over
//! shards by hash (each its own lock, so admissions of different keys rarely wait on each
//! other), and each shard keeps two generations of buckets. A key is looked up in the
//! current generation, then in the previous one (and moved to the current one); when the
//! current generation is full, the previous one is dropped whole and the current one takes
//! its place. So a shard holds at most its share of the cap, what is forgotten is what was
//! used least recently (within a generation's granularity), and nothing is ever scanned.
//! A generation older than the slowest refill seen is dropped too: its buckets are full
//! again, which is what a forgotten key gets, so an idle map shrinks at no cost to anyone.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use super::{Admission, RateLimit, RateLimiter};
use crate::store::StoreError;
use crate::sync::lock;

/// Shards of the map: enough that two cores rarely meet on one lock.
const SHARDS: usize = 16;

/// Token buckets in this process (each instance limits on its own), at most
/// [`max_keys`](MemoryRateLimiter::max_keys) of them.
///
/// A key forgotten to make room for new ones comes back with a full bucket, the same as a
/// key unseen for a whole refill time; so the cap is the number of distinct clients one
/// limit can tell apart at once. Spread over the shards, it is reached a little early when
/// keys hash unevenly.
#[derive(Debug)]
pub struct MemoryRateLimiter {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    /// The most keys of one generation of one shard.
    per_generation: usize,
    max_keys: usize,
}

/// One shard: the generation being filled and the one before.
#[derive(Debug, Default)]
struct Shard {
    current: HashMap<String, Bucket>,
    previous: HashMap<String, Bucket>,
    /// When `current` started.
    started: Option<Instant>,
    /// The longest refill time of a limit seen here: a generation older than this holds
    /// only full buckets.
    slowest_refill: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Default for MemoryRateLimiter {
    fn default() -> Self {
        Self::with_max_keys(Self::DEFAULT_MAX_KEYS)
    }
}

impl MemoryRateLimiter {
    /// The default cap on keys: 100,000 (about 12 MiB of buckets at most).
    pub const DEFAULT_MAX_KEYS: usize = 100_000;

    /// No buckets yet, at most [`DEFAULT_MAX_KEYS`](Self::DEFAULT_MAX_KEYS) keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// No buckets yet, at most `max_keys` keys (at least one per shard).
    pub fn with_max_keys(max_keys: usize) -> Self {
        // Two generations per shard share the shard's part of the cap.
        let per_generation = (max_keys / SHARDS / 2).max(1);
        MemoryRateLimiter {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            per_generation,
            max_keys: per_generation * 2 * SHARDS,
        }
    }

    /// The most keys held at once.
    pub fn max_keys(&self) -> usize {
        self.max_keys
    }

    /// How many keys are held now.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = lock(s);
                s.current.len() + s.previous.len()
            })
            .sum()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        let i = (self.hasher.hash_one(key) as usize) % SHARDS;
        &self.shards[i]
    }

    /// Takes a token now (the synchronous core of [`RateLimiter::admit`]).
    pub fn admit_now(&self, key: &str, limit: RateLimit) -> Admission {
        let now = Instant::now();
        let mut shard = lock(self.shard(key));
        let limit = limit.usable();
        let tokens = level(
            &shard.bucket(key, limit, now, self.per_generation),
            now,
            limit,
        );
        if tokens >= 1.0 {
            shard.set(
                key,
                Bucket {
                    tokens: tokens - 1.0,
                    at: now,
                },
            );
            Admission::Allowed
        } else {
            shard.set(key, Bucket { tokens, at: now });
            Admission::Limited {
                retry_after: wait(tokens, limit),
            }
        }
    }

    /// What [`admit_now`](Self::admit_now) would say, taking nothing and keeping nothing
    /// (an unknown key has a full bucket).
    pub fn peek_now(&self, key: &str, limit: RateLimit) -> Admission {
        let now = Instant::now();
        let limit = limit.usable();
        let shard = lock(self.shard(key));
        let held = shard.current.get(key).or_else(|| shard.previous.get(key));
        match held.map(|b| level(b, now, limit)) {
            Some(tokens) if tokens < 1.0 => Admission::Limited {
                retry_after: wait(tokens, limit),
            },
            _ => Admission::Allowed,
        }
    }
}

impl Shard {
    /// `key`'s bucket, in the current generation from now on (moved there from the previous
    /// one, or a full one when the key is new), rotating the generations first when due.
    fn bucket(
        &mut self,
        key: &str,
        limit: RateLimit,
        now: Instant,
        per_generation: usize,
    ) -> Bucket {
        self.slowest_refill = self.slowest_refill.max(limit.refill_time());
        let started = *self.started.get_or_insert(now);
        // What is left in `previous` was last used before `current` started: when that is
        // longer ago than the slowest refill, those buckets are full and may go.
        let stale = now.saturating_duration_since(started) > self.slowest_refill;
        let mut kept = None;
        if stale || (self.current.len() >= per_generation && !self.current.contains_key(key)) {
            // Taken out first: the rotation drops the previous generation whole, and with it
            // this key's spent bucket.
            kept = self.previous.remove(key);
            self.previous = std::mem::take(&mut self.current);
            self.started = Some(now);
        }
        // A key already here costs no allocation.
        if let Some(b) = self.current.get(key) {
            return *b;
        }
        let b = kept
            .or_else(|| self.previous.remove(key))
            .unwrap_or(Bucket {
                tokens: f64::from(limit.burst),
                at: now,
            });
        self.current.insert(key.to_owned(), b);
        b
    }

    /// Stores `key`'s bucket (in the current generation since [`bucket`](Self::bucket)).
    fn set(&mut self, key: &str, bucket: Bucket) {
        if let Some(b) = self.current.get_mut(key) {
            *b = bucket;
        }
    }
}

/// A bucket's tokens at `now`.
fn level(b: &Bucket, now: Instant, limit: RateLimit) -> f64 {
    let flowed = now.saturating_duration_since(b.at).as_secs_f64() * limit.per_second;
    (b.tokens + flowed).min(f64::from(limit.burst))
}

/// How long until a bucket at `tokens` has one.
fn wait(tokens: f64, limit: RateLimit) -> Duration {
    Duration::from_secs_f64(((1.0 - tokens) / limit.per_second).min(86_400.0 * 365.0))
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
        assert!(matches!(l.peek_now("a", limit), Admission::Limited { .. }));
        match l.admit_now("a", limit) {
            Admission::Limited { retry_after } => {
                assert!(retry_after > Duration::from_millis(1500), "{retry_after:?}");
                assert!(retry_after <= Duration::from_secs(2), "{retry_after:?}");
            }
            other => panic!("{other:?}"),
        }
        // Another key has its own bucket.
        assert_eq!(l.peek_now("b", limit), Admission::Allowed);
        assert_eq!(l.admit_now("b", limit), Admission::Allowed);
    }

    /// 60,000 distinct keys (one request each, a limit of one an hour) against a cap of
    /// 10,000: the map never holds more than the cap, and a key used all along keeps its
    /// spent bucket while the flood passes (it is used more recently than the flood's keys).
    #[test]
    fn sixty_thousand_keys_stay_within_the_cap() {
        let l = MemoryRateLimiter::with_max_keys(10_000);
        let limit = RateLimit::new(1.0 / 3600.0, 1);
        assert_eq!(l.admit_now("regular", limit), Admission::Allowed);
        let mut most = 0;
        for i in 0..60_000u32 {
            assert_eq!(l.admit_now(&format!("ip:{i}"), limit), Admission::Allowed);
            if i % 100 == 0 {
                assert!(
                    matches!(l.admit_now("regular", limit), Admission::Limited { .. }),
                    "the regular key lost its bucket at {i}"
                );
                most = most.max(l.len());
            }
        }
        assert!(
            most <= l.max_keys(),
            "{most} keys held, cap {}",
            l.max_keys()
        );
        assert!(l.len() <= 10_000, "{}", l.len());
        assert!(l.len() >= 5_000, "too much forgotten: {}", l.len());
    }

    #[test]
    fn a_key_whose_lookup_rotates_the_generations_keeps_its_spent_bucket() {
        let mut shard = Shard::default();
        let limit = RateLimit::new(1.0 / 3600.0, 1);
        let t0 = Instant::now();
        // One key a generation: "a" spent, then "b" pushes it into the previous generation.
        shard.bucket("a", limit, t0, 1);
        shard.set(
            "a",
            Bucket {
                tokens: 0.0,
                at: t0,
            },
        );
        shard.bucket("b", limit, t0, 1);
        assert!(shard.previous.contains_key("a"));
        // "a" again: its own lookup rotates, and its bucket is still spent.
        let a = shard.bucket("a", limit, t0, 1);
        assert!(level(&a, t0, limit) < 1.0, "{a:?}");
        assert!(shard.current.contains_key("a"));
    }

    #[test]
    fn a_limit_of_nonsense_fields_does_not_panic() {
        let l = MemoryRateLimiter::new();
        for per_second in [-1.0, 0.0, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE] {
            let limit = RateLimit {
                per_second,
                burst: 0,
            };
            let _ = limit.refill_time();
            let k = format!("k{per_second}");
            assert_eq!(l.admit_now(&k, limit), Admission::Allowed, "{per_second}");
            assert!(matches!(l.admit_now(&k, limit), Admission::Limited { .. }));
            assert!(matches!(l.peek_now(&k, limit), Admission::Limited { .. }));
        }
    }

    #[test]
    fn an_idle_map_empties_in_two_refill_times() {
        let mut shard = Shard::default();
        // Refills in 1 s.
        let limit = RateLimit::new(1.0, 1);
        let t0 = Instant::now();
        for i in 0..200 {
            shard.bucket(&format!("k{i}"), limit, t0, 1_000);
        }
        let later = |s| t0 + Duration::from_millis(s);
        // One key a little over a refill time later: the 200 become the previous generation.
        shard.bucket("a", limit, later(1_100), 1_000);
        assert_eq!((shard.current.len(), shard.previous.len()), (1, 200));
        // Another refill time later: they are full by now, and dropped.
        shard.bucket("b", limit, later(2_200), 1_000);
        assert_eq!((shard.current.len(), shard.previous.len()), (1, 1));
    }
}
