//! The crate's error type for calls a handler or client makes (sending notifications, asking
//! the client for input, calling a server). Transport rejections have their own types in the
//! transports; the mapping of any error to the wire lives with the code that writes it.

use std::time::Duration;

use crate::protocol::{ErrorObject, InputRequiredResult};

/// An error from an MCP call or notification.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with a JSON-RPC error.
    #[error("the peer answered with an error: {0}")]
    Remote(ErrorObject),
    /// The request this call belongs to has finished, or its stream is gone.
    #[error("the request has finished; nothing more can be sent for it")]
    RequestFinished,
    /// The session is closed.
    #[error("the session is closed")]
    SessionClosed,
    /// The request was cancelled.
    #[error("the request was cancelled")]
    Cancelled,
    /// No answer arrived in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The peer did not declare the capability this call needs.
    #[error("the client did not declare the {0} capability")]
    MissingCapability(&'static str),
    /// The request must be answered with this JSON-RPC error (propagate it with `?` from a
    /// handler).
    #[error("{0}")]
    Rpc(ErrorObject),
    /// The call is impossible in this context (e.g. a server→client request on a stateless
    /// server, or progress without a progress token).
    #[error("{0}")]
    Unsupported(String),
    /// Modern (2026-07-28) requests cannot ask the client directly: the handler must return,
    /// and the client retries with the answers. Propagate this error with `?` and the server
    /// turns it into an `InputRequiredResult`.
    #[error("the client must provide more input (MRTR); return this error from the handler")]
    InputRequired(Box<InputRequiredResult>),
    /// A message could not be encoded or decoded.
    #[error("invalid message: {0}")]
    Json(#[from] serde_json::Error),
    /// A transport failure (connection lost, HTTP error, process exited).
    #[error("transport error: {0}")]
    Transport(String),
    /// The peer violated the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
}

/// A shorthand for results with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
