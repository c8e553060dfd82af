//! Discovery: from an MCP server's URL (and the `resource_metadata` of its 401) to its
//! authorization server's endpoints.
//!
//! 1. Protected-resource metadata (RFC 9728): the challenge's `resource_metadata` URL, else
//!    the path-inserted well-known URL, else the root one. Its `resource` must cover the
//!    server ([`AuthError::ResourceMismatch`] otherwise: a token for it could be replayed).
//! 2. Authorization-server metadata for each of its `authorization_servers` in turn, at the
//!    RFC 8414 and OpenID locations in the MCP spec's order; its `issuer` must be the one the
//!    URL was built from ([`AuthError::IssuerMismatch`]).
//! 3. 2025-03-26 servers publish no resource metadata: the MCP server's origin is then the
//!    issuer, with metadata at its well-known URLs, else the default endpoints `/authorize`,
//!    `/token` and `/register` there.

use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::http::Http;
use super::{AuthError, urls};
use crate::protocol::ProtectedResourceMetadata;

/// Authorization-server metadata (RFC 8414 §2, OpenID Discovery, and the MCP extensions).
///
/// Lists the specification gives a default for when absent are `Option`s: `None` means the
/// server did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes (authorization-code flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Token revocation (RFC 7009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// The server's signing keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes the server knows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// `response_type` values (`code`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_types_supported: Vec<String>,
    /// Grant types; `None`: `authorization_code` and `implicit` (RFC 8414 default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Token endpoint client authentication methods; `None`: `client_secret_basic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Algorithms for `private_key_jwt` assertions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// PKCE methods; `None`: the server does not say it supports PKCE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// The server puts `iss` in authorization responses (RFC 9207).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authorization_response_iss_parameter_supported: bool,
    /// The server accepts URLs of client metadata documents as client ids (CIMD).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_id_metadata_document_supported: bool,
    /// DPoP proof algorithms (RFC 9449 §5.1); present when the server binds tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// Metadata for an issuer with the given endpoints and nothing else.
    pub fn new(issuer: impl Into<String>) -> Self {
        AuthorizationServerMetadata {
            issuer: issuer.into(),
            ..Default::default()
        }
    }

    /// True when the server lists `grant` (or lists nothing and `grant` is a default).
    pub fn supports_grant(&self, grant: &str) -> bool {
        match &self.grant_types_supported {
            Some(list) => list.iter().any(|g| g == grant),
            None => grant == "authorization_code" || grant == "implicit",
        }
    }

    /// The client authentication methods of the token endpoint (the RFC 8414 default when
    /// the server lists none).
    pub fn token_auth_methods(&self) -> Vec<String> {
        self.token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_owned()])
    }
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Discovery {
    /// The MCP server's canonical URL.
    pub server: String,
    /// The resource indicator sent with every authorization and token request (RFC 8707):
    /// the metadata's `resource`, else the server's canonical URL.
    pub resource: String,
    /// The protected-resource metadata, when the server publishes it.
    pub resource_metadata: Option<ProtectedResourceMetadata>,
    /// The authorization server's metadata (for a 2025-03-26 server without any, the default
    /// endpoints at its origin).
    pub metadata: AuthorizationServerMetadata,
    /// False when the metadata was made up from the 2025-03-26 default endpoints.
    pub metadata_published: bool,
}

impl Discovery {
    /// The authorization server's issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.metadata.issuer
    }
}

/// Runs discovery for `server`, starting from the challenge's `resource_metadata` URL when
/// there is one.
pub(crate) async fn discover(
    http: &Http,
    server: &Url,
    resource_metadata_url: Option<&str>,
) -> Result<Discovery, AuthError> {
    let canonical = urls::canonical_resource(server);
    let prm = protected_resource(http, server, resource_metadata_url).await?;
    let Some(prm) = prm else {
        return legacy(http, server, canonical).await;
    };
    if !urls::resource_covers(&prm.resource, server) {
        return Err(AuthError::ResourceMismatch {
            expected: canonical,
            found: prm.resource,
        });
    }
    if prm.authorization_servers.is_empty() {
        return Err(AuthError::invalid(
            "protected resource metadata",
            "no authorization_servers",
        ));
    }
    for issuer in &prm.authorization_servers {
        if let Some(metadata) = authorization_server(http, issuer).await? {
            return Ok(Discovery {
                server: canonical,
                resource: prm.resource.clone(),
                resource_metadata: Some(prm.clone()),
                metadata,
                metadata_published: true,
            });
        }
    }
    Err(AuthError::NoAuthorizationServer { server: canonical })
}

async fn protected_resource(
    http: &Http,
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Option<ProtectedResourceMetadata>, AuthError> {
    const WHAT: &str = "protected resource metadata";
    let mut candidates = Vec::new();
    if let Some(u) = from_challenge {
        candidates.push(urls::checked("resource_metadata", u)?);
    }
    candidates.extend(urls::protected_resource_urls(server));
    for url in candidates {
        if let Some(doc) = http
            .get_json::<ProtectedResourceMetadata>(WHAT, &url)
            .await?
        {
            tracing::debug!(%url, "found protected resource metadata");
            return Ok(Some(doc));
        }
    }
    Ok(None)
}

/// The metadata of `issuer`, tried at each well-known location in turn; `None` when none
/// has it. The document's `issuer` must be `issuer`.
pub(crate) async fn authorization_server(
    http: &Http,
    issuer: &str,
) -> Result<Option<AuthorizationServerMetadata>, AuthError> {
    const WHAT: &str = "authorization server metadata";
    let base = urls::checked("authorization server", issuer)?;
    for url in urls::authorization_server_urls(&base) {
        let Some(doc) = http
            .get_json::<AuthorizationServerMetadata>(WHAT, &url)
            .await?
        else {
            continue;
        };
        if !urls::same_issuer(&doc.issuer, issuer) {
            return Err(AuthError::IssuerMismatch {
                expected: issuer.to_owned(),
                found: doc.issuer,
            });
        }
        tracing::debug!(%url, "found authorization server metadata");
        return Ok(Some(doc));
    }
    Ok(None)
}

/// 2025-03-26: the MCP server's origin is the authorization server.
async fn legacy(http: &Http, server: &Url, canonical: String) -> Result<Discovery, AuthError> {
    let origin = urls::origin(server);
    tracing::debug!(%origin, "no protected resource metadata: 2025-03-26 discovery at the origin");
    let (metadata, published) = match authorization_server(http, &origin).await? {
        Some(m) => (m, true),
        None => {
            let mut m = AuthorizationServerMetadata::new(origin.clone());
            m.authorization_endpoint = Some(format!("{origin}/authorize"));
            m.token_endpoint = Some(format!("{origin}/token"));
            m.registration_endpoint = Some(format!("{origin}/register"));
            // PKCE is mandatory in 2025-03-26; a server without metadata cannot say so.
            m.code_challenge_methods_supported = Some(vec!["S256".to_owned()]);
            m.grant_types_supported = Some(vec![
                "authorization_code".to_owned(),
                "refresh_token".to_owned(),
            ]);
            m.token_endpoint_auth_methods_supported = Some(
                ["none", "client_secret_basic", "client_secret_post"]
                    .map(str::to_owned)
                    .to_vec(),
            );
            (m, false)
        }
    };
    Ok(Discovery {
        server: canonical.clone(),
        resource: canonical,
        resource_metadata: None,
        metadata,
        metadata_published: published,
    })
}
