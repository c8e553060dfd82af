//! [`OAuth`]: the OAuth client of one MCP server. A transport asks it for the headers of each
//! request ([`OAuth::headers`]) and shows it each 401 or 403 ([`OAuth::on_response`]); it
//! keeps the authorization in its [`TokenStore`](super::TokenStore), refreshes tokens before
//! they expire, re-discovers on a 401 (the server may have moved to another authorization
//! server), steps up on `insufficient_scope`, and runs one flow at a time however many
//! requests are waiting.

use std::sync::Arc;

use base64::Engine as _;
use reqwest::Url;

use super::challenge::{AuthChallenge, governing, parse_challenges};
use super::config::{Config, DpopMode, Grant, OAuthBuilder};
use super::discovery::{self, AuthorizationServerMetadata, Discovery};
use super::flow;
use super::http::Http;
use super::store::{AuthRecord, StoreKey};
use super::token::{Dpop, TokenSet, TokenType};
use super::{AuthError, Secret, urls};
use crate::jose::{Algorithm, SigningKey, now_secs};

/// The OAuth 2.1 client of one MCP server. Cheap to clone; clones share the authorization.
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    server: Url,
    server_key: String,
    cfg: Config,
    http: Http,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    loaded: bool,
    record: Option<AuthRecord>,
    discovery: Option<Discovery>,
    dpop: Option<Arc<Dpop>>,
    /// Bumped whenever the tokens change: a 401 to a request sent with older tokens is
    /// retried with the new ones instead of starting another flow.
    generation: u64,
    /// Authorizations since the server last accepted a request: the retry limit holds across
    /// requests too (a client that gives up on one request and tries another, as the era
    /// probe does, must not start a fourth flow against a server that refuses every token).
    unanswered: u32,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &self.inner.server_key)
            .field("grant", &self.inner.cfg.grant)
            .field("dpop", &self.inner.cfg.dpop)
            .finish_non_exhaustive()
    }
}

/// The authorization budget of one request: how many flows it has triggered, whether it
/// has tried a refresh and a DPoP nonce. Make one per request with [`OAuth::attempt`].
#[derive(Debug, Default, Clone)]
pub struct AuthAttempt {
    authorizations: u32,
    refreshed: bool,
    nonce_retries: u32,
    stale_retries: u32,
    generation: u64,
}

/// What the client holds for its server (never the tokens themselves).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthStatus {
    /// The authorization server that issued the tokens.
    pub issuer: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the access token expires (seconds since the Unix epoch).
    pub expires_at: Option<u64>,
    /// How it is presented.
    pub token_type: TokenType,
    /// True when a refresh token is held.
    pub refreshable: bool,
}

impl AuthStatus {
    fn of(record: &AuthRecord) -> Option<Self> {
        let t = record.tokens.as_ref()?;
        Some(AuthStatus {
            issuer: record.issuer.clone(),
            scopes: t.scopes(),
            expires_at: t.expires_at,
            token_type: t.token_type,
            refreshable: t.refresh_token.is_some(),
        })
    }
}

impl OAuthBuilder {
    /// The client. Fails when the server URL is not `https://` (or `http://` on loopback).
    pub fn build(self) -> Result<OAuth, AuthError> {
        let (server, config) = self.into_parts();
        OAuth::from_config(&server, config)
    }
}

impl OAuth {
    /// A builder for the OAuth client of the MCP server at `server_url`.
    pub fn builder(server_url: impl Into<String>) -> OAuthBuilder {
        OAuthBuilder::new(server_url.into())
    }

    fn from_config(server: &str, cfg: Config) -> Result<Self, AuthError> {
        let server = urls::checked("MCP server", server)?;
        let http = Http::new(cfg.timeout)?;
        Ok(OAuth {
            inner: Arc::new(Inner {
                server_key: urls::canonical_resource(&server),
                server,
                cfg,
                http,
                state: tokio::sync::Mutex::new(State::default()),
            }),
        })
    }

    /// The MCP server's canonical URL (the key of its records in the store).
    pub fn server(&self) -> &str {
        &self.inner.server_key
    }

    /// A fresh budget for one request.
    pub fn attempt(&self) -> AuthAttempt {
        AuthAttempt::default()
    }

    /// The headers that authorize a `method` request to `url`: `Authorization` (marked
    /// sensitive) and, for DPoP-bound tokens, a fresh `DPoP` proof. Empty when nothing is
    /// held yet, or `url` is not on the server's origin (credentials go nowhere else).
    /// Refreshes the access token first when it is about to expire.
    pub async fn headers(
        &self,
        attempt: &mut AuthAttempt,
        method: &http::Method,
        url: &str,
    ) -> Result<http::HeaderMap, AuthError> {
        let mut out = http::HeaderMap::new();
        let Ok(target) = Url::parse(url) else {
            return Ok(out);
        };
        if urls::origin(&target) != urls::origin(&self.inner.server) {
            return Ok(out);
        }
        let mut st = self.inner.state.lock().await;
        self.ensure_loaded(&mut st).await?;
        let due = st.record.as_ref().is_some_and(|r| self.refresh_due(r));
        if due && let Err(e) = self.refresh_locked(&mut st).await {
            tracing::debug!(server = %self.inner.server_key, "refreshing before expiry failed: {e}");
        }
        attempt.generation = st.generation;
        let Some(tokens) = st.record.as_ref().and_then(|r| r.tokens.as_ref()) else {
            return Ok(out);
        };
        if tokens.expires_within(0) {
            return Ok(out);
        }
        let token = tokens.access_token.expose();
        let scheme = match tokens.token_type {
            TokenType::Bearer => "Bearer",
            TokenType::Dpop => {
                let Some(dpop) = &st.dpop else {
                    return Err(AuthError::missing("key for its DPoP-bound token"));
                };
                let proof = dpop.proof(method.as_str(), &target, Some(token))?;
                out.insert("dpop", header(&proof)?);
                "DPoP"
            }
        };
        out.insert(
            http::header::AUTHORIZATION,
            header(&format!("{scheme} {token}"))?,
        );
        Ok(out)
    }

    /// Looks at a response to a request made with [`headers`](Self::headers): remembers a
    /// `DPoP-Nonce`, and on a 401 (refresh, or re-discover and authorize) or a 403
    /// `insufficient_scope` (step up with the union of the scopes) gets new tokens.
    /// `Ok(true)`: send the request again with fresh headers. `Ok(false)`: the response is
    /// not about authorization.
    pub async fn on_response(
        &self,
        attempt: &mut AuthAttempt,
        url: &str,
        status: http::StatusCode,
        headers: &http::HeaderMap,
    ) -> Result<bool, AuthError> {
        let mut st = self.inner.state.lock().await;
        let learned = match (&st.dpop, Url::parse(url)) {
            (Some(d), Ok(u)) => d.learn_nonce(&u, headers),
            _ => false,
        };
        if status != http::StatusCode::UNAUTHORIZED && status != http::StatusCode::FORBIDDEN {
            st.unanswered = 0;
            return Ok(false);
        }
        let values = headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok());
        let challenges = parse_challenges(values);
        let dpop_used = st
            .record
            .as_ref()
            .and_then(|r| r.tokens.as_ref())
            .is_some_and(|t| t.token_type == TokenType::Dpop);
        let challenge = governing(&challenges, dpop_used)
            .cloned()
            .unwrap_or_default();
        if status == http::StatusCode::FORBIDDEN && challenge.error() != Some("insufficient_scope")
        {
            return Ok(false);
        }
        if st.generation != attempt.generation && attempt.stale_retries < 2 {
            // Another request got new tokens while this one was out.
            attempt.stale_retries += 1;
            return Ok(true);
        }
        if status == http::StatusCode::FORBIDDEN {
            tracing::debug!(server = %self.inner.server_key, scope = ?challenge.scopes(), "insufficient scope: stepping up");
            self.authorize_locked(&mut st, attempt, &challenge, true)
                .await?;
            return Ok(true);
        }
        if challenge.error() == Some("use_dpop_nonce") && learned && attempt.nonce_retries < 2 {
            attempt.nonce_retries += 1;
            return Ok(true);
        }
        let refreshable = st
            .record
            .as_ref()
            .and_then(|r| r.tokens.as_ref())
            .is_some_and(|t| t.refresh_token.is_some());
        if refreshable && !attempt.refreshed {
            attempt.refreshed = true;
            let disc = self.discover(challenge.resource_metadata()).await?;
            let same_issuer = st
                .record
                .as_ref()
                .is_some_and(|r| r.issuer == disc.metadata.issuer);
            st.discovery = Some(disc);
            if same_issuer {
                match self.refresh_locked(&mut st).await {
                    Ok(()) => return Ok(true),
                    Err(e) => {
                        tracing::debug!(server = %self.inner.server_key, "refresh after 401 failed: {e}")
                    }
                }
            }
        }
        self.authorize_locked(&mut st, attempt, &challenge, false)
            .await?;
        Ok(true)
    }

    /// Authorizes now, without waiting for a 401: discovery from the well-known locations,
    /// then the configured grant (for the authorization-code flow, the redirect handler
    /// shows the user the authorization page). Replaces what was held.
    pub async fn login(&self) -> Result<AuthStatus, AuthError> {
        let mut st = self.inner.state.lock().await;
        self.ensure_loaded(&mut st).await?;
        let disc = self.discover(None).await?;
        // The user asked: a fresh start for the retry limit too.
        st.unanswered = 0;
        self.acquire_locked(&mut st, disc, &[]).await?;
        st.record
            .as_ref()
            .and_then(AuthStatus::of)
            .ok_or_else(|| AuthError::invalid("token response", "no tokens"))
    }

    /// Forgets every authorization held for the server (revoking the tokens where the
    /// authorization server offers revocation) and returns how many there were.
    pub async fn logout(&self) -> Result<usize, AuthError> {
        let mut st = self.inner.state.lock().await;
        let store = &self.inner.cfg.store;
        let records = store.for_server(&self.inner.server_key).await?;
        for r in &records {
            if let Some(tokens) = &r.tokens {
                self.revoke(r, tokens).await;
            }
            store.remove(&r.key()).await?;
        }
        let generation = st.generation + 1;
        *st = State {
            loaded: true,
            generation,
            ..State::default()
        };
        Ok(records.len())
    }

    /// What is held for the server, if anything.
    pub async fn status(&self) -> Result<Option<AuthStatus>, AuthError> {
        let mut st = self.inner.state.lock().await;
        self.ensure_loaded(&mut st).await?;
        Ok(st.record.as_ref().and_then(AuthStatus::of))
    }

    /// True when the record's access token should be refreshed now: it expires within the
    /// refresh margin, or within half its lifetime for tokens shorter-lived than twice the
    /// margin (so a short token is not refreshed the moment it arrives).
    fn refresh_due(&self, record: &AuthRecord) -> bool {
        let Some(t) = &record.tokens else {
            return false;
        };
        let (Some(expires_at), Some(_)) = (t.expires_at, &t.refresh_token) else {
            return false;
        };
        let lifetime = expires_at.saturating_sub(record.updated_at);
        let margin = self.inner.cfg.refresh_margin.as_secs().min(lifetime / 2);
        t.expires_within(margin)
    }

    async fn discover(&self, resource_metadata: Option<&str>) -> Result<Discovery, AuthError> {
        discovery::discover(&self.inner.http, &self.inner.server, resource_metadata).await
    }

    async fn ensure_loaded(&self, st: &mut State) -> Result<(), AuthError> {
        if st.loaded {
            return Ok(());
        }
        let records = self
            .inner
            .cfg
            .store
            .for_server(&self.inner.server_key)
            .await?;
        st.loaded = true;
        if let Some(r) = records.into_iter().next() {
            if let Some(key) = &r.dpop_key {
                match decode_key(key) {
                    Ok(k) => st.dpop = Some(Arc::new(Dpop::new(k))),
                    Err(e) => {
                        tracing::warn!(server = %self.inner.server_key, "the stored DPoP key is unusable: {e}")
                    }
                }
            }
            st.record = Some(r);
        }
        Ok(())
    }

    async fn authorize_locked(
        &self,
        st: &mut State,
        attempt: &mut AuthAttempt,
        challenge: &AuthChallenge,
        step_up: bool,
    ) -> Result<(), AuthError> {
        let made = attempt.authorizations.max(st.unanswered);
        if made >= self.inner.cfg.max_authorizations {
            return Err(AuthError::TooManyAttempts { attempts: made });
        }
        if matches!(self.inner.cfg.grant, Grant::AuthorizationCode)
            && self.inner.cfg.redirect.is_none()
        {
            return Err(AuthError::LoginRequired {
                server: self.inner.server_key.clone(),
            });
        }
        let disc = match st.discovery.take() {
            Some(d) if step_up || attempt.refreshed => d,
            _ => self.discover(challenge.resource_metadata()).await?,
        };
        attempt.authorizations += 1;
        st.unanswered += 1;
        self.acquire_locked(st, disc, &challenge.scopes()).await
    }

    /// Runs the grant with `disc` and keeps the result (in memory and in the store).
    async fn acquire_locked(
        &self,
        st: &mut State,
        disc: Discovery,
        challenge_scopes: &[String],
    ) -> Result<(), AuthError> {
        let cfg = &self.inner.cfg;
        let issuer = disc.metadata.issuer.clone();
        let key = StoreKey {
            issuer: issuer.clone(),
            server: self.inner.server_key.clone(),
        };
        // Only what this issuer granted is carried over: another issuer's client id, tokens
        // and scopes stay with it.
        let mut record = match st.record.as_ref().filter(|r| r.issuer == issuer) {
            Some(r) => r.clone(),
            None => cfg.store.load(&key).await?.unwrap_or_else(|| {
                AuthRecord::new(&issuer, &self.inner.server_key, &disc.resource)
            }),
        };
        record.resource.clone_from(&disc.resource);
        let dpop = self.dpop_for(st, &disc.metadata)?;
        let scopes = flow::choose_scopes(cfg, &disc, challenge_scopes, &record.scopes);
        let acquired = flow::acquire(
            &self.inner.http,
            cfg,
            &disc,
            record.client.as_ref(),
            scopes,
            dpop.as_deref(),
        )
        .await?;
        if acquired.client.is_some() {
            record.client = acquired.client;
        }
        record.dpop_key = match (&acquired.tokens.token_type, &dpop) {
            (TokenType::Dpop, Some(d)) => Some(Secret::new(crate::jose::b64url(d.key.pkcs8_der()))),
            _ => None,
        };
        record.tokens = Some(acquired.tokens);
        record.scopes = acquired.scopes;
        record.updated_at = now_secs();
        cfg.store.save(&record).await?;
        tracing::debug!(server = %self.inner.server_key, %issuer, "authorized");
        // The server has moved to another issuer: what the old one granted is dropped.
        for old in cfg.store.for_server(&self.inner.server_key).await? {
            if old.issuer != issuer {
                cfg.store.remove(&old.key()).await?;
            }
        }
        st.record = Some(record);
        st.discovery = Some(disc);
        st.generation += 1;
        Ok(())
    }

    /// Refreshes the held tokens; an `invalid_grant` drops the refresh token.
    async fn refresh_locked(&self, st: &mut State) -> Result<(), AuthError> {
        let cfg = &self.inner.cfg;
        let Some(mut record) = st.record.clone() else {
            return Err(AuthError::missing("tokens to refresh"));
        };
        let Some(tokens) = record.tokens.clone() else {
            return Err(AuthError::missing("tokens to refresh"));
        };
        let meta = self.metadata_for(st, &record.issuer).await?;
        let client = match record
            .client
            .clone()
            .or_else(|| cfg.identity.preregistered_registration(&meta))
        {
            Some(c) => c,
            None => {
                return Err(AuthError::NoClientIdentity {
                    issuer: record.issuer.clone(),
                });
            }
        };
        let dpop = if tokens.token_type == TokenType::Dpop {
            st.dpop.clone()
        } else {
            None
        };
        match flow::refresh(
            &self.inner.http,
            cfg,
            &meta,
            &client,
            &record.resource,
            &tokens,
            dpop.as_deref(),
        )
        .await
        {
            Ok(fresh) => {
                record.tokens = Some(fresh);
                record.updated_at = now_secs();
                cfg.store.save(&record).await?;
                st.record = Some(record);
                st.generation += 1;
                Ok(())
            }
            Err(e) => {
                if matches!(&e, AuthError::OAuth { error, .. } if error == "invalid_grant") {
                    record.tokens = Some(TokenSet {
                        refresh_token: None,
                        ..tokens
                    });
                    cfg.store.save(&record).await?;
                    st.record = Some(record);
                }
                Err(e)
            }
        }
    }

    /// The metadata of `issuer`: from the last discovery when it is that issuer's, else
    /// fetched.
    async fn metadata_for(
        &self,
        st: &State,
        issuer: &str,
    ) -> Result<AuthorizationServerMetadata, AuthError> {
        if let Some(d) = st
            .discovery
            .as_ref()
            .filter(|d| d.metadata.issuer == issuer)
        {
            return Ok(d.metadata.clone());
        }
        match discovery::authorization_server(&self.inner.http, issuer).await? {
            Some(m) => Ok(m),
            // A 2025-03-26 server without metadata: its discovery makes up the endpoints.
            None => Ok(self.discover(None).await?.metadata),
        }
    }

    /// The DPoP key to use with the server of `meta`, if DPoP is on for it.
    fn dpop_for(
        &self,
        st: &mut State,
        meta: &AuthorizationServerMetadata,
    ) -> Result<Option<Arc<Dpop>>, AuthError> {
        let on = match self.inner.cfg.dpop {
            DpopMode::Off => false,
            DpopMode::Always => true,
            DpopMode::WhenSupported => meta
                .dpop_signing_alg_values_supported
                .as_ref()
                .is_some_and(|a| a.iter().any(|a| a == "ES256")),
        };
        if !on {
            return Ok(None);
        }
        if st.dpop.is_none() {
            st.dpop = Some(Arc::new(Dpop::new(SigningKey::generate_es256()?)));
        }
        Ok(st.dpop.clone())
    }

    async fn revoke(&self, record: &AuthRecord, tokens: &TokenSet) {
        let Ok(Some(meta)) =
            discovery::authorization_server(&self.inner.http, &record.issuer).await
        else {
            return;
        };
        let Some(client) = record
            .client
            .clone()
            .or_else(|| self.inner.cfg.identity.preregistered_registration(&meta))
        else {
            return;
        };
        let cfg = &self.inner.cfg;
        if let Some(rt) = &tokens.refresh_token {
            flow::revoke(&self.inner.http, cfg, &meta, &client, rt, "refresh_token").await;
        }
        flow::revoke(
            &self.inner.http,
            cfg,
            &meta,
            &client,
            &tokens.access_token,
            "access_token",
        )
        .await;
    }
}

fn header(value: &str) -> Result<http::HeaderValue, AuthError> {
    let mut v = http::HeaderValue::from_str(value)
        .map_err(|_| AuthError::invalid("token response", "the token is not valid header text"))?;
    v.set_sensitive(true);
    Ok(v)
}

fn decode_key(stored: &Secret) -> Result<SigningKey, AuthError> {
    let der = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(stored.expose())
        .map_err(|_| AuthError::invalid("token store", "the DPoP key is not base64url"))?;
    Ok(SigningKey::from_pkcs8_der(&der, Algorithm::ES256)?)
}
