//! Handlers as plain functions: what `#[tool]`, `#[prompt]`, `#[resource]` and `#[tools]`
//! (the `macros` feature) build on, usable by hand too.
//!
//! A handler takes its arguments in any order, axum style. Each argument is an extractor
//! ([`FromRequest`]): the [`RequestContext`](crate::server::RequestContext), the request itself, the caller's
//! [`Principal`](crate::auth::Principal), an HTTP request [`Extension`], the whole tool
//! input as [`Json<T>`], or [`State<T>`] given when the handler is registered. It returns
//! anything that converts into a result: [`IntoToolResult`], [`IntoPromptResult`],
//! [`IntoReadResult`] (`String`, [`Json<T>`], the wire result, or `Result<T, E>` with
//! `E: Display`).
//!
//! The macros generate a *route* per handler ([`ToolRoute`], [`PromptRoute`],
//! [`ResourceRoute`]); routes, tuples of routes and `#[tools]` types are [`Register`]:
//!
//! ```
//! use vellum::handler::{Register, ToolRoute};
//! use vellum::prelude::*;
//!
//! let route = ToolRoute::new(
//!     Tool::new("ping", "Answers pong"),
//!     |_ctx: RequestContext, _req: CallToolRequest| async { "pong".into_tool_result() },
//! );
//! let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
//! route.register(&server)?;
//! # Ok::<(), vellum::error::ConfigError>(())
//! ```

mod extract;
mod output;
mod route;

pub use extract::{Extension, FromRequest, Json, State};
pub use output::{IntoPromptResult, IntoReadResult};
pub use route::{
    PromptHandler, PromptRoute, Register, ResourceHandler, ResourceRoute, ToolHandler, ToolRoute,
};

pub use crate::server::IntoToolResult;

#[doc(hidden)]
pub mod __private;
