//! [`JwksCache`]: the authorization server's signing keys, fetched from its JWKS URL and
//! cached. A token signed by an unknown key id triggers a refresh, at most once per
//! `min_refresh_interval` and single-flight (concurrent misses wait for one fetch); the set
//! is also refetched once it is older than `max_age`. When a refresh fails the last good set
//! stays in use.
//!
//! Not here: checking a token with the keys (`jwt.rs`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::time::Instant;

use super::endpoint::{check_url, http_client, read_limited};
use super::verifier::{InvalidToken, VerifyError};
use crate::config_error::ConfigError;

/// A verification key with the one algorithm it may be used with.
#[derive(Clone)]
pub(crate) struct VerifyKey {
    pub(crate) key: DecodingKey,
    pub(crate) alg: Algorithm,
}

/// The keys of one fetch.
#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, Arc<VerifyKey>>,
    /// Keys without a `kid` (usable only by tokens without one, when alone).
    unnamed: Vec<Arc<VerifyKey>>,
    fetched_at: Option<Instant>,
    /// The JWKs behind the keys, serialized and sorted (to see whether a refresh dropped
    /// or replaced one).
    sources: Vec<String>,
    /// Bumped by every refresh that drops or replaces a key (not by one that only adds):
    /// what was verified under an older generation must be verified again.
    generation: u64,
}

impl KeySet {
    fn find(&self, kid: Option<&str>) -> Option<Arc<VerifyKey>> {
        match kid {
            Some(k) => self.by_kid.get(k).cloned(),
            // A token without `kid` is accepted only when the set has exactly one key.
            None => match (self.by_kid.len(), self.unnamed.len()) {
                (1, 0) => self.by_kid.values().next().cloned(),
                (0, 1) => self.unnamed.first().cloned(),
                _ => None,
            },
        }
    }
}

/// The largest JWKS document accepted.
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// A cached JSON Web Key Set.
pub struct JwksCache {
    url: String,
    client: reqwest::Client,
    keys: RwLock<Arc<KeySet>>,
    /// Held while fetching (single flight); holds when the last attempt started.
    refresh: tokio::sync::Mutex<Option<Instant>>,
    min_refresh_interval: Duration,
    max_age: Duration,
    rsa_default: Algorithm,
}

impl std::fmt::Debug for JwksCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksCache")
            .field("url", &self.url)
            .field("min_refresh_interval", &self.min_refresh_interval)
            .field("max_age", &self.max_age)
            .finish_non_exhaustive()
    }
}

impl JwksCache {
    /// The default least time between two fetches triggered by unknown key ids.
    pub const DEFAULT_MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
    /// The default age after which the set is refetched.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(3600);

    /// A cache of the key set at `url` (https, or http on a loopback host). Nothing is
    /// fetched until the first token arrives.
    pub fn new(url: impl Into<String>) -> Result<Self, ConfigError> {
        let url = url.into();
        check_url("JWKS URL", &url)?;
        Ok(JwksCache {
            url,
            client: http_client()?,
            keys: RwLock::new(Arc::new(KeySet::default())),
            refresh: tokio::sync::Mutex::new(None),
            min_refresh_interval: Self::DEFAULT_MIN_REFRESH_INTERVAL,
            max_age: Self::DEFAULT_MAX_AGE,
            rsa_default: Algorithm::RS256,
        })
    }

    /// Sets the least time between two fetches (default 30 s). Unknown key ids within it
    /// are refused without a fetch, so garbage tokens cannot hammer the authorization server.
    #[must_use]
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.min_refresh_interval = interval;
        self
    }

    /// Sets the age after which the set is refetched (default 1 h).
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The algorithm of RSA keys whose JWK names none (default RS256).
    #[must_use]
    pub fn rsa_algorithm(mut self, alg: Algorithm) -> Self {
        self.rsa_default = alg;
        self
    }

    /// The JWKS URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn snapshot(&self) -> Arc<KeySet> {
        match self.keys.read() {
            Ok(k) => k.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The generation of the current key set: it changes when a refresh drops or replaces
    /// a key.
    pub(crate) fn generation(&self) -> u64 {
        self.snapshot().generation
    }

    /// The key for a token's `kid`: from the cache, or after a (rate-limited) refresh.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Arc<VerifyKey>, VerifyError> {
        let set = self.snapshot();
        let fresh = set.fetched_at.is_some_and(|t| t.elapsed() < self.max_age);
        if fresh && let Some(k) = set.find(kid) {
            return Ok(k);
        }
        let fetched_before = set.fetched_at;
        let mut fetch_failed = false;
        {
            let mut last_attempt = self.refresh.lock().await;
            let changed = self.snapshot().fetched_at != fetched_before;
            let too_soon = last_attempt.is_some_and(|t| t.elapsed() < self.min_refresh_interval);
            // Another request may have refreshed while we waited: then use its result.
            if !changed && !too_soon {
                *last_attempt = Some(Instant::now());
                fetch_failed = self.fetch().await.is_err();
            }
        }
        let set = self.snapshot();
        match set.find(kid) {
            Some(k) => Ok(k),
            None if fetch_failed || set.fetched_at.is_none() => Err(VerifyError::Unavailable),
            None => Err(InvalidToken::UnknownKey.into()),
        }
    }

    async fn fetch(&self) -> Result<(), ()> {
        let fail = |what: &str| {
            tracing::warn!(url = %self.url, "JWKS refresh failed: {what}");
        };
        let resp = match self
            .client
            .get(&self.url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                fail(&format!("HTTP {}", r.status()));
                return Err(());
            }
            Err(e) => {
                fail(&e.to_string());
                return Err(());
            }
        };
        let body = match read_limited(resp, MAX_JWKS_BYTES).await {
            Ok(Some(b)) => b,
            Ok(None) => {
                fail("document too large");
                return Err(());
            }
            Err(e) => {
                fail(&e.to_string());
                return Err(());
            }
        };
        let jwks: JwkSet = match serde_json::from_slice::<RawJwkSet>(&body) {
            // Keys this version cannot parse are skipped, not fatal to the whole set.
            Ok(raw) => JwkSet {
                keys: raw
                    .keys
                    .into_iter()
                    .filter_map(|v| serde_json::from_value(v).ok())
                    .collect(),
            },
            Err(e) => {
                fail(&format!("not a JWK set: {e}"));
                return Err(());
            }
        };
        let mut set = KeySet {
            fetched_at: Some(Instant::now()),
            ..KeySet::default()
        };
        for jwk in &jwks.keys {
            let Some(key) = verify_key(jwk, self.rsa_default) else {
                continue;
            };
            set.sources
                .push(serde_json::to_string(jwk).unwrap_or_default());
            match &jwk.common.key_id {
                Some(kid) => {
                    set.by_kid.insert(kid.clone(), Arc::new(key));
                }
                None => set.unnamed.push(Arc::new(key)),
            }
        }
        set.sources.sort_unstable();
        let mut guard = match self.keys.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let kept_all = guard
            .sources
            .iter()
            .all(|old| set.sources.binary_search(old).is_ok());
        set.generation = guard.generation + u64::from(!kept_all);
        *guard = Arc::new(set);
        Ok(())
    }
}

#[derive(serde::Deserialize)]
struct RawJwkSet {
    keys: Vec<serde_json::Value>,
}

/// The algorithm a public JWK may verify, pinned from its `alg` (checked against its key
/// type) or derived from its key type; `None` for keys not meant for signatures, symmetric
/// keys and unsupported curves.
pub(crate) fn verify_key(jwk: &Jwk, rsa_default: Algorithm) -> Option<VerifyKey> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let derived = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => rsa_default,
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => Algorithm::EdDSA,
            _ => return None,
        },
        // A JWKS publishes public keys; a shared secret there is a misconfiguration.
        _ => return None,
    };
    let alg = match jwk.common.key_algorithm {
        Some(named) => {
            let named = Algorithm::try_from(named).ok()?;
            if named.family() != derived.family() {
                return None;
            }
            if matches!(derived, Algorithm::ES256 | Algorithm::ES384) && named != derived {
                return None; // The curve fixes the algorithm.
            }
            named
        }
        None => derived,
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(VerifyKey { key, alg })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwk(v: serde_json::Value) -> Jwk {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn pins_algorithms() {
        let ed = jwk(serde_json::json!({
            "kty": "OKP", "crv": "Ed25519", "kid": "a",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        }));
        assert_eq!(
            verify_key(&ed, Algorithm::RS256).map(|k| k.alg),
            Some(Algorithm::EdDSA)
        );
        // An alg that contradicts the key type is not used.
        let mut lying = ed.clone();
        lying.common.key_algorithm = Some(jsonwebtoken::jwk::KeyAlgorithm::HS256);
        assert!(verify_key(&lying, Algorithm::RS256).is_none());
        // Symmetric keys and encryption keys are skipped.
        let oct = jwk(serde_json::json!({"kty": "oct", "k": "c2VjcmV0"}));
        assert!(verify_key(&oct, Algorithm::RS256).is_none());
        let mut enc = ed;
        enc.common.public_key_use = Some(PublicKeyUse::Encryption);
        assert!(verify_key(&enc, Algorithm::RS256).is_none());
    }
}
