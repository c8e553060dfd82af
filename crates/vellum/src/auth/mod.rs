//! Authorization: who is calling. An auth layer (an OAuth resource-server layer, or your own
//! middleware) verifies a request and inserts a [`Principal`] into its extensions; the HTTP
//! handler binds each session to the principal that created it, and handlers read it from
//! their context with `ctx.extension::<Principal>()`.

/// An authenticated caller.
///
/// Sessions are bound to `(issuer, subject)`, not to a token, so a refreshed token keeps its
/// session while another principal presenting the same session id is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// Who vouched for the caller (the token's `iss`).
    pub issuer: String,
    /// The caller (the token's `sub`).
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id` / `azp`), if known.
    pub client_id: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Expiry as seconds since the Unix epoch, if the token has one.
    pub expires_at: Option<u64>,
}

impl Principal {
    /// A principal with an issuer and a subject, no scopes.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Principal {
            issuer: issuer.into(),
            subject: subject.into(),
            client_id: None,
            scopes: Vec::new(),
            expires_at: None,
        }
    }

    /// Adds scopes.
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// True when the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// True when both name the same caller (issuer and subject).
    pub fn same_caller(&self, other: &Principal) -> bool {
        self.issuer == other.issuer && self.subject == other.subject
    }
}
