//! Real HTTP over loopback: [`TestHttpServer`] serves a handler on `127.0.0.1:0`;
//! [`McpHttp`] speaks Streamable HTTP with plain reqwest (so tests see statuses, headers and
//! bodies exactly) and reads answers whole ([`Answer`]) or as they stream ([`SseReader`]);
//! [`Legacy`] and [`Modern`] hold a conversation in either era and answer the server's
//! requests on the way ([`Reply`]).

mod answer;
mod conversation;
mod mcp_http;
mod server;
mod sse;

pub use answer::{Answer, assert_rejected, text_of};
pub use conversation::{Legacy, Modern, Reply, Responder, full_capabilities, modern_meta};
pub use mcp_http::{MODERN, McpHttp, modern_body, paced_answer};
pub use server::{RequestLog, SeenRequest, TestHttpServer};
pub use sse::{SseBlock, SseEvent, SseReader, Streamed, message_ids, parse_sse};

/// The header carrying the session id.
pub const SESSION_ID: &str = "mcp-session-id";
/// The header carrying the negotiated protocol version.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// What a client that takes both answers sends in `Accept`.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";
