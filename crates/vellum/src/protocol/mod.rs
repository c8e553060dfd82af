//! The wire: JSON-RPC 2.0 framing and the MCP types of every protocol version this SDK speaks
//! (2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28). No I/O lives here.
//!
//! The types are the union of all versions: fields a version lacks are optional, and the
//! server leaves out what the negotiated version does not define (for example `resultType`
//! and the cache hints, which only 2026-07-28 results carry). `_meta` objects round-trip
//! every key, known or not.

mod client_features;
mod common;
mod content;
mod encode;
mod jsonrpc;
mod lifecycle;
mod mrtr;
mod notifications;
mod param_headers;
mod prompts;
mod resource_metadata;
mod resources;
#[cfg(feature = "skills")]
mod skill_error;
mod skills;
mod tasks;
mod tools;
mod version;
mod versions;

pub use client_features::*;
pub(crate) use common::without_context_meta;
pub use common::*;
pub use content::*;
pub(crate) use encode::encode_response_with;
pub use encode::{
    encode_error, encode_notification, encode_request, encode_response, encode_response_raw,
};
pub(crate) use jsonrpc::echo;
pub use jsonrpc::{
    DecodeError, ErrorObject, Message, Notification, Payload, ProgressToken, RawJson, Request,
    RequestId, Response, code, decode, decode_message,
};
pub use lifecycle::*;
pub use mrtr::*;
pub use notifications::*;
pub use param_headers::{
    PARAM_HEADER_PREFIX, ParamHeader, X_MCP_HEADER, decode_header_value, encode_header_value,
};
pub use prompts::*;
pub use resource_metadata::{PROTECTED_RESOURCE_WELL_KNOWN, ProtectedResourceMetadata};
pub use resources::*;
#[cfg(feature = "skills")]
pub(crate) use skill_error::Kind as SkillErrorKind;
#[cfg(feature = "skills")]
pub use skill_error::SkillError;
pub use skills::*;
pub use tasks::*;
pub use tools::*;
pub use version::{Era, ProtocolVersion};
pub use versions::ProtocolVersions;
