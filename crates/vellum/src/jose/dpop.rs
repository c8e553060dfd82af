//! DPoP proofs (RFC 9449): one signed JWT per HTTP request, proving the sender holds the key
//! an access token is bound to. [`dpop_proof`] makes one; [`verify_dpop_proof`] runs the
//! checks of RFC 9449 §4.3 that need no state (the caller keeps the `jti` replay cache).

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{DecodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::error::{DpopRefusal, JoseError};
use super::{SigningKey, is_asymmetric, now_secs, random_b64url, sha256_b64url};

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
    /// [`JoseError::is_use_nonce`]).
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

/// The members a public JWK must not have: the private parts of EC, OKP, RSA and
/// symmetric keys.
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

/// Checks a proof against `check`; a refused proof is a [`JoseError`] whose
/// [`is_dpop`](JoseError::is_dpop) is true.
pub fn verify_dpop_proof(proof: &str, check: &DpopCheck<'_>) -> Result<VerifiedDpop, JoseError> {
    check_proof(proof, check).map_err(JoseError::from)
}

/// The checks of [`verify_dpop_proof`], each refusal by its cause.
fn check_proof(proof: &str, check: &DpopCheck<'_>) -> Result<VerifiedDpop, DpopRefusal> {
    let raw_header = proof.split('.').next().ok_or(DpopRefusal::Malformed)?;
    let raw: serde_json::Value = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        raw_header,
    )
    .ok()
    .and_then(|b| serde_json::from_slice(&b).ok())
    .ok_or(DpopRefusal::Malformed)?;
    if raw.get("typ").and_then(|t| t.as_str()) != Some(DPOP_JWT_TYPE) {
        return Err(DpopRefusal::Type);
    }
    // The typed header drops members it does not know, so the private-part check reads the
    // raw JSON.
    let raw_jwk = raw
        .get("jwk")
        .and_then(|j| j.as_object())
        .ok_or(DpopRefusal::Key)?;
    if PRIVATE_MEMBERS.iter().any(|m| raw_jwk.contains_key(*m)) {
        return Err(DpopRefusal::Key);
    }
    let header = jsonwebtoken::decode_header(proof).map_err(|_| DpopRefusal::Algorithm)?;
    if !is_asymmetric(header.alg) {
        return Err(DpopRefusal::Algorithm);
    }
    let jwk: Jwk = header.jwk.ok_or(DpopRefusal::Key)?;
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| DpopRefusal::Key)?;
    let mut validation = Validation::new(header.alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<DpopClaims>(proof, &key, &validation)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => DpopRefusal::Signature,
            jsonwebtoken::errors::ErrorKind::Json(_) => DpopRefusal::Malformed,
            _ => DpopRefusal::Signature,
        })?
        .claims;
    if claims.htm != check.method {
        return Err(DpopRefusal::Method);
    }
    if claims.htu.contains(['?', '#'])
        || normalize_url(&claims.htu).is_none()
        || normalize_url(&claims.htu) != normalize_url(&htu_of(check.url))
    {
        return Err(DpopRefusal::Url);
    }
    if now_secs().abs_diff(claims.iat) > check.max_age_secs {
        return Err(DpopRefusal::Time);
    }
    if let Some(token) = check.access_token
        && claims.ath.as_deref() != Some(sha256_b64url(token.as_bytes()).as_str())
    {
        return Err(DpopRefusal::AccessToken);
    }
    let jkt = super::thumbprint(&jwk).map_err(|_| DpopRefusal::Key)?;
    if let Some(bound) = check.jkt
        && bound != jkt
    {
        return Err(DpopRefusal::KeyMismatch);
    }
    if let Some(nonce) = check.nonce
        && claims.nonce.as_deref() != Some(nonce)
    {
        return Err(DpopRefusal::UseNonce);
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
        let cases: [(DpopCheck<'_>, DpopRefusal); 6] = [
            (DpopCheck::new("GET", URL), DpopRefusal::Method),
            (
                DpopCheck::new("POST", "https://mcp.example.com/other"),
                DpopRefusal::Url,
            ),
            (
                DpopCheck::new("POST", URL).access_token("other", None),
                DpopRefusal::AccessToken,
            ),
            (
                DpopCheck::new("POST", URL).access_token("tok", Some(other.thumbprint())),
                DpopRefusal::KeyMismatch,
            ),
            (
                DpopCheck::new("POST", URL).nonce("n"),
                DpopRefusal::UseNonce,
            ),
            (
                DpopCheck::new("POST", "http://mcp.example.com/mcp"),
                DpopRefusal::Url,
            ),
        ];
        for (check, want) in cases {
            assert_eq!(check_proof(&proof, &check), Err(want), "{check:?}");
        }
        // A proof signed by another key than the one in its header.
        let mut parts: Vec<&str> = proof.split('.').collect();
        let forged = dpop_proof(&other, "POST", URL, Some("tok"), None).unwrap();
        let forged_sig = forged.split('.').nth(2).unwrap().to_owned();
        parts[2] = &forged_sig;
        assert_eq!(
            check_proof(&parts.join("."), &DpopCheck::new("POST", URL)),
            Err(DpopRefusal::Signature)
        );
        // An ordinary JWT is not a proof.
        let jwt = key
            .sign(Header::new(key.algorithm()), &serde_json::json!({}))
            .unwrap();
        assert_eq!(
            check_proof(&jwt, &DpopCheck::new("POST", URL)),
            Err(DpopRefusal::Type)
        );
        assert_eq!(
            check_proof("x", &DpopCheck::new("POST", URL)),
            Err(DpopRefusal::Malformed)
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
            check_proof(&proof, &DpopCheck::new("POST", URL)),
            Err(DpopRefusal::Key)
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
