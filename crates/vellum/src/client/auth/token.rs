//! The token endpoint: tokens and their answers, client authentication (RFC 6749 §2.3, RFC
//! 7523 §2.2), and DPoP proofs with server nonces (RFC 9449 §5, §8).

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::http::{Answer, Http, oauth_error};
use super::registration::{ClientRegistration, TokenEndpointAuth};
use super::{AuthError, Secret, urls};
use crate::jose::{JoseError, SigningKey, dpop_proof, now_secs, random_b64url};

/// How an access token is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TokenType {
    /// `Authorization: Bearer …` (RFC 6750).
    Bearer,
    /// `Authorization: DPoP …` with a proof per request (RFC 9449).
    #[serde(rename = "DPoP")]
    Dpop,
}

/// The tokens of one authorization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenSet {
    /// The access token.
    pub access_token: Secret,
    /// How to present it.
    pub token_type: TokenType,
    /// When it expires (seconds since the Unix epoch); `None`: the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The refresh token, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// The scopes granted, space-separated (as requested when the server did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl TokenSet {
    /// True when the access token expires within `secs` seconds (or has expired).
    pub fn expires_within(&self, secs: u64) -> bool {
        self.expires_at
            .is_some_and(|t| t <= now_secs().saturating_add(secs))
    }

    /// The granted scopes.
    pub fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .map(|s| s.split_ascii_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// A token endpoint's answer as sent.
#[derive(Deserialize)]
pub(crate) struct TokenAnswer {
    pub(crate) access_token: Secret,
    #[serde(default)]
    pub(crate) token_type: String,
    #[serde(default)]
    pub(crate) expires_in: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) refresh_token: Option<Secret>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
    #[serde(default)]
    pub(crate) issued_token_type: Option<String>,
}

impl TokenAnswer {
    /// The token set, checking the type is one the client can present.
    pub(crate) fn into_tokens(
        self,
        requested_scope: Option<&str>,
        dpop: bool,
    ) -> Result<TokenSet, AuthError> {
        let token_type = if self.token_type.eq_ignore_ascii_case("bearer") {
            TokenType::Bearer
        } else if self.token_type.eq_ignore_ascii_case("dpop") && dpop {
            TokenType::Dpop
        } else {
            return Err(AuthError::invalid(
                "token response",
                format!("token_type {:?} cannot be used", self.token_type),
            ));
        };
        if self.access_token.expose().is_empty() {
            return Err(AuthError::invalid("token response", "empty access_token"));
        }
        let expires_in = self.expires_in.as_ref().and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_f64().map(|f| f.max(0.0) as u64))
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        });
        Ok(TokenSet {
            access_token: self.access_token,
            token_type,
            expires_at: expires_in.map(|s| now_secs().saturating_add(s)),
            refresh_token: self.refresh_token,
            scope: self.scope.or_else(|| requested_scope.map(str::to_owned)),
        })
    }
}

/// The client's DPoP key and the latest nonce of each server it talks to.
pub(crate) struct Dpop {
    pub(crate) key: SigningKey,
    nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpop")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Dpop {
    pub(crate) fn new(key: SigningKey) -> Self {
        Dpop {
            key,
            nonces: Mutex::new(HashMap::new()),
        }
    }

    /// A proof for `method url`, with the origin's latest nonce.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
    ) -> Result<String, JoseError> {
        let nonce = crate::sync::lock(&self.nonces)
            .get(&urls::origin(url))
            .cloned();
        dpop_proof(
            &self.key,
            method,
            url.as_str(),
            access_token,
            nonce.as_deref(),
        )
    }

    /// Remembers the `DPoP-Nonce` of a response from `url`; true when it is new.
    pub(crate) fn learn_nonce(&self, url: &Url, headers: &http::HeaderMap) -> bool {
        let Some(nonce) = headers.get("dpop-nonce").and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let mut nonces = crate::sync::lock(&self.nonces);
        let old = nonces.insert(urls::origin(url), nonce.to_owned());
        old.as_deref() != Some(nonce)
    }
}

/// How the client proves who it is to a token endpoint.
#[derive(Clone, Copy)]
pub(crate) struct ClientAuth<'a> {
    pub(crate) registration: &'a ClientRegistration,
    /// The key for `private_key_jwt`.
    pub(crate) key: Option<&'a SigningKey>,
    /// The audience of a client assertion: the authorization server's issuer.
    pub(crate) audience: &'a str,
}

impl ClientAuth<'_> {
    fn apply(
        &self,
        request: reqwest::RequestBuilder,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<reqwest::RequestBuilder, AuthError> {
        let reg = self.registration;
        let secret = || {
            reg.client_secret
                .as_ref()
                .ok_or_else(|| AuthError::Missing {
                    what: "secret",
                    client_id: Some(reg.client_id.clone()),
                })
        };
        Ok(match reg.auth_method {
            TokenEndpointAuth::None => {
                form.push(("client_id", reg.client_id.clone()));
                request
            }
            TokenEndpointAuth::ClientSecretPost => {
                form.push(("client_id", reg.client_id.clone()));
                form.push(("client_secret", secret()?.expose().to_owned()));
                request
            }
            TokenEndpointAuth::ClientSecretBasic => {
                // RFC 6749 §2.3.1: each part form-encoded before Base64.
                let pair = format!(
                    "{}:{}",
                    form_encode(&reg.client_id),
                    form_encode(secret()?.expose())
                );
                let mut value = http::HeaderValue::from_str(&format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ))
                .map_err(|_| AuthError::CredentialsNotHeaderText)?;
                value.set_sensitive(true);
                request.header(http::header::AUTHORIZATION, value)
            }
            TokenEndpointAuth::PrivateKeyJwt => {
                let key = self.key.ok_or_else(|| AuthError::Missing {
                    what: "private key for private_key_jwt",
                    client_id: Some(reg.client_id.clone()),
                })?;
                form.push(("client_id", reg.client_id.clone()));
                form.push(("client_assertion_type", JWT_BEARER_ASSERTION.to_owned()));
                form.push((
                    "client_assertion",
                    client_assertion(key, &reg.client_id, self.audience)?,
                ));
                request
            }
        })
    }
}

/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub(crate) const JWT_BEARER_ASSERTION: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A JWT client assertion: issued by and about the client, for the authorization server,
/// valid for a minute.
pub(crate) fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
) -> Result<String, AuthError> {
    let now = now_secs();
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 60,
        "jti": random_b64url(16)?,
    });
    let mut header = jsonwebtoken::Header::new(key.algorithm());
    header.typ = Some("JWT".into());
    Ok(key.sign(header, &claims)?)
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    match Url::parse("http://x/") {
        Ok(mut u) => {
            u.query_pairs_mut().append_pair("", s);
            u.query()
                .unwrap_or_default()
                .trim_start_matches('=')
                .to_owned()
        }
        Err(_) => String::new(),
    }
}

/// One request to a token endpoint (any grant): client authentication, a DPoP proof when
/// `dpop` is given (retried once with the server's nonce on `use_dpop_nonce`).
pub(crate) async fn request(
    http: &Http,
    what: &'static str,
    endpoint: &str,
    form: Vec<(&'static str, String)>,
    client: Option<ClientAuth<'_>>,
    dpop: Option<&Dpop>,
) -> Result<TokenAnswer, AuthError> {
    send_form(http, what, endpoint, form, client, dpop)
        .await?
        .json(what)
}

/// A form posted to an OAuth endpoint whose answer has no body to read (revocation).
pub(crate) async fn request_raw(
    http: &Http,
    what: &'static str,
    endpoint: &str,
    form: Vec<(&'static str, String)>,
    client: Option<ClientAuth<'_>>,
) -> Result<(), AuthError> {
    send_form(http, what, endpoint, form, client, None)
        .await
        .map(|_| ())
}

async fn send_form(
    http: &Http,
    what: &'static str,
    endpoint: &str,
    form: Vec<(&'static str, String)>,
    client: Option<ClientAuth<'_>>,
    dpop: Option<&Dpop>,
) -> Result<Answer, AuthError> {
    let url = urls::checked("token endpoint", endpoint)?;
    let mut nonce_retried = false;
    loop {
        let mut form = form.clone();
        let mut req = http.request(reqwest::Method::POST, url.clone());
        if let Some(c) = client {
            req = c.apply(req, &mut form)?;
        }
        if let Some(d) = dpop {
            req = req.header("dpop", d.proof("POST", &url, None)?);
        }
        let req = req
            .header(http::header::ACCEPT, "application/json")
            .form(&form);
        let answer = http.send(what, req).await?;
        let new_nonce = dpop.is_some_and(|d| d.learn_nonce(&url, &answer.headers));
        if answer.status.is_success() {
            return Ok(answer);
        }
        let err = oauth_error(what, &answer);
        if let AuthError::OAuth { error, .. } = &err
            && error == "use_dpop_nonce"
            && new_nonce
            && !nonce_retried
        {
            tracing::debug!(%url, "{what}: the server asked for a DPoP nonce; retrying with it");
            nonce_retried = true;
            continue;
        }
        return Err(err);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_become_token_sets() {
        let a: TokenAnswer = serde_json::from_value(serde_json::json!({
            "access_token": "at", "token_type": "bearer", "expires_in": 60, "refresh_token": "rt"
        }))
        .unwrap();
        let t = a.into_tokens(Some("a b"), false).unwrap();
        assert_eq!(t.token_type, TokenType::Bearer);
        assert_eq!(t.scopes(), ["a", "b"]);
        assert!(t.expires_within(61) && !t.expires_within(30));
        let shown = format!("{t:?}");
        assert!(
            !shown.contains("\"at\"") && !shown.contains("\"rt\""),
            "{shown}"
        );
        // A DPoP token is only taken when a proof was sent.
        let dpop = || -> TokenAnswer {
            serde_json::from_value(
                serde_json::json!({"access_token": "at", "token_type": "DPoP", "expires_in": "30"}),
            )
            .unwrap()
        };
        assert!(dpop().into_tokens(None, false).is_err());
        let t = dpop().into_tokens(None, true).unwrap();
        assert_eq!(t.token_type, TokenType::Dpop);
        assert!(t.expires_at.is_some());
        let weird: TokenAnswer =
            serde_json::from_value(serde_json::json!({"access_token": "x", "token_type": "mac"}))
                .unwrap();
        assert!(weird.into_tokens(None, true).is_err());
    }

    #[test]
    fn basic_credentials_are_form_encoded() {
        assert_eq!(form_encode("a b:c/é"), "a+b%3Ac%2F%C3%A9");
        assert_eq!(form_encode("=x"), "%3Dx");
    }
}
