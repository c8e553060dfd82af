//! DPoP (RFC 9449) at the resource server: the layer's settings ([`DpopMode`],
//! [`DpopSettings`]), the `jti` replay cache ([`DpopReplayCache`], in memory here), server
//! nonces that rotate with a grace period, and the proof check of one request
//! ([`DpopSettings::check`]).
//!
//! Not here: the stateless checks of a proof (signature with the embedded key, `typ`,
//! `htm`/`htu`, `iat`, `ath`, thumbprint: [`crate::jose::verify_dpop_proof`]) and the
//! challenges (`layer.rs`).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

use crate::jose::{Algorithm, DpopCheck, DpopRefusal, sha256_b64url, verify_dpop_proof};
use crate::store::StoreError;

/// How the auth layer treats DPoP-bound tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DpopMode {
    /// No DPoP: the `DPoP` scheme is not accepted, so tokens bound to a key (`cnf.jkt`) are
    /// refused too (they cannot be used without their proof).
    Off,
    /// Bearer tokens and DPoP-bound tokens with their proofs (the default). A token without
    /// `cnf` costs nothing extra.
    #[default]
    Allowed,
    /// Only DPoP-bound tokens with their proofs; plain Bearer tokens are refused.
    Required,
}

impl std::str::FromStr for DpopMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(DpopMode::Off),
            "allowed" => Ok(DpopMode::Allowed),
            "required" => Ok(DpopMode::Required),
            other => Err(format!(
                "unknown DPoP mode {other:?} (off, allowed, required)"
            )),
        }
    }
}

/// The future of [`DpopReplayCache::first_use`].
pub type ReplayFuture<'a> = Pin<Box<dyn Future<Output = Result<bool, StoreError>> + Send + 'a>>;

/// Remembers the DPoP proofs a resource server accepted, so each is accepted once.
///
/// Keys are digests of the proof's key thumbprint and `jti`; `ttl` covers the whole time
/// the proof's `iat` would still be accepted. Several instances behind one load balancer
/// need one shared cache (a proof replayed to another instance is refused only then).
pub trait DpopReplayCache: Send + Sync + 'static {
    /// Records `key` for `ttl`: `Ok(true)` the first time, `Ok(false)` when it is known.
    fn first_use<'a>(&'a self, key: &'a str, ttl: Duration) -> ReplayFuture<'a>;
}

/// An in-memory [`DpopReplayCache`] of at most `capacity` live proof ids (default 100 000).
#[derive(Debug)]
pub struct MemoryReplayCache {
    capacity: usize,
    inner: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    expiry: HashMap<String, Instant>,
    /// Insertion order. Ttls differ (each proof's remaining lifetime, at most two windows),
    /// so an expired entry behind a longer-lived one is dropped late: it is counted against
    /// the capacity a little longer, and its proof is refused by the `iat` check anyway.
    order: VecDeque<(Instant, String)>,
}

impl Default for MemoryReplayCache {
    fn default() -> Self {
        MemoryReplayCache::new(100_000)
    }
}

impl MemoryReplayCache {
    /// A cache holding at most `capacity` live ids.
    pub fn new(capacity: usize) -> Self {
        MemoryReplayCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Seen::default()),
        }
    }

    fn record(&self, key: &str, ttl: Duration, now: Instant) -> Result<bool, StoreError> {
        let mut seen = crate::sync::lock(&self.inner);
        while let Some((at, _)) = seen.order.front()
            && *at <= now
        {
            if let Some((_, k)) = seen.order.pop_front() {
                seen.expiry.remove(&k);
            }
        }
        if seen.expiry.contains_key(key) {
            return Ok(false);
        }
        if seen.expiry.len() >= self.capacity {
            // A flood of fresh proofs: new ones are refused (503) until old ids expire,
            // rather than forgetting ids early.
            return Err(StoreError::Full);
        }
        let at = now + ttl;
        seen.expiry.insert(key.to_owned(), at);
        seen.order.push_back((at, key.to_owned()));
        Ok(true)
    }
}

impl DpopReplayCache for MemoryReplayCache {
    fn first_use<'a>(&'a self, key: &'a str, ttl: Duration) -> ReplayFuture<'a> {
        let r = self.record(key, ttl, Instant::now());
        Box::pin(std::future::ready(r))
    }
}

/// Server nonces (RFC 9449 §8): derived from a secret and the current period, so every
/// instance holding the same secret agrees without talking to the others; the previous
/// period's nonce stays valid (the grace period), so a client that just got one is not
/// refused at the turn.
#[derive(Clone)]
pub(crate) struct Nonces {
    secret: Arc<[u8]>,
    period: Duration,
}

impl Nonces {
    pub(crate) fn new(secret: Vec<u8>, period: Duration) -> Self {
        Nonces {
            secret: secret.into(),
            period: period.max(Duration::from_secs(1)),
        }
    }

    fn index(&self, unix_secs: u64) -> u64 {
        unix_secs / self.period.as_secs().max(1)
    }

    fn nonce_for(&self, index: u64) -> String {
        // A MAC over the period index: unpredictable without the secret.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.secret) else {
            return String::new();
        };
        mac.update(b"vellum-dpop-nonce");
        mac.update(&index.to_be_bytes());
        crate::jose::b64url(&mac.finalize().into_bytes()[..18])
    }

    /// The nonce to hand out now.
    pub(crate) fn current(&self) -> String {
        self.nonce_for(self.index(unix_now()))
    }

    /// True for this period's nonce or the previous one's.
    fn accepts(&self, nonce: &str) -> bool {
        let i = self.index(unix_now());
        nonce == self.nonce_for(i) || (i > 0 && nonce == self.nonce_for(i - 1))
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The DPoP part of the layer's configuration.
#[derive(Clone)]
pub(crate) struct DpopSettings {
    pub(crate) mode: DpopMode,
    pub(crate) algs: Vec<Algorithm>,
    /// How far a proof's `iat` may be from now, both ways.
    pub(crate) window: Duration,
    pub(crate) nonces: Option<Nonces>,
    pub(crate) replay: Arc<dyn DpopReplayCache>,
}

/// The algorithms accepted by default: the asymmetric ones in common use.
pub(crate) const DEFAULT_ALGS: [Algorithm; 5] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
    Algorithm::RS256,
    Algorithm::PS256,
];

/// The longest `DPoP` header accepted (a proof carries a public key: RSA ones are large).
const MAX_PROOF_BYTES: usize = 8 * 1024;

/// Why a request's proof was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProofRefusal {
    /// 401 `invalid_dpop_proof` with this description.
    Invalid(&'static str),
    /// 401 `use_dpop_nonce` (with a fresh `DPoP-Nonce`).
    UseNonce,
    /// 503: the replay cache cannot answer.
    Unavailable,
}

impl DpopSettings {
    pub(crate) fn new() -> Self {
        DpopSettings {
            mode: DpopMode::Allowed,
            algs: DEFAULT_ALGS.to_vec(),
            window: Duration::from_secs(300),
            nonces: None,
            replay: Arc::new(MemoryReplayCache::default()),
        }
    }

    /// The `algs` parameter of a DPoP challenge, and the metadata's
    /// `dpop_signing_alg_values_supported`.
    pub(crate) fn alg_names(&self) -> Vec<String> {
        self.algs.iter().map(|a| format!("{a:?}")).collect()
    }

    /// How long a proof issued at `iat` (Unix seconds) stays acceptable from now: until its
    /// `iat` falls out of the window (at most two windows, for an `iat` ahead of the clock),
    /// plus a second for the rounding of `iat`. After that its replay is refused by the `iat`
    /// check, so the cache need not remember it.
    fn remaining(&self, iat: u64) -> Duration {
        let until = iat.saturating_add(self.window.as_secs());
        Duration::from_secs(until.saturating_sub(unix_now()).saturating_add(1))
    }

    /// Checks the one `DPoP` header of a request to `url` with `method` carrying `token`,
    /// bound to `jkt`; records its `jti`.
    pub(crate) async fn check(
        &self,
        headers: &http::HeaderMap,
        method: &str,
        url: &str,
        token: &str,
        jkt: &str,
    ) -> Result<(), ProofRefusal> {
        let mut values = headers.get_all("dpop").iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(ProofRefusal::Invalid(
                "Exactly one DPoP proof header is required",
            ));
        };
        let proof = value
            .to_str()
            .ok()
            .filter(|p| p.len() <= MAX_PROOF_BYTES)
            .ok_or(ProofRefusal::Invalid("The DPoP proof is malformed"))?;
        let alg = jsonwebtoken::decode_header(proof)
            .map_err(|_| ProofRefusal::Invalid("The DPoP proof is malformed"))?
            .alg;
        if !self.algs.contains(&alg) {
            return Err(ProofRefusal::Invalid(
                "The DPoP proof's algorithm is not accepted here",
            ));
        }
        let mut check = DpopCheck::new(method, url).access_token(token, Some(jkt));
        check.max_age_secs = self.window.as_secs();
        // The proof's own nonce, when it is one of ours (this period's or the previous):
        // the stateless check then compares it with itself; any other gets `use_dpop_nonce`.
        let claimed = self.nonces.as_ref().map(|n| {
            let claimed = claimed_nonce(proof);
            match claimed {
                Some(c) if n.accepts(&c) => c,
                _ => n.current(),
            }
        });
        if let Some(n) = &claimed {
            check = check.nonce(n);
        }
        let verified = verify_dpop_proof(proof, &check).map_err(|e| match e.dpop_refusal() {
            Some(DpopRefusal::UseNonce) => ProofRefusal::UseNonce,
            Some(other) => ProofRefusal::Invalid(describe(other)),
            None => ProofRefusal::Invalid(describe(DpopRefusal::Malformed)),
        })?;
        let key = sha256_b64url(format!("{}.{}", verified.jkt, verified.jti).as_bytes());
        match self
            .replay
            .first_use(&key, self.remaining(verified.iat))
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(ProofRefusal::Invalid("The DPoP proof was already used")),
            Err(e) => {
                tracing::warn!(error = %e, "DPoP replay cache");
                Err(ProofRefusal::Unavailable)
            }
        }
    }
}

/// The description of a refused proof (fixed text; never the proof).
fn describe(e: DpopRefusal) -> &'static str {
    match e {
        DpopRefusal::Malformed => "The DPoP proof is malformed",
        DpopRefusal::Type => "The DPoP proof's typ is not dpop+jwt",
        DpopRefusal::Algorithm => "The DPoP proof is not signed with an asymmetric algorithm",
        DpopRefusal::Key => "The DPoP proof does not carry a public key",
        DpopRefusal::Signature => "The DPoP proof's signature does not verify",
        DpopRefusal::Method => "The DPoP proof is for another HTTP method",
        DpopRefusal::Url => "The DPoP proof is for another URL",
        DpopRefusal::Time => "The DPoP proof is too old or from the future",
        DpopRefusal::AccessToken => "The DPoP proof is not bound to this access token",
        DpopRefusal::KeyMismatch => "The access token is bound to another key",
        _ => "The DPoP proof is invalid",
    }
}

/// The `nonce` claim of a proof, read without verifying it (only to pick which of our
/// nonces the verified proof must carry).
fn claimed_nonce(proof: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = proof.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    #[derive(serde::Deserialize)]
    struct Claim {
        nonce: Option<String>,
    }
    serde_json::from_slice::<Claim>(&bytes).ok()?.nonce
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_cache_accepts_once_forgets_after_the_ttl_and_is_bounded() {
        let c = MemoryReplayCache::new(2);
        let t0 = Instant::now();
        let ttl = Duration::from_secs(10);
        assert!(matches!(c.record("a", ttl, t0), Ok(true)));
        assert!(matches!(c.record("a", ttl, t0), Ok(false)));
        assert!(matches!(c.record("b", ttl, t0), Ok(true)));
        assert!(matches!(c.record("c", ttl, t0), Err(StoreError::Full)));
        let later = t0 + ttl + Duration::from_secs(1);
        assert!(matches!(c.record("c", ttl, later), Ok(true)));
        assert!(
            matches!(c.record("a", ttl, later), Ok(true)),
            "expired ids are forgotten"
        );
    }

    #[test]
    fn nonces_rotate_and_the_previous_one_is_still_accepted() {
        let n = Nonces::new(b"secret".to_vec(), Duration::from_secs(60));
        let i = n.index(unix_now());
        assert!(n.accepts(&n.nonce_for(i)));
        assert!(n.accepts(&n.nonce_for(i - 1)));
        assert!(!n.accepts(&n.nonce_for(i - 2)));
        assert!(!n.accepts("made-up"));
        let other = Nonces::new(b"other".to_vec(), Duration::from_secs(60));
        assert!(!n.accepts(&other.current()));
    }

    #[test]
    fn modes_parse() {
        assert_eq!("required".parse::<DpopMode>(), Ok(DpopMode::Required));
        assert!("maybe".parse::<DpopMode>().is_err());
    }
}
