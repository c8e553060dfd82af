//! [`SigningKey`]: a private key, the one algorithm it signs with, and its public JWK.

use jsonwebtoken::crypto::CryptoProvider;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::error::{JoseError, Kind};
use super::is_asymmetric;

fn provider() -> Result<(), JoseError> {
    CryptoProvider::try_get_default()
        .map(|_| ())
        .ok_or_else(|| Kind::NoCryptoProvider.into())
}

/// A private signing key with the algorithm it signs with and its public JSON Web Key.
///
/// `Debug` shows the algorithm, key id and thumbprint, never the key.
#[derive(Clone)]
pub struct SigningKey {
    key: EncodingKey,
    alg: Algorithm,
    jwk: Jwk,
    thumbprint: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.jwk.common.key_id)
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh P-256 key for ES256 (what DPoP proofs are signed with by default).
    #[cfg(feature = "client-auth")]
    pub fn generate_es256() -> Result<Self, JoseError> {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| JoseError::from(Kind::Random))?;
        Self::from_pkcs8_der(pkcs8.as_ref(), Algorithm::ES256)
    }

    /// A key from a PEM document (`-----BEGIN PRIVATE KEY-----`, or the RSA / EC forms) for
    /// `alg` (ES256/ES384, RS*/PS*, EdDSA).
    pub fn from_pem(pem: &[u8], alg: Algorithm) -> Result<Self, JoseError> {
        provider()?;
        let bad = |e: jsonwebtoken::errors::Error| bad_key(&e);
        let key = match alg {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem).map_err(bad)?,
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem).map_err(bad)?,
            a if is_asymmetric(a) => EncodingKey::from_rsa_pem(pem).map_err(bad)?,
            a => return Err(Kind::Algorithm(a).into()),
        };
        Self::from_encoding_key(key, alg)
    }

    /// An elliptic-curve (ES256/ES384) or Ed25519 key from its PKCS#8 DER form.
    pub fn from_pkcs8_der(der: &[u8], alg: Algorithm) -> Result<Self, JoseError> {
        provider()?;
        let key = match alg {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_der(der),
            Algorithm::EdDSA => EncodingKey::from_ed_der(der),
            a => return Err(Kind::Algorithm(a).into()),
        };
        Self::from_encoding_key(key, alg)
    }

    fn from_encoding_key(key: EncodingKey, alg: Algorithm) -> Result<Self, JoseError> {
        if !is_asymmetric(alg) {
            return Err(Kind::Algorithm(alg).into());
        }
        // Deriving the public key parses the private one: a key of the wrong type fails here,
        // not at the first signature.
        let jwk = Jwk::from_encoding_key(&key, alg).map_err(|e| bad_key(&e))?;
        let thumbprint = thumbprint(&jwk)?;
        let out = SigningKey {
            key,
            alg,
            jwk,
            thumbprint,
        };
        // A key that parses but does not sign with `alg` (an RSA key given for ES256) is
        // refused now.
        out.sign(Header::new(alg), &serde_json::json!({}))?;
        Ok(out)
    }

    /// Sets the key id (`kid`) put in the headers of what this key signs and in its JWK.
    #[must_use]
    pub fn with_key_id(mut self, kid: impl Into<String>) -> Self {
        self.jwk.common.key_id = Some(kid.into());
        self
    }

    /// The algorithm this key signs with.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The public key as a JWK (no private parts), with `alg` and `kid` when set.
    pub fn public_jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key (DPoP's `jkt`).
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// The private key's PKCS#8 DER (EC and Ed25519 keys; what a token store keeps of a DPoP
    /// key).
    #[cfg(any(feature = "client-auth", test))]
    pub(crate) fn pkcs8_der(&self) -> &[u8] {
        self.key.as_bytes()
    }

    /// Signs `claims` as a compact JWS with `header` (its `alg` is set to this key's, its
    /// `kid` to this key's when the header has none).
    pub fn sign<T: Serialize>(&self, mut header: Header, claims: &T) -> Result<String, JoseError> {
        header.alg = self.alg;
        if header.kid.is_none() {
            header.kid.clone_from(&self.jwk.common.key_id);
        }
        jsonwebtoken::encode(&header, claims, &self.key).map_err(|e| {
            JoseError::from(Kind::Sign {
                reason: e.to_string(),
            })
        })
    }
}

/// The RFC 7638 SHA-256 thumbprint of a public JWK, base64url.
pub fn thumbprint(jwk: &Jwk) -> Result<String, JoseError> {
    provider()?;
    jwk.thumbprint(ThumbprintHash::SHA256)
        .map_err(|e| bad_key(&e))
}

/// A key jsonwebtoken could not read, for the reason it gives (which never quotes the key).
fn bad_key(e: &jsonwebtoken::errors::Error) -> JoseError {
    Kind::BadKey {
        reason: e.to_string(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::jwk::AlgorithmParameters;

    #[test]
    #[cfg(feature = "client-auth")]
    fn generated_keys_sign_and_verify() {
        let key = SigningKey::generate_es256().unwrap().with_key_id("k1");
        assert_eq!(key.algorithm(), Algorithm::ES256);
        let AlgorithmParameters::EllipticCurve(ec) = &key.public_jwk().algorithm else {
            panic!("not an EC key: {:?}", key.public_jwk());
        };
        assert_eq!(ec.x.len(), 43);
        let jwt = key
            .sign(
                Header::new(Algorithm::HS256),
                &serde_json::json!({"sub": "x"}),
            )
            .unwrap();
        let header = jsonwebtoken::decode_header(&jwt).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.kid.as_deref(), Some("k1"));
        let decoding = jsonwebtoken::DecodingKey::from_jwk(key.public_jwk()).unwrap();
        let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let data = jsonwebtoken::decode::<serde_json::Value>(&jwt, &decoding, &v).unwrap();
        assert_eq!(data.claims["sub"], "x");
        // Two keys are two thumbprints; the same key round-trips through PKCS#8.
        let other = SigningKey::generate_es256().unwrap();
        assert_ne!(key.thumbprint(), other.thumbprint());
        let again = SigningKey::from_pkcs8_der(key.pkcs8_der(), Algorithm::ES256).unwrap();
        assert_eq!(again.thumbprint(), key.thumbprint());
    }

    #[test]
    #[cfg(feature = "client-auth")]
    fn pem_keys_load() {
        use base64::Engine as _;
        let key = SigningKey::generate_es256().unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(key.pkcs8_der());
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        );
        let loaded = SigningKey::from_pem(pem.as_bytes(), Algorithm::ES256).unwrap();
        assert_eq!(loaded.thumbprint(), key.thumbprint());
    }

    #[test]
    fn thumbprint_matches_rfc7638_example() {
        // RFC 7638 §3.1: the RSA key and its thumbprint.
        let jwk: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
            "alg": "RS256",
            "kid": "2011-04-29"
        }))
        .unwrap();
        assert_eq!(
            thumbprint(&jwk).unwrap(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn refuses_symmetric_and_mismatched_keys() {
        let pem = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(
            SigningKey::from_pem(pem, Algorithm::HS256).unwrap_err(),
            JoseError::from(Kind::Algorithm(Algorithm::HS256))
        );
        let bad = SigningKey::from_pem(pem, Algorithm::ES256);
        assert!(bad.is_err_and(|e| e.is_key()));
    }

    #[test]
    #[cfg(feature = "client-auth")]
    fn refuses_a_key_of_another_type() {
        let ec = SigningKey::generate_es256().unwrap();
        assert!(SigningKey::from_pkcs8_der(ec.pkcs8_der(), Algorithm::RS256).is_err());
        assert!(SigningKey::from_pkcs8_der(ec.pkcs8_der(), Algorithm::ES384).is_err());
        // Debug never shows the private key.
        let shown = format!("{ec:?}");
        assert!(
            shown.contains("thumbprint") && !shown.contains("content"),
            "{shown}"
        );
    }
}
