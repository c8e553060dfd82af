//! Scopes calls need: the ones a tool declares ([`Tool::requires_scope`]), the rules an
//! authentication layer adds per tool or per method ([`ScopeRules`]), and the one check both
//! go through ([`check`]) before a handler runs. A refusal is an [`InsufficientScope`]: over
//! HTTP the transport answers it with 403 and a step-up challenge, elsewhere it is a
//! JSON-RPC error.
//!
//! Not here: where scopes come from (the [`Caller`] an authentication layer inserts), and
//! the challenge's `resource_metadata` (the OAuth layer adds it to the transport's 403).
//!
//! [`Tool::requires_scope`]: crate::protocol::Tool::requires_scope

use std::collections::HashMap;

use serde::Deserialize;

use super::Server;
use super::caller::Caller;
use crate::protocol::{ErrorObject, Request, methods};

/// Scopes required per tool and per method, beyond what tools declare themselves. An
/// authentication layer puts them into each HTTP request's extensions (as
/// `Arc<ScopeRules>`; the OAuth layer does so from `AuthLayerBuilder::tool_scope` and
/// `method_scope`), and the core checks them with the tools' own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeRules {
    tools: HashMap<String, Vec<String>>,
    methods: HashMap<String, Vec<String>>,
}

impl ScopeRules {
    /// No rules.
    pub fn new() -> Self {
        ScopeRules::default()
    }

    /// Calls of tool `tool` need `scope` (repeat for more: all are needed).
    pub fn add_tool(&mut self, tool: impl Into<String>, scope: impl Into<String>) {
        push_unique(self.tools.entry(tool.into()).or_default(), scope.into());
    }

    /// Requests of `method` (e.g. `resources/read`) need `scope`.
    pub fn add_method(&mut self, method: impl Into<String>, scope: impl Into<String>) {
        push_unique(self.methods.entry(method.into()).or_default(), scope.into());
    }

    /// True without any rule.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.methods.is_empty()
    }

    /// Every scope some rule names (what a protected-resource metadata document lists).
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.tools
            .values()
            .chain(self.methods.values())
            .flatten()
            .map(String::as_str)
    }
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// A request refused because its caller lacks a scope: `scopes` is every scope the request
/// needs (not only the missing ones), what an OAuth step-up challenge names.
///
/// Over HTTP the transport's 403 response carries it in its extensions, so that an
/// authentication layer in front can write its own challenge from it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InsufficientScope {
    /// Every scope the refused request needs, space-joined in a challenge.
    pub scopes: Vec<String>,
}

impl InsufficientScope {
    /// A refusal of a request that needs `scopes`.
    pub fn new(scopes: Vec<String>) -> Self {
        InsufficientScope { scopes }
    }

    /// The `scope` parameter of a challenge: the scopes, space-separated.
    pub fn scope_param(&self) -> String {
        self.scopes.join(" ")
    }

    /// The JSON-RPC error of the refusal (where no HTTP status can carry it): invalid
    /// request, with `data` `{"error": "insufficient_scope", "scope": "<scopes>"}`.
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::invalid_request(format!(
            "Forbidden: insufficient_scope (this request needs: {})",
            self.scope_param()
        ))
        .with_data(serde_json::json!({
            "error": "insufficient_scope",
            "scope": self.scope_param(),
        }))
    }
}

/// The scopes `request` needs: its method's rules, and for `tools/call` the tool's own and
/// the rules for that tool. Empty when it needs none (or names no known tool: that is the
/// method's own error to give).
pub(crate) fn needed(
    server: &Server,
    rules: Option<&ScopeRules>,
    request: &Request,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(r) = rules
        && let Some(s) = r.methods.get(&request.method)
    {
        out.extend(s.iter().cloned());
    }
    if request.method == methods::TOOLS_CALL
        && let Some(name) = tool_name(request)
    {
        tool_scopes(server, rules, &name, &mut out);
    }
    out
}

/// Adds the scopes calls of tool `name` need to `out`.
pub(crate) fn tool_scopes(
    server: &Server,
    rules: Option<&ScopeRules>,
    name: &str,
    out: &mut Vec<String>,
) {
    if let Some(entry) = server.registry().tool(name) {
        for s in &entry.tool.required_scopes {
            push_unique(out, s.clone());
        }
    }
    if let Some(s) = rules.and_then(|r| r.tools.get(name)) {
        for s in s {
            push_unique(out, s.clone());
        }
    }
}

/// Refuses `needed` scopes the caller does not hold (every one of them when there is no
/// caller: a scope nobody vouched for is never assumed).
pub(crate) fn check(caller: Option<&Caller>, needed: Vec<String>) -> Result<(), InsufficientScope> {
    let held = |s: &String| caller.is_some_and(|c| c.has_scope(s));
    if needed.iter().all(held) {
        Ok(())
    } else {
        Err(InsufficientScope::new(needed))
    }
}

/// The `name` of a `tools/call`, read without decoding the arguments.
fn tool_name(request: &Request) -> Option<String> {
    #[derive(Deserialize)]
    struct Name<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    let params = request.params.as_ref()?;
    serde_json::from_slice::<Name<'_>>(params.as_bytes())
        .ok()
        .map(|n| n.name.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_needed_scope_must_be_held() {
        let alice = Caller::new("iss", "alice").with_scopes(["a", "b"]);
        assert!(check(Some(&alice), vec!["a".into(), "b".into()]).is_ok());
        let refused = check(Some(&alice), vec!["a".into(), "c".into()]).unwrap_err();
        assert_eq!(refused.scope_param(), "a c");
        assert!(check(None, vec!["a".into()]).is_err());
        assert!(check(None, Vec::new()).is_ok());
        let e = refused.to_error();
        assert_eq!(e.data.unwrap()["error"], "insufficient_scope");
    }

    #[test]
    fn rules_list_their_scopes_once_per_rule() {
        let mut r = ScopeRules::new();
        assert!(r.is_empty());
        r.add_tool("delete", "cal:write");
        r.add_tool("delete", "cal:write");
        r.add_method("resources/read", "files:read");
        let mut all: Vec<&str> = r.scopes().collect();
        all.sort_unstable();
        assert_eq!(all, ["cal:write", "files:read"]);
    }
}
