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
use std::sync::atomic::{AtomicBool, Ordering};
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
        }
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
            && let Admission::Limited { retry_after } =
                self.by_address.peek_now(&a.to_string(), limit)
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
            self.by_address.admit_now(&a.to_string(), limit);
        }
    }
}

/// One generation of failed tokens: SHA-256 → why, and until when it is remembered.
type Generation = HashMap<[u8; 32], (InvalidToken, Instant)>;

/// Tokens that failed lately, by SHA-256, in two generations (the current one fills; when
/// full, the previous one is dropped whole): bounded, O(1) per request.
struct FailedTokens {
    per_generation: usize,
    ttl: Duration,
    /// False until the first failure: requests skip the hash while nothing failed.
    used: AtomicBool,
    generations: Mutex<[Generation; 2]>,
}

impl FailedTokens {
    fn new(capacity: usize, ttl: Duration) -> Self {
        FailedTokens {
            per_generation: capacity / 2,
            ttl,
            used: AtomicBool::new(false),
            generations: Mutex::default(),
        }
    }

    fn get(&self, token: &str) -> Option<InvalidToken> {
        if !self.used.load(Ordering::Acquire) {
            return None;
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        let g = lock(&self.generations);
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
        let mut g = lock(&self.generations);
        if g[0].len() >= self.per_generation {
            g[1] = std::mem::take(&mut g[0]);
        }
        g[0].insert(key, (reason, Instant::now() + self.ttl));
        self.used.store(true, Ordering::Release);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.generations).iter().map(HashMap::len).sum()
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
