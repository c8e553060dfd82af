//! DPoP proofs (RFC 9449): one signed JWT per HTTP request, proving the sender holds the key
//! an access token is bound to. [`dpop_proof`] makes one; [`verify_dpop_proof`] runs the
//! checks of RFC 9449 §4.3 that need no state (the caller keeps the `jti` replay cache).

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{DecodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::{JoseError, SigningKey, is_asymmetric, now_secs, random_b64url, sha256_b64url};

/// The `typ` of a DPoP proof's header.
pub const DPOP_JWT_TYPE: &str = "dpop+jwt";

/// The claims of a DPoP proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DpopClaims {
    /// A unique id for this proof (never reused).
    pub jti: String,
    /// The HTTP method of the request.
    pub htm: String,
    /// The request's URL without query and fragment.
    pub htu: String,
    /// When the proof was made (seconds since the Unix epoch).
    pub iat: u64,
    /// base64url(SHA-256(access token)) when the request carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ath: Option<String>,
    /// The server-provided nonce (`DPoP-Nonce`), when the server asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

/// `url` without its query and fragment: the `htu` of a proof for a request to `url`.
pub fn htu_of(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].to_owned()
}

/// A proof for one `method` request to `url`, signed with `key`: `ath` binds it to
/// `access_token` when there is one (requests to a resource server), `nonce` is the server's
/// latest `DPoP-Nonce`.
pub fn dpop_proof(
    key: &SigningKey,
    method: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
) -> Result<String, JoseError> {
    let claims = DpopClaims {
        jti: random_b64url(16)?,
        htm: method.to_owned(),
        htu: htu_of(url),
        iat: now_secs(),
        ath: access_token.map(|t| sha256_b64url(t.as_bytes())),
        nonce: nonce.map(str::to_owned),
    };
    let mut header = Header::new(key.algorithm());
    header.typ = Some(DPOP_JWT_TYPE.to_owned());
    let mut jwk = key.public_jwk().clone();
    // The proof carries the key itself; a key id would only be noise.
    jwk.common.key_id = None;
    header.jwk = Some(jwk);
    key.sign(header, &claims)
}

/// What a proof is checked against.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct DpopCheck<'a> {
    /// The request's method.
    pub method: &'a str,
    /// The request's URL as the server knows itself (scheme, host, port and path are
    /// compared after RFC 3986 syntax normalisation; query and fragment are ignored).
    pub url: &'a str,
    /// The access token the request carries (a resource server): `ath` must match it.
    pub access_token: Option<&'a str>,
    /// The thumbprint the access token is bound to (its `cnf.jkt`): the proof's key must
    /// have it.
    pub jkt: Option<&'a str>,
    /// The nonce the server requires, if any (a missing or other nonce is
    /// [`DpopError::UseNonce`]).
    pub nonce: Option<&'a str>,
    /// How far `iat` may be from now, in seconds (both ways).
    pub max_age_secs: u64,
}

impl<'a> DpopCheck<'a> {
    /// Checks for a `method` request to `url`, 300 seconds of clock leeway, no token, no
    /// nonce.
    pub fn new(method: &'a str, url: &'a str) -> Self {
        DpopCheck {
            method,
            url,
            access_token: None,
            jkt: None,
            nonce: None,
            max_age_secs: 300,
        }
    }

    /// The request carries this access token, bound to the key with thumbprint `jkt`.
    #[must_use]
    pub fn access_token(mut self, token: &'a str, jkt: Option<&'a str>) -> Self {
        self.access_token = Some(token);
        self.jkt = jkt;
        self
    }

    /// The server requires this nonce.
    #[must_use]
    pub fn nonce(mut self, nonce: &'a str) -> Self {
        self.nonce = Some(nonce);
        self
    }
}

/// A proof that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedDpop {
    /// The thumbprint of the proof's key (what a token issued now is bound to).
    pub jkt: String,
    /// The proof's id (for the caller's replay cache).
    pub jti: String,
    /// When it was made.
    pub iat: u64,
}

/// Why a proof is refused (RFC 9449 §4.3). The text is fixed, fit for an
/// `error_description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// Not a JWT, or a claim is missing or of the wrong type.
    #[error("the DPoP proof is not a well-formed JWT")]
    Malformed,
    /// The header's `typ` is not `dpop+jwt`.
    #[error("the DPoP proof's typ is not dpop+jwt")]
    Type,
    /// A symmetric algorithm, or `none`.
    #[error("the DPoP proof is not signed with an asymmetric algorithm")]
    Algorithm,
    /// No `jwk` header, or a JWK that is not a public key.
    #[error("the DPoP proof does not carry a public key")]
    Key,
    /// The signature does not verify with the proof's key.
    #[error("the DPoP proof's signature does not verify")]
    Signature,
    /// `htm` is not the request's method.
    #[error("the DPoP proof is for another HTTP method")]
    Method,
    /// `htu` is not the request's URL (or has a query or fragment).
    #[error("the DPoP proof is for another URL")]
    Url,
    /// `iat` is too far from now.
    #[error("the DPoP proof is too old or from the future")]
    Time,
    /// `ath` is missing or is not the hash of the request's access token.
    #[error("the DPoP proof is not bound to this access token")]
    AccessToken,
    /// The proof's key is not the one the access token is bound to.
    #[error("the access token is bound to another key")]
    KeyMismatch,
    /// The proof lacks the nonce the server requires (answer `use_dpop_nonce` with a
    /// `DPoP-Nonce` header).
    #[error("the DPoP proof must carry the server's nonce")]
    UseNonce,
}

/// The members a public JWK must not have: the private parts of EC, OKP, RSA and
/// symmetric keys.
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

/// Checks a proof against `check`.
pub fn verify_dpop_proof(proof: &str, check: &DpopCheck<'_>) -> Result<VerifiedDpop, DpopError> {
    let raw_header = proof.split('.').next().ok_or(DpopError::Malformed)?;
    let raw: serde_json::Value = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        raw_header,
    )
    .ok()
    .and_then(|b| serde_json::from_slice(&b).ok())
    .ok_or(DpopError::Malformed)?;
    if raw.get("typ").and_then(|t| t.as_str()) != Some(DPOP_JWT_TYPE) {
        return Err(DpopError::Type);
    }
    // The typed header drops members it does not know, so the private-part check reads the
    // raw JSON.
    let raw_jwk = raw
        .get("jwk")
        .and_then(|j| j.as_object())
        .ok_or(DpopError::Key)?;
    if PRIVATE_MEMBERS.iter().any(|m| raw_jwk.contains_key(*m)) {
        return Err(DpopError::Key);
    }
    let header = jsonwebtoken::decode_header(proof).map_err(|_| DpopError::Algorithm)?;
    if !is_asymmetric(header.alg) {
        return Err(DpopError::Algorithm);
    }
    let jwk: Jwk = header.jwk.ok_or(DpopError::Key)?;
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| DpopError::Key)?;
    let mut validation = Validation::new(header.alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<DpopClaims>(proof, &key, &validation)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => DpopError::Signature,
            jsonwebtoken::errors::ErrorKind::Json(_) => DpopError::Malformed,
            _ => DpopError::Signature,
        })?
        .claims;
    if claims.htm != check.method {
        return Err(DpopError::Method);
    }
    if claims.htu.contains(['?', '#'])
        || normalize_url(&claims.htu).is_none()
        || normalize_url(&claims.htu) != normalize_url(&htu_of(check.url))
    {
        return Err(DpopError::Url);
    }
    if now_secs().abs_diff(claims.iat) > check.max_age_secs {
        return Err(DpopError::Time);
    }
    if let Some(token) = check.access_token
        && claims.ath.as_deref() != Some(sha256_b64url(token.as_bytes()).as_str())
    {
        return Err(DpopError::AccessToken);
    }
    let jkt = super::thumbprint(&jwk).map_err(|_| DpopError::Key)?;
    if let Some(bound) = check.jkt
        && bound != jkt
    {
        return Err(DpopError::KeyMismatch);
    }
    if let Some(nonce) = check.nonce
        && claims.nonce.as_deref() != Some(nonce)
    {
        return Err(DpopError::UseNonce);
    }
    Ok(VerifiedDpop {
        jkt,
        jti: claims.jti,
        iat: claims.iat,
    })
}

/// Scheme and host lowercased, the default port dropped, an empty path made `/` (RFC 3986
/// §6.2.2–6.2.3); `None` when `url` is not absolute.
fn normalize_url(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let host = authority.host().to_ascii_lowercase();
    let port = match (scheme.as_str(), authority.port_u16()) {
        ("https", Some(443)) | ("http", Some(80)) | (_, None) => String::new(),
        (_, Some(p)) => format!(":{p}"),
    };
    let path = match uri.path() {
        "" => "/",
        p => p,
    };
    Some(format!("{scheme}://{host}{port}{path}"))
}

#[cfg(all(test, feature = "client-auth"))]
mod tests {
    use super::*;

    const URL: &str = "https://mcp.example.com/mcp";

    #[test]
    fn a_proof_verifies_and_binds() {
        let key = SigningKey::generate_es256().unwrap();
        let proof = dpop_proof(
            &key,
            "POST",
            "https://MCP.example.com:443/mcp?x=1#f",
            Some("tok"),
            Some("n1"),
        )
        .unwrap();
        let check = DpopCheck::new("POST", URL)
            .access_token("tok", Some(key.thumbprint()))
            .nonce("n1");
        let ok = verify_dpop_proof(&proof, &check).unwrap();
        assert_eq!(ok.jkt, key.thumbprint());
        // The proof's URL has no query or fragment.
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::Engine::decode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                proof.split('.').nth(1).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["htu"], "https://MCP.example.com:443/mcp");
        // Two proofs never share an id.
        let again = dpop_proof(&key, "POST", URL, Some("tok"), None).unwrap();
        let again = verify_dpop_proof(&again, &DpopCheck::new("POST", URL)).unwrap();
        assert_ne!(again.jti, ok.jti);
    }

    #[test]
    fn each_check_refuses() {
        let key = SigningKey::generate_es256().unwrap();
        let other = SigningKey::generate_es256().unwrap();
        let proof = dpop_proof(&key, "POST", URL, Some("tok"), None).unwrap();
        let cases: [(DpopCheck<'_>, DpopError); 6] = [
            (DpopCheck::new("GET", URL), DpopError::Method),
            (
                DpopCheck::new("POST", "https://mcp.example.com/other"),
                DpopError::Url,
            ),
            (
                DpopCheck::new("POST", URL).access_token("other", None),
                DpopError::AccessToken,
            ),
            (
                DpopCheck::new("POST", URL).access_token("tok", Some(other.thumbprint())),
                DpopError::KeyMismatch,
            ),
            (DpopCheck::new("POST", URL).nonce("n"), DpopError::UseNonce),
            (
                DpopCheck::new("POST", "http://mcp.example.com/mcp"),
                DpopError::Url,
            ),
        ];
        for (check, want) in cases {
            assert_eq!(verify_dpop_proof(&proof, &check), Err(want), "{check:?}");
        }
        // A proof signed by another key than the one in its header.
        let mut parts: Vec<&str> = proof.split('.').collect();
        let forged = dpop_proof(&other, "POST", URL, Some("tok"), None).unwrap();
        let forged_sig = forged.split('.').nth(2).unwrap().to_owned();
        parts[2] = &forged_sig;
        assert_eq!(
            verify_dpop_proof(&parts.join("."), &DpopCheck::new("POST", URL)),
            Err(DpopError::Signature)
        );
        // An ordinary JWT is not a proof.
        let jwt = key
            .sign(Header::new(key.algorithm()), &serde_json::json!({}))
            .unwrap();
        assert_eq!(
            verify_dpop_proof(&jwt, &DpopCheck::new("POST", URL)),
            Err(DpopError::Type)
        );
        assert_eq!(
            verify_dpop_proof("x", &DpopCheck::new("POST", URL)),
            Err(DpopError::Malformed)
        );
    }

    #[test]
    fn a_private_key_in_the_header_is_refused() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = serde_json::json!({
            "typ": "dpop+jwt", "alg": "ES256",
            "jwk": {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "d": "AA"}
        });
        let proof = format!("{}.e30.AA", b64.encode(header.to_string()));
        assert_eq!(
            verify_dpop_proof(&proof, &DpopCheck::new("POST", URL)),
            Err(DpopError::Key)
        );
    }

    #[test]
    fn urls_normalize() {
        assert_eq!(
            normalize_url("HTTPS://Example.COM:443"),
            normalize_url("https://example.com/")
        );
        assert_ne!(
            normalize_url("https://example.com:8443/a"),
            normalize_url("https://example.com/a")
        );
        assert_eq!(normalize_url("/relative"), None);
    }
}
