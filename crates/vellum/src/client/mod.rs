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
//! Errors are [`crate::Error`]; what went wrong moving the messages is a typed
//! [`TransportError`], read with [`Error::transport`](crate::Error::transport).
//!
//! ## Layout
//! Imports run downward through this list (each file uses only those below it, plus
//! `crate::{peer, protocol, error, sync}` and the transport contract):
//! - `builder`: [`ClientBuilder`], [`Client::builder`], [`Client::connect`]; connecting
//!   assembles the shared state, starts the reader and runs the handshake.
//! - `calls`, `subscriptions`, `skills`: the typed calls, `listen` / `resources/subscribe`,
//!   and Agent Skills (listing, loading and reading verified skill files).
//! - `handshake`: `server/discover`, the `initialize` fallback, re-initialisation.
//! - `input_rounds`: the MRTR loop every typed call goes through.
//! - `engine`: one request out, its answer back (`_meta`, waiting, cancellation, retry).
//! - `reader`: the task routing what the server sends; `answers`: the callbacks run for
//!   the server's questions.
//! - `handle`: [`Client`] and the state its parts share.
//! - `config`, `call_options` (both use `callbacks`), `callbacks`, `mirror`
//!   (`x-mcp-header`).
//! - `auth` (feature `client-auth`): the OAuth 2.1 client the HTTP transport asks for
//!   credentials (it imports nothing of the files above).
//!
//! Not here: the transports themselves (see [`crate::transport`]) and the server side.

mod answers;
#[cfg(feature = "client-auth")]
pub mod auth;
mod builder;
mod call_options;
mod callbacks;
mod calls;
mod config;
mod engine;
mod handle;
mod handshake;
mod input_rounds;
mod mirror;
mod reader;
#[cfg(feature = "skills")]
mod skills;
mod subscriptions;
pub(crate) mod transport;

#[cfg(feature = "skills")]
pub use crate::protocol::SkillError;
pub use builder::ClientBuilder;
pub use call_options::{CallOptions, InputRoundHandler};
pub use callbacks::{
    ElicitationHandler, NotificationHandler, ProgressHandler, RootsHandler, SamplingHandler,
    ServerNotification, form_defaults,
};
pub use config::ProtocolChoice;
pub use handle::Client;
#[cfg(feature = "skills")]
pub use skills::LoadedSkill;
pub use subscriptions::Listen;

pub use crate::error::TransportError;
pub use transport::{Incoming, OutgoingKind, OutgoingMessage, Transport};
