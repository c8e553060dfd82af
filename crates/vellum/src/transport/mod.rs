//! Transports: how messages reach the server core and leave it.
//!
//! - [`http`]: Streamable HTTP, both protocol eras on one endpoint, as a tower `Service`.

pub mod http;

/// A session id shortened for logs: never log one in full (it is a bearer secret).
pub(crate) fn redact_session_id(id: &str) -> String {
    let keep: String = id.chars().take(6).collect();
    format!("{keep}…")
}
