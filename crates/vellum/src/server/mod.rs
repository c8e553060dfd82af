//! The server core: [`Server`] and its registries, the handler context, sessions, and the
//! single dispatch path every transport feeds.
//!
//! A request flows one way through these files: a transport starts it (`exchange.rs`:
//! `Session::begin`, or `Exchange::sessionless` for a 2026-07-28 request over HTTP), the
//! request middleware wrap it (`middleware.rs`), the method table serves it (`methods/`),
//! handlers run with a [`RequestContext`] (`context.rs`, a view of `request.rs`), and the
//! result is framed for its era (`reply.rs`). What the client sends besides requests is
//! handled in `incoming.rs`.
//!
//! Not here: HTTP, stdio or any other I/O (see [`crate::transport`]), storage (see
//! [`crate::store`]), and authentication: the core only learns who is calling, as a
//! [`Caller`] an authentication layer put into the request.

mod cache_hints;
mod caller;
mod connection;
mod context;
mod elicit;
mod exchange;
mod handler_error;
mod incoming;
mod list_kind;
mod listeners;
mod methods;
pub mod middleware;
mod modern_meta;
mod mrtr;
mod observe;
mod options;
mod outbox;
mod pagination;
mod prompt;
mod redact;
mod registration;
mod registry;
mod reply;
mod request;
mod resource;
mod schema;
pub(crate) mod scopes;
#[allow(clippy::module_inception)]
mod server;
mod session;
mod session_ref;
#[cfg(feature = "skills")]
mod skill_files;
#[cfg(feature = "skills")]
mod skills;
mod task_store;
mod tool;
mod upstream;
pub mod uri_template;

pub use cache_hints::{CacheHints, Cached};
pub use caller::Caller;
pub use connection::Connection;
pub use context::RequestContext;
pub use handler_error::HandlerError;
pub use middleware::{IncomingRequest, MessageEvent, Next};
pub use mrtr::{RequestStateKey, RequestStateKeyError};
pub use options::{DEFAULT_CLIENT_REQUEST_TIMEOUT, ServerOptions};
pub use prompt::GetPromptRequest;
pub use reply::Outcome;
pub use resource::ReadResourceRequest;
pub use scopes::{InsufficientScope, ScopeRules};
pub use server::{Server, WeakServer};
pub use session_ref::SessionRef;
#[cfg(feature = "skills")]
pub use skill_files::{MAX_SKILL_BYTES, MAX_SKILL_FILES, SkillError, SkillFiles};
pub use tool::{
    CallToolRequest, IntoToolResult, NoArgs, RegistrationError, Structured, is_valid_tool_name,
    schema_for,
};
pub use upstream::{ForwardedRequest, Upstream};

// What the transports use of the core.
pub(crate) use exchange::{Exchange, Step};
pub(crate) use incoming::{handle_notification, handle_response};
pub(crate) use modern_meta::{MetaFields, ModernMeta, parse_meta, raw_str, unsupported_version};
pub(crate) use outbox::Outbox;
pub(crate) use redact::redact_session_id;
pub(crate) use session::{Session, SessionHooks};
