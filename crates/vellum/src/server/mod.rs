//! The server core: [`Server`] and its registry, the handler context, sessions, tasks, and
//! the single dispatch path every transport feeds.
//!
//! A request flows one way through these folders: a transport starts it
//! (`request/exchange.rs`: `Session::begin`, or `Exchange::sessionless` for a 2026-07-28
//! request over HTTP), the request middleware wrap it (`request/middleware.rs`), the method
//! table serves it (`methods/`) from what the server offers (`registry/`), handlers run with
//! a [`RequestContext`] (`request/context.rs`), and the result is framed for its era
//! (`request/reply.rs`). The client's notifications are rows of the same table; its answers
//! to the server's own requests go to their session (`session.rs`).
//!
//! - `server.rs`: [`Server`], its state and announcements; `registry/`: what it offers;
//!   `request/`: one request's life; `methods/`: the method table and the methods;
//! - `session.rs` (a legacy session), `tasks.rs` (tasks at run time), `listeners.rs`
//!   (2026-07-28 listen streams), `modern_meta.rs` and `mrtr.rs` (a 2026-07-28 request's
//!   `_meta` and multi round-trip state);
//! - `upstream.rs`: [`Upstream`], what a server forwards every request it does not answer
//!   itself to (the gateway's backends; the table hands those to `methods/forward.rs`), and
//!   `session_ref.rs`: [`SessionRef`], the handle an upstream keeps on a session;
//! - `options.rs`, `caller.rs`, `scopes.rs`, `handler_error.rs`: the leaves.
//!
//! Not here: HTTP, stdio or any other I/O (see [`crate::transport`], whose
//! [`Connection`](crate::transport::Connection) drives message streams), storage (see
//! [`crate::store`]), the general libraries the core uses ([`crate::uri_template`], the JSON
//! Schema validator, Agent Skills' files), and authentication: the core only learns who is
//! calling, as a [`Caller`] an authentication layer put into the request.

mod announce;
mod caller;
mod handler_error;
mod json_len;
mod limits;
mod listeners;
mod methods;
mod modern_meta;
mod mrtr;
mod options;
mod registry;
mod request;
pub(crate) mod scopes;
#[allow(clippy::module_inception)]
mod server;
mod session;
mod session_ref;
mod subscriptions;
mod task_ledger;
mod tasks;
mod upstream;

#[cfg(feature = "skills")]
pub use crate::protocol::SkillError;
#[cfg(feature = "skills")]
pub use crate::skill_files::{MAX_SKILL_BYTES, MAX_SKILL_FILES, SkillFiles};
/// RFC 6570 URI templates, as resource templates are matched: the crate's own
/// `vellum::uri_template`, here too.
pub use crate::uri_template;
pub use caller::Caller;
pub use handler_error::HandlerError;
pub use limits::StateLimits;
pub use mrtr::RequestStateKey;
pub use options::{DEFAULT_CLIENT_REQUEST_TIMEOUT, ServerOptions};
pub use registry::cache_hints::{CacheHints, Cached};
pub use registry::prompt::GetPromptRequest;
pub use registry::resource::ReadResourceRequest;
pub use registry::tool::{
    CallToolRequest, IntoToolResult, NoArgs, Structured, is_valid_tool_name, schema_for,
};
pub use request::context::RequestContext;
pub use request::elicit::Elicited;
pub use request::middleware::{self, IncomingRequest, MessageEvent, Next};
pub use request::reply::Outcome;
pub use scopes::{InsufficientScope, ScopeRules};
pub use server::{Server, WeakServer};
pub use session_ref::SessionRef;
pub use upstream::{ForwardedRequest, Upstream};

// What the transports use of the core.
pub(crate) use caller::ClientKey;
pub(crate) use methods::handle_notification;
pub(crate) use modern_meta::{
    MetaFields, ModernMeta, parse_meta, raw_str, request_meta, unsupported_version,
};
pub(crate) use request::exchange::{Exchange, Step};
pub(crate) use request::outbox::Outbox;
pub(crate) use request::request::WithoutHttp;
pub(crate) use session::{Session, SessionHooks, handle_response, redact_session_id};
