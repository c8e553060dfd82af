//! The MCP client: connect to any MCP server, in either protocol era, over any transport.
//!
//! ```text
//! Client (typed calls, handshake, MRTR, re-initialisation)
//!    │  OutgoingMessage ▲ Incoming
//!    ▼                 │
//! Transport: Streamable HTTP (transport::http_client), stdio (transport::stdio),
//!            in memory (transport::memory)
//! ```
//!
//! [`Client::connect`] probes the server with `server/discover` (2026-07-28) and falls back
//! to the legacy `initialize` handshake when the server does not speak the modern era, so the
//! same calls work against every server. What the server asks of the client (sampling,
//! elicitation, roots) is answered by the handlers set on the [`ClientBuilder`], in both eras:
//! as answers to JSON-RPC requests in a legacy session, and as `inputResponses` on the retry
//! of a modern multi round-trip request.
//!
//! Not here: the transports themselves (see [`crate::transport`]) and the server side.

#[cfg(feature = "client-auth")]
pub mod auth;
mod builder;
#[allow(clippy::module_inception)]
mod client;
mod handler;
mod mirror;
mod transport;

pub use builder::{ClientBuilder, ProtocolChoice};
pub use client::{CallOptions, Client, Listen};
pub use handler::{
    ElicitationHandler, NotificationHandler, ProgressHandler, RootsHandler, SamplingHandler,
    ServerNotification, form_defaults,
};
pub(crate) use transport::decode_incoming as transport_decode;
pub use transport::{Incoming, OutgoingKind, OutgoingMessage, Transport, TransportError};
