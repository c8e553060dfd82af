//! Transports: how messages reach the server core and leave it.
//!
//! - [`http`]: Streamable HTTP, both protocol eras on one endpoint, as a tower `Service`.
//! - [`http_client`]: the client side of Streamable HTTP (and of the deprecated HTTP+SSE).
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout, server and client.
//! - [`memory`]: a client wired to a server in the same process.
//!
//! The contract every client transport implements is published with the client, as
//! `vellum::client::Transport` (defined in `client_transport.rs`, below both).

#[cfg(feature = "client")]
pub(crate) mod client_transport;
pub mod http;
#[cfg(feature = "client")]
pub mod http_client;
#[cfg(feature = "client")]
pub mod memory;
pub mod stdio;

/// A session id shortened for logs: never log one in full (it is a bearer secret).
pub(crate) fn redact_session_id(id: &str) -> String {
    let keep: String = id.chars().take(6).collect();
    format!("{keep}…")
}
