//! Authorization: who is calling. An auth layer (the OAuth resource-server layer
//! [`AuthLayer`], or your own middleware) verifies a request and inserts into its extensions
//! the neutral [`Caller`](crate::server::Caller) the server core binds sessions, tasks and
//! multi round-trip state to (your own middleware inserts one too), and here the richer
//! [`Principal`] that handlers read with `ctx.extension::<Principal>()`.
//!
//! With the `auth` feature, this module makes an MCP server an OAuth 2.1 resource server:
//!
//! ```text
//! request ─► AuthLayer: Protected Resource Metadata (RFC 9728) at the well-known URLs
//!          ─► SecurityLayer: Host / Origin checks (the handler's settings; not run again)
//!          ─► Bearer token ─► TokenVerifier (JWT + JWKS, or RFC 7662 introspection)
//!          ─► required scopes ─► Principal + Caller in the extensions ─► the MCP handler
//! ```
//!
//! - [`AuthLayer`]: a tower `Layer` for any Vellum server (401 with a `WWW-Authenticate`
//!   challenge naming the metadata, 403 `insufficient_scope` for step-up).
//! - [`TokenVerifier`]: turns a bearer token into a [`Principal`]; the audience check is part
//!   of every implementation and cannot be turned off. [`JwtVerifier`] (signed JWTs, keys from
//!   a [`JwksCache`] or a static key) and [`IntrospectionVerifier`] (RFC 7662).
//! - [`ProtectedResourceMetadata`] and [`Challenge`]: the documents and headers on the wire.
//!
//! - Per-tool and per-method scopes: declared on the tool
//!   ([`Tool::requires_scope`](crate::protocol::Tool::requires_scope)) or given to the layer
//!   ([`AuthLayerBuilder::tool_scope`]); a call without them gets 403 with a step-up
//!   challenge before the tool runs.
//! - DPoP (RFC 9449): tokens bound to a key (`cnf.jkt`) are accepted only with the `DPoP`
//!   scheme and a valid proof ([`DpopMode`], [`AuthLayerBuilder::dpop`]).
//!
//! Not here: the client side of OAuth (discovery, PKCE, token storage).

#[cfg(feature = "auth")]
mod builder;
#[cfg(feature = "auth")]
mod challenge;
#[cfg(feature = "auth")]
mod credentials;
#[cfg(feature = "auth")]
mod dpop;
#[cfg(all(feature = "auth", feature = "redis"))]
mod dpop_redis;
#[cfg(feature = "auth")]
mod endpoint;
#[cfg(feature = "auth")]
mod failures;
#[cfg(feature = "auth")]
mod introspection;
#[cfg(feature = "auth")]
mod jwks;
#[cfg(feature = "auth")]
mod jwt;
#[cfg(feature = "auth")]
mod layer;
#[cfg(feature = "auth")]
mod token_cache;
#[cfg(feature = "auth")]
mod verifier;

#[cfg(feature = "auth")]
pub use builder::AuthLayerBuilder;
#[cfg(feature = "auth")]
pub use challenge::Challenge;
#[cfg(feature = "auth")]
pub use dpop::{DpopMode, DpopReplayCache, MemoryReplayCache, ReplayFuture};
#[cfg(all(feature = "auth", feature = "redis"))]
pub use dpop_redis::RedisReplayCache;
#[cfg(feature = "auth")]
#[cfg(feature = "auth")]
pub use introspection::{ClientAuth, IntrospectionVerifier};
#[cfg(feature = "auth")]
pub use jwks::JwksCache;
#[cfg(feature = "auth")]
pub use jwt::JwtVerifier;
#[cfg(feature = "auth")]
pub use layer::{AuthBody, AuthFuture, AuthLayer, AuthService, MetadataService};
// The document lives with the protocol types: the OAuth client reads it too.
#[cfg(feature = "auth")]
pub use crate::protocol::{PROTECTED_RESOURCE_WELL_KNOWN, ProtectedResourceMetadata};
#[cfg(feature = "auth")]
pub use verifier::{InvalidToken, TokenVerifier, VerifyError, VerifyFuture};

/// An authenticated caller, as the OAuth resource-server layer (`AuthLayer`) verified it:
/// identity, scopes, and every claim of the token.
///
/// Which one a tool takes: [`Caller`](crate::server::Caller) (an extractor, or
/// `ctx.caller()`) for who is calling and what they may do; it is what the core binds
/// sessions and tasks to and works under any authentication layer, including your own.
/// Take `Principal` (an extractor too, `Option<Principal>` where auth is optional) when the
/// tool needs what only the token says: [`claim`](Self::claim) reads your issuer's own
/// claims (a tenant, an email, roles) by name.
///
/// Sessions are bound to `(issuer, subject)`, not to a token, so a refreshed token keeps its
/// session while another principal presenting the same session id is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// Who vouched for the caller (the token's `iss`).
    pub issuer: String,
    /// The caller (the token's `sub`).
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id` / `azp`), if known.
    pub client_id: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Expiry as seconds since the Unix epoch, if the token has one.
    pub expires_at: Option<u64>,
    /// The RFC 7638 thumbprint of the key the token is bound to (its `cnf.jkt`, RFC 9449):
    /// such a token is accepted only with the `DPoP` scheme and a proof signed by that key.
    pub dpop_jkt: Option<String>,
    /// Every claim of the verified token (or introspection response), shared by the
    /// principal's clones: see [`claims`](Self::claims).
    claims: std::sync::Arc<crate::protocol::JsonObject>,
}

/// A token's confirmation claim (RFC 7800 `cnf`); only `jkt` (RFC 9449) is read.
#[cfg(feature = "auth")]
#[derive(Debug, Clone, serde::Deserialize)]
struct Confirmation {
    #[serde(default)]
    jkt: Option<String>,
}

impl From<&Principal> for crate::server::Caller {
    fn from(p: &Principal) -> Self {
        p.caller()
    }
}

impl Principal {
    /// A principal with an issuer and a subject, no scopes.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Principal {
            issuer: issuer.into(),
            subject: subject.into(),
            client_id: None,
            scopes: Vec::new(),
            expires_at: None,
            dpop_jkt: None,
            claims: std::sync::Arc::default(),
        }
    }

    /// Sets the claims [`claims`](Self::claims) returns (the verifiers set the token's own;
    /// a test or a verifier of your own sets any).
    #[must_use]
    pub fn with_claims(mut self, claims: crate::protocol::JsonObject) -> Self {
        self.claims = std::sync::Arc::new(claims);
        self
    }

    /// Every claim of the verified token, by name: the registered ones (`iss`, `sub`,
    /// `exp`, …) and your issuer's own (`tenant`, `email`, `roles`, …). For a token checked
    /// by introspection, the fields of the introspection response. Empty for a principal
    /// made by hand without [`with_claims`](Self::with_claims).
    ///
    /// ```
    /// use serde_json::json;
    /// use vellum::auth::Principal;
    ///
    /// let claims = json!({"sub": "ada", "tenant": "acme", "roles": ["admin"]});
    /// let p = Principal::new("https://as.example", "ada")
    ///     .with_claims(claims.as_object().unwrap().clone());
    /// assert_eq!(p.claims()["tenant"], "acme");
    /// assert_eq!(p.claim::<Vec<String>>("roles"), Some(vec!["admin".to_owned()]));
    /// assert_eq!(p.claim::<String>("email"), None);
    /// ```
    pub fn claims(&self) -> &crate::protocol::JsonObject {
        &self.claims
    }

    /// The claim `name` as a `T`; `None` when the token has no such claim or it is not a
    /// `T` (a string where a list was expected, …).
    pub fn claim<T: serde::de::DeserializeOwned>(&self, name: &str) -> Option<T> {
        T::deserialize(self.claims.get(name)?).ok()
    }

    /// Adds scopes.
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Sets the OAuth client id.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Binds the principal's token to the key with this thumbprint (`cnf.jkt`).
    #[must_use]
    pub fn with_dpop_jkt(mut self, jkt: impl Into<String>) -> Self {
        self.dpop_jkt = Some(jkt.into());
        self
    }

    /// Sets the expiry (seconds since the Unix epoch).
    #[must_use]
    pub fn with_expires_at(mut self, expires_at: u64) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// True when the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// True when both name the same caller (issuer and subject).
    pub fn same_caller(&self, other: &Principal) -> bool {
        self.issuer == other.issuer && self.subject == other.subject
    }

    /// The caller as the server core knows it: issuer and subject (what sessions, tasks and
    /// multi round-trip state are bound to) and the granted scopes (what tools requiring a
    /// scope are checked against).
    pub fn caller(&self) -> crate::server::Caller {
        crate::server::Caller::new(self.issuer.clone(), self.subject.clone())
            .with_scopes(self.scopes.iter().cloned())
    }
}
