//! The per-caller rate limit of the handler (`StreamableHttpOptions::rate_limit`): which
//! bucket a request takes its token from, and the 429 when there is none.
//!
//! The key is the authenticated principal (the [`Caller`] an authentication layer put on the
//! request) or, without one, the client's IP address; it is hashed, so a principal's name
//! never reaches a store and every key has the same short shape.
//!
//! Not here: the buckets themselves (`store::rate_limit`).

use sha2::{Digest, Sha256};

use crate::server::Caller;
use crate::store::{Admission, RateLimit, RateLimiter};

use super::rejection::Rejection;
use super::security::ConnectionInfo;

/// Takes a token for this request, or refuses it. A limiter that fails lets it through: an
/// unreachable Redis must not turn into an outage (its readiness check reports it).
pub(super) async fn admit(
    parts: &http::request::Parts,
    connection: Option<&ConnectionInfo>,
    limit: RateLimit,
    store: &dyn RateLimiter,
) -> Result<(), Rejection> {
    let key = key(parts.extensions.get::<Caller>(), connection);
    match store.admit(&key, limit).await {
        Ok(Admission::Limited { retry_after }) => Err(Rejection::RateLimited {
            // Whole seconds, rounded up: a client that waits that long finds a token.
            retry_after_secs: retry_after.as_secs_f64().ceil().max(1.0) as u64,
        }),
        Ok(Admission::Allowed) | Err(_) => Ok(()),
    }
}

/// The bucket's key: `p:` + a hash of the principal, or `ip:` + a hash of the address.
fn key(caller: Option<&Caller>, connection: Option<&ConnectionInfo>) -> String {
    let mut h = Sha256::new();
    let kind = match (caller, connection.and_then(|c| c.remote)) {
        (Some(c), _) => {
            h.update(c.issuer.as_bytes());
            h.update([0]);
            h.update(c.subject.as_bytes());
            "p"
        }
        (None, Some(remote)) => {
            h.update(remote.ip().to_string().as_bytes());
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
