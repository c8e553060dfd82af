//! [`FailureGuard`]: what the layer does before verifying a token, so that failed
//! authentications cost the server little:
//! - a budget of failed authentications per client address (a token bucket: a 401 for an
//!   invalid token takes a token); an address past it gets 429 with `Retry-After` before its
//!   token is looked at, so a client forging tokens cannot make the server check signatures
//!   for free;
//! - the tokens that just failed, by their SHA-256: the same forged token again is refused
//!   without a signature check (for a short while, in a bounded cache). Failures that may
//!   stop being failures are not kept: a key not known yet (a rotation) and a token not valid
//!   yet.
//!
//! A request without a client address (a Unix socket, a server that does not say) is not
//! limited: its clients cannot be told apart, and one of them must not lock all out.
//!
//! Not here: which address a request comes from (`transport::http::ClientAddresses`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::verifier::InvalidToken;
use crate::store::{Admission, MemoryRateLimiter, RateLimit};
use crate::sync::lock;

/// The default budget of failed authentications per client address: 20 a minute, bursts of
/// 20.
pub(crate) const DEFAULT_FAILURE_LIMIT: RateLimit = RateLimit {
    per_second: 20.0 / 60.0,
    burst: 20,
};
/// The default number of failed tokens remembered.
pub(crate) const DEFAULT_FAILED_TOKENS: usize = 10_000;
/// The default time a failed token is remembered.
pub(crate) const DEFAULT_FAILED_TOKEN_TTL: Duration = Duration::from_secs(60);
/// The most client addresses whose failures are counted at once.
const MAX_ADDRESSES: usize = 100_000;

/// What to do with a request's token before verifying it.
pub(crate) enum Precheck {
    /// Verify it.
    Verify,
    /// It failed lately, for this reason: refuse it again (a failure counted).
    Known(InvalidToken),
    /// The address is past its budget: 429 with this `Retry-After`.
    Limited { retry_after_secs: u64 },
}

/// See the module documentation.
pub(crate) struct FailureGuard {
    limit: Option<RateLimit>,
    by_address: MemoryRateLimiter,
    tokens: FailedTokens,
    epoch: Instant,
    /// Milliseconds since `epoch` of the last failure counted, plus one (0: none yet). An
    /// address can be past its budget only within a full refill of the last failure: until
    /// then requests skip the budget's lookup.
    last_failure: AtomicU64,
}

impl FailureGuard {
    pub(crate) fn new(limit: Option<RateLimit>, capacity: usize, ttl: Duration) -> Self {
        FailureGuard {
            limit,
            by_address: MemoryRateLimiter::with_max_keys(if limit.is_some() {
                MAX_ADDRESSES
            } else {
                0
            }),
            tokens: FailedTokens::new(capacity, ttl),
            epoch: Instant::now(),
            last_failure: AtomicU64::new(0),
        }
    }

    /// Milliseconds since the guard's epoch.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// True when some address may be past its budget: a failure was counted less than a
    /// full refill of the budget ago.
    fn may_be_limited(&self, limit: RateLimit) -> bool {
        let last = self.last_failure.load(Ordering::Acquire);
        if last == 0 {
            return false;
        }
        let refill_secs = f64::from(limit.burst.max(1)) / limit.per_second;
        // A budget that never refills (or a nonsense rate): always look.
        if !(refill_secs.is_finite() && refill_secs >= 0.0) {
            return true;
        }
        let refill_ms = (refill_secs * 1000.0).ceil().min(u64::MAX as f64) as u64;
        self.now_ms() < (last - 1).saturating_add(refill_ms).saturating_add(1)
    }

    /// Before verifying `token` of a request from `address`; `known_valid` says whether the
    /// verifier knows the token valid (asked only of an address past its budget: such a
    /// token is verified, as a shared address's forged tokens must not lock out its valid
    /// users).
    pub(crate) fn before(
        &self,
        address: Option<IpAddr>,
        token: &str,
        known_valid: impl FnOnce() -> bool,
    ) -> Precheck {
        if let (Some(limit), Some(a)) = (self.limit, address)
            && self.may_be_limited(limit)
            && let Admission::Limited { retry_after } =
                with_key(a, |key| self.by_address.peek_now(key, limit))
            && !known_valid()
        {
            return Precheck::Limited {
                retry_after_secs: retry_after.as_secs_f64().ceil().max(1.0) as u64,
            };
        }
        match self.tokens.get(token) {
            Some(reason) => {
                self.count(address);
                Precheck::Known(reason)
            }
            None => Precheck::Verify,
        }
    }

    /// `token` of a request from `address` failed verification for `reason`.
    pub(crate) fn failed(&self, address: Option<IpAddr>, token: &str, reason: InvalidToken) {
        self.count(address);
        if !matches!(reason, InvalidToken::UnknownKey | InvalidToken::NotYetValid) {
            self.tokens.insert(token, reason);
        }
    }

    fn count(&self, address: Option<IpAddr>) {
        if let (Some(limit), Some(a)) = (self.limit, address) {
            self.last_failure
                .store(self.now_ms().saturating_add(1), Ordering::Release);
            with_key(a, |key| self.by_address.admit_now(key, limit));
        }
    }
}

/// Calls `f` with `a` as text, the key of its budget, written on the stack: no allocation
/// per request (the limiter copies a key only when it is new).
fn with_key<R>(a: IpAddr, f: impl FnOnce(&str) -> R) -> R {
    use std::io::Write as _;
    // The longest text of an address: an IPv6 one with an embedded IPv4 one, 45 bytes.
    let mut buf = [0u8; 48];
    let mut rest = &mut buf[..];
    let _ = write!(rest, "{a}");
    let len = 48 - rest.len();
    f(std::str::from_utf8(&buf[..len]).unwrap_or_default())
}

/// One generation of failed tokens: SHA-256 → why, and until when it is remembered.
type Generation = HashMap<[u8; 32], (InvalidToken, Instant)>;

/// How many locks the failed tokens are spread over (by their hash's first byte), so that
/// the requests of unrelated tokens rarely wait for each other.
const TOKEN_SHARDS: usize = 16;

/// Tokens that failed lately, by SHA-256, in [`TOKEN_SHARDS`] shards of two generations
/// each (the current one fills; when full, the previous one is dropped whole): bounded (the
/// capacity, or two tokens per shard if that is more), O(1) per request.
struct FailedTokens {
    /// Per shard.
    per_generation: usize,
    ttl: Duration,
    epoch: Instant,
    /// Milliseconds since `epoch` until which the latest failed token is remembered (0:
    /// none): past it nothing is, and requests skip the hash and the lock.
    remembered_until: AtomicU64,
    shards: [Mutex<[Generation; 2]>; TOKEN_SHARDS],
}

impl FailedTokens {
    fn new(capacity: usize, ttl: Duration) -> Self {
        let per_generation = match capacity {
            0 => 0,
            n => (n / 2 / TOKEN_SHARDS).max(1),
        };
        FailedTokens {
            per_generation,
            ttl,
            epoch: Instant::now(),
            remembered_until: AtomicU64::new(0),
            shards: Default::default(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// True while some failed token is remembered.
    fn remembers_any(&self) -> bool {
        self.now_ms() < self.remembered_until.load(Ordering::Acquire)
    }

    fn get(&self, token: &str) -> Option<InvalidToken> {
        if !self.remembers_any() {
            return None;
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        let g = lock(self.shard(&key));
        g.iter()
            .find_map(|m| m.get(&key))
            .filter(|(_, until)| now < *until)
            .map(|(reason, _)| *reason)
    }

    fn insert(&self, token: &str, reason: InvalidToken) {
        if self.per_generation == 0 || self.ttl.is_zero() {
            return;
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut g = lock(self.shard(&key));
        if g[0].len() >= self.per_generation {
            g[1] = std::mem::take(&mut g[0]);
        }
        let until = Instant::now() + self.ttl;
        g[0].insert(key, (reason, until));
        let until_ms = u64::try_from((until - self.epoch).as_millis()).unwrap_or(u64::MAX);
        self.remembered_until.fetch_max(until_ms, Ordering::AcqRel);
    }

    fn shard(&self, key: &[u8; 32]) -> &Mutex<[Generation; 2]> {
        &self.shards[usize::from(key[0]) % TOKEN_SHARDS]
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| lock(s).iter().map(HashMap::len).sum::<usize>())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_token_is_known_until_its_ttl_within_the_cap() {
        let t = FailedTokens::new(100, Duration::from_secs(60));
        assert_eq!(t.get("forged"), None);
        t.insert("forged", InvalidToken::BadSignature);
        assert_eq!(t.get("forged"), Some(InvalidToken::BadSignature));
        for i in 0..1_000 {
            t.insert(&format!("f{i}"), InvalidToken::BadSignature);
            assert!(t.len() <= 100);
        }
        let gone = FailedTokens::new(100, Duration::ZERO);
        gone.insert("forged", InvalidToken::BadSignature);
        assert_eq!(gone.get("forged"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_looked_up_once_no_failure_can_count() {
        let t = FailedTokens::new(100, Duration::from_secs(60));
        assert!(!t.remembers_any());
        t.insert("forged", InvalidToken::BadSignature);
        assert!(t.remembers_any());
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(!t.remembers_any());
        assert_eq!(t.get("forged"), None);
        // A budget of 2 refilling one a second: full again 2 s after the last failure.
        let guard = FailureGuard::new(Some(RateLimit::new(1.0, 2)), 10, Duration::ZERO);
        let limit = RateLimit::new(1.0, 2);
        assert!(!guard.may_be_limited(limit));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        guard.failed(Some(a), "x", InvalidToken::BadSignature);
        guard.failed(Some(a), "y", InvalidToken::BadSignature);
        assert!(guard.may_be_limited(limit));
        assert!(matches!(
            guard.before(Some(a), "z", || false),
            Precheck::Limited { .. }
        ));
        tokio::time::advance(Duration::from_millis(2_100)).await;
        assert!(!guard.may_be_limited(limit));
        assert!(matches!(
            guard.before(Some(a), "z", || false),
            Precheck::Verify
        ));
    }

    #[test]
    fn an_address_key_is_its_text() {
        for a in [
            "192.0.2.1",
            "2001:db8::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
        ] {
            let ip: IpAddr = a.parse().unwrap();
            assert_eq!(with_key(ip, str::to_owned), ip.to_string());
        }
    }

    #[test]
    fn an_address_past_its_budget_is_limited_and_another_is_not() {
        let guard = FailureGuard::new(
            Some(RateLimit::new(1.0 / 60.0, 2)),
            10,
            DEFAULT_FAILED_TOKEN_TTL,
        );
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        guard.failed(Some(a), "x", InvalidToken::BadSignature);
        assert!(matches!(
            guard.before(Some(a), "y", || false),
            Precheck::Verify
        ));
        guard.failed(Some(a), "y", InvalidToken::Expired);
        assert!(
            matches!(guard.before(Some(a), "z", || false), Precheck::Limited { retry_after_secs } if retry_after_secs > 1)
        );
        assert!(matches!(
            guard.before(Some(b), "x", || false),
            Precheck::Known(InvalidToken::BadSignature)
        ));
        // Without an address nothing is limited.
        assert!(matches!(
            guard.before(None, "z", || false),
            Precheck::Verify
        ));
    }
}
