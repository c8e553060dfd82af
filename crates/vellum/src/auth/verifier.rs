//! [`TokenVerifier`]: the one interface between the layer and the ways of checking a token.
//!
//! Not here: any particular way of checking (`jwt.rs`, `introspection.rs`).

use std::future::Future;
use std::pin::Pin;

use super::Principal;

/// What [`TokenVerifier::verify`] returns.
pub type VerifyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Principal, VerifyError>> + Send + 'a>>;

/// Turns a bearer token into the [`Principal`] it stands for.
///
/// An implementation checks the token's integrity (signature or introspection), its expiry,
/// its issuer and its audience (RFC 8707: the token must have been issued for this server).
/// The layer adds the scope check.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the credential of an `Authorization: Bearer` header).
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;

    /// True when `token` is known to be valid now without checking it again (a cache of
    /// verified tokens): the layer then verifies it even from a client address past its
    /// failed-authentication budget, so that forged tokens from a shared address do not
    /// lock out its valid users. Must be cheap and must not block. Default: `false`.
    fn is_known_valid(&self, token: &str) -> bool {
        let _ = token;
        false
    }
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for std::sync::Arc<T> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
    }

    fn is_known_valid(&self, token: &str) -> bool {
        (**self).is_known_valid(token)
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not valid (401 `invalid_token`).
    #[error("invalid token: {0}")]
    Invalid(InvalidToken),
    /// The token could not be checked now: the key set or introspection endpoint is
    /// unreachable (503 with `Retry-After`; the detail goes to the log only).
    #[error("token verification unavailable")]
    Unavailable,
}

/// Why a token is invalid. The description is what the client sees in
/// `error_description`: fixed text, never anything from the token or the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidToken {
    /// Not a well-formed token, or a required claim is missing.
    Malformed,
    /// Expired.
    Expired,
    /// Not valid yet (`nbf`).
    NotYetValid,
    /// Issued for another resource (audience).
    WrongAudience,
    /// Issued by an issuer this server does not trust.
    WrongIssuer,
    /// The signature does not verify.
    BadSignature,
    /// Signed with an algorithm the key does not allow.
    Algorithm,
    /// Signed by a key this server does not know.
    UnknownKey,
    /// Not an access token (`typ`).
    WrongType,
    /// Revoked or unknown to the authorization server (introspection: `active: false`).
    Inactive,
}

impl InvalidToken {
    /// The `error_description` of the challenge.
    pub fn description(self) -> &'static str {
        match self {
            InvalidToken::Malformed => "The access token is malformed",
            InvalidToken::Expired => "The access token expired",
            InvalidToken::NotYetValid => "The access token is not valid yet",
            InvalidToken::WrongAudience => "The access token was not issued for this resource",
            InvalidToken::WrongIssuer => "The access token was issued by an untrusted issuer",
            InvalidToken::BadSignature => "The access token signature is invalid",
            InvalidToken::Algorithm => "The access token uses a disallowed algorithm",
            InvalidToken::UnknownKey => "The access token was signed by an unknown key",
            InvalidToken::WrongType => "The token is not an access token",
            InvalidToken::Inactive => "The access token is not active",
        }
    }
}

impl std::fmt::Display for InvalidToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.description())
    }
}

impl From<InvalidToken> for VerifyError {
    fn from(reason: InvalidToken) -> Self {
        VerifyError::Invalid(reason)
    }
}

/// Scopes as a space-separated string (`scope`) or a list (`scp`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum ScopeClaim {
    Spaced(String),
    List(Vec<String>),
}

impl ScopeClaim {
    pub(crate) fn into_vec(self) -> Vec<String> {
        match self {
            ScopeClaim::Spaced(s) => s.split_ascii_whitespace().map(str::to_owned).collect(),
            ScopeClaim::List(v) => v,
        }
    }
}

/// One audience or several.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub(crate) fn contains_any(&self, wanted: &[String]) -> bool {
        match self {
            OneOrMany::One(a) => wanted.iter().any(|w| w == a),
            OneOrMany::Many(v) => v.iter().any(|a| wanted.iter().any(|w| w == a)),
        }
    }
}
