//! [`IntrospectionVerifier`]: opaque (or any) access tokens checked by asking the
//! authorization server (RFC 7662). Results are cached under a SHA-256 hash of the token
//! (never the token itself): active tokens until their expiry or the cache TTL, whichever
//! is first; inactive ones briefly; failures to reach the server not at all.
//!
//! Not here: signed JWTs checked locally (`jwt.rs`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::Principal;
use super::endpoint::{check_url, http_client, now_secs, read_limited};
use super::verifier::{
    InvalidToken, OneOrMany, ScopeClaim, TokenVerifier, VerifyError, VerifyFuture,
};
use crate::config_error::{ConfigError, Kind as ConfigKind};

/// How the resource server authenticates to the introspection endpoint.
#[derive(Clone)]
#[non_exhaustive]
pub enum ClientAuth {
    /// No authentication.
    None,
    /// HTTP Basic with a client id and secret (`client_secret_basic`).
    Basic {
        /// The client id.
        client_id: String,
        /// The client secret.
        client_secret: String,
    },
    /// A bearer token of the resource server's own.
    Bearer(String),
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAuth::None => f.write_str("None"),
            ClientAuth::Basic { client_id, .. } => write!(f, "Basic({client_id}, ***)"),
            ClientAuth::Bearer(_) => f.write_str("Bearer(***)"),
        }
    }
}

/// The introspection response fields this verifier reads.
#[derive(Deserialize)]
struct IntrospectionResponse {
    /// Every field of the response (the principal's claims).
    #[serde(skip)]
    fields: crate::protocol::JsonObject,
    active: bool,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    nbf: Option<u64>,
    #[serde(default)]
    aud: Option<OneOrMany>,
    #[serde(default)]
    iss: Option<String>,
    /// The key the token is bound to (RFC 9449 §6.2 `cnf.jkt`).
    #[serde(default)]
    cnf: Option<super::Confirmation>,
}

struct Cached {
    result: Result<Principal, InvalidToken>,
    until: Instant,
}

/// The largest introspection response accepted.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Verifies tokens with an RFC 7662 introspection endpoint.
pub struct IntrospectionVerifier {
    endpoint: String,
    client: reqwest::Client,
    auth: ClientAuth,
    issuer: String,
    audiences: Vec<String>,
    ttl: Duration,
    negative_ttl: Duration,
    max_entries: usize,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("auth", &self.auth)
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// A verifier asking `endpoint` (https, or http on loopback) about tokens that must be
    /// issued by `issuer` for `audience`. A response without `aud` is refused: the audience
    /// check cannot be skipped.
    pub fn new(
        endpoint: impl Into<String>,
        auth: ClientAuth,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        let endpoint = endpoint.into();
        check_url("introspection endpoint", &endpoint)?;
        let audience = audience.into();
        if audience.is_empty() {
            return Err(ConfigKind::NoAudience.into());
        }
        Ok(IntrospectionVerifier {
            endpoint,
            client: http_client()?,
            auth,
            issuer: issuer.into(),
            audiences: vec![audience],
            ttl: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(10),
            max_entries: 10_000,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Accepts tokens for one more audience.
    #[must_use]
    pub fn add_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// How long an active result is reused at most (default 60 s; 0 disables caching).
    /// A revoked token keeps working for up to this long.
    #[must_use]
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long an inactive result is reused (default 10 s).
    #[must_use]
    pub fn negative_cache_ttl(mut self, ttl: Duration) -> Self {
        self.negative_ttl = ttl;
        self
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Result<Principal, InvalidToken>> {
        let cache = self.cache.lock().ok()?;
        let c = cache.get(key)?;
        (c.until > Instant::now()).then(|| c.result.clone())
    }

    fn remember(&self, key: [u8; 32], result: Result<Principal, InvalidToken>, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        let now = Instant::now();
        if cache.len() >= self.max_entries {
            cache.retain(|_, c| c.until > now);
            if cache.len() >= self.max_entries {
                cache.clear();
            }
        }
        cache.insert(
            key,
            Cached {
                result,
                until: now + ttl,
            },
        );
    }

    async fn check(&self, token: &str) -> Result<Principal, VerifyError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(r) = self.cached(&key) {
            return r.map_err(VerifyError::Invalid);
        }
        let resp = self.introspect(token).await?;
        let now = now_secs();
        let result = self.judge(resp, now);
        let ttl = match &result {
            Ok(p) => p.expires_at.map_or(self.ttl, |exp| {
                self.ttl.min(Duration::from_secs(exp.saturating_sub(now)))
            }),
            Err(_) => self.negative_ttl,
        };
        self.remember(key, result.clone(), ttl);
        result.map_err(VerifyError::Invalid)
    }

    async fn introspect(&self, token: &str) -> Result<IntrospectionResponse, VerifyError> {
        let fail = |what: &dyn std::fmt::Display| {
            tracing::warn!(endpoint = %self.endpoint, "token introspection failed: {what}");
            VerifyError::Unavailable
        };
        let mut req = self
            .client
            .post(&self.endpoint)
            .header(http::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        req = match &self.auth {
            ClientAuth::None => req,
            ClientAuth::Basic {
                client_id,
                client_secret,
            } => req.basic_auth(client_id, Some(client_secret)),
            ClientAuth::Bearer(t) => req.bearer_auth(t),
        };
        let resp = req.send().await.map_err(|e| fail(&e))?;
        let status = resp.status();
        if status.is_server_error() {
            return Err(fail(&status));
        }
        if !status.is_success() {
            // A 4xx (our credentials, a malformed request): the token cannot be vouched for.
            tracing::warn!(endpoint = %self.endpoint, %status, "token introspection refused");
            return Ok(inactive());
        }
        let body = read_limited(resp, MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| fail(&e))?
            .ok_or_else(|| fail(&"response too large"))?;
        // Parsed once as a map (kept for `Principal::claims`), then read by name.
        let fields: crate::protocol::JsonObject =
            serde_json::from_slice(&body).map_err(|e| fail(&e))?;
        let fields = serde_json::Value::Object(fields);
        let mut r = IntrospectionResponse::deserialize(&fields).map_err(|e| fail(&e))?;
        if let serde_json::Value::Object(fields) = fields {
            r.fields = fields;
        }
        Ok(r)
    }

    fn judge(&self, r: IntrospectionResponse, now: u64) -> Result<Principal, InvalidToken> {
        if !r.active {
            return Err(InvalidToken::Inactive);
        }
        if r.exp.is_some_and(|exp| exp <= now) {
            return Err(InvalidToken::Expired);
        }
        if r.nbf.is_some_and(|nbf| nbf > now + 60) {
            return Err(InvalidToken::NotYetValid);
        }
        if !r.aud.is_some_and(|a| a.contains_any(&self.audiences)) {
            return Err(InvalidToken::WrongAudience);
        }
        let issuer = match r.iss {
            Some(iss) if iss != self.issuer => return Err(InvalidToken::WrongIssuer),
            _ => self.issuer.clone(),
        };
        // Client-credentials tokens may have no `sub`: the client is the caller.
        let subject = match (r.sub, &r.client_id) {
            (Some(sub), _) => sub,
            (None, Some(client)) => format!("client:{client}"),
            (None, None) => return Err(InvalidToken::Malformed),
        };
        let mut p = Principal::new(issuer, subject)
            .with_scopes(r.scope.map(ScopeClaim::into_vec).unwrap_or_default());
        p.client_id = r.client_id;
        p.expires_at = r.exp;
        p.dpop_jkt = r.cnf.and_then(|c| c.jkt);
        Ok(p.with_claims(r.fields))
    }
}

fn inactive() -> IntrospectionResponse {
    IntrospectionResponse {
        fields: Default::default(),
        active: false,
        scope: None,
        client_id: None,
        sub: None,
        exp: None,
        nbf: None,
        aud: None,
        iss: None,
        cnf: None,
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }

    fn is_known_valid(&self, token: &str) -> bool {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        matches!(self.cached(&key), Some(Ok(_)))
    }
}
