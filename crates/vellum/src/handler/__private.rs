//! What the code `vellum-macros` generates calls. Not a public API: it changes with the
//! macros, which are always the same version as this crate.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub use schemars;
pub use serde;
pub use std::sync::Arc;

use crate::protocol::{
    CallToolResult, ErrorObject, GetPromptResult, JsonObject, Prompt, PromptArgument,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use crate::server::{CallToolRequest, HandlerError, IntoToolResult, schema_for};

use super::output::{IntoPromptResult, IntoReadResult};

/// A tool input type (`Json<T>`'s `T`, or the struct the macro makes of typed arguments).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's input: it needs serde's `Deserialize` and schemars' `JsonSchema`",
    label = "used as a tool's input here",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to the type (schemars 1.x, the version vellum uses)"
)]
pub trait ToolInput: DeserializeOwned + JsonSchema {}
impl<T: DeserializeOwned + JsonSchema> ToolInput for T {}

/// One typed argument of a tool (a property of its input).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a typed argument of a tool: it needs serde's `Deserialize` and schemars' `JsonSchema`",
    label = "this argument becomes a property of the tool's input",
    note = "derive `serde::Deserialize` and `schemars::JsonSchema` for it (schemars 1.x), or, if it is meant as an extractor, mark it `#[extract]` and implement `vellum::handler::FromRequest`"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema {}
impl<T: DeserializeOwned + JsonSchema> ToolArgument for T {}

/// What a tool function returns.
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`",
    label = "not a tool result",
    note = "return String, Json<T> (T: Serialize + JsonSchema; gives the tool an outputSchema), CallToolResult, (), or Result<T, E> of one of these with E: Display"
)]
pub trait ToolOutput: IntoToolResult {}
impl<T: IntoToolResult> ToolOutput for T {}

/// A handler's future, which the server may run on any worker thread.
#[diagnostic::on_unimplemented(
    message = "the future of this handler is not `Send`",
    label = "this handler's future must be `Send`: the server runs it on any worker thread",
    note = "hold no `Rc`, `RefCell` borrow or `std::sync::MutexGuard` across an `.await`: drop it before (end its block), or use `Arc` and `tokio::sync::Mutex`"
)]
pub trait SendFuture: Future + Send {}
impl<F: Future + Send> SendFuture for F {}

/// Passes a handler's future through, checking it is `Send` where the user wrote it.
pub fn require_send<F: SendFuture>(f: F) -> F {
    f
}

/// The input schema of a tool whose input is `T`.
pub fn input_schema<T: ToolInput>() -> JsonObject {
    schema_for::<T>(true)
}

/// Checks a typed argument's type (the error points at the argument).
pub fn typed_argument<T: ToolArgument>() {}

/// The output schema implied by a tool's return type.
pub fn output_schema<R: ToolOutput>() -> Option<JsonObject> {
    R::output_schema()
}

/// A tool as the macro describes it.
pub fn tool(
    name: &str,
    description: Option<&str>,
    title: Option<&str>,
    input_schema: JsonObject,
    output_schema: Option<JsonObject>,
) -> Tool {
    let mut tool = Tool::new(name, description.unwrap_or_default());
    tool.description = description.map(str::to_owned);
    tool.title = title.map(str::to_owned);
    tool.input_schema = input_schema;
    tool.output_schema = output_schema;
    tool
}

/// `#[tool(map_tool = f)]`: the described tool, changed by `f`.
pub fn map_tool(tool: Tool, f: impl FnOnce(Tool) -> Tool) -> Tool {
    f(tool)
}

/// A tool's behaviour hints, as `#[tool(annotations(...))]` names them.
pub fn annotations(
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
) -> crate::protocol::ToolAnnotations {
    crate::protocol::ToolAnnotations {
        read_only_hint: read_only,
        destructive_hint: destructive,
        idempotent_hint: idempotent,
        open_world_hint: open_world,
        ..Default::default()
    }
}

/// An icon of `#[tool(icons(...))]`: its URI (the media type is the client's to sniff).
pub fn icon(src: &str) -> crate::protocol::Icon {
    crate::protocol::Icon {
        src: src.to_owned(),
        mime_type: None,
        sizes: None,
        theme: None,
    }
}

/// The typed arguments, or the tool error result the model reads.
pub fn arguments<T: DeserializeOwned>(request: &CallToolRequest) -> Result<T, CallToolResult> {
    T::deserialize(&request.arguments)
        .map_err(|e| CallToolResult::error(format!("invalid arguments: {e}")))
}

/// A tool function's return value as the wire result.
pub fn tool_result<R: ToolOutput>(r: R) -> Result<CallToolResult, HandlerError> {
    r.into_tool_result()
}

/// A prompt function's return value as the wire result.
pub fn prompt_result<R: IntoPromptResult>(r: R) -> Result<GetPromptResult, HandlerError> {
    r.into_prompt_result()
}

/// A resource function's return value as the wire result.
pub fn read_result<R: IntoReadResult>(
    r: R,
    uri: &str,
    mime_type: Option<&str>,
) -> Result<ReadResourceResult, HandlerError> {
    r.into_read_result(uri, mime_type)
}

/// A prompt as the macro describes it.
pub fn prompt(
    name: &str,
    description: Option<&str>,
    title: Option<&str>,
    arguments: Vec<PromptArgument>,
) -> Prompt {
    let mut prompt = Prompt::new(name, description.unwrap_or_default());
    prompt.description = description.map(str::to_owned);
    prompt.title = title.map(str::to_owned);
    prompt.arguments = (!arguments.is_empty()).then_some(arguments);
    prompt
}

/// A prompt argument's declaration.
pub fn prompt_argument(name: &str, description: Option<&str>, required: bool) -> PromptArgument {
    let mut arg = if required {
        PromptArgument::required(name, description.unwrap_or_default())
    } else {
        PromptArgument::optional(name, description.unwrap_or_default())
    };
    arg.description = description.map(str::to_owned);
    arg
}

/// A string value a prompt argument or URI template variable parses into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be parsed from a prompt argument or URI template variable",
    label = "parsed from a string with `FromStr`",
    note = "take `String` (or `Option<String>` when it may be absent), or a type implementing `FromStr` whose error is `Display`"
)]
pub trait FromArgument: Sized {
    /// Parses the value.
    fn parse_argument(value: &str) -> Result<Self, String>;
}
impl<T: FromStr> FromArgument for T
where
    T::Err: Display,
{
    fn parse_argument(value: &str) -> Result<Self, String> {
        value.parse().map_err(|e: T::Err| e.to_string())
    }
}

/// A required string argument (prompt argument, template variable), parsed.
pub fn required<T: FromArgument>(
    values: &BTreeMap<String, String>,
    name: &str,
) -> Result<T, HandlerError> {
    match values.get(name) {
        Some(v) => parse(v, name),
        None => Err(HandlerError::Protocol(ErrorObject::invalid_params(
            format!("missing argument `{name}`"),
        ))),
    }
}

/// An optional string argument, parsed when present.
pub fn optional<T: FromArgument>(
    values: &BTreeMap<String, String>,
    name: &str,
) -> Result<Option<T>, HandlerError> {
    values.get(name).map(|v| parse(v, name)).transpose()
}

fn parse<T: FromArgument>(value: &str, name: &str) -> Result<T, HandlerError> {
    T::parse_argument(value).map_err(|e| {
        HandlerError::Protocol(ErrorObject::invalid_params(format!(
            "argument `{name}`: {e}"
        )))
    })
}

/// A resource at a fixed URI as the macro describes it.
pub fn resource(
    uri: &str,
    name: &str,
    title: Option<&str>,
    description: Option<&str>,
    mime_type: Option<&str>,
) -> Resource {
    let mut r = Resource::new(uri, name);
    r.title = title.map(str::to_owned);
    r.description = description.map(str::to_owned);
    r.mime_type = mime_type.map(str::to_owned);
    r
}

/// A resource template as the macro describes it.
pub fn resource_template(
    uri_template: &str,
    name: &str,
    title: Option<&str>,
    description: Option<&str>,
    mime_type: Option<&str>,
) -> ResourceTemplate {
    let mut t = ResourceTemplate::new(uri_template, name);
    t.title = title.map(str::to_owned);
    t.description = description.map(str::to_owned);
    t.mime_type = mime_type.map(str::to_owned);
    t
}
