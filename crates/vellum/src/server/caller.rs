//! [`Caller`]: who is calling, as the server core sees it. An authentication layer in front
//! of the transport (the OAuth resource-server layer, or your own) decides who the caller is
//! and inserts a `Caller` into the HTTP request's extensions; the core binds sessions, tasks
//! and multi round-trip state to it, and handlers read it with
//! [`RequestContext::caller`](super::RequestContext::caller).
//!
//! Not here: verifying anyone (tokens, keys, scopes: see `vellum::auth`). The core only
//! compares callers; it never learns how they were authenticated.

/// An authenticated caller: the party that vouched for it and who it is there.
///
/// Two callers are the same when both fields are equal; sessions are bound to a caller, not
/// to a credential, so a refreshed credential keeps its session while another caller
/// presenting the same session id is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Caller {
    /// Who vouched for the caller (an OAuth issuer, a tenant, your login service).
    pub issuer: String,
    /// The caller, as `issuer` names it.
    pub subject: String,
}

impl Caller {
    /// A caller named `subject` by `issuer`.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Caller {
            issuer: issuer.into(),
            subject: subject.into(),
        }
    }
}
