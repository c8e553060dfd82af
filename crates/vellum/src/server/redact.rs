//! What secrets look like in logs and `Debug` output: shortened so that a log line tells two
//! apart but cannot be replayed.
//!
//! Not here: logging itself (each transport logs through its own dispatcher).

/// A session id shortened for logs and `Debug`: never show one in full (it is a bearer
/// secret).
pub(crate) fn redact_session_id(id: &str) -> String {
    let keep: String = id.chars().take(6).collect();
    format!("{keep}…")
}
