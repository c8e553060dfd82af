//! The crate's error types for calls a handler or client makes (sending notifications, asking
//! the client for input, calling a server): [`Error`], and [`TransportError`] for what went
//! wrong moving the messages. Transport rejections of the server have their own types in the
//! transports; the mapping of any error to the wire lives with the code that writes it.
//!
//! [`Error`] is opaque, in hyper's style: a private kind behind one pointer (an `Error` is one
//! word, so a `Result<T, Error>` stays small on the hot path), `is_*` predicates for the
//! questions callers ask (did it time out, was it cancelled, did the peer answer with a
//! JSON-RPC error, did the transport fail), and accessors for the data callers need
//! ([`Error::rpc`], [`Error::transport`], [`Error::status`], [`Error::into_input_required`]).
//! New kinds can be added without breaking anyone. A JSON-RPC error is one kind whichever way
//! it travels: the peer's answer to a call and "answer the request with this" carry the same
//! [`ErrorObject`], and a handler propagating the one it got answers with it, so the crate
//! never has to tell them apart. [`TransportError`] stays a public enum: a transport
//! implementation builds it, and callers match on its causes (connect, HTTP status, an ended
//! session, an exited child).
//!
//! No kind carries a free-form message: each has a fixed meaning, with the values it is about
//! as fields, and nothing carries a secret (header values, tokens). Sources (the OS error, the
//! HTTP library's error, the transport error, the store error) are reachable through
//! [`std::error::Error::source`]; `Display` shows one line per level, so print the chain
//! (`{:#}` with anyhow) to see every cause.

use std::sync::Arc;
use std::time::Duration;

pub use crate::config_error::ConfigError;
use crate::protocol::{ErrorObject, InputRequiredResult};
use crate::store::StoreError;

/// An error from an MCP call or notification.
///
/// Ask it what happened with the `is_*` predicates, and get the data with the accessors;
/// `Display` says what failed in one line, [`source`](std::error::Error::source) why.
pub struct Error {
    kind: Box<Kind>,
}

/// What went wrong: private, so kinds can be added and reworded without a break.
#[derive(Debug, thiserror::Error)]
enum Kind {
    /// A JSON-RPC error: the peer's answer to a call, or the answer a handler gives.
    #[error("{0}")]
    Rpc(ErrorObject),
    #[error("the request has finished; nothing more can be sent for it")]
    RequestFinished,
    #[error("the session is closed")]
    SessionClosed,
    #[error("the request was cancelled")]
    Cancelled,
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the client did not declare the {0} capability")]
    MissingCapability(&'static str),
    #[error("{0}")]
    Unsupported(Unsupported),
    #[error("the client must provide more input (MRTR); return this error from the handler")]
    InputRequired(Box<InputRequiredResult>),
    #[error("invalid message: {0}")]
    Json(#[source] serde_json::Error),
    #[error(transparent)]
    Transport(TransportError),
    #[error("the event store failed")]
    EventStore(#[source] StoreError),
    #[error("protocol error: {0}")]
    Protocol(Violation),
}

/// Calls that are impossible in their context: the caller's mistake or a limit of the era,
/// not a failure of the peer. (The client's cases exist with the client.)
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unsupported {
    #[error("progress must increase: {progress} after {last}")]
    ProgressNotIncreasing { progress: f64, last: f64 },
    #[error("2026-07-28 servers cannot send requests to the client")]
    ModernServerRequest,
    #[error("a stateless server cannot send requests to the client")]
    StatelessServerRequest,
    #[error("this session has no stream for unsolicited messages")]
    NoUnsolicitedStream,
    #[error("invalid elicitation schema: {why}")]
    ElicitationSchema { why: String },
    #[error("{type_name} cannot be an elicitation form: {why}")]
    FormType {
        type_name: &'static str,
        why: String,
    },
    #[cfg(feature = "client")]
    #[error("tool arguments must be a JSON object")]
    ArgumentsNotObject,
    #[cfg(feature = "client")]
    #[error("params must be a JSON object")]
    ParamsNotObject,
    #[cfg(feature = "client")]
    #[error("{method} does not exist in 2026-07-28; use Client::listen")]
    SubscribeInModern { method: String },
    #[cfg(feature = "client")]
    #[error("subscriptions/listen needs the 2026-07-28 era; use subscribe_resource")]
    ListenInLegacy,
    #[cfg(feature = "client")]
    #[error("the server answered with a task, which this client did not ask for")]
    UnrequestedTask,
}

/// How the peer broke the protocol.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Violation {
    #[error("the accepted elicitation content does not match the requested schema: {why}")]
    ElicitationContent { why: String },
    #[error("the accepted elicitation content is not a {type_name}: {why}")]
    FormAnswer {
        type_name: &'static str,
        why: String,
    },
    #[cfg(feature = "client")]
    #[error("the server's server/discover does not list {version} (it lists {listed:?})")]
    DiscoverWithout {
        version: String,
        listed: Vec<String>,
    },
    #[cfg(feature = "client")]
    #[error("the server chose protocol version {version:?}, which this client does not speak")]
    UnknownVersion { version: String },
    #[cfg(feature = "client")]
    #[error("unknown resultType {result_type:?}")]
    UnknownResultType { result_type: String },
    #[cfg(feature = "client")]
    #[error("the server still needed input after {rounds} rounds")]
    InputRounds { rounds: u32 },
    #[cfg(feature = "client")]
    #[error("unexpected resultType {result_type:?}")]
    NotComplete { result_type: String },
}

impl Error {
    fn new(kind: Kind) -> Error {
        Error {
            kind: Box::new(kind),
        }
    }

    /// The request must be answered with this JSON-RPC error: return it from a handler (the
    /// same kind a peer's error answer has, so one received is passed on as it is).
    pub fn rpc(error: ErrorObject) -> Error {
        Error::new(Kind::Rpc(error))
    }

    /// The request this call belongs to has finished, or its stream is gone.
    pub(crate) fn request_finished() -> Error {
        Error::new(Kind::RequestFinished)
    }

    /// The session is closed.
    pub(crate) fn session_closed() -> Error {
        Error::new(Kind::SessionClosed)
    }

    /// The request was cancelled.
    pub fn cancelled() -> Error {
        Error::new(Kind::Cancelled)
    }

    /// No answer arrived within `after`.
    pub(crate) fn timeout(after: Duration) -> Error {
        Error::new(Kind::Timeout(after))
    }

    /// The peer did not declare `capability`.
    pub(crate) fn missing_capability(capability: &'static str) -> Error {
        Error::new(Kind::MissingCapability(capability))
    }

    pub(crate) fn unsupported(why: Unsupported) -> Error {
        Error::new(Kind::Unsupported(why))
    }

    pub(crate) fn protocol(violation: Violation) -> Error {
        Error::new(Kind::Protocol(violation))
    }

    /// The client must answer these questions first (2026-07-28): a handler returns it, and
    /// the server answers with this `InputRequiredResult`.
    pub fn input_required(result: InputRequiredResult) -> Error {
        Error::new(Kind::InputRequired(Box::new(result)))
    }

    pub(crate) fn event_store(e: StoreError) -> Error {
        Error::new(Kind::EventStore(e))
    }

    /// A JSON-RPC error: the peer answered the call with it, or a handler answers with it
    /// ([`Error::rpc`]).
    pub fn is_rpc(&self) -> bool {
        matches!(*self.kind, Kind::Rpc(_))
    }

    /// The JSON-RPC error, for [`is_rpc`](Self::is_rpc).
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match &*self.kind {
            Kind::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC error, for [`is_rpc`](Self::is_rpc); the error itself otherwise.
    pub fn into_rpc_error(self) -> Result<ErrorObject, Error> {
        match *self.kind {
            Kind::Rpc(e) => Ok(e),
            kind => Err(Error::new(kind)),
        }
    }

    /// The request this call belongs to has finished (its answer was sent, or its stream is
    /// gone): nothing more can be sent for it.
    pub fn is_request_finished(&self) -> bool {
        matches!(*self.kind, Kind::RequestFinished)
    }

    /// The session is closed (by either side, or the transport ended).
    pub fn is_session_closed(&self) -> bool {
        matches!(*self.kind, Kind::SessionClosed)
    }

    /// The request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(*self.kind, Kind::Cancelled)
    }

    /// No answer arrived in time.
    pub fn is_timeout(&self) -> bool {
        matches!(*self.kind, Kind::Timeout(_))
    }

    /// How long the call waited, for [`is_timeout`](Self::is_timeout).
    pub fn timeout_after(&self) -> Option<Duration> {
        match &*self.kind {
            Kind::Timeout(d) => Some(*d),
            _ => None,
        }
    }

    /// The capability the peer did not declare, when that is why the call failed.
    pub fn missing_capability_name(&self) -> Option<&'static str> {
        match &*self.kind {
            Kind::MissingCapability(c) => Some(c),
            _ => None,
        }
    }

    /// The call is impossible in this context (a server→client request on a stateless
    /// server or in the 2026-07-28 era, progress that does not increase, arguments that are
    /// not an object, a method of the other era).
    pub fn is_unsupported(&self) -> bool {
        matches!(*self.kind, Kind::Unsupported(_))
    }

    /// The client must provide more input (2026-07-28): propagate it with `?` from the
    /// handler and the server answers with an `InputRequiredResult`.
    pub fn is_input_required(&self) -> bool {
        matches!(*self.kind, Kind::InputRequired(_))
    }

    /// The questions, for [`is_input_required`](Self::is_input_required); the error itself
    /// otherwise.
    pub fn into_input_required(self) -> Result<Box<InputRequiredResult>, Error> {
        match *self.kind {
            Kind::InputRequired(r) => Ok(r),
            kind => Err(Error::new(kind)),
        }
    }

    /// A message could not be encoded or decoded.
    pub fn is_json(&self) -> bool {
        matches!(*self.kind, Kind::Json(_))
    }

    /// Moving the messages failed; [`transport`](Self::transport) says how.
    pub fn is_transport(&self) -> bool {
        matches!(*self.kind, Kind::Transport(_))
    }

    /// What went wrong moving the messages, for [`is_transport`](Self::is_transport).
    pub fn transport(&self) -> Option<&TransportError> {
        match &*self.kind {
            Kind::Transport(t) => Some(t),
            _ => None,
        }
    }

    /// The request did not reach the server ([`TransportError::Connect`]): worth retrying.
    pub fn is_connect(&self) -> bool {
        matches!(&*self.kind, Kind::Transport(TransportError::Connect(_)))
    }

    /// The HTTP status the server answered with, when that is why the call failed.
    pub fn status(&self) -> Option<http::StatusCode> {
        self.transport().and_then(TransportError::status)
    }

    /// The server's event store could not record a message for later delivery.
    pub fn is_event_store(&self) -> bool {
        matches!(*self.kind, Kind::EventStore(_))
    }

    /// The peer violated the protocol (an answer of the wrong shape, a version it may not
    /// pick, content that does not match the schema asked for).
    pub fn is_protocol(&self) -> bool {
        matches!(*self.kind, Kind::Protocol(_))
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("vellum::Error").field(&self.kind).finish()
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.kind, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.kind)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::new(Kind::Json(e))
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Self {
        Error::new(Kind::Transport(e))
    }
}

/// A transport that cannot be set up (an endpoint URL, the HTTP client, a command line):
/// [`TransportError::Setup`] with the [`ConfigError`] as its source.
impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::from(TransportError::Setup(Arc::new(e)))
    }
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
    #[error("invalid answer from the server: {detail}")]
    Protocol {
        /// What is wrong with it.
        detail: String,
    },
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
    /// does not start); the source is the [`ConfigError`].
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
    fn one_word_whose_predicates_and_accessors_answer() {
        // A `Result<T, Error>` stays small on the hot path.
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
        let e = Error::rpc(ErrorObject::invalid_params("nope"));
        assert!(e.is_rpc() && !e.is_transport() && e.status().is_none());
        assert_eq!(e.rpc_error().map(|o| o.code), Some(-32602));
        let e = Error::timeout(Duration::from_secs(2));
        assert_eq!(e.timeout_after(), Some(Duration::from_secs(2)));
        assert!(e.into_rpc_error().is_err_and(|e| e.is_timeout()));
        let e = Error::unsupported(Unsupported::ProgressNotIncreasing {
            progress: 1.0,
            last: 2.0,
        });
        assert!(e.is_unsupported());
        assert_eq!(e.to_string(), "progress must increase: 1 after 2");
        let e = Error::event_store(StoreError::Evicted);
        assert!(e.is_event_store());
        assert_eq!(
            std::error::Error::source(&e).map(ToString::to_string),
            Some(StoreError::Evicted.to_string())
        );
    }

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
        assert!(e.is_connect());
        assert!(matches!(e.transport(), Some(TransportError::Connect(_))));
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
