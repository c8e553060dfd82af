//! What handler functions may return.

use std::any::Any;
use std::fmt::Display;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Serialize;

use super::extract::Json;
use crate::error::Error;
use crate::protocol::{
    CallToolResult, ErrorObject, GetPromptResult, JsonObject, PromptMessage, ReadResourceResult,
    ResourceContents,
};
use crate::server::{HandlerError, IntoToolResult, Structured};

/// An error of any `Display` type as a handler failure. A [`HandlerError`], an
/// [`Error`] or an [`ErrorObject`] keeps what it says (a JSON-RPC error, more input
/// needed); anything else is a failure with its text (for a tool, `isError: true`).
pub(crate) fn handler_error<E: Display + 'static>(e: E) -> HandlerError {
    let text = e.to_string();
    let any: Box<dyn Any> = Box::new(e);
    let any = match any.downcast::<HandlerError>() {
        Ok(h) => return *h,
        Err(any) => any,
    };
    let any = match any.downcast::<ErrorObject>() {
        Ok(obj) => return HandlerError::Protocol(*obj),
        Err(any) => any,
    };
    match any.downcast::<Error>() {
        Ok(err) => HandlerError::from(*err),
        Err(_) => HandlerError::Failed(text),
    }
}

impl<T: IntoToolResult, E: Display + Send + 'static> IntoToolResult for Result<T, E> {
    fn output_schema() -> Option<JsonObject> {
        T::output_schema()
    }
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        match self {
            Ok(v) => v.into_tool_result(),
            Err(e) => Err(handler_error(e)),
        }
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Json<T> {
    fn output_schema() -> Option<JsonObject> {
        Structured::<T>::output_schema()
    }
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Structured(self.0).into_tool_result()
    }
}

/// A tool with nothing to say answers with no content.
impl IntoToolResult for () {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::new(Vec::new()))
    }
}

/// What a prompt handler may return: a [`GetPromptResult`], its messages, one message, or
/// text (one user message); or `Result<T, E>` of one of these with `E: Display`.
///
/// ```
/// use vellum::handler::IntoPromptResult;
/// use vellum::protocol::PromptMessage;
///
/// let result = vec![PromptMessage::user("Review this code")].into_prompt_result().unwrap();
/// assert_eq!(result.messages.len(), 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "a prompt cannot return `{Self}`",
    label = "not a prompt result",
    note = "return String (one user message), PromptMessage, Vec<PromptMessage>, GetPromptResult, or Result<T, E> of one of these with E: Display"
)]
pub trait IntoPromptResult: Send + 'static {
    /// Converts into the wire result.
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(self)
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult::new(self))
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult::new(vec![self]))
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult::new(vec![PromptMessage::user(self)]))
    }
}

impl<T: IntoPromptResult, E: Display + Send + 'static> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.map_err(handler_error)?.into_prompt_result()
    }
}

/// What a resource handler may return: a [`ReadResourceResult`], its contents, one content,
/// text or bytes (one content at the URI read, with the resource's MIME type); or
/// `Result<T, E>` of one of these with `E: Display`.
///
/// ```
/// use vellum::handler::IntoReadResult;
///
/// let result = String::from("# Notes").into_read_result("file:///notes.md", Some("text/markdown")).unwrap();
/// assert_eq!(result.contents.len(), 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "a resource cannot return `{Self}`",
    label = "not a resource result",
    note = "return String (text), Vec<u8> (a blob), ResourceContents, Vec<ResourceContents>, ReadResourceResult, or Result<T, E> of one of these with E: Display"
)]
pub trait IntoReadResult: Send + 'static {
    /// Converts into the wire result; `uri` is the URI read and `mime_type` the resource's.
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError>;
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError> {
        Ok(self)
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult::new(self))
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult::new(vec![self]))
    }
}

impl IntoReadResult for String {
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult::new(vec![ResourceContents::text(
            uri, mime_type, self,
        )]))
    }
}

impl IntoReadResult for Vec<u8> {
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult::new(vec![ResourceContents::blob(
            uri,
            mime_type,
            base64::engine::general_purpose::STANDARD.encode(self),
        )]))
    }
}

impl<T: IntoReadResult, E: Display + Send + 'static> IntoReadResult for Result<T, E> {
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResult, HandlerError> {
        self.map_err(handler_error)?
            .into_read_result(uri, mime_type)
    }
}
