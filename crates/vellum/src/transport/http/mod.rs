//! Streamable HTTP, server side: one endpoint for both protocol eras.
//!
//! ```text
//! request ─► security (Host, Origin) ─► method ─► body (limit, JSON-RPC decode)
//!         ─► era routing: modern header/_meta │ Mcp-Session-Id │ initialize │ stateless
//!         ─► server dispatch (one path) ─► one writer: JSON body or SSE stream
//! ```
//!
//! - [`StreamableHttpHandler`]: the endpoint, a tower `Service` (usable from hyper or axum).
//! - [`StreamableHttpOptions`]: every option of the Go SDK's handler, and a few more.
//! - [`serve`], [`serve_listener`], [`serve_unix`]: accept loops with the right socket
//!   settings and graceful shutdown.
//!
//! Every rejection and its HTTP status and JSON-RPC code are listed in
//! `docs/http-status.md`.

mod body;
mod cluster;
pub(crate) mod cors;
mod handler;
pub mod headers;
mod modern;
mod options;
mod rejection;
pub(crate) mod security;
mod serve;
mod sessions;
mod sse;
mod streams;
mod trace;

pub use body::ResponseBody;
pub use handler::StreamableHttpHandler;
pub use options::StreamableHttpOptions;
pub use security::{ConnectionInfo, CrossOriginProtection, InvalidOrigin, is_loopback_host};
pub use serve::{DEFAULT_SHUTDOWN_GRACE, local_addr, serve, serve_listener, serve_listener_with};
#[cfg(unix)]
pub use serve::{serve_unix, serve_unix_listener};
