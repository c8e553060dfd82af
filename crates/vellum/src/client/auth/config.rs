//! What an [`OAuth`](super::OAuth) client is configured with: the [`Grant`] it obtains tokens
//! by, DPoP, scopes, the client's identity, the store and the redirect, gathered by
//! [`OAuthBuilder`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::redirect::{RedirectFuture, RedirectHandler};
use super::registration::{ClientIdentity, PreregisteredClient};
use super::store::{MemoryTokenStore, TokenStore};
use super::{AuthError, Secret};

/// How the client obtains tokens.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Grant {
    /// The authorization-code flow with PKCE: a user authorizes in a browser (needs a
    /// [`RedirectHandler`]). The default.
    #[default]
    AuthorizationCode,
    /// Client credentials (RFC 6749 §4.4): a machine client authenticating with the secret or
    /// private key of a [`PreregisteredClient`] (or a secret from dynamic registration).
    ClientCredentials,
    /// A JWT bearer grant (RFC 7523 §2.1) with an assertion from the platform: workload
    /// identity (the token of a cloud or CI platform, a Kubernetes service account).
    JwtBearer(Arc<dyn AssertionSource>),
    /// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    /// enterprise identity provider for an identity assertion grant (ID-JAG, RFC 8693), which
    /// the MCP server's authorization server takes as a JWT bearer grant.
    EnterpriseManaged(Arc<EnterpriseConfig>),
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Grant::AuthorizationCode => "AuthorizationCode",
            Grant::ClientCredentials => "ClientCredentials",
            Grant::JwtBearer(_) => "JwtBearer",
            Grant::EnterpriseManaged(_) => "EnterpriseManaged",
        })
    }
}

/// Gives a JWT assertion (or subject token) when the flow needs one: read it from a file a
/// platform rotates, fetch it from a metadata service, or return a fixed value ([`Secret`]
/// implements this).
pub trait AssertionSource: Send + Sync + 'static {
    /// The current assertion.
    fn assertion(&self) -> RedirectFuture<'_, Secret>;
}

impl AssertionSource for Secret {
    fn assertion(&self) -> RedirectFuture<'_, Secret> {
        let s = self.clone();
        Box::pin(async move { Ok(s) })
    }
}

impl<F, Fut> AssertionSource for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Secret, AuthError>> + Send + 'static,
{
    fn assertion(&self) -> RedirectFuture<'_, Secret> {
        Box::pin(self())
    }
}

/// The enterprise identity provider's part of [`Grant::EnterpriseManaged`].
#[non_exhaustive]
pub struct EnterpriseConfig {
    /// The identity provider's token endpoint (where the exchange happens).
    pub idp_token_endpoint: String,
    /// This client's id at the identity provider.
    pub idp_client_id: String,
    /// Its secret there, if it is a confidential client (sent with HTTP Basic).
    pub idp_client_secret: Option<Secret>,
    /// The user's token at the identity provider (an OpenID ID token by default).
    pub subject_token: Arc<dyn AssertionSource>,
    /// Its type (RFC 8693 §3). Default `urn:ietf:params:oauth:token-type:id_token`.
    pub subject_token_type: String,
}

impl EnterpriseConfig {
    /// The exchange at `idp_token_endpoint` by client `idp_client_id` of `subject_token` (an
    /// ID token).
    pub fn new(
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        subject_token: impl AssertionSource,
    ) -> Self {
        EnterpriseConfig {
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            idp_client_secret: None,
            subject_token: Arc::new(subject_token),
            subject_token_type: "urn:ietf:params:oauth:token-type:id_token".into(),
        }
    }

    /// With a client secret at the identity provider.
    #[must_use]
    pub fn idp_client_secret(mut self, secret: impl Into<Secret>) -> Self {
        self.idp_client_secret = Some(secret.into());
        self
    }
}

/// When requests are sender-constrained with DPoP (RFC 9449).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DpopMode {
    /// Never: bearer tokens only.
    Off,
    /// When the authorization server advertises ES256 DPoP proofs
    /// (`dpop_signing_alg_values_supported`). The default.
    #[default]
    WhenSupported,
    /// Always send proofs (to the token endpoint and the MCP server), whatever the metadata
    /// says.
    Always,
}

/// Everything an [`OAuth`] client runs with.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) redirect: Option<Arc<dyn RedirectHandler>>,
    pub(crate) identity: ClientIdentity,
    pub(crate) scopes: Vec<String>,
    pub(crate) offline_access: bool,
    pub(crate) grant: Grant,
    pub(crate) dpop: DpopMode,
    pub(crate) max_authorizations: u32,
    pub(crate) timeout: Duration,
    pub(crate) refresh_margin: Duration,
}

/// Builds an [`OAuth`](super::OAuth) client for one MCP server
/// ([`OAuth::builder`](super::OAuth::builder)).
#[must_use]
pub struct OAuthBuilder {
    server: String,
    config: Config,
}

impl OAuthBuilder {
    pub(crate) fn new(server: String) -> Self {
        OAuthBuilder {
            server,
            config: Config {
                store: Arc::new(MemoryTokenStore::new()),
                redirect: None,
                identity: ClientIdentity {
                    client_name: "Vellum MCP client".into(),
                    client_uri: None,
                    metadata_document_url: None,
                    preregistered: Vec::new(),
                    dynamic_registration: true,
                },
                scopes: Vec::new(),
                offline_access: true,
                grant: Grant::AuthorizationCode,
                dpop: DpopMode::WhenSupported,
                max_authorizations: 3,
                timeout: Duration::from_secs(30),
                refresh_margin: Duration::from_secs(60),
            },
        }
    }

    /// Where authorizations are kept. Default: in memory ([`MemoryTokenStore`]), gone when
    /// the process ends; [`FileTokenStore`](super::FileTokenStore) keeps them on disk.
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.config.store = Arc::new(store);
        self
    }

    /// How the user's browser gets to the authorization server and back
    /// ([`LoopbackRedirect`](super::LoopbackRedirect), [`PasteRedirect`](super::PasteRedirect)).
    /// Default: none: a server that needs a user to log in fails with
    /// [`AuthError::LoginRequired`] (stored tokens are still used and refreshed).
    pub fn redirect(mut self, redirect: impl RedirectHandler) -> Self {
        self.config.redirect = Some(Arc::new(redirect));
        self
    }

    /// The grant tokens are obtained with. Default [`Grant::AuthorizationCode`].
    pub fn grant(mut self, grant: Grant) -> Self {
        self.config.grant = grant;
        self
    }

    /// The name shown to the user at the authorization server (dynamic registration).
    /// Default "Vellum MCP client".
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.config.identity.client_name = name.into();
        self
    }

    /// The client's home page, sent with dynamic registrations. Default none.
    pub fn client_uri(mut self, uri: impl Into<String>) -> Self {
        self.config.identity.client_uri = Some(uri.into());
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as its client id by
    /// authorization servers that support them (no registration needed). Default none.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.config.identity.metadata_document_url = Some(url.into());
        self
    }

    /// Credentials registered beforehand (repeatable; those bound to the server's issuer win
    /// over those for any issuer). Default none.
    pub fn preregistered(mut self, client: PreregisteredClient) -> Self {
        self.config.identity.preregistered.push(client);
        self
    }

    /// Whether to register dynamically (RFC 7591) where the server offers it. Default true.
    pub fn dynamic_registration(mut self, on: bool) -> Self {
        self.config.identity.dynamic_registration = on;
        self
    }

    /// Scopes to ask for on top of what the server asks for. Default none: the scopes of
    /// the server's challenge, else all it lists in its protected-resource metadata, else no
    /// `scope` parameter.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.config.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether to add `offline_access` (a refresh token) when the authorization server lists
    /// it, in the authorization-code flow. Default true.
    pub fn offline_access(mut self, on: bool) -> Self {
        self.config.offline_access = on;
        self
    }

    /// DPoP. Default [`DpopMode::WhenSupported`].
    pub fn dpop(mut self, mode: DpopMode) -> Self {
        self.config.dpop = mode;
        self
    }

    /// How many authorizations one request may trigger (repeated 401, or 403
    /// `insufficient_scope` step-ups) before it fails with [`AuthError::TooManyAttempts`].
    /// Default 3.
    pub fn max_authorizations_per_request(mut self, n: u32) -> Self {
        self.config.max_authorizations = n.max(1);
        self
    }

    /// How long each request to an authorization server may take. Default 30 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = timeout;
        self
    }

    /// How long before expiry an access token is refreshed. Default 60 s.
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.config.refresh_margin = margin;
        self
    }

    /// The server URL and configuration, for [`build`](Self::build) (in `oauth.rs`, which
    /// owns the client).
    pub(crate) fn into_parts(self) -> (String, Config) {
        (self.server, self.config)
    }
}
