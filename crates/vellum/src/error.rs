//! The crate's error types for calls a handler or client makes (sending notifications, asking
//! the client for input, calling a server): [`Error`], and [`TransportError`] for what went
//! wrong moving the messages. Transport rejections of the server have their own types in the
//! transports; the mapping of any error to the wire lives with the code that writes it.
//!
//! Every variant can be matched on; none carries a secret (header values, tokens) in its
//! fields or its text. Sources (the OS error, the HTTP library's error) are reachable through
//! [`std::error::Error::source`]; `Display` shows one line per level, so print the chain
//! (`{:#}` with anyhow) to see every cause.

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::{ErrorObject, InputRequiredResult};
use crate::store::StoreError;

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
    /// Moving the messages failed: the connection, an HTTP status, a stream, a child process.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server's event store could not record a message for later delivery.
    #[error("the event store failed")]
    EventStore(#[source] StoreError),
    /// The peer violated the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
}

/// A shorthand for results with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a transport could not deliver a message or its answer.
///
/// Match on the variant to decide what to do (retry later on [`Connect`](Self::Connect),
/// re-authenticate on an [`HttpStatus`](Self::HttpStatus) of 401, restart the server on
/// [`ProcessExited`](Self::ProcessExited)); the source, where there is one, says why in
/// detail. Cheap to clone: sources are shared.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The request did not reach the server, or no answer started: the connection was
    /// refused or reset, the name did not resolve, TLS failed, or connecting timed out.
    #[error("cannot reach the server")]
    Connect(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// The server answered with an HTTP error status and no JSON-RPC answer to the request.
    #[error("the server answered HTTP {status}{}", detail_suffix(.detail))]
    HttpStatus {
        /// The status.
        status: http::StatusCode,
        /// The message of the JSON-RPC error in the body, or the start of the body's text
        /// (empty when there was none).
        detail: String,
    },
    /// The server no longer knows the session (HTTP 404 to a request carrying a session
    /// id). The client starts a new session and retries the call once by itself.
    #[error("the server ended the session (HTTP 404)")]
    SessionExpired,
    /// Reading the server's answer broke off midway (the connection was cut, or the server
    /// stayed silent past the read timeout).
    #[error("reading the server's answer failed")]
    Body(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// A message from the server (a JSON body or one SSE event) is larger than the limit
    /// the transport accepts.
    #[error("a message from the server is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The server answered a request with a body that is neither JSON nor an event stream.
    #[error(
        "the server answered with Content-Type {content_type:?} (expected JSON or an event stream)"
    )]
    ContentType {
        /// The media type the server sent (empty when it sent none).
        content_type: String,
    },
    /// A response stream ended before it carried the response, and could not be resumed (the
    /// source says how it ended and why resuming failed).
    #[error("the response stream ended before the response")]
    StreamLost(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// The server sent something that is not valid transport framing.
    #[error("invalid answer from the server: {0}")]
    Protocol(String),
    /// Reading from or writing to the server's byte stream (a pipe, a socket) failed.
    #[error("the connection to the server failed")]
    Io(#[source] Arc<std::io::Error>),
    /// The server process of a stdio transport exited, or closed its output.
    #[error("{}", exit_text(.status))]
    ProcessExited {
        /// How it exited; `None` when it closed its output but did not exit in time, or its
        /// status could not be read.
        status: Option<std::process::ExitStatus>,
    },
    /// The transport could not be set up (an invalid endpoint URL, TLS setup, a command that
    /// does not start); the source is the transport's own error type.
    #[error("cannot set up the transport")]
    Setup(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// The server wants authorization the client could not give: no OAuth client could get
    /// a token (a login is needed, the authorization server refused, …). The source is the
    /// OAuth client's error (`vellum::client::auth::AuthError`, found with
    /// `AuthError::find_in`); it never carries a credential.
    #[error("the server needs authorization")]
    Unauthorized(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// The transport is closed.
    #[error("the transport is closed")]
    Closed,
}

impl TransportError {
    /// A [`Connect`](Self::Connect) error caused by `source`.
    pub fn connect(source: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        TransportError::Connect(Arc::new(source))
    }

    /// A [`Body`](Self::Body) error caused by `source`.
    pub fn body(source: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        TransportError::Body(Arc::new(source))
    }

    /// A [`StreamLost`](Self::StreamLost) error caused by `source`.
    pub fn stream_lost(source: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        TransportError::StreamLost(Arc::new(source))
    }

    /// The HTTP status, for [`HttpStatus`](Self::HttpStatus) (and 404 for
    /// [`SessionExpired`](Self::SessionExpired)).
    pub fn status(&self) -> Option<http::StatusCode> {
        match self {
            TransportError::HttpStatus { status, .. } => Some(*status),
            TransportError::SessionExpired => Some(http::StatusCode::NOT_FOUND),
            _ => None,
        }
    }
}

impl From<std::io::Error> for TransportError {
    fn from(e: std::io::Error) -> Self {
        TransportError::Io(Arc::new(e))
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

fn exit_text(status: &Option<std::process::ExitStatus>) -> String {
    match status {
        Some(s) => format!("the server process exited ({s})"),
        None => "the server process closed its output".to_owned(),
    }
}

#[cfg(feature = "client")]
/// Every level of an error's chain on one line (`top: cause: root cause`), for logs.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let level = s.to_string();
        // Some libraries repeat their cause in their own text; print each line once.
        if !text.ends_with(&level) {
            text.push_str(": ");
            text.push_str(&level);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_specific_and_sources_reachable() {
        let e = Error::from(TransportError::HttpStatus {
            status: http::StatusCode::UNAUTHORIZED,
            detail: "missing token".into(),
        });
        assert_eq!(
            e.to_string(),
            "the server answered HTTP 401 Unauthorized: missing token"
        );
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = Error::from(TransportError::connect(io));
        assert_eq!(e.to_string(), "cannot reach the server");
        #[cfg(feature = "client")]
        assert_eq!(chain(&e), "cannot reach the server: refused");
        assert!(matches!(e, Error::Transport(TransportError::Connect(_))));
        assert_eq!(
            TransportError::ProcessExited { status: None }.to_string(),
            "the server process closed its output"
        );
        assert_eq!(
            TransportError::SessionExpired.status(),
            Some(http::StatusCode::NOT_FOUND)
        );
    }
}
