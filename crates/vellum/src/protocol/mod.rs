//! The wire: JSON-RPC 2.0 framing and the MCP types of every protocol version this SDK speaks
//! (2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28). No I/O lives here.
//!
//! The types are the union of all versions: fields a version lacks are optional, and the
//! server leaves out what the negotiated version does not define (for example `resultType`
//! and the cache hints, which only 2026-07-28 results carry). `_meta` objects round-trip
//! every key, known or not.

pub mod client_features;
pub mod common;
pub mod content;
pub mod jsonrpc;
pub mod lifecycle;
pub mod mrtr;
pub mod notifications;
pub mod prompts;
pub mod resources;
pub mod tasks;
pub mod tools;
pub mod version;

pub use client_features::*;
pub use common::*;
pub use content::*;
pub use jsonrpc::{
    DecodeError, ErrorObject, Message, Notification, Payload, ProgressToken, RawJson, Request,
    RequestId, Response, code,
};
pub use lifecycle::*;
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use tasks::*;
pub use tools::*;
pub use version::{Era, ProtocolVersion};
