//! Tools: typed handlers (input and output schemas derived from Rust types), argument and
//! output validation, the erased handler the dispatcher calls, and running one call
//! ([`execute_tool`], shared by `tools/call` and tasks).
//!
//! Not here: the `tools/call` method's steps (`methods/input.rs`) and tasks
//! (`methods/tasks/`).

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::protocol::{
    CallToolResult, ContentBlock, ErrorObject, JsonObject, Meta, ParamHeader, TaskMetadata, Tool,
};
use crate::schema::Validator;
use crate::server::handler_error::HandlerError;
pub use crate::server::registry::derive::schema_for;
use crate::server::request::context::RequestContext;
use crate::server::request::request::RequestShared;

/// The `tools/call` request as a handler sees it, arguments already validated.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallToolRequest {
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object that passed the tool's input schema.
    pub arguments: Value,
    /// The request's `_meta`.
    pub meta: Option<Meta>,
    /// The task the client asked to run this call as (2025-11-25 tasks).
    pub task: Option<TaskMetadata>,
}

/// What a tool handler may return: a [`CallToolResult`], plain text, or a typed
/// [`Structured`] value (which also gives the tool its `outputSchema`).
pub trait IntoToolResult: Send + 'static {
    /// The output schema implied by the type, if any.
    fn output_schema() -> Option<JsonObject> {
        None
    }
    /// Converts into the wire result.
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError>;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::text(self))
    }
}

/// Typed structured output: serialized into `structuredContent` (plus a text block with the
/// same JSON, for clients that only read `content`), and its type's schema becomes the
/// tool's `outputSchema`.
#[derive(Debug, Clone)]
pub struct Structured<T>(pub T);

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Structured<T> {
    fn output_schema() -> Option<JsonObject> {
        Some(schema_for::<T>(false))
    }
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            HandlerError::Protocol(ErrorObject::internal(format!(
                "output does not serialize: {e}"
            )))
        })?;
        let text = value.to_string();
        Ok(CallToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: Some(value),
            ..Default::default()
        })
    }
}

/// The input of a tool that takes no arguments.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl From<ConfigError> for HandlerError {
    fn from(e: ConfigError) -> Self {
        HandlerError::Failed(e.to_string())
    }
}

/// True for a valid tool name (SEP-986).
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The type-erased handler the dispatcher calls.
pub(crate) trait DynToolHandler: Send + Sync {
    fn call(
        &self,
        ctx: RequestContext,
        request: CallToolRequest,
    ) -> BoxFuture<'static, Result<CallToolResult, HandlerError>>;
}

/// A registered tool.
pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) handler: Arc<dyn DynToolHandler>,
    input_validator: Validator,
    output_validator: Option<Validator>,
    /// The arguments mirrored into `Mcp-Param-*` headers (SEP-2243); empty for most tools,
    /// which then cost nothing per call.
    pub(crate) param_headers: Box<[ParamHeader]>,
}

fn compile(tool: &str, which: &'static str, schema: &JsonObject) -> Result<Validator, ConfigError> {
    // `format` is an annotation for tools, as in the spec's default dialect.
    Validator::new(schema, false).map_err(|message| {
        ConfigKind::Schema {
            tool: tool.to_owned(),
            which,
            message,
        }
        .into()
    })
}

impl ToolEntry {
    pub(crate) fn new(tool: Tool, handler: Arc<dyn DynToolHandler>) -> Result<Self, ConfigError> {
        if !is_valid_tool_name(&tool.name) {
            return Err(ConfigKind::ToolName { name: tool.name }.into());
        }
        if tool.input_schema.get("type") != Some(&Value::String("object".into())) {
            return Err(ConfigKind::InputNotObject { tool: tool.name }.into());
        }
        let param_headers = ParamHeader::of_schema(&tool.input_schema)
            .map_err(|e| e.for_tool(&tool.name))?
            .into_boxed_slice();
        let input_validator = compile(&tool.name, "input", &tool.input_schema)?;
        let output_validator = match &tool.output_schema {
            Some(s) => Some(compile(&tool.name, "output", s)?),
            None => None,
        };
        Ok(ToolEntry {
            tool,
            handler,
            input_validator,
            output_validator,
            param_headers,
        })
    }

    /// Validates arguments; the error text lists every violation.
    pub(crate) fn validate_input(&self, arguments: &Value) -> Result<(), String> {
        if self.input_validator.is_valid(arguments) {
            return Ok(());
        }
        Err(describe_errors(&self.input_validator, arguments))
    }

    /// Validates structured output against the output schema.
    pub(crate) fn validate_output(&self, output: &Value) -> Result<(), String> {
        match &self.output_validator {
            Some(v) if !v.is_valid(output) => Err(describe_errors(v, output)),
            _ => Ok(()),
        }
    }

    pub(crate) fn has_output_schema(&self) -> bool {
        self.output_validator.is_some()
    }
}

fn describe_errors(v: &Validator, instance: &Value) -> String {
    format!(
        "invalid arguments: {}",
        v.violations(instance, 8).join("; ")
    )
}

/// A typed handler: deserializes the validated arguments into `In`.
pub(crate) struct TypedTool<In, F> {
    pub(crate) f: F,
    pub(crate) _in: PhantomData<fn() -> In>,
}

impl<In, Out, E, F, Fut> DynToolHandler for TypedTool<In, F>
where
    In: DeserializeOwned + Send + 'static,
    F: Fn(RequestContext, CallToolRequest, In) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, E>> + Send + 'static,
    Out: IntoToolResult,
    E: Into<HandlerError> + 'static,
{
    fn call(
        &self,
        ctx: RequestContext,
        request: CallToolRequest,
    ) -> BoxFuture<'static, Result<CallToolResult, HandlerError>> {
        let input = match In::deserialize(&request.arguments) {
            Ok(i) => i,
            Err(e) => {
                let msg = format!("invalid arguments: {e}");
                return Box::pin(async move { Ok(CallToolResult::error(msg)) });
            }
        };
        let fut = (self.f)(ctx, request, input);
        Box::pin(async move {
            match fut.await {
                Ok(out) => out.into_tool_result(),
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// A handler over raw arguments (no typed input).
pub(crate) struct RawTool<F>(pub(crate) F);

impl<Out, E, F, Fut> DynToolHandler for RawTool<F>
where
    F: Fn(RequestContext, CallToolRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, E>> + Send + 'static,
    Out: IntoToolResult,
    E: Into<HandlerError> + 'static,
{
    fn call(
        &self,
        ctx: RequestContext,
        request: CallToolRequest,
    ) -> BoxFuture<'static, Result<CallToolResult, HandlerError>> {
        let fut = (self.0)(ctx, request);
        Box::pin(async move {
            match fut.await {
                Ok(out) => out.into_tool_result(),
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// Runs a tool's handler and checks and frames its output for the request's era.
pub(crate) async fn execute_tool(
    shared: Arc<RequestShared>,
    entry: &ToolEntry,
    request: CallToolRequest,
) -> Result<CallToolResult, HandlerError> {
    let modern = shared.is_modern();
    let result = entry
        .handler
        .call(RequestContext::new(shared), request)
        .await?;
    if entry.has_output_schema() && !result.is_error() {
        let checked = match &result.structured_content {
            Some(v) => entry.validate_output(v),
            None => {
                Err("the tool declares an output schema but returned no structuredContent".into())
            }
        };
        if let Err(why) = checked {
            return Err(HandlerError::Protocol(ErrorObject::internal(format!(
                "The tool's output does not match its output schema: {why}"
            ))));
        }
    }
    Ok(frame_structured(result, modern))
}

/// Makes structured output readable by every client: a result with `structuredContent` and
/// no content gets a text block with the JSON; before 2026-07-28 `structuredContent` must be an
/// object, so other values are carried by that text block alone.
fn frame_structured(mut result: CallToolResult, modern: bool) -> CallToolResult {
    let Some(value) = &result.structured_content else {
        return result;
    };
    let object = value.is_object();
    if result.content.is_empty() || (!modern && !object && !has_text(&result)) {
        result.content.push(ContentBlock::text(value.to_string()));
    }
    if !modern && !object {
        result.structured_content = None;
    }
    result
}

fn has_text(r: &CallToolResult) -> bool {
    r.content.iter().any(|c| c.as_text().is_some())
}
