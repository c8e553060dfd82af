//! Who the client is to an authorization server, in the order of the MCP spec: credentials
//! registered beforehand for that server, else a Client ID Metadata Document URL (when the
//! server accepts them), else dynamic client registration (RFC 7591) where offered.
//!
//! Registrations belong to one issuer: a client id issued by one server is never shown to
//! another (the token store keys them by issuer).

use serde::{Deserialize, Serialize};

use super::discovery::AuthorizationServerMetadata;
use super::http::Http;
use super::{AuthError, Secret, urls};
use crate::jose::SigningKey;

/// How the client authenticates itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenEndpointAuth {
    /// A public client: only `client_id` in the form.
    None,
    /// HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523 §2.2).
    PrivateKeyJwt,
}

impl TokenEndpointAuth {
    /// The registered name (`client_secret_basic`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuth::None => "none",
            TokenEndpointAuth::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuth::ClientSecretPost => "client_secret_post",
            TokenEndpointAuth::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method with this registered name.
    pub fn parse(name: &str) -> Option<Self> {
        [
            TokenEndpointAuth::None,
            TokenEndpointAuth::ClientSecretBasic,
            TokenEndpointAuth::ClientSecretPost,
            TokenEndpointAuth::PrivateKeyJwt,
        ]
        .into_iter()
        .find(|m| m.as_str() == name)
    }
}

/// Where a client id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientSource {
    /// Given in the configuration ([`PreregisteredClient`]).
    Preregistered,
    /// The URL of a Client ID Metadata Document.
    MetadataDocument,
    /// Dynamic client registration (RFC 7591).
    Dynamic,
}

/// The client's identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How to authenticate at the token endpoint.
    pub auth_method: TokenEndpointAuth,
    /// The redirect URIs registered (dynamic registration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_uris: Vec<String>,
    /// Where the id comes from.
    pub source: ClientSource,
    /// When the secret expires (seconds since the Unix epoch; `None`: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_expires_at: Option<u64>,
}

/// Credentials registered with an authorization server beforehand.
#[derive(Clone)]
#[non_exhaustive]
pub struct PreregisteredClient {
    /// The issuer they belong to; `None`: whichever server the MCP server names (only for a
    /// client that talks to one known server).
    pub issuer: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client secret (confidential clients).
    pub client_secret: Option<Secret>,
    /// The private key for `private_key_jwt`.
    pub signing_key: Option<SigningKey>,
    /// How to authenticate; `None`: `private_key_jwt` with a key, else a secret method the
    /// server lists (Basic first), else none.
    pub auth_method: Option<TokenEndpointAuth>,
}

impl std::fmt::Debug for PreregisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreregisteredClient")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("signing_key", &self.signing_key)
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

impl PreregisteredClient {
    /// A public client id (no secret).
    pub fn new(client_id: impl Into<String>) -> Self {
        PreregisteredClient {
            issuer: None,
            client_id: client_id.into(),
            client_secret: None,
            signing_key: None,
            auth_method: None,
        }
    }

    /// Only for this issuer.
    #[must_use]
    pub fn for_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// With a client secret.
    #[must_use]
    pub fn secret(mut self, secret: impl Into<Secret>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// With a private key for `private_key_jwt`.
    #[must_use]
    pub fn signing_key(mut self, key: SigningKey) -> Self {
        self.signing_key = Some(key);
        self
    }

    /// With an explicit token endpoint authentication method.
    #[must_use]
    pub fn auth_method(mut self, method: TokenEndpointAuth) -> Self {
        self.auth_method = Some(method);
        self
    }

    fn applies_to(&self, issuer: &str) -> bool {
        self.issuer
            .as_deref()
            .is_none_or(|i| urls::same_issuer(i, issuer))
    }

    fn registration(&self, metadata: &AuthorizationServerMetadata) -> ClientRegistration {
        let auth_method = self.auth_method.unwrap_or_else(|| {
            if self.signing_key.is_some() {
                TokenEndpointAuth::PrivateKeyJwt
            } else if self.client_secret.is_some() {
                let listed = metadata.token_auth_methods();
                if !listed.iter().any(|m| m == "client_secret_basic")
                    && listed.iter().any(|m| m == "client_secret_post")
                {
                    TokenEndpointAuth::ClientSecretPost
                } else {
                    TokenEndpointAuth::ClientSecretBasic
                }
            } else {
                TokenEndpointAuth::None
            }
        });
        ClientRegistration {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            auth_method,
            redirect_uris: Vec::new(),
            source: ClientSource::Preregistered,
            secret_expires_at: None,
        }
    }
}

/// How the client presents itself when it registers or is described by a metadata document.
#[derive(Debug, Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) client_name: String,
    pub(crate) client_uri: Option<String>,
    pub(crate) metadata_document_url: Option<String>,
    pub(crate) preregistered: Vec<PreregisteredClient>,
    pub(crate) dynamic_registration: bool,
}

/// What the client will ask for with the id it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use<'a> {
    /// The authorization-code flow, redirecting to this URI.
    Redirect(&'a str),
    /// A grant without a user (client credentials).
    Machine,
}

impl ClientIdentity {
    /// The pre-registered credentials for `issuer`, if any.
    pub(crate) fn preregistered_for(&self, issuer: &str) -> Option<&PreregisteredClient> {
        // Credentials bound to this issuer beat credentials for any issuer.
        self.preregistered
            .iter()
            .find(|p| p.issuer.is_some() && p.applies_to(issuer))
            .or_else(|| self.preregistered.iter().find(|p| p.applies_to(issuer)))
    }

    /// The pre-registered registration for the server of `metadata`, if any.
    pub(crate) fn preregistered_registration(
        &self,
        metadata: &AuthorizationServerMetadata,
    ) -> Option<ClientRegistration> {
        self.preregistered_for(&metadata.issuer)
            .map(|p| p.registration(metadata))
    }

    /// The client id to use with the server of `metadata`: pre-registered, else `stored` (an
    /// earlier registration at this issuer, when it still fits), else a metadata document
    /// URL, else a new dynamic registration.
    pub(crate) async fn client_for(
        &self,
        http: &Http,
        metadata: &AuthorizationServerMetadata,
        stored: Option<&ClientRegistration>,
        purpose: Use<'_>,
    ) -> Result<ClientRegistration, AuthError> {
        if let Some(p) = self.preregistered_for(&metadata.issuer) {
            return Ok(p.registration(metadata));
        }
        let redirect = match purpose {
            Use::Redirect(uri) => Some(uri),
            Use::Machine => None,
        };
        if let Some(s) = stored
            && self.still_fits(s, metadata, redirect)
        {
            return Ok(s.clone());
        }
        if let (Some(url), Some(_)) = (&self.metadata_document_url, redirect)
            && metadata.client_id_metadata_document_supported
        {
            return Ok(ClientRegistration {
                client_id: url.clone(),
                client_secret: None,
                auth_method: TokenEndpointAuth::None,
                redirect_uris: Vec::new(),
                source: ClientSource::MetadataDocument,
                secret_expires_at: None,
            });
        }
        match (&metadata.registration_endpoint, self.dynamic_registration) {
            (Some(endpoint), true) => self.register(http, metadata, endpoint, purpose).await,
            _ => Err(AuthError::NoClientIdentity {
                issuer: metadata.issuer.clone(),
            }),
        }
    }

    fn still_fits(
        &self,
        s: &ClientRegistration,
        metadata: &AuthorizationServerMetadata,
        redirect: Option<&str>,
    ) -> bool {
        let expired = s
            .secret_expires_at
            .is_some_and(|t| t != 0 && t <= crate::jose::now_secs() + 60);
        match s.source {
            ClientSource::Dynamic => {
                !expired && redirect.is_none_or(|r| s.redirect_uris.iter().any(|u| u == r))
            }
            ClientSource::MetadataDocument => {
                metadata.client_id_metadata_document_supported
                    && self.metadata_document_url.as_deref() == Some(s.client_id.as_str())
            }
            ClientSource::Preregistered => false,
        }
    }

    async fn register(
        &self,
        http: &Http,
        metadata: &AuthorizationServerMetadata,
        endpoint: &str,
        purpose: Use<'_>,
    ) -> Result<ClientRegistration, AuthError> {
        const WHAT: &str = "client registration";
        let url = urls::checked("registration_endpoint", endpoint)?;
        let listed = metadata.token_auth_methods();
        let has = |m: &str| listed.iter().any(|l| l == m);
        let (body, requested) = match purpose {
            Use::Redirect(uri) => {
                // A native app with a loopback redirect is a public client: PKCE protects the
                // code, and there is no secret to keep on the user's machine.
                let requested = if has("none") {
                    TokenEndpointAuth::None
                } else if has("client_secret_basic") {
                    TokenEndpointAuth::ClientSecretBasic
                } else if has("client_secret_post") {
                    TokenEndpointAuth::ClientSecretPost
                } else {
                    TokenEndpointAuth::None
                };
                let mut grants = vec!["authorization_code"];
                // Asked for even when the server lists no grants: a refresh token is what
                // spares the user another login (SEP-2207).
                if metadata.grant_types_supported.is_none()
                    || metadata.supports_grant("refresh_token")
                {
                    grants.push("refresh_token");
                }
                let body = serde_json::json!({
                    "client_name": self.client_name,
                    "redirect_uris": [uri],
                    "grant_types": grants,
                    "response_types": ["code"],
                    "token_endpoint_auth_method": requested.as_str(),
                    "application_type": application_type(uri),
                });
                (body, requested)
            }
            Use::Machine => {
                let requested = if !has("client_secret_basic") && has("client_secret_post") {
                    TokenEndpointAuth::ClientSecretPost
                } else {
                    TokenEndpointAuth::ClientSecretBasic
                };
                let body = serde_json::json!({
                    "client_name": self.client_name,
                    "grant_types": ["client_credentials"],
                    "response_types": [],
                    "token_endpoint_auth_method": requested.as_str(),
                    "application_type": "web",
                });
                (body, requested)
            }
        };
        let mut body = body;
        if let (Some(uri), Some(obj)) = (&self.client_uri, body.as_object_mut()) {
            obj.insert("client_uri".into(), uri.clone().into());
        }
        let answer = http
            .send(WHAT, http.request(reqwest::Method::POST, url).json(&body))
            .await?;
        if !answer.status.is_success() {
            return Err(super::http::oauth_error(WHAT, &answer));
        }
        let reg: RegistrationAnswer = answer.json(WHAT)?;
        if reg.client_id.is_empty() {
            return Err(AuthError::invalid(WHAT, "empty client_id"));
        }
        let mut auth_method = reg
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenEndpointAuth::parse)
            .unwrap_or(requested);
        if reg.client_secret.is_none()
            && matches!(
                auth_method,
                TokenEndpointAuth::ClientSecretBasic | TokenEndpointAuth::ClientSecretPost
            )
        {
            auth_method = TokenEndpointAuth::None;
        }
        tracing::debug!(issuer = %metadata.issuer, client_id = %reg.client_id, method = auth_method.as_str(), "registered");
        Ok(ClientRegistration {
            client_id: reg.client_id,
            client_secret: reg.client_secret,
            auth_method,
            redirect_uris: match purpose {
                Use::Redirect(uri) => vec![uri.to_owned()],
                Use::Machine => Vec::new(),
            },
            source: ClientSource::Dynamic,
            secret_expires_at: reg.client_secret_expires_at.filter(|t| *t != 0),
        })
    }
}

#[derive(Deserialize)]
struct RegistrationAnswer {
    client_id: String,
    #[serde(default)]
    client_secret: Option<Secret>,
    #[serde(default)]
    client_secret_expires_at: Option<u64>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// `native` for redirects to the user's own machine (loopback or a private scheme), `web`
/// for redirects to a web server (SEP-837).
fn application_type(redirect_uri: &str) -> &'static str {
    match reqwest::Url::parse(redirect_uri) {
        Ok(u) if u.scheme() == "https" => "web",
        Ok(u) if u.scheme() == "http" && !urls::is_loopback(&u) => "web",
        _ => "native",
    }
}

/// A Client ID Metadata Document for a client whose id is `client_id` (the HTTPS URL the
/// document is served at): what to publish there so authorization servers that support
/// CIMD accept the client without registration.
pub fn client_metadata_document(
    client_id: &str,
    client_name: &str,
    redirect_uris: &[&str],
) -> serde_json::Value {
    serde_json::json!({
        "client_id": client_id,
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": redirect_uris.first().map_or("native", |u| application_type(u)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_round_trip() {
        for m in [
            TokenEndpointAuth::None,
            TokenEndpointAuth::ClientSecretBasic,
            TokenEndpointAuth::ClientSecretPost,
            TokenEndpointAuth::PrivateKeyJwt,
        ] {
            assert_eq!(TokenEndpointAuth::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(TokenEndpointAuth::parse("tls_client_auth"), None);
    }

    #[test]
    fn application_types() {
        assert_eq!(application_type("http://127.0.0.1:1234/callback"), "native");
        assert_eq!(application_type("http://localhost/cb"), "native");
        assert_eq!(application_type("com.example.app:/cb"), "native");
        assert_eq!(application_type("https://app.example.com/cb"), "web");
    }

    #[test]
    fn preregistered_choice() {
        let mut m = AuthorizationServerMetadata::new("https://as");
        let id = ClientIdentity {
            client_name: "x".into(),
            client_uri: None,
            metadata_document_url: None,
            preregistered: vec![
                PreregisteredClient::new("any").secret("s"),
                PreregisteredClient::new("bound").for_issuer("https://as/"),
            ],
            dynamic_registration: false,
        };
        assert_eq!(
            id.preregistered_for("https://as")
                .map(|p| p.client_id.as_str()),
            Some("bound")
        );
        assert_eq!(
            id.preregistered_for("https://other")
                .map(|p| p.client_id.as_str()),
            Some("any")
        );
        let any = &id.preregistered[0];
        assert_eq!(
            any.registration(&m).auth_method,
            TokenEndpointAuth::ClientSecretBasic
        );
        m.token_endpoint_auth_methods_supported = Some(vec!["client_secret_post".into()]);
        assert_eq!(
            any.registration(&m).auth_method,
            TokenEndpointAuth::ClientSecretPost
        );
        assert_eq!(
            id.preregistered[1].registration(&m).auth_method,
            TokenEndpointAuth::None
        );
        let shown = format!("{:?}", id.preregistered);
        assert!(!shown.contains("\"s\""), "{shown}");
    }
}
