//! [`AuthLayerBuilder`]: how an [`AuthLayer`] is configured (authorization servers, scopes,
//! DPoP, the handler's security settings) and checked before it is built.
//!
//! Not here: what the layer does with a request (`layer.rs`).

use super::dpop::{DpopMode, DpopReplayCache, DpopSettings, Nonces};
use super::endpoint::{check_scope, check_url};
use super::failures::{
    DEFAULT_FAILED_TOKEN_TTL, DEFAULT_FAILED_TOKENS, DEFAULT_FAILURE_LIMIT, FailureGuard,
};
use super::verifier::TokenVerifier;
use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::jose::{Algorithm, is_asymmetric};
use crate::protocol::{PROTECTED_RESOURCE_WELL_KNOWN, ProtectedResourceMetadata};
use crate::server::{ScopeRules, Server};
use crate::store::RateLimit;
use crate::transport::http::{SecurityLayer, StreamableHttpOptions};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

use super::layer::{AuthLayer, Config};

/// Builds an [`AuthLayer`].
pub struct AuthLayerBuilder {
    resource: String,
    verifier: Arc<dyn TokenVerifier>,
    authorization_servers: Vec<String>,
    required_scopes: Vec<String>,
    rules: ScopeRules,
    /// Scopes tools declare, for the metadata.
    tool_declared: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    resource_name: Option<String>,
    security: SecurityLayer,
    dpop: DpopSettings,
    nonce_period: Option<Duration>,
    nonce_secret: Option<Vec<u8>>,
    failure_limit: Option<RateLimit>,
    failed_tokens: (usize, Duration),
}

impl std::fmt::Debug for AuthLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayerBuilder")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .finish_non_exhaustive()
    }
}

impl AuthLayer {
    /// Starts a layer for the MCP server at `resource` (its canonical URI, e.g.
    /// `https://mcp.example.com/mcp`, which is also the audience tokens should carry),
    /// checking tokens with `verifier`.
    pub fn builder(resource: impl Into<String>, verifier: impl TokenVerifier) -> AuthLayerBuilder {
        AuthLayerBuilder {
            resource: resource.into(),
            verifier: Arc::new(verifier),
            authorization_servers: Vec::new(),
            required_scopes: Vec::new(),
            rules: ScopeRules::new(),
            tool_declared: Vec::new(),
            scopes_supported: None,
            resource_name: None,
            security: SecurityLayer::new(&StreamableHttpOptions::default()),
            dpop: DpopSettings::new(),
            nonce_period: None,
            nonce_secret: None,
            failure_limit: Some(DEFAULT_FAILURE_LIMIT),
            failed_tokens: (DEFAULT_FAILED_TOKENS, DEFAULT_FAILED_TOKEN_TTL),
        }
    }
}

impl AuthLayerBuilder {
    /// Names an authorization server (its issuer identifier) in the metadata; at least one
    /// is required.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Requires `scope` on every request (none by default). A token without it gets 403
    /// `insufficient_scope` naming every required scope.
    #[must_use]
    pub fn require_scope(mut self, scope: impl Into<String>) -> Self {
        self.required_scopes.push(scope.into());
        self
    }

    /// Calls of tool `tool` need `scope` besides the scopes every request needs (repeat for
    /// more: all are needed). A call without it gets 403 `insufficient_scope` naming every
    /// scope the call needs, before the tool runs; the session is kept, so a client that
    /// steps up continues on it. Tools may also declare their scopes themselves
    /// ([`Tool::requires_scope`](crate::protocol::Tool::requires_scope)); both apply.
    #[must_use]
    pub fn tool_scope(mut self, tool: impl Into<String>, scope: impl Into<String>) -> Self {
        self.rules.add_tool(tool, scope);
        self
    }

    /// Requests of `method` (e.g. `resources/read`, `prompts/get`) need `scope`, like
    /// [`tool_scope`](Self::tool_scope).
    #[must_use]
    pub fn method_scope(mut self, method: impl Into<String>, scope: impl Into<String>) -> Self {
        self.rules.add_method(method, scope);
        self
    }

    /// Lists the scopes `server`'s tools declare (as registered now) in the metadata's
    /// `scopes_supported`, so that clients can discover them.
    #[must_use]
    pub fn scopes_of(mut self, server: &Server) -> Self {
        for s in server.declared_scopes() {
            if !self.tool_declared.contains(&s) {
                self.tool_declared.push(s);
            }
        }
        self
    }

    /// The scopes advertised in the metadata (default: every scope the layer requires, per
    /// request, per tool or per method, and those of [`scopes_of`](Self::scopes_of)).
    #[must_use]
    pub fn scopes_supported(mut self, scopes: Vec<String>) -> Self {
        self.scopes_supported = Some(scopes);
        self
    }

    /// A human-readable name for the metadata.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Runs the Host and Origin checks, and answers trusted origins with CORS headers, with
    /// the same settings as the handler behind the layer (by default the layer uses the
    /// handler's defaults: both checks on, no CORS).
    #[must_use]
    pub fn request_checks_of(mut self, options: &StreamableHttpOptions) -> Self {
        self.security = SecurityLayer::new(options);
        self
    }

    /// The budget of failed authentications of one client address (a token bucket; a 401
    /// for an invalid token takes a token): an address past it gets 429 with `Retry-After`
    /// before its token is verified. Addresses are told as the handler's options say
    /// ([`request_checks_of`](Self::request_checks_of): `client_addresses`, behind trusted
    /// proxies, IPv6 by prefix). `None`: no budget. Default: 20 a minute, bursts of 20.
    #[must_use]
    pub fn failed_auth_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.failure_limit = limit;
        self
    }

    /// Remembers up to `capacity` tokens that failed verification, for `ttl`, by their
    /// SHA-256: the same token again gets its 401 without a signature check (a token not
    /// valid yet, or signed by a key not known yet, is not remembered). A capacity of 0 or a
    /// zero `ttl` remembers none. Default: 10,000 tokens, 60 s.
    #[must_use]
    pub fn failed_token_cache(mut self, capacity: usize, ttl: Duration) -> Self {
        self.failed_tokens = (capacity, ttl);
        self
    }

    /// How DPoP-bound tokens (RFC 9449) are treated (default [`DpopMode::Allowed`]).
    #[must_use]
    pub fn dpop(mut self, mode: DpopMode) -> Self {
        self.dpop.mode = mode;
        self
    }

    /// The algorithms a DPoP proof may be signed with (default ES256, ES384, EdDSA, RS256,
    /// PS256); symmetric ones are refused when the layer is built.
    #[must_use]
    pub fn dpop_algorithms(mut self, algs: Vec<Algorithm>) -> Self {
        self.dpop.algs = algs;
        self
    }

    /// How far a proof's `iat` may be from now, both ways (default 5 minutes). Proof ids
    /// are remembered for twice this.
    #[must_use]
    pub fn dpop_window(mut self, window: Duration) -> Self {
        self.dpop.window = window;
        self
    }

    /// Requires server nonces in proofs (RFC 9449 §8): a proof without the current one gets
    /// 401 `use_dpop_nonce` with a `DPoP-Nonce` header. The nonce changes every `rotation`;
    /// the previous one stays valid for one more period.
    #[must_use]
    pub fn dpop_nonce(mut self, rotation: Duration) -> Self {
        self.nonce_period = Some(rotation);
        self
    }

    /// The secret nonces are derived from (default: random per layer). Give every instance
    /// behind one load balancer the same secret, so that they agree on the nonce.
    #[must_use]
    pub fn dpop_nonce_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.nonce_secret = Some(secret.into());
        self
    }

    /// Where accepted proof ids are remembered (default: a [`MemoryReplayCache`](super::MemoryReplayCache) of this
    /// process). Several instances need one shared cache, or a proof replayed to another
    /// instance is accepted there.
    #[must_use]
    pub fn dpop_replay_cache(mut self, cache: Arc<dyn DpopReplayCache>) -> Self {
        self.dpop.replay = cache;
        self
    }

    /// Builds the layer, checking the configuration.
    pub fn build(self) -> Result<AuthLayer, ConfigError> {
        let uri = check_url("resource", &self.resource)?;
        if uri.query().is_some() || self.resource.contains('#') {
            return Err(ConfigKind::ResourceId {
                resource: self.resource,
            }
            .into());
        }
        if self.authorization_servers.is_empty() {
            return Err(ConfigKind::InsecureUrl {
                what: "authorization server (none given)",
                url: String::new(),
            }
            .into());
        }
        for issuer in &self.authorization_servers {
            check_url("authorization server", issuer)?;
        }
        for s in &self.required_scopes {
            check_scope(s)?;
        }
        for s in self.rules.scopes() {
            check_scope(s)?;
        }
        let mut scopes_supported = self.scopes_supported.unwrap_or_else(|| {
            let mut all = self.required_scopes.clone();
            let more = self.rules.scopes().map(str::to_owned);
            for s in more.chain(self.tool_declared) {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
            all
        });
        scopes_supported.retain(|s| s != "offline_access");
        for s in &scopes_supported {
            check_scope(s)?;
        }
        let path_aware = ProtectedResourceMetadata::well_known_path(uri.path());
        let origin = match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
            _ => {
                return Err(ConfigKind::ResourceId {
                    resource: self.resource,
                }
                .into());
            }
        };
        let mut dpop = self.dpop;
        if dpop.algs.is_empty() || dpop.algs.iter().any(|a| !is_asymmetric(*a)) {
            return Err(ConfigKind::DpopAlgorithms.into());
        }
        if let Some(period) = self.nonce_period {
            let secret = match self.nonce_secret {
                Some(s) => s,
                None => {
                    let mut s = vec![0u8; 32];
                    getrandom::fill(&mut s).map_err(|_| ConfigError::from(ConfigKind::Random))?;
                    s
                }
            };
            dpop.nonces = Some(Nonces::new(secret, period));
        }
        let mut metadata =
            ProtectedResourceMetadata::new(self.resource.clone(), self.authorization_servers);
        metadata.scopes_supported = scopes_supported;
        metadata.resource_name = self.resource_name;
        if dpop.mode != DpopMode::Off {
            metadata.dpop_signing_alg_values_supported = dpop.alg_names();
            metadata.dpop_bound_access_tokens_required = dpop.mode == DpopMode::Required;
        }
        let metadata_json = serde_json::to_vec(&metadata).map_err(|e| {
            ConfigError::from(ConfigKind::ResourceId {
                resource: e.to_string(),
            })
        })?;
        Ok(AuthLayer {
            config: Arc::new(Config {
                verifier: self.verifier,
                metadata_json: Bytes::from(metadata_json),
                metadata_url: format!("{origin}{path_aware}"),
                metadata_paths: [path_aware, PROTECTED_RESOURCE_WELL_KNOWN.to_owned()],
                required_scopes: self.required_scopes,
                rules: (!self.rules.is_empty()).then(|| Arc::new(self.rules)),
                security: self.security,
                dpop_algs: dpop.alg_names().join(" "),
                dpop,
                origin,
                failures: FailureGuard::new(
                    self.failure_limit,
                    self.failed_tokens.0,
                    self.failed_tokens.1,
                ),
                resource_path: uri.path().to_owned(),
            }),
        })
    }
}
