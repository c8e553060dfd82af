//! Transports: how messages reach the server core and leave it.
//!
//! - [`http`]: Streamable HTTP, both protocol eras on one endpoint, as a tower `Service`.
//! - [`http_client`]: the client side of Streamable HTTP (and of the deprecated HTTP+SSE).
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout, server and client.
//! - [`memory`]: a client wired to a server in the same process.
//! - [`Connection`]: the server side of one message stream (stdio and in-memory use it).
//! - [`install_crypto_provider`]: the rustls provider (`ring`) of every HTTP client Vellum
//!   builds (features `client`, `auth` and `otel`).
//!
//! The contract every client transport implements belongs to the client, as
//! [`vellum::client::Transport`](crate::client::Transport): transports import the client's
//! contract, the client imports no transport.

mod connection;
pub mod http;
#[cfg(feature = "client")]
pub mod http_client;
#[cfg(feature = "client")]
pub mod memory;
pub mod stdio;

pub use connection::Connection;

#[cfg(any(feature = "client", feature = "auth", feature = "otel"))]
mod crypto;
#[cfg(any(feature = "client", feature = "auth", feature = "otel"))]
pub use crypto::install_crypto_provider;
