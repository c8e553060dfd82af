//! [`JwtVerifier`]: access tokens that are signed JWTs (RFC 9068 profile or plain `JWT`),
//! verified with keys from a [`JwksCache`] or one static key.
//!
//! The algorithm comes from the key (its JWK `alg`, its key type, or the configuration),
//! never from the token header; issuer, audience, expiry and `nbf` are always checked.
//!
//! A token that passed every check is remembered for a while ([`JwtVerifier::token_cache`],
//! `token_cache.rs`), so that the signature is checked once per token, not once per request.
//!
//! Not here: fetching keys (`jwks.rs`) and opaque tokens (`introspection.rs`).

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::Principal;
use super::jwks::{JwksCache, VerifyKey};
use super::token_cache::TokenCache;
use super::verifier::{
    InvalidToken, OneOrMany, ScopeClaim, TokenVerifier, VerifyError, VerifyFuture,
};
use crate::config_error::{ConfigError, Kind as ConfigKind};

enum Keys {
    Jwks(Arc<JwksCache>),
    Static(Arc<VerifyKey>),
}

/// Verifies JWT access tokens.
pub struct JwtVerifier {
    keys: Keys,
    issuer: String,
    audiences: Vec<String>,
    leeway: u64,
    cache: TokenCache,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field(
                "keys",
                &match &self.keys {
                    Keys::Jwks(c) => c.url().to_owned(),
                    Keys::Static(k) => format!("static {:?}", k.alg),
                },
            )
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .field("leeway", &self.leeway)
            .field("token_cache", &self.cache.enabled())
            .finish()
    }
}

/// The claims read from an access token (the others are ignored).
#[derive(Deserialize)]
struct Claims {
    sub: String,
    iss: String,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    /// The key the token is bound to (RFC 9449 `cnf.jkt`).
    #[serde(default)]
    cnf: Option<super::Confirmation>,
    // Checked by jsonwebtoken; present so a missing `aud` fails to decode as well.
    #[serde(rename = "aud")]
    _aud: OneOrMany,
}

impl JwtVerifier {
    /// A verifier of tokens issued by `issuer` for `audience`, signed by keys of `jwks`.
    pub fn new(
        jwks: Arc<JwksCache>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        Self::with_keys(Keys::Jwks(jwks), issuer.into(), audience.into())
    }

    /// A verifier that checks signatures with one static key and algorithm (a PEM public
    /// key, or a shared secret for local testing).
    pub fn with_static_key(
        key: DecodingKey,
        alg: Algorithm,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        if key.family() != alg.family() {
            return Err(ConfigKind::Key {
                reason: format!("the key does not fit algorithm {alg:?}").into(),
            }
            .into());
        }
        Self::with_keys(
            Keys::Static(Arc::new(VerifyKey { key, alg })),
            issuer.into(),
            audience.into(),
        )
    }

    /// A verifier of HS256 tokens signed with a shared `secret` (for local testing: anyone
    /// holding the secret can mint tokens).
    pub fn hs256(
        secret: &[u8],
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        if secret.len() < 32 {
            return Err(ConfigKind::Key {
                reason: "an HS256 secret needs at least 32 bytes".into(),
            }
            .into());
        }
        let key = DecodingKey::from_secret(secret).map_err(|e| {
            ConfigError::from(ConfigKind::Key {
                reason: e.to_string().into(),
            })
        })?;
        Self::with_static_key(key, Algorithm::HS256, issuer, audience)
    }

    fn with_keys(keys: Keys, issuer: String, audience: String) -> Result<Self, ConfigError> {
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(ConfigKind::NoCryptoProvider.into());
        }
        if audience.is_empty() {
            return Err(ConfigKind::NoAudience.into());
        }
        Ok(JwtVerifier {
            keys,
            issuer,
            audiences: vec![audience],
            leeway: 60,
            cache: TokenCache::new(TokenCache::DEFAULT_CAPACITY, TokenCache::DEFAULT_TTL),
        })
    }

    /// Accepts tokens for one more audience.
    #[must_use]
    pub fn add_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Clock skew tolerated on `exp` and `nbf`, in seconds (default 60).
    #[must_use]
    pub fn leeway(mut self, seconds: u64) -> Self {
        self.leeway = seconds;
        self
    }

    /// Remembers up to `capacity` verified tokens for at most `ttl` each (default 10,000
    /// and 60 s; a capacity or ttl of 0 turns the cache off). A remembered token skips the
    /// signature check on its next requests; it is still refused once its `exp` (plus the
    /// leeway) has passed, and every token verified with a key is forgotten when a JWKS
    /// refresh drops or replaces a key. The checks that depend on the request (DPoP,
    /// scopes) run on every request either way. Entries beyond `capacity` evict the ones
    /// that would expire first, so many distinct valid tokens cannot grow memory.
    #[must_use]
    pub fn token_cache(mut self, capacity: usize, ttl: std::time::Duration) -> Self {
        self.cache = TokenCache::new(capacity, ttl);
        self
    }

    /// The number of tokens the cache holds now (for tests and metrics).
    pub fn cached_tokens(&self) -> usize {
        self.cache.len()
    }

    fn generation(&self) -> u64 {
        match &self.keys {
            Keys::Static(_) => 0,
            Keys::Jwks(cache) => cache.generation(),
        }
    }

    /// The trusted issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    async fn check(&self, token: &str) -> Result<Principal, VerifyError> {
        if !self.cache.enabled() {
            return self.check_uncached(token).await;
        }
        let hash = TokenCache::hash(token);
        // Read before verifying: a refresh during the check makes the entry dead, not wrong.
        let generation = self.generation();
        if let Some(p) = self.cache.get(&hash, generation) {
            return Ok(p);
        }
        let p = self.check_uncached(token).await?;
        if let Some(exp) = p.expires_at {
            self.cache
                .insert(hash, &p, exp.saturating_add(self.leeway), generation);
        }
        Ok(p)
    }

    async fn check_uncached(&self, token: &str) -> Result<Principal, VerifyError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| InvalidToken::Malformed)?;
        // RFC 9068 access tokens are `at+jwt`; many servers issue plain `JWT`.
        if let Some(typ) = &header.typ
            && !["jwt", "at+jwt", "application/at+jwt"]
                .iter()
                .any(|t| typ.eq_ignore_ascii_case(t))
        {
            return Err(InvalidToken::WrongType.into());
        }
        let key = match &self.keys {
            Keys::Static(k) => k.clone(),
            Keys::Jwks(cache) => cache.key(header.kid.as_deref()).await?,
        };
        if header.alg != key.alg {
            return Err(InvalidToken::Algorithm.into());
        }
        let mut validation = Validation::new(key.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        // Decoded once as a map (kept for `Principal::claims`), then read by name.
        let data =
            jsonwebtoken::decode::<crate::protocol::JsonObject>(token, &key.key, &validation)
                .map_err(|e| map_error(e.kind()))?;
        let claims = serde_json::Value::Object(data.claims);
        let c = Claims::deserialize(&claims).map_err(|_| InvalidToken::Malformed)?;
        let serde_json::Value::Object(claims) = claims else {
            return Err(InvalidToken::Malformed.into());
        };
        let scopes = c
            .scope
            .or(c.scp)
            .map(ScopeClaim::into_vec)
            .unwrap_or_default();
        let mut p = Principal::new(c.iss, c.sub).with_scopes(scopes);
        p.client_id = c.client_id.or(c.azp);
        p.expires_at = c.exp;
        p.dpop_jkt = c.cnf.and_then(|c| c.jkt);
        Ok(p.with_claims(claims))
    }
}

fn map_error(kind: &ErrorKind) -> InvalidToken {
    match kind {
        ErrorKind::ExpiredSignature => InvalidToken::Expired,
        ErrorKind::ImmatureSignature => InvalidToken::NotYetValid,
        ErrorKind::InvalidAudience => InvalidToken::WrongAudience,
        ErrorKind::InvalidIssuer => InvalidToken::WrongIssuer,
        ErrorKind::InvalidSignature => InvalidToken::BadSignature,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => InvalidToken::Algorithm,
        _ => InvalidToken::Malformed,
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }

    fn is_known_valid(&self, token: &str) -> bool {
        self.cache.enabled()
            && self
                .cache
                .get(&TokenCache::hash(token), self.generation())
                .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn token(claims: serde_json::Value, header: Header, secret: &[u8]) -> String {
        encode(&header, &claims, &EncodingKey::from_secret(secret).unwrap()).unwrap()
    }

    fn claims() -> serde_json::Value {
        serde_json::json!({
            "iss": "https://as.test", "sub": "alice", "aud": "https://mcp.test/mcp",
            "exp": super::super::endpoint::now_secs() + 600, "scope": "a b", "client_id": "cli",
        })
    }

    fn verifier() -> JwtVerifier {
        JwtVerifier::hs256(SECRET, "https://as.test", "https://mcp.test/mcp").unwrap()
    }

    fn run(v: &JwtVerifier, t: &str) -> Result<Principal, VerifyError> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(v.verify(t))
    }

    #[test]
    fn accepts_a_good_token() {
        let p = run(&verifier(), &token(claims(), Header::default(), SECRET)).unwrap();
        assert_eq!(p.issuer, "https://as.test");
        assert_eq!(p.subject, "alice");
        assert_eq!(p.scopes, ["a", "b"]);
        assert_eq!(p.client_id.as_deref(), Some("cli"));
    }

    #[test]
    fn a_verified_token_is_known_valid() {
        let v = verifier();
        let good = token(claims(), Header::default(), SECRET);
        assert!(!v.is_known_valid(&good));
        run(&v, &good).unwrap();
        assert!(v.is_known_valid(&good));
        let forged = token(
            claims(),
            Header::default(),
            b"another secret of thirty-two b",
        );
        assert!(run(&v, &forged).is_err());
        assert!(!v.is_known_valid(&forged));
    }

    #[test]
    fn refuses_bad_tokens() {
        let v = verifier();
        let bad = |c: serde_json::Value, h: Header, s: &[u8]| run(&v, &token(c, h, s));
        let mut c = claims();
        c["aud"] = "https://other.test".into();
        assert_eq!(
            bad(c, Header::default(), SECRET),
            Err(InvalidToken::WrongAudience.into())
        );
        let mut c = claims();
        c["iss"] = "https://evil.test".into();
        assert_eq!(
            bad(c, Header::default(), SECRET),
            Err(InvalidToken::WrongIssuer.into())
        );
        let mut c = claims();
        c["exp"] = 1000.into();
        assert_eq!(
            bad(c, Header::default(), SECRET),
            Err(InvalidToken::Expired.into())
        );
        let mut c = claims();
        c.as_object_mut().unwrap().remove("aud");
        assert!(bad(c, Header::default(), SECRET).is_err());
        let mut c = claims();
        c.as_object_mut().unwrap().remove("sub");
        assert!(bad(c, Header::default(), SECRET).is_err());
        assert_eq!(
            bad(
                claims(),
                Header::default(),
                b"another secret of thirty-two bytes!"
            ),
            Err(InvalidToken::BadSignature.into())
        );
        // The algorithm comes from the key, not from the token.
        assert_eq!(
            bad(claims(), Header::new(Algorithm::HS384), SECRET),
            Err(InvalidToken::Algorithm.into())
        );
        let h = Header {
            typ: Some("dpop+jwt".into()),
            ..Header::default()
        };
        assert_eq!(
            bad(claims(), h, SECRET),
            Err(InvalidToken::WrongType.into())
        );
        assert_eq!(run(&v, "not.a.token"), Err(InvalidToken::Malformed.into()));
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(JwtVerifier::hs256(b"short", "i", "a").is_err());
        assert!(JwtVerifier::hs256(SECRET, "i", "").is_err());
    }
}
