//! [`Caller`]: who is calling, as the server core sees it. An authentication layer in front
//! of the transport (the OAuth resource-server layer, or your own) decides who the caller is
//! and inserts a `Caller` into the HTTP request's extensions; the core binds sessions, tasks
//! and multi round-trip state to it, checks the scopes tools require against it, and
//! handlers read it with [`RequestContext::caller`](super::RequestContext::caller).
//!
//! Also [`ClientKey`]: the address a caller without a principal comes from, as the HTTP
//! transport keys it, so that what such callers keep (tasks) is counted per address.
//!
//! Not here: verifying anyone (tokens, keys: see `vellum::auth`). The core only compares
//! callers and reads the scopes they were granted; it never learns how they were
//! authenticated. Nor how an address is told (`transport/http/client_address.rs`).

use std::net::IpAddr;
use std::sync::Arc;

/// The client address key of a request (an IPv4 address, or an IPv6 address cut to its
/// prefix), which the HTTP transport puts into the request's extensions when no
/// authenticated [`Caller`] is known: the limits counted per address (sessions, tasks) read
/// it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClientKey(pub(crate) IpAddr);

/// An authenticated caller: the party that vouched for it, who it is there, and the scopes
/// its credential grants for this request.
///
/// The one way a tool learns who is calling, under any authentication layer: take
/// `Caller` (or `Option<Caller>`) as an argument, or read `ctx.caller()`. With the crate's
/// OAuth layer, a tool that needs the token's own claims (tenant, email, roles) takes
/// `vellum::auth::Principal` as well and reads `Principal::claim`.
///
/// Two callers are the same when issuer and subject are equal; the scopes are not part of
/// the identity. Sessions are bound to a caller, not to a credential, so a refreshed or
/// stepped-up credential (more scopes) keeps its session while another caller presenting
/// the same session id is refused.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Caller {
    /// Who vouched for the caller (an OAuth issuer, a tenant, your login service).
    pub issuer: String,
    /// The caller, as `issuer` names it.
    pub subject: String,
    /// The scopes this request's credential grants (shared: the caller is cloned into every
    /// request of a batch).
    scopes: Arc<[String]>,
}

impl PartialEq for Caller {
    fn eq(&self, other: &Self) -> bool {
        self.issuer == other.issuer && self.subject == other.subject
    }
}

impl Eq for Caller {}

impl std::hash::Hash for Caller {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.issuer.hash(state);
        self.subject.hash(state);
    }
}

impl Caller {
    /// A caller named `subject` by `issuer`, with no scopes.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Caller {
            issuer: issuer.into(),
            subject: subject.into(),
            scopes: Arc::from(Vec::new()),
        }
    }

    /// The same caller, granted `scopes` for this request (what tools with required scopes
    /// and [`RequestContext::require_scope`](super::RequestContext::require_scope) check).
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes granted for this request.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// True when the caller was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_not_part_of_the_identity() {
        let a = Caller::new("iss", "alice").with_scopes(["read"]);
        let b = Caller::new("iss", "alice").with_scopes(["read", "write"]);
        assert_eq!(a, b);
        assert!(b.has_scope("write") && !a.has_scope("write"));
        assert_ne!(a, Caller::new("iss", "bob"));
        assert_eq!(a.scopes(), ["read".to_owned()]);
    }
}
