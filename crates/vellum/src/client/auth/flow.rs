//! The grants: from a [`Discovery`] to tokens. The authorization-code flow (PKCE S256,
//! `state`, RFC 9207 `iss`, RFC 8707 `resource`), client credentials, JWT bearer
//! (workload identity), the enterprise token exchange, refresh and revocation; and which
//! scopes to ask for.

use super::config::{Config, EnterpriseConfig, Grant};
use super::discovery::{AuthorizationServerMetadata, Discovery};
use super::http::Http;
use super::redirect::AuthorizationResponse;
use super::registration::{ClientRegistration, ClientSource, Use};
use super::token::{self, ClientAuth, Dpop, TokenSet};
use super::{AuthError, Secret, urls};
use crate::jose::{random_b64url, sha256_b64url};

const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// What a grant produced.
pub(crate) struct Acquired {
    pub(crate) tokens: TokenSet,
    /// The registration used, to keep (not for pre-registered credentials).
    pub(crate) client: Option<ClientRegistration>,
    pub(crate) scopes: Vec<String>,
}

/// The scopes to request (MCP scope selection strategy): everything asked for before (a
/// re-authorization never loses a grant, SEP-2350), the configured ones, and the
/// challenge's (authoritative for the operation) or else all the protected-resource
/// metadata lists; plus `offline_access` where the authorization server offers it.
pub(crate) fn choose_scopes(
    cfg: &Config,
    disc: &Discovery,
    challenge: &[String],
    previous: &[String],
) -> Vec<String> {
    let listed: Vec<String> = disc
        .resource_metadata
        .as_ref()
        .map(|m| m.scopes_supported.clone())
        .unwrap_or_default();
    let asked: &[String] = if !challenge.is_empty() {
        challenge
    } else if !cfg.scopes.is_empty() || !previous.is_empty() {
        &[]
    } else {
        &listed
    };
    let mut out: Vec<String> = Vec::new();
    for s in previous.iter().chain(&cfg.scopes).chain(asked) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    if cfg.offline_access
        && matches!(cfg.grant, Grant::AuthorizationCode)
        && disc
            .metadata
            .scopes_supported
            .iter()
            .any(|s| s == "offline_access")
        && !out.iter().any(|s| s == "offline_access")
    {
        out.push("offline_access".into());
    }
    out
}

fn scope_param(scopes: &[String]) -> Option<String> {
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

fn endpoint<'a>(
    m: &'a AuthorizationServerMetadata,
    which: &'static str,
) -> Result<&'a str, AuthError> {
    let value = match which {
        "authorization_endpoint" => m.authorization_endpoint.as_deref(),
        _ => m.token_endpoint.as_deref(),
    };
    value.ok_or_else(|| AuthError::invalid("authorization server metadata", format!("no {which}")))
}

/// Runs the configured grant.
pub(crate) async fn acquire(
    http: &Http,
    cfg: &Config,
    disc: &Discovery,
    stored_client: Option<&ClientRegistration>,
    scopes: Vec<String>,
    dpop: Option<&Dpop>,
) -> Result<Acquired, AuthError> {
    match &cfg.grant {
        Grant::AuthorizationCode => {
            authorization_code(http, cfg, disc, stored_client, scopes, dpop).await
        }
        Grant::ClientCredentials => {
            client_credentials(http, cfg, disc, stored_client, scopes, dpop).await
        }
        Grant::JwtBearer(source) => {
            let assertion = source.assertion().await?;
            jwt_bearer(http, cfg, disc, assertion, scopes, dpop).await
        }
        Grant::EnterpriseManaged(e) => enterprise(http, cfg, disc, e, scopes, dpop).await,
    }
}

async fn authorization_code(
    http: &Http,
    cfg: &Config,
    disc: &Discovery,
    stored_client: Option<&ClientRegistration>,
    scopes: Vec<String>,
    dpop: Option<&Dpop>,
) -> Result<Acquired, AuthError> {
    let meta = &disc.metadata;
    let redirect = cfg
        .redirect
        .as_ref()
        .ok_or_else(|| AuthError::LoginRequired {
            server: disc.server.clone(),
        })?;
    let s256 = meta
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m == "S256"));
    if !s256 {
        return Err(AuthError::PkceUnsupported {
            issuer: meta.issuer.clone(),
        });
    }
    let mut authorize = urls::checked(
        "authorization_endpoint",
        endpoint(meta, "authorization_endpoint")?,
    )?;
    let registered = stored_client
        .map(|c| c.redirect_uris.clone())
        .unwrap_or_default();
    let pending = redirect.prepare(&registered).await?;
    let redirect_uri = pending.redirect_uri().to_owned();
    let client = cfg
        .identity
        .client_for(http, meta, stored_client, Use::Redirect(&redirect_uri))
        .await?;
    let verifier = Secret::new(random_b64url(32)?);
    let state = random_b64url(16)?;
    let scope = scope_param(&scopes);
    {
        let mut q = authorize.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair(
                "code_challenge",
                &sha256_b64url(verifier.expose().as_bytes()),
            )
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", &disc.resource);
        if let Some(s) = &scope {
            q.append_pair("scope", s);
        }
    }
    tracing::debug!(issuer = %meta.issuer, client_id = %client.client_id, scope = scope.as_deref().unwrap_or(""), "authorization request");
    let response = pending.complete(authorize).await?;
    let code = check_response(&response, &state, meta)?;
    let form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.expose().to_owned()),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier.expose().to_owned()),
        ("resource", disc.resource.clone()),
    ];
    let tokens = exchange(http, meta, &client, cfg, form, scope.as_deref(), dpop).await?;
    Ok(Acquired {
        tokens,
        client: keep(client),
        scopes,
    })
}

/// Checks an authorization response and returns its code. The issuer is checked first
/// (RFC 9207 §2.4: a response from the wrong issuer is not acted upon, not even its error),
/// then `state`, then the error.
pub(crate) fn check_response<'a>(
    r: &'a AuthorizationResponse,
    state: &str,
    meta: &AuthorizationServerMetadata,
) -> Result<&'a Secret, AuthError> {
    let mismatch = |found: Option<&str>| AuthError::IssuerResponseMismatch {
        expected: meta.issuer.clone(),
        found: found.map(str::to_owned),
    };
    match r.iss.as_deref() {
        Some(iss) if iss != meta.issuer => return Err(mismatch(Some(iss))),
        None if meta.authorization_response_iss_parameter_supported => return Err(mismatch(None)),
        _ => {}
    }
    if !r.bare_code && r.state.as_deref() != Some(state) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = &r.error {
        return Err(AuthError::OAuth {
            what: "authorization",
            error: error.clone(),
            description: r.error_description.clone(),
        });
    }
    r.code
        .as_ref()
        .ok_or_else(|| AuthError::invalid("authorization response", "no code"))
}

fn keep(client: ClientRegistration) -> Option<ClientRegistration> {
    (client.source != ClientSource::Preregistered).then_some(client)
}

/// The key for `private_key_jwt` of the pre-registered client `client` is.
fn signing_key<'a>(
    cfg: &'a Config,
    client: &ClientRegistration,
) -> Option<&'a crate::jose::SigningKey> {
    cfg.identity
        .preregistered
        .iter()
        .find(|p| p.client_id == client.client_id)
        .and_then(|p| p.signing_key.as_ref())
}

/// A token request at the authorization server with the client's authentication.
async fn exchange(
    http: &Http,
    meta: &AuthorizationServerMetadata,
    client: &ClientRegistration,
    cfg: &Config,
    form: Vec<(&'static str, String)>,
    scope: Option<&str>,
    dpop: Option<&Dpop>,
) -> Result<TokenSet, AuthError> {
    let auth = ClientAuth {
        registration: client,
        key: signing_key(cfg, client),
        audience: &meta.issuer,
    };
    let answer = token::request(
        http,
        "token request",
        endpoint(meta, "token_endpoint")?,
        form,
        Some(auth),
        dpop,
    )
    .await?;
    answer.into_tokens(scope, dpop.is_some())
}

async fn client_credentials(
    http: &Http,
    cfg: &Config,
    disc: &Discovery,
    stored_client: Option<&ClientRegistration>,
    scopes: Vec<String>,
    dpop: Option<&Dpop>,
) -> Result<Acquired, AuthError> {
    let meta = &disc.metadata;
    let client = cfg
        .identity
        .client_for(http, meta, stored_client, Use::Machine)
        .await?;
    let scope = scope_param(&scopes);
    let mut form = vec![
        ("grant_type", "client_credentials".to_owned()),
        ("resource", disc.resource.clone()),
    ];
    if let Some(s) = &scope {
        form.push(("scope", s.clone()));
    }
    let tokens = exchange(http, meta, &client, cfg, form, scope.as_deref(), dpop).await?;
    Ok(Acquired {
        tokens,
        client: keep(client),
        scopes,
    })
}

/// RFC 7523 §2.1 with `assertion`. Never retried and never followed by another grant: a
/// refused assertion is the platform's verdict, not a hiccup.
async fn jwt_bearer(
    http: &Http,
    cfg: &Config,
    disc: &Discovery,
    assertion: Secret,
    scopes: Vec<String>,
    dpop: Option<&Dpop>,
) -> Result<Acquired, AuthError> {
    let meta = &disc.metadata;
    let scope = scope_param(&scopes);
    let mut form = vec![
        ("grant_type", JWT_BEARER_GRANT.to_owned()),
        ("assertion", assertion.expose().to_owned()),
        ("resource", disc.resource.clone()),
    ];
    if let Some(s) = &scope {
        form.push(("scope", s.clone()));
    }
    // A workload is usually known by its assertion alone; a pre-registered client id (and
    // secret) is sent when one is configured.
    let tokens = if cfg.identity.preregistered_for(&meta.issuer).is_some() {
        let client = cfg
            .identity
            .client_for(http, meta, None, Use::Machine)
            .await?;
        exchange(http, meta, &client, cfg, form, scope.as_deref(), dpop).await?
    } else {
        let answer = token::request(
            http,
            "token request",
            endpoint(meta, "token_endpoint")?,
            form,
            None,
            dpop,
        )
        .await?;
        answer.into_tokens(scope.as_deref(), dpop.is_some())?
    };
    Ok(Acquired {
        tokens,
        client: None,
        scopes,
    })
}

/// SEP-990: the ID token becomes an ID-JAG at the identity provider (RFC 8693), the ID-JAG
/// becomes an access token at the authorization server (RFC 7523).
async fn enterprise(
    http: &Http,
    cfg: &Config,
    disc: &Discovery,
    e: &EnterpriseConfig,
    scopes: Vec<String>,
    dpop: Option<&Dpop>,
) -> Result<Acquired, AuthError> {
    let meta = &disc.metadata;
    let subject = e.subject_token.assertion().await?;
    let scope = scope_param(&scopes);
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()),
        ("requested_token_type", ID_JAG_TYPE.to_owned()),
        ("audience", meta.issuer.clone()),
        ("resource", disc.resource.clone()),
        ("subject_token", subject.expose().to_owned()),
        ("subject_token_type", e.subject_token_type.clone()),
    ];
    if let Some(s) = &scope {
        form.push(("scope", s.clone()));
    }
    let idp_client = ClientRegistration {
        client_id: e.idp_client_id.clone(),
        client_secret: e.idp_client_secret.clone(),
        auth_method: if e.idp_client_secret.is_some() {
            super::TokenEndpointAuth::ClientSecretBasic
        } else {
            super::TokenEndpointAuth::None
        },
        redirect_uris: Vec::new(),
        source: ClientSource::Preregistered,
        secret_expires_at: None,
    };
    let auth = ClientAuth {
        registration: &idp_client,
        key: None,
        audience: &e.idp_token_endpoint,
    };
    let answer = token::request(
        http,
        "token exchange",
        &e.idp_token_endpoint,
        form,
        Some(auth),
        None,
    )
    .await?;
    if answer
        .issued_token_type
        .as_deref()
        .is_some_and(|t| t != ID_JAG_TYPE)
    {
        return Err(AuthError::invalid(
            "token exchange",
            "the identity provider did not issue an ID-JAG",
        ));
    }
    let id_jag = answer.access_token;
    let mut acquired = jwt_bearer(http, cfg, disc, id_jag, scopes, dpop).await?;
    acquired.client = None;
    Ok(acquired)
}

/// Refreshes `tokens` (RFC 6749 §6); the new set keeps the old refresh token and scope when
/// the server sends none.
pub(crate) async fn refresh(
    http: &Http,
    cfg: &Config,
    meta: &AuthorizationServerMetadata,
    client: &ClientRegistration,
    resource: &str,
    tokens: &TokenSet,
    dpop: Option<&Dpop>,
) -> Result<TokenSet, AuthError> {
    let Some(refresh_token) = &tokens.refresh_token else {
        return Err(AuthError::missing("refresh token"));
    };
    let form = vec![
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh_token.expose().to_owned()),
        ("resource", resource.to_owned()),
    ];
    let mut fresh = exchange(http, meta, client, cfg, form, tokens.scope.as_deref(), dpop).await?;
    if fresh.refresh_token.is_none() {
        fresh.refresh_token = tokens.refresh_token.clone();
    }
    tracing::debug!(issuer = %meta.issuer, "access token refreshed");
    Ok(fresh)
}

/// Revokes `token` (RFC 7009) where the server offers it; failures are only logged (the
/// local copy is deleted either way).
pub(crate) async fn revoke(
    http: &Http,
    cfg: &Config,
    meta: &AuthorizationServerMetadata,
    client: &ClientRegistration,
    token: &Secret,
    hint: &'static str,
) {
    let Some(endpoint) = &meta.revocation_endpoint else {
        return;
    };
    let auth = ClientAuth {
        registration: client,
        key: signing_key(cfg, client),
        audience: &meta.issuer,
    };
    let form = vec![
        ("token", token.expose().to_owned()),
        ("token_type_hint", hint.to_owned()),
    ];
    match token::request_raw(http, "token revocation", endpoint, form, Some(auth)).await {
        Ok(()) => tracing::debug!(issuer = %meta.issuer, "{hint} revoked"),
        Err(e) => tracing::debug!(issuer = %meta.issuer, "revoking the {hint} failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ProtectedResourceMetadata;

    fn meta(iss_supported: bool) -> AuthorizationServerMetadata {
        let mut m = AuthorizationServerMetadata::new("https://as.example.com");
        m.authorization_response_iss_parameter_supported = iss_supported;
        m
    }

    fn response(iss: Option<&str>, state: Option<&str>) -> AuthorizationResponse {
        let mut r = AuthorizationResponse::from_query("code=c");
        r.iss = iss.map(str::to_owned);
        r.state = state.map(str::to_owned);
        r
    }

    #[test]
    fn iss_is_compared_as_a_string() {
        let iss = "https://as.example.com";
        assert!(check_response(&response(Some(iss), Some("s")), "s", &meta(true)).is_ok());
        assert!(check_response(&response(None, Some("s")), "s", &meta(false)).is_ok());
        for (r, m) in [
            (response(None, Some("s")), meta(true)),
            (
                response(Some("https://evil.example.com"), Some("s")),
                meta(true),
            ),
            (
                response(Some("https://evil.example.com"), Some("s")),
                meta(false),
            ),
            (
                response(Some("https://as.example.com/"), Some("s")),
                meta(true),
            ),
        ] {
            assert!(
                matches!(
                    check_response(&r, "s", &m),
                    Err(AuthError::IssuerResponseMismatch { .. })
                ),
                "{r:?}"
            );
        }
        assert!(matches!(
            check_response(&response(Some(iss), Some("x")), "s", &meta(true)),
            Err(AuthError::StateMismatch)
        ));
        // A wrong issuer's error is not reported as the server's refusal.
        let mut denied =
            AuthorizationResponse::from_query("error=access_denied&state=s&iss=https%3A%2F%2Fevil");
        assert!(matches!(
            check_response(&denied, "s", &meta(false)),
            Err(AuthError::IssuerResponseMismatch { .. })
        ));
        denied.iss = None;
        assert!(matches!(
            check_response(&denied, "s", &meta(false)),
            Err(AuthError::OAuth { .. })
        ));
    }

    fn config() -> Config {
        let b = super::super::config::OAuthBuilder::new("https://mcp.example.com/mcp".into());
        b.into_parts().1
    }

    fn discovery(listed: &[&str], as_listed: &[&str]) -> Discovery {
        let mut prm = ProtectedResourceMetadata::new(
            "https://mcp.example.com/mcp",
            vec!["https://as".into()],
        );
        prm.scopes_supported = listed.iter().map(|s| s.to_string()).collect();
        let mut m = AuthorizationServerMetadata::new("https://as");
        m.scopes_supported = as_listed.iter().map(|s| s.to_string()).collect();
        Discovery {
            server: "https://mcp.example.com/mcp".into(),
            resource: "https://mcp.example.com/mcp".into(),
            resource_metadata: Some(prm),
            metadata: m,
            metadata_published: true,
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scope_selection() {
        let cfg = config();
        // The challenge wins over the listed scopes.
        assert_eq!(
            choose_scopes(&cfg, &discovery(&["p"], &[]), &strings(&["a"]), &[]),
            ["a"]
        );
        // Else everything listed.
        assert_eq!(
            choose_scopes(&cfg, &discovery(&["a", "b"], &[]), &[], &[]),
            ["a", "b"]
        );
        // Else nothing.
        assert!(choose_scopes(&cfg, &discovery(&[], &["x"]), &[], &[]).is_empty());
        // Step-up keeps what was asked before.
        assert_eq!(
            choose_scopes(
                &cfg,
                &discovery(&["p"], &[]),
                &strings(&["w"]),
                &strings(&["b"])
            ),
            ["b", "w"]
        );
        // offline_access where the authorization server offers it.
        assert_eq!(
            choose_scopes(&cfg, &discovery(&["b"], &["b", "offline_access"]), &[], &[]),
            ["b", "offline_access"]
        );
        let mut off = cfg.clone();
        off.offline_access = false;
        assert_eq!(
            choose_scopes(&off, &discovery(&["b"], &["offline_access"]), &[], &[]),
            ["b"]
        );
    }
}
