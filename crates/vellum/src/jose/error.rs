//! [`JoseError`]: why a key could not be used, a JWT could not be made, or a DPoP proof was
//! refused. One type for the OAuth client (keys, signatures, its own proofs) and the
//! resource server (checking a client's proofs, RFC 9449 §4.3).

use jsonwebtoken::Algorithm;

/// Why a key could not be used, a JWT could not be made, or a DPoP proof was refused.
///
/// No kind carries key material: the text names what failed, never the bytes. A refused
/// proof's text is fixed, fit for an `error_description`. Ask with
/// [`is_dpop`](Self::is_dpop), [`is_use_nonce`](Self::is_use_nonce) and
/// [`is_key`](Self::is_key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct JoseError {
    kind: Box<Kind>,
}

/// What failed: crate-private, so kinds can be added and reworded without a break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Kind {
    /// No JWT crypto backend is compiled in (jsonwebtoken needs exactly one).
    #[error("no JWT crypto provider is available")]
    NoCryptoProvider,
    /// The algorithm cannot be used here (symmetric, or not one the key type signs with).
    #[error("algorithm {0:?} cannot be used for this key")]
    Algorithm(Algorithm),
    /// The key could not be read (not PEM/PKCS#8, or not a key of the algorithm's type);
    /// `reason` is jsonwebtoken's complaint, which never quotes the key.
    #[error("the key could not be read: {reason}")]
    BadKey { reason: String },
    /// The operating system's random generator failed.
    #[error("no random bytes available")]
    Random,
    /// Signing failed; `reason` is jsonwebtoken's complaint.
    #[error("signing failed: {reason}")]
    Sign { reason: String },
    /// A DPoP proof was refused.
    #[error("{0}")]
    Dpop(DpopRefusal),
}

/// Why a DPoP proof is refused (RFC 9449 §4.3). The text is fixed, fit for an
/// `error_description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DpopRefusal {
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
    /// The proof lacks the nonce the server requires.
    #[error("the DPoP proof must carry the server's nonce")]
    UseNonce,
}

impl From<Kind> for JoseError {
    fn from(kind: Kind) -> Self {
        JoseError {
            kind: Box::new(kind),
        }
    }
}

impl From<DpopRefusal> for JoseError {
    fn from(refusal: DpopRefusal) -> Self {
        Kind::Dpop(refusal).into()
    }
}

impl JoseError {
    /// A DPoP proof was refused (malformed, wrong `typ`, algorithm, key, signature, method,
    /// URL, time, token binding, or nonce).
    pub fn is_dpop(&self) -> bool {
        matches!(*self.kind, Kind::Dpop(_))
    }

    /// A DPoP proof lacks the nonce the server requires: answer `use_dpop_nonce` with a
    /// `DPoP-Nonce` header (a server), or retry with the server's nonce (a client).
    pub fn is_use_nonce(&self) -> bool {
        matches!(*self.kind, Kind::Dpop(DpopRefusal::UseNonce))
    }

    /// A key could not be used: it could not be read, or the algorithm does not fit it
    /// (symmetric, or not one the key type signs with).
    pub fn is_key(&self) -> bool {
        matches!(*self.kind, Kind::BadKey { .. } | Kind::Algorithm(_))
    }

    /// Why the DPoP proof was refused, for a [`is_dpop`](Self::is_dpop) error (the resource
    /// server's 401 description).
    #[cfg(feature = "auth")]
    pub(crate) fn dpop_refusal(&self) -> Option<DpopRefusal> {
        match *self.kind {
            Kind::Dpop(r) => Some(r),
            _ => None,
        }
    }
}
