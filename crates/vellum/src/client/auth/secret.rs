//! [`Secret`]: a credential that never shows itself in `Debug`, logs or error text.

use serde::{Deserialize, Serialize};

/// A credential (access or refresh token, client secret, authorization code, PKCE verifier,
/// assertion). `Debug` prints `Secret([redacted])`; there is no `Display`; the value is read
/// only through [`Secret::expose`], so every place that sends one is easy to find.
///
/// It serializes as the plain string: only a [`TokenStore`](super::TokenStore) writes it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself, to put on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_and_serde_round_trips() {
        let s = Secret::new("tok-123");
        assert_eq!(format!("{s:?}"), "Secret([redacted])");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret([redacted]))");
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, "\"tok-123\"");
        assert_eq!(serde_json::from_str::<Secret>(&json).unwrap(), s);
        assert_eq!(s.expose(), "tok-123");
    }
}
