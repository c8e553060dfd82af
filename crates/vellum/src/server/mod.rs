//! The server core: [`Server`] and its registries, the handler context, sessions, and the
//! single dispatch path every transport feeds.
//!
//! Not here: HTTP, stdio or any other I/O (see [`crate::transport`]), and storage (see
//! [`crate::store`]).

mod connection;
mod context;
pub(crate) mod dispatch;
mod elicit;
pub(crate) mod exchange;
mod listen;
pub mod middleware;
pub(crate) mod modern;
mod mrtr;
pub(crate) mod outbox;
mod prompt;
mod resource;
#[allow(clippy::module_inception)]
mod server;
pub(crate) mod session;
mod skill_files;
mod tasks;
mod tool;
pub mod uri_template;

pub use connection::Connection;
pub use context::{DEFAULT_CLIENT_REQUEST_TIMEOUT, RequestContext};
pub(crate) use context::{ModernMeta, RequestShared, Scope};
pub use dispatch::Outcome;
pub use middleware::{IncomingRequest, MessageEvent, Next};
pub use mrtr::RequestStateKey;
pub use prompt::GetPromptRequest;
pub use resource::ReadResourceRequest;
pub use server::{Server, ServerOptions};
pub use skill_files::{MAX_SKILL_BYTES, MAX_SKILL_FILES, SkillError, SkillFiles};
pub use tool::{
    CallToolRequest, HandlerError, IntoToolResult, NoArgs, RegistrationError, Structured,
    is_valid_tool_name, schema_for,
};
