//! The rate limits of the handler: the per-caller one (`StreamableHttpOptions::rate_limit`,
//! one token per HTTP request, before the body is read) and the per-method and per-tool ones
//! ([`RateLimits`], one token per JSON-RPC request once the body is decoded). Which bucket a
//! request takes its token from, and the 429 when there is none.
//!
//! The key is the authenticated principal (the [`Caller`] an authentication layer put on the
//! request) or, without one, the client's address as [`ClientAddresses`] derives it (the TCP
//! peer, or what a trusted proxy forwarded; IPv6 cut to its prefix, /64 by default); it is
//! hashed, so a principal's name never reaches a store and every key has the same short
//! shape, in memory and in Redis alike. A method or tool bucket's
//! key is the caller's key plus the configured name: only configured names have buckets, so a
//! client cannot make the store hold a key per invented name.
//!
//! Not here: the buckets themselves (`store::rate_limit`).

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::protocol::{Message, Payload, methods};
use crate::server::Caller;
use crate::store::{Admission, RateLimit, RateLimiter};

use super::client_address::ClientAddresses;
use super::rejection::Rejection;
use super::security::ConnectionInfo;

/// Limits per JSON-RPC method and per tool, each a token bucket per caller (an authenticated
/// principal, else a client IP address), set as `StreamableHttpOptions::rate_limits`.
///
/// Every request of a POST (each entry of a batch) takes a token from its method's bucket
/// and, for `tools/call`, from its tool's bucket; a POST with a request beyond its limit is
/// answered 429 with `Retry-After`. Notifications and responses take none. The buckets live
/// in the same store as the per-caller limit (`StreamableHttpOptions::rate_limiter`).
///
/// ```
/// use vellum::store::RateLimit;
/// use vellum::transport::http::RateLimits;
///
/// let limits = RateLimits::new()
///     .method("tools/call", RateLimit::per_second(50))
///     .tool("search", RateLimit::per_second(5));
/// assert!(!limits.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RateLimits {
    methods: HashMap<String, RateLimit>,
    tools: HashMap<String, RateLimit>,
}

impl RateLimits {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits each caller's requests of `method` (e.g. `tools/call`); a later setting of the
    /// same method replaces an earlier one.
    pub fn method(mut self, method: impl Into<String>, limit: RateLimit) -> Self {
        self.methods.insert(method.into(), limit);
        self
    }

    /// Limits each caller's `tools/call` requests of the tool `name`, besides any limit of
    /// `tools/call` itself (a call takes a token from both).
    pub fn tool(mut self, name: impl Into<String>, limit: RateLimit) -> Self {
        self.tools.insert(name.into(), limit);
        self
    }

    /// True when no method or tool is limited.
    pub fn is_empty(&self) -> bool {
        self.methods.is_empty() && self.tools.is_empty()
    }

    /// The limit of `method`, if it has one.
    pub fn method_limit(&self, method: &str) -> Option<RateLimit> {
        self.methods.get(method).copied()
    }

    /// The limit of the tool `name`, if it has one.
    pub fn tool_limit(&self, name: &str) -> Option<RateLimit> {
        self.tools.get(name).copied()
    }
}

/// Every limit of a handler and the store of their buckets (absent when none is set).
#[derive(Debug)]
pub(super) struct Limits {
    per_caller: Option<RateLimit>,
    calls: RateLimits,
    store: Arc<dyn RateLimiter>,
    clients: ClientAddresses,
}

/// The caller's bucket key, computed once per HTTP request and carried in its extensions to
/// the per-method check (only when method or tool limits are set).
#[derive(Clone, Debug)]
struct CallerKey(String);

impl Limits {
    /// The limits of these options, or `None` when there are none (the common case costs one
    /// branch per request).
    pub(super) fn new(
        per_caller: Option<RateLimit>,
        calls: &RateLimits,
        store: Option<Arc<dyn RateLimiter>>,
        clients: &ClientAddresses,
    ) -> Option<Self> {
        if per_caller.is_none() && calls.is_empty() {
            return None;
        }
        Some(Limits {
            per_caller,
            calls: calls.clone(),
            store: store.unwrap_or_else(|| Arc::new(crate::store::MemoryRateLimiter::new())),
            clients: clients.clone(),
        })
    }

    /// Takes the per-caller token for this HTTP request, or refuses it; leaves the caller's
    /// key in `parts` for [`Limits::admit_calls`] when method or tool limits are set.
    pub(super) async fn admit_request(
        &self,
        parts: &mut http::request::Parts,
        connection: Option<&ConnectionInfo>,
    ) -> Result<(), Rejection> {
        let caller = parts.extensions.get::<Caller>();
        // An authenticated caller is keyed by its principal: its address is not needed.
        let address = match caller {
            Some(_) => None,
            None => self.clients.key_of_request(&parts.headers, connection),
        };
        let key = key(caller, address);
        if let Some(limit) = self.per_caller {
            take(&*self.store, &key, limit).await?;
        }
        if !self.calls.is_empty() {
            parts.extensions.insert(CallerKey(key));
        }
        Ok(())
    }

    /// Takes a token per request of `payload` from its method's and its tool's buckets, or
    /// refuses the POST at the first request beyond its limit.
    pub(super) async fn admit_calls(
        &self,
        parts: &http::request::Parts,
        payload: &Payload,
    ) -> Result<(), Rejection> {
        let Some(CallerKey(caller)) = parts.extensions.get::<CallerKey>() else {
            return Ok(());
        };
        let messages = match payload {
            Payload::Single(m) => std::slice::from_ref(m),
            Payload::Batch(v) => v.as_slice(),
        };
        for m in messages {
            let Message::Request(r) = m else { continue };
            if let Some(limit) = self.calls.method_limit(&r.method) {
                take(&*self.store, &format!("{caller}:m:{}", r.method), limit).await?;
            }
            if self.calls.tools.is_empty() || r.method != methods::TOOLS_CALL {
                continue;
            }
            // A call whose tool cannot be read (no `name`, or two of them) fails closed here:
            // the limit cannot tell which bucket it would take from.
            let Some(name) = r.params.as_ref().and_then(|p| tool_name(p.as_bytes())) else {
                return Err(Rejection::BadRequest {
                    id: Some(r.id.clone()),
                    message: "Bad Request: tools/call params must name the tool once".into(),
                });
            };
            if let Some(limit) = self.calls.tool_limit(&name) {
                take(&*self.store, &format!("{caller}:t:{name}"), limit).await?;
            }
        }
        Ok(())
    }
}

/// The `name` of `tools/call` params (the rest is left undecoded).
fn tool_name(params: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        name: String,
    }
    serde_json::from_slice::<Named>(params).ok().map(|n| n.name)
}

/// Takes a token from `key`'s bucket, or refuses. A limiter that fails lets the request
/// through: an unreachable Redis must not turn into an outage (its readiness check reports
/// it).
async fn take(store: &dyn RateLimiter, key: &str, limit: RateLimit) -> Result<(), Rejection> {
    match store.admit(key, limit).await {
        Ok(Admission::Limited { retry_after }) => Err(Rejection::RateLimited {
            // Whole seconds, rounded up: a client that waits that long finds a token.
            retry_after_secs: retry_after.as_secs_f64().ceil().max(1.0) as u64,
        }),
        Ok(Admission::Allowed) | Err(_) => Ok(()),
    }
}

/// The caller's key: `p:` + a hash of the principal, or `ip:` + a hash of the client's
/// address key (an IPv6 prefix, an IPv4 address).
fn key(caller: Option<&Caller>, address: Option<std::net::IpAddr>) -> String {
    let mut h = Sha256::new();
    let kind = match (caller, address) {
        (Some(c), _) => {
            h.update(c.issuer.as_bytes());
            h.update([0]);
            h.update(c.subject.as_bytes());
            "p"
        }
        (None, Some(remote)) => {
            h.update(remote.to_string().as_bytes());
            "ip"
        }
        // A Unix socket: everyone on it shares one bucket.
        (None, None) => "local",
    };
    let digest = h.finalize();
    let mut out = String::with_capacity(kind.len() + 33);
    out.push_str(kind);
    out.push(':');
    for b in &digest[..16] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_is_read_from_call_params_only_when_present() {
        assert_eq!(
            tool_name(br#"{"name":"search","arguments":{"q":1}}"#).as_deref(),
            Some("search")
        );
        assert_eq!(tool_name(br#"{"arguments":{}}"#), None);
        assert_eq!(tool_name(b"[1]"), None);
    }

    #[test]
    fn a_later_setting_replaces_an_earlier_one() {
        let l = RateLimits::new()
            .method("tools/list", RateLimit::new(1.0, 1))
            .method("tools/list", RateLimit::new(2.0, 2));
        assert_eq!(l.method_limit("tools/list"), Some(RateLimit::new(2.0, 2)));
        assert_eq!(l.method_limit("tools/call"), None);
        assert_eq!(l.tool_limit("search"), None);
    }
}
