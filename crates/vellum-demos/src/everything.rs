//! The "everything" server: every fixture the official MCP conformance suite calls, for both
//! of its releases (0.1.16 and the 2026 suite, 0.2.0-alpha.12): tools of every content type,
//! logging, progress, sampling, elicitation, a raw JSON Schema 2020-12 tool, SSE polling;
//! static and templated resources; prompts; completion; and, in the modules beside this one,
//! the 2026-07-28 diagnostics and header tool ([`everything_stateless`]), the multi
//! round-trip fixtures ([`everything_mrtr`]) and the task fixtures ([`everything_tasks`]).
//! Plus the seed's `hello_world` tool. Built only with Vellum's public API, so it doubles as
//! the longest example of the SDK.
//!
//! Run: `cargo run --example everything --features everything`, then point a client (or the conformance suite) at
//! `http://127.0.0.1:8000/mcp`. `vellum serve --server everything` serves the same server
//! with the handler options its flags choose: this file is both the example program and the
//! `vellum_demos::everything` module.
//!
//! The same handlers serve both protocol eras: with a 2026-07-28 client, `ctx.create_message`
//! and `ctx.elicit` become multi round-trip requests (`InputRequiredResult`) instead of
//! requests to the client, and nothing here changes.
//!
//! [`everything_stateless`]: vellum_demos::everything_stateless
//! [`everything_mrtr`]: vellum_demos::everything_mrtr
//! [`everything_tasks`]: vellum_demos::everything_tasks

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::protocol::{
    CompleteParams, CompletionReference, CreateMessageParams, CreateMessageResult,
    ElicitFormParams, ElicitParams, GetPromptResult, JsonObject, LoggingLevel, ReadResourceResult,
    ResourceContents, Role, SamplingMessage,
};
use vellum::server::NoArgs;
use vellum::store::MemoryEventStore;
use vellum::transport::http::serve;
// The crate's own name, so this file compiles as the example and as the module alike.
use vellum_demos::everything_mrtr::add_mrtr_fixtures;
use vellum_demos::everything_skills::add_skill_fixtures;
use vellum_demos::everything_stateless::add_stateless_fixtures;
use vellum_demos::everything_tasks::add_task_fixtures;
use vellum_demos::hello_world::add_hello_world;

/// A 1×1 red PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file.
pub const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Input of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
pub struct SamplingInput {
    /// The prompt to send to the client's model.
    pub prompt: String,
}

/// Input of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
pub struct ElicitationInput {
    /// The message to show the user.
    pub message: String,
}

/// A JSON object from a `json!` value (anything else gives an empty object).
pub fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// A form elicitation: `message`, and the flat object `schema` of what to enter.
pub fn form(message: &str, schema: Value) -> ElicitParams {
    ElicitParams::Form(ElicitFormParams::new(message, object(schema)))
}

/// A sampling request: one user message, at most `max_tokens` in the answer.
pub fn sampling(text: &str, max_tokens: u64) -> CreateMessageParams {
    CreateMessageParams {
        messages: vec![SamplingMessage::user(text)],
        max_tokens,
        ..Default::default()
    }
}

/// The text of the model's answer.
pub fn model_text(answer: &CreateMessageResult) -> String {
    answer
        .content
        .as_slice()
        .iter()
        .filter_map(|c| c.as_text())
        .collect()
}

/// Asks the user with a form and reports what came back.
async fn elicit_form(
    ctx: &RequestContext,
    message: &str,
    schema: Value,
) -> Result<String, HandlerError> {
    let answer = ctx.elicit(form(message, schema)).await?;
    let content =
        serde_json::to_string(&answer.content.unwrap_or_default()).map_err(HandlerError::failed)?;
    let action = serde_json::to_value(answer.action).map_err(HandlerError::failed)?;
    Ok(format!(
        "action={}, content={content}",
        action.as_str().unwrap_or("?")
    ))
}

fn add_tools(server: &Server) -> Result<(), ConfigError> {
    add_hello_world(server)?;
    server.add_tool(
        Tool::new("test_simple_text", "Returns a simple text response"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>(CallToolResult::text(
                "This is a simple text response for testing.",
            ))
        },
    )?;
    server.add_tool(
        Tool::new("test_image_content", "Returns an image"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>(CallToolResult::new(vec![ContentBlock::image(
                PNG,
                "image/png",
            )]))
        },
    )?;
    server.add_tool(
        Tool::new("test_audio_content", "Returns audio"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>(CallToolResult::new(vec![ContentBlock::audio(
                WAV,
                "audio/wav",
            )]))
        },
    )?;
    server.add_tool(
        Tool::new("test_embedded_resource", "Returns an embedded resource"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>(CallToolResult::new(vec![ContentBlock::resource(
                ResourceContents::text(
                    "test://embedded-resource",
                    Some("text/plain"),
                    "This is an embedded resource content.",
                ),
            )]))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
        ),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>(CallToolResult::new(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::resource(ResourceContents::text(
                    "test://mixed-content-resource",
                    Some("application/json"),
                    r#"{"test":"data","value":123}"#,
                )),
            ]))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_tool_with_logging",
            "Sends three log messages while it runs",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let steps = [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ];
            for (i, step) in steps.into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.log(LoggingLevel::Info, Some("everything"), step)
                    .await?;
            }
            Ok::<_, HandlerError>(CallToolResult::text("Logging test completed"))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.notify_progress(p, Some(100.0), Some(format!("Completed step {i} of 2")))
                    .await?;
            }
            Ok::<_, HandlerError>(CallToolResult::text("Progress test completed"))
        },
    )?;
    server.add_tool(
        Tool::new("test_error_handling", "Always fails (a tool error result)"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Err::<CallToolResult, _>(HandlerError::failed(
                "This tool intentionally returns an error for testing",
            ))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_sampling",
            "Asks the client's model to answer a prompt",
        ),
        |ctx: RequestContext, _req: CallToolRequest, input: SamplingInput| async move {
            let answer = ctx.create_message(sampling(&input.prompt, 100)).await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "LLM response: {}",
                model_text(&answer)
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_elicitation",
            "Asks the user for a username and an email",
        ),
        |ctx: RequestContext, _req: CallToolRequest, input: ElicitationInput| async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                },
                "required": ["username", "email"]
            });
            let report = elicit_form(&ctx, &input.message, schema).await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!("User response: {report}")))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_elicitation_sep1034_defaults",
            "Asks for values of every primitive type, each with a default (SEP-1034)",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active"
                    },
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                },
                "required": []
            });
            let report = elicit_form(&ctx, "Please review and update the form fields with defaults", schema).await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Elicitation completed: {report}"
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_elicitation_sep1330_enums",
            "Asks for every kind of enum: titled and untitled, single and multiple (SEP-1330)",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Pick one option",
                        "enum": ["option1", "option2", "option3"]
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Pick one titled option",
                        "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Pick one (legacy enumNames)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Pick several options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Pick several titled options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}
                    }
                },
                "required": []
            });
            let report = elicit_form(&ctx, "Please pick from each kind of list", schema).await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Elicitation completed: {report}"
            )))
        },
    )?;
    // A schema given as raw JSON is listed byte for byte: `$defs`, `$ref`, `$anchor`, the
    // composition keywords and `if`/`then`/`else` (SEP-1613, SEP-2106).
    let raw_schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {
            "properties": {"contactMethod": {"const": "phone"}},
            "required": ["contactMethod"]
        },
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    server.add_raw_tool(
        Tool::new(
            "json_schema_2020_12_tool",
            "Echoes its arguments; its input schema uses JSON Schema 2020-12 ($defs, $ref, \
             $anchor, allOf/anyOf, if/then/else)",
        )
        .with_input_schema(object(raw_schema)),
        |_ctx: RequestContext, req: CallToolRequest| async move {
            Ok::<_, HandlerError>(CallToolResult::text(format!("Received: {}", req.arguments)))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_reconnection",
            "Closes its SSE stream before answering, so the client resumes it (SEP-1699)",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            ctx.close_sse_stream(Duration::from_millis(100));
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, HandlerError>(CallToolResult::text("Reconnection test completed"))
        },
    )?;
    Ok(())
}

fn add_resources(server: &Server) -> Result<(), ConfigError> {
    server.add_resource(
        Resource::new("test://static-text", "static-text")
            .with_description("A static text resource")
            .with_mime_type("text/plain"),
        |_ctx: RequestContext, req: ReadResourceRequest| async move {
            Ok::<_, HandlerError>(ReadResourceResult::text(
                req.uri,
                "text/plain",
                "This is the content of the static text resource.",
            ))
        },
    )?;
    server.add_resource(
        Resource::new("test://static-binary", "static-binary")
            .with_description("A static binary resource (a PNG)")
            .with_mime_type("image/png"),
        |_ctx: RequestContext, req: ReadResourceRequest| async move {
            Ok::<_, HandlerError>(ReadResourceResult::new(vec![ResourceContents::blob(
                req.uri,
                Some("image/png"),
                PNG,
            )]))
        },
    )?;
    server.add_resource(
        Resource::new("test://watched-resource", "watched-resource")
            .with_description("A resource clients may subscribe to")
            .with_mime_type("text/plain"),
        |_ctx: RequestContext, req: ReadResourceRequest| async move {
            Ok::<_, HandlerError>(ReadResourceResult::text(
                req.uri,
                "text/plain",
                "Watched resource content",
            ))
        },
    )?;
    server.add_resource_template(
        ResourceTemplate::new("test://template/{id}/data", "template")
            .with_description("Data for any id")
            .with_mime_type("application/json"),
        |_ctx: RequestContext, req: ReadResourceRequest| async move {
            let id = req.variable("id").unwrap_or_default().to_owned();
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok::<_, HandlerError>(ReadResourceResult::text(
                req.uri,
                "application/json",
                body.to_string(),
            ))
        },
    )?;
    Ok(())
}

fn add_prompts(server: &Server) -> Result<(), ConfigError> {
    server.add_prompt(
        Prompt::new("test_simple_prompt", "A prompt without arguments"),
        |_ctx: RequestContext, _req: GetPromptRequest| async move {
            Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user(
                "This is a simple prompt for testing.",
            )]))
        },
    )?;
    server.add_prompt(
        Prompt::new("test_prompt_with_arguments", "A prompt with two arguments")
            .with_argument(PromptArgument::required("arg1", "First test argument"))
            .with_argument(PromptArgument::required("arg2", "Second test argument")),
        |_ctx: RequestContext, req: GetPromptRequest| async move {
            let text = format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                req.argument("arg1").unwrap_or_default(),
                req.argument("arg2").unwrap_or_default()
            );
            Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user(text)]))
        },
    )?;
    server.add_prompt(
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds a resource",
        )
        .with_argument(PromptArgument::required(
            "resourceUri",
            "URI of the resource to embed",
        )),
        |_ctx: RequestContext, req: GetPromptRequest| async move {
            let uri = req.argument("resourceUri").unwrap_or_default().to_owned();
            Ok::<_, HandlerError>(GetPromptResult::new(vec![
                PromptMessage::new(
                    Role::User,
                    ContentBlock::resource(ResourceContents::text(
                        uri,
                        Some("text/plain"),
                        "Embedded resource content for testing.",
                    )),
                ),
                PromptMessage::user("Please process the embedded resource above."),
            ]))
        },
    )?;
    server.add_prompt(
        Prompt::new("test_prompt_with_image", "A prompt with an image"),
        |_ctx: RequestContext, _req: GetPromptRequest| async move {
            Ok::<_, HandlerError>(GetPromptResult::new(vec![
                PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
                PromptMessage::user("Please analyze the image above."),
            ]))
        },
    )?;
    Ok(())
}

/// Suggestions for the arguments of `test_prompt_with_arguments` and the `id` of the template.
fn add_completions(server: &Server) {
    fn starting_with(candidates: &[&str], typed: &str) -> Vec<String> {
        candidates
            .iter()
            .filter(|c| c.starts_with(typed))
            .map(|c| (*c).to_owned())
            .collect()
    }
    for arg in ["arg1", "arg2"] {
        server.add_completion(
            CompletionReference::prompt("test_prompt_with_arguments"),
            arg,
            |_ctx: RequestContext, req: CompleteParams| async move {
                let values = ["test", "testing", "tested", "value"];
                Ok::<_, HandlerError>(starting_with(&values, &req.argument.value))
            },
        );
    }
    server.add_completion(
        CompletionReference::resource("test://template/{id}/data"),
        "id",
        |_ctx: RequestContext, req: CompleteParams| async move {
            Ok::<_, HandlerError>(starting_with(&["1", "2", "3", "123"], &req.argument.value))
        },
    );
}

/// The everything server: `vellum-everything` with every conformance fixture.
pub fn everything_server() -> Result<Server, ConfigError> {
    let server = Server::new(
        Implementation::new("vellum-everything", env!("CARGO_PKG_VERSION")),
        ServerOptions::default().with_instructions(
            "A test server with every kind of tool, resource and prompt MCP defines.",
        ),
    );
    add_tools(&server)?;
    add_resources(&server)?;
    add_prompts(&server)?;
    add_completions(&server);
    add_stateless_fixtures(&server)?;
    add_mrtr_fixtures(&server)?;
    add_task_fixtures(&server)?;
    add_skill_fixtures(&server)?;
    Ok(server)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = everything_server()?;
    // Keep SSE events so `test_reconnection`'s stream can be resumed.
    let mut options = StreamableHttpOptions::default();
    options.event_store = Some(Arc::new(MemoryEventStore::new(
        MemoryEventStore::DEFAULT_MAX_BYTES,
    )));
    let handler = StreamableHttpHandler::for_server(server, options);
    let addr = "127.0.0.1:8000";
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("streamable HTTP MCP: http://{addr}/mcp");
    serve(listener, handler).await?;
    Ok(())
}
