//! [`TokenCache`]: the principals of JWTs that already passed every check of the token
//! itself (signature, issuer, audience, `exp`/`nbf`, `typ`), so that the next request with
//! the same token skips the signature check, which is by far the dearest step of
//! authorization (an ES256 verification costs millions of instructions).
//!
//! Entries are keyed by the SHA-256 of the whole token (a tampered token that shares a
//! prefix is a different key). An entry is used until the earliest of the token's `exp`
//! (plus the verifier's leeway), its insertion plus a short cap, and the next change of the
//! key set that verified it (the JWKS generation). The cache holds a fixed number of
//! entries: when full it drops the expired ones, then the entry that would expire first.
//! That scan is linear, but it runs only on an insertion, that is after a full signature
//! check, which costs far more.
//!
//! Not here: the checks that depend on the request (DPoP proof and `cnf` binding, scopes):
//! the layer runs them on every request, cached or not.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::Principal;
use super::endpoint::now_secs;

/// The SHA-256 of a token.
type TokenHash = [u8; 32];

struct Entry {
    principal: Principal,
    /// The token's `exp` plus leeway, in Unix seconds.
    expires_at: u64,
    /// Insertion plus the cap.
    stale_at: Instant,
    /// The key-set generation that verified the token.
    generation: u64,
}

impl Entry {
    fn live(&self, now: Instant, now_secs: u64, generation: u64) -> bool {
        self.generation == generation && now < self.stale_at && now_secs <= self.expires_at
    }
}

/// A bounded cache of verified tokens.
pub(crate) struct TokenCache {
    capacity: usize,
    ttl: Duration,
    entries: Mutex<HashMap<TokenHash, Entry>>,
}

impl TokenCache {
    /// The default number of entries.
    pub(crate) const DEFAULT_CAPACITY: usize = 10_000;
    /// The default longest time an entry is used.
    pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(60);

    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        TokenCache {
            capacity,
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the cache keeps anything at all.
    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0 && !self.ttl.is_zero()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TokenHash, Entry>> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn hash(token: &str) -> TokenHash {
        Sha256::digest(token.as_bytes()).into()
    }

    /// The cached principal of `token`, when its entry is still live for key-set
    /// `generation`; a dead entry is removed.
    pub(crate) fn get(&self, key: &TokenHash, generation: u64) -> Option<Principal> {
        let mut entries = self.lock();
        let entry = entries.get(key)?;
        if entry.live(Instant::now(), now_secs(), generation) {
            return Some(entry.principal.clone());
        }
        entries.remove(key);
        None
    }

    /// Keeps the principal of a token that passed every check, until `exp_limit` (its
    /// `exp` plus leeway, Unix seconds) or the cap, whichever comes first.
    pub(crate) fn insert(
        &self,
        key: TokenHash,
        principal: &Principal,
        exp_limit: u64,
        generation: u64,
    ) {
        if !self.enabled() {
            return;
        }
        let now = Instant::now();
        let secs = now_secs();
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, e| e.live(now, secs, generation));
            if entries.len() >= self.capacity {
                // Of the live entries, the one that would go first is the least loss.
                let first = entries
                    .iter()
                    .min_by_key(|(_, e)| (e.stale_at, e.expires_at))
                    .map(|(k, _)| *k);
                if let Some(k) = first {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(
            key,
            Entry {
                principal: principal.clone(),
                expires_at: exp_limit,
                stale_at: now + self.ttl,
                generation,
            },
        );
    }

    /// The number of entries (live or not yet swept).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sub: &str) -> Principal {
        Principal::new("https://as.test", sub)
    }

    #[test]
    fn keeps_within_its_bound_and_drops_what_dies() {
        let cache = TokenCache::new(3, Duration::from_secs(60));
        let far = now_secs() + 600;
        for i in 0..10 {
            let t = format!("token-{i}");
            cache.insert(TokenCache::hash(&t), &p(&t), far, 0);
            assert!(cache.len() <= 3);
        }
        // The newest entries survive; the oldest went first.
        assert!(cache.get(&TokenCache::hash("token-9"), 0).is_some());
        assert!(cache.get(&TokenCache::hash("token-0"), 0).is_none());
        // Another key-set generation makes every entry dead.
        assert!(cache.get(&TokenCache::hash("token-9"), 1).is_none());
        // So does a passed `exp`.
        let past = now_secs() - 1;
        cache.insert(TokenCache::hash("old"), &p("old"), past, 0);
        assert!(cache.get(&TokenCache::hash("old"), 0).is_none());
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let cache = TokenCache::new(0, Duration::from_secs(60));
        cache.insert(TokenCache::hash("t"), &p("t"), now_secs() + 600, 0);
        assert_eq!(cache.len(), 0);
    }
}
