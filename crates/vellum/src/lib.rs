//! # Vellum
//!
//! A Model Context Protocol (MCP) SDK for Rust whose headline is its Streamable HTTP
//! transport: one endpoint that speaks both protocol eras (the session-based 2025-03-26,
//! 2025-06-18 and 2025-11-25, and the stateless 2026-07-28), with every option of the Go
//! SDK's handler and more.
//!
//! ```no_run
//! use vellum::prelude::*;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct HelloInput {
//!     /// 调用方用户名
//!     user_name: String,
//! }
//!
//! # async fn run() -> anyhow::Result<()> {
//! let server = Server::new(Implementation::new("hello-world", "0.1.0"), ServerOptions::default());
//! server.add_tool(
//!     Tool::new("hello_world", "根据 user_name 返回问候语"),
//!     |_ctx: RequestContext, _req: CallToolRequest, input: HelloInput| async move {
//!         Ok::<_, HandlerError>(CallToolResult::text(format!("Hello World, {}", input.user_name)))
//!     },
//! )?;
//! let handler = StreamableHttpHandler::new(move |_req: &http::request::Parts| Some(server.clone()), StreamableHttpOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//! vellum::transport::http::serve(listener, handler).await?;
//! # Ok(()) }
//! ```
//!
//! ## Layout
//! Each module is a layer and imports only the ones below it (`docs/architecture.md` draws
//! them; `scripts/layers.sh` checks them):
//! - [`protocol`]: JSON-RPC framing and the MCP types of every version (no I/O).
//! - `peer` (internal): request ids, answers waited for and requests being served, shared
//!   by the client and the server session.
//! - [`store`]: event stores for SSE resumption, session stores and the message bus.
//! - [`uri_template`], `schema` (internal) and `skill_files` (internal, feature `skills`):
//!   general libraries the server core uses (RFC 6570 URI templates, the built-in JSON
//!   Schema validator, Agent Skills' files).
//! - [`server`]: [`Server`](server::Server), its registries, the handler context, sessions and
//!   the one method table.
//! - [`client`]: the MCP client (both eras, every transport), behind the `client` feature.
//! - [`transport`]: Streamable HTTP (a tower `Service`), with its security layer and
//!   options; the client side of HTTP; stdio; in-memory; the message-stream
//!   [`Connection`](transport::Connection) stdio and in-memory drive.
//! - [`auth`]: the OAuth 2.1 resource-server layer, behind the `auth` feature.
//! - `jose` (features `auth` or `client-auth`): JWKs, thumbprints, DPoP proofs, signed JWTs,
//!   shared by the OAuth client and the resource server.
//! - `otel` (feature `otel`): OTLP/HTTP export of the handler's request spans.
//! - [`handler`]: extractors, results and routes of handler functions: what `#[tool]`,
//!   `#[prompt]`, `#[resource]` and `#[tools]` expand to (the macros are the default
//!   `macros` feature).
//!
//! ## Features
//! A server needs no feature: the protocol, the server core, the Streamable HTTP server
//! transport, stdio and the in-memory stores are always compiled.
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `macros` | yes | `#[tool]`, `#[prompt]`, `#[resource]`, `#[tools]` |
//! | `client` | | [`client`], the Streamable HTTP (and HTTP+SSE) client transport, the stdio and in-memory clients |
//! | `auth` | | [`auth`]: the OAuth 2.1 resource-server layer and its token verifiers |
//! | `client-auth` | | [`client::auth`]: the OAuth 2.1 client (implies `client`) and `jose` |
//! | `redis` | | Redis session store, event store and message bus (several instances, one set of sessions) |
//! | `skills` | | Agent Skills: `Server::add_skill` with `SkillFiles`, `skills/list`, `skills/get`, `resources/directory/read`; the client's verified `load_skill` (a YAML parser for the frontmatter) |
//! | `http2` | | HTTP/2 beside HTTP/1.1 on the server's accept loop (h2c by prior knowledge, h2 by ALPN with `tls`) |
//! | `tls` | | TLS on the server's own accept loop (rustls, `ring`), the certificate reloadable |
//! | `metrics` | | metrics of the Streamable HTTP handler through the `metrics` facade |
//! | `otel` | | [`otel`]: the request spans exported over OTLP/HTTP, parented by the caller's W3C trace context |
//! | `testing` | | [`testing`]: an in-memory client for your server with a caller or principal of the test's choosing, and readers of tool results (implies `client`) |
//! | `json-schema` | | validation of tool arguments, tool output and elicitation answers by the `jsonschema` crate instead of the built-in validator |
//!
//! Tool arguments, structured tool output and accepted elicitation answers are always
//! validated against their schemas. Without `json-schema` the built-in validator does it:
//! draft 2020-12 (and the draft 6, 7 and 2019-09 spellings: tuple `items`,
//! `additionalItems`, `dependencies`, `definitions`) with every assertion keyword except
//! `unevaluatedProperties`, `unevaluatedItems` and dynamic or recursive refs; local `$ref`s;
//! `pattern` in the `regex` crate's syntax (no lookaround or backreferences); and the
//! formats `email`, `uri`, `date`, `date-time` where formats are asserted (elicitation). A
//! schema that needs more is refused when its tool is registered
//! (the registration's `ConfigError` names the feature), so nothing is checked by half.
//! `json-schema` brings every draft, ECMA-262 regexes and every format, at the price of
//! about a third of a small server's cold build.
//!
//! `client` and `auth` connect to other hosts over rustls with the `ring` crypto provider
//! (see `transport::install_crypto_provider`, with either feature).

#![forbid(unsafe_code)]
// docs.rs (package.metadata.docs.rs) builds with `--cfg docsrs`: each item gated by a feature
// shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
#[cfg(feature = "client")]
pub mod client;
mod config_error;
pub mod error;
#[cfg(feature = "client")]
pub mod gateway;
pub mod handler;
#[cfg(any(feature = "auth", feature = "client-auth"))]
pub mod jose;
#[cfg(feature = "otel")]
pub mod otel;
mod peer;
pub mod protocol;
mod schema;
pub mod server;
#[cfg(feature = "skills")]
mod skill_files;
pub mod store;
mod sync;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transport;
pub mod uri_template;

pub use error::{Error, Result};

#[cfg(feature = "macros")]
pub use vellum_macros::{prompt, resource, tool, tools};

/// The names most programs need.
pub mod prelude {
    pub use crate::handler::{Extension, Json, Register, State};
    pub use crate::protocol::{
        CallToolResult, ContentBlock, GetPromptResult, Implementation, Prompt, PromptArgument,
        PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
    };
    pub use crate::server::IntoToolResult;
    pub use crate::server::{
        CallToolRequest, GetPromptRequest, HandlerError, NoArgs, ReadResourceRequest,
        RequestContext, Server, ServerOptions, Structured,
    };
    pub use crate::transport::http::{StreamableHttpHandler, StreamableHttpOptions};
    #[cfg(feature = "macros")]
    pub use vellum_macros::{prompt, resource, tool, tools};
}
