//! JOSE for OAuth, shared by the OAuth client ([`crate::client::auth`]) and the resource server
//! ([`crate::auth`]): signing keys and their public JSON Web Keys, RFC 7638 thumbprints, signed
//! JWTs, and DPoP proofs (RFC 9449) made and checked.
//!
//! - [`SigningKey`]: a private key with the one algorithm it signs with (ES256 keys generated
//!   on the spot for DPoP, or any PEM/PKCS#8 key for client assertions), its public [`Jwk`]
//!   and thumbprint.
//! - [`dpop_proof`] makes a proof for one HTTP request; [`verify_dpop_proof`] checks one
//!   (what a token endpoint or a resource server does with the `DPoP` header).
//! - [`sha256_b64url`]: the hash behind PKCE S256, the proof's `ath` and thumbprints.
//!
//! JWTs are encoded and decoded by the `jsonwebtoken` crate; fresh keys come from `ring`
//! (the workspace's one crypto provider). Not here: token verification with JWKS (that is
//! [`crate::auth::JwtVerifier`]) and replay caches for proof ids (the verifier's caller keeps
//! them, since only it knows how long its proofs live).

mod dpop;
mod error;
mod key;

pub use dpop::{
    DPOP_JWT_TYPE, DpopCheck, DpopClaims, VerifiedDpop, dpop_proof, htu_of, verify_dpop_proof,
};
#[cfg(feature = "auth")]
pub(crate) use error::DpopRefusal;
pub use error::JoseError;
use error::Kind;
pub use jsonwebtoken::Algorithm;
pub use jsonwebtoken::jwk::Jwk;
pub use key::{SigningKey, thumbprint};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};

/// base64url (no padding) of the SHA-256 of `data`: PKCE's S256 challenge, DPoP's `ath`.
pub fn sha256_b64url(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(data))
}

/// base64url (no padding) of `data`.
pub(crate) fn b64url(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

/// `n` random bytes from the OS, base64url: identifiers nobody may guess (`jti`, `state`,
/// PKCE verifiers).
pub(crate) fn random_b64url(n: usize) -> Result<String, JoseError> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|_| JoseError::from(Kind::Random))?;
    Ok(b64url(&buf))
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// True for the algorithms a DPoP proof or a client assertion may use: asymmetric ones (a
/// shared secret proves nothing about who holds a key, and `none` proves nothing at all).
pub fn is_asymmetric(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc7636_appendix_b() {
        // RFC 7636 Appendix B: the verifier and the challenge it gives.
        assert_eq!(
            sha256_b64url(b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn random_values_differ() {
        let a = random_b64url(32).unwrap();
        let b = random_b64url(32).unwrap();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }
}
