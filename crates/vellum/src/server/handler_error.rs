//! [`HandlerError`]: how a tool, resource, prompt or completion handler fails, and the one
//! function that decides what each failure becomes on the wire ([`HandlerError::into_wire`]),
//! used by the dispatcher and by tasks alike.
//!
//! Not here: transport rejections (HTTP statuses live with the transport), and the framing
//! of the wire result (see `request/reply.rs`).

use crate::error::Error;
use crate::protocol::{ErrorObject, InputRequiredResult};

/// How a handler (tool, resource, prompt) fails.
///
/// `?` converts the crate's [`Error`], an [`ErrorObject`], `serde_json` and I/O errors, a
/// boxed error, a `String` and a `&str`; for any other error type use
/// [`HandlerError::failed`] (or `map_err(HandlerError::failed)`). In a tool, a failure
/// becomes a tool error result (`isError: true`, the error's text as content) that the model
/// can read; in a resource or prompt handler, a JSON-RPC internal error. An [`ErrorObject`]
/// (or an [`Error`] that [`is_rpc`](Error::is_rpc)) becomes that JSON-RPC error, and
/// an [`Error`] that [`is_input_required`](Error::is_input_required) (from asking the client in the 2026-07-28 era) becomes an
/// `InputRequiredResult`.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The handler failed; for a tool, the text is shown to the model (`isError: true`).
    #[error("{0}")]
    Failed(String),
    /// A protocol error (JSON-RPC error response).
    #[error("{0}")]
    Protocol(ErrorObject),
    /// More input is needed (2026-07-28 MRTR).
    #[error("input required")]
    InputRequired(Box<InputRequiredResult>),
}

impl HandlerError {
    /// A failure with this message.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        HandlerError::Failed(message.to_string())
    }
}

impl From<Error> for HandlerError {
    fn from(e: Error) -> Self {
        let e = match e.into_input_required() {
            Ok(r) => return HandlerError::InputRequired(r),
            Err(e) => e,
        };
        match e.into_rpc_error() {
            Ok(obj) => HandlerError::Protocol(obj),
            Err(other) => HandlerError::Failed(other.to_string()),
        }
    }
}

impl From<ErrorObject> for HandlerError {
    fn from(e: ErrorObject) -> Self {
        HandlerError::Protocol(e)
    }
}

impl From<InputRequiredResult> for HandlerError {
    fn from(r: InputRequiredResult) -> Self {
        HandlerError::InputRequired(Box::new(r))
    }
}

/// Failures that carry only their text.
macro_rules! failed_from {
    ($($t:ty),* $(,)?) => {
        $(impl From<$t> for HandlerError {
            fn from(e: $t) -> Self {
                HandlerError::Failed(e.to_string())
            }
        })*
    };
}

failed_from!(
    serde_json::Error,
    std::io::Error,
    std::fmt::Error,
    std::num::ParseIntError,
    std::num::ParseFloatError,
    std::str::Utf8Error,
    std::string::FromUtf8Error,
    String,
    &str,
    Box<dyn std::error::Error + Send + Sync>,
);

impl From<std::convert::Infallible> for HandlerError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

/// What the failed handler served: it decides what a plain failure becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Served {
    /// `tools/call`: a failure is a tool error result the model reads.
    Tool,
    /// A tool call running as a task.
    Task,
    /// Anything else (`resources/read`, `prompts/get`, `completion/complete`).
    Other,
}

/// A handler's failure as the wire carries it.
#[derive(Debug)]
pub(crate) enum WireFailure {
    /// A JSON-RPC error response.
    Error(ErrorObject),
    /// A tool error result (`isError: true`) with this text.
    ToolError(String),
    /// The client must provide input first (a 2026-07-28 `InputRequiredResult`).
    InputRequired(Box<InputRequiredResult>),
}

impl HandlerError {
    /// The one mapping of a handler's failure to the wire: what it becomes for what it
    /// served, in the request's era (`modern`: 2026-07-28).
    pub(crate) fn into_wire(self, served: Served, modern: bool) -> WireFailure {
        match self {
            HandlerError::Failed(m) if served != Served::Other => WireFailure::ToolError(m),
            HandlerError::Failed(m) => WireFailure::Error(ErrorObject::internal(m)),
            HandlerError::Protocol(e) => WireFailure::Error(e),
            HandlerError::InputRequired(r) if modern => WireFailure::InputRequired(r),
            // Legacy handlers ask the client directly; this only happens if a handler
            // returned the error of another request.
            HandlerError::InputRequired(_) => {
                WireFailure::Error(ErrorObject::internal(match served {
                    Served::Task => "the handler asked for input a task cannot carry",
                    _ => {
                        "the handler asked for client input in a way this protocol version cannot carry"
                    }
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_what_they_carry() {
        let rpc = ErrorObject::invalid_params("nope");
        assert!(matches!(HandlerError::from(rpc.clone()), HandlerError::Protocol(e) if e == rpc));
        assert!(matches!(
            HandlerError::from(Error::rpc(rpc.clone())),
            HandlerError::Protocol(e) if e == rpc
        ));
        assert!(matches!(
            HandlerError::from(Error::input_required(InputRequiredResult::default())),
            HandlerError::InputRequired(_)
        ));
        assert!(matches!(
            HandlerError::from(Error::cancelled()),
            HandlerError::Failed(m) if m == Error::cancelled().to_string()
        ));
        let io = std::io::Error::other("disk");
        assert!(matches!(HandlerError::from(io), HandlerError::Failed(m) if m == "disk"));
    }

    #[test]
    fn the_wire_of_each_failure() {
        let failed = || HandlerError::failed("boom");
        assert!(
            matches!(failed().into_wire(Served::Tool, false), WireFailure::ToolError(m) if m == "boom")
        );
        assert!(matches!(
            failed().into_wire(Served::Task, true),
            WireFailure::ToolError(_)
        ));
        assert!(matches!(
            failed().into_wire(Served::Other, false),
            WireFailure::Error(e) if e.code == crate::protocol::code::INTERNAL_ERROR
        ));
        let ask = || HandlerError::InputRequired(Box::default());
        assert!(matches!(
            ask().into_wire(Served::Tool, true),
            WireFailure::InputRequired(_)
        ));
        assert!(matches!(
            ask().into_wire(Served::Other, false),
            WireFailure::Error(_)
        ));
    }
}
