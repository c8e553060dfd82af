//! The `everything` server's fixtures for the 2026-07-28 wire's own checks (the stateless
//! protocol, SEP-2575, and the HTTP headers of SEP-2243): tools that ask the client for
//! something it may not have declared, that log, that change the server's lists while a
//! `subscriptions/listen` stream watches, and a tool whose argument travels in an
//! `Mcp-Param-*` header.
//!
//! Each is a plain handler: what the checks look at (the -32021 error, the missing log
//! message, the list-changed notification, the header check) is the SDK's doing, not the
//! fixture's.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::protocol::LoggingLevel;

use crate::everything::{form, sampling};

/// The tool `test_trigger_tool_change` adds and removes.
pub const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// The prompt `test_trigger_prompt_change` adds and removes.
pub const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Input of `test_header_echo`: `region` also travels in the `Mcp-Param-Region` header
/// (SEP-2243), which the server checks against the body before the handler runs.
#[derive(Deserialize, JsonSchema)]
pub struct HeaderEchoInput {
    /// The region to route the call to; mirrored in `Mcp-Param-Region`.
    #[schemars(extend("x-mcp-header" = "Region"))]
    pub region: String,
    /// An optional priority, mirrored in `Mcp-Param-Priority` when present.
    #[serde(default)]
    #[schemars(extend("x-mcp-header" = "Priority"))]
    pub priority: Option<i64>,
}

/// Adds the 2026-07-28 diagnostics and the header tool to `server`.
pub fn add_stateless_fixtures(server: &Server) -> Result<(), ConfigError> {
    server.add_tool(
        Tool::new(
            "test_missing_capability",
            "Asks the client's model for a completion; without the sampling capability the \
             request fails with MissingRequiredClientCapability (-32021)",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            ctx.create_message(sampling("Say hello", 10)).await?;
            Ok::<_, HandlerError>(CallToolResult::text("The client answered"))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_streaming_elicitation",
            "Reports progress, then asks the user a question: by multi round-trip in the \
             2026-07-28 era (never a request on the response stream), by elicitation/create \
             in a session",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            ctx.notify_progress(50.0, Some(100.0), Some("Asking the user".into()))
                .await?;
            let answer = ctx
                .elicit(form(
                    "Shall the stream go on?",
                    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
                ))
                .await?;
            let action = serde_json::to_value(answer.action).map_err(HandlerError::failed)?;
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Streaming elicitation answered: {}",
                action.as_str().unwrap_or("?")
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_logging_tool",
            "Logs at info level, then answers; the log reaches only clients that asked for \
             that level",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            ctx.log(
                LoggingLevel::Info,
                Some("everything"),
                "test_logging_tool ran",
            )
            .await?;
            Ok::<_, HandlerError>(CallToolResult::text("Logged at info level"))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_trigger_tool_change",
            "Adds or removes the tool test_dynamic_tool, so the tool list changes",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let server = ctx.server();
            let now = if server.remove_tool(DYNAMIC_TOOL) {
                "removed"
            } else {
                server.add_tool(
                    Tool::new(DYNAMIC_TOOL, "Added by test_trigger_tool_change"),
                    |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
                        Ok::<_, HandlerError>(CallToolResult::text("I come and go"))
                    },
                )?;
                "added"
            };
            Ok::<_, HandlerError>(CallToolResult::text(format!("{DYNAMIC_TOOL} {now}")))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_trigger_prompt_change",
            "Adds or removes the prompt test_dynamic_prompt, so the prompt list changes",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let server = ctx.server();
            let now = if server.remove_prompt(DYNAMIC_PROMPT) {
                "removed"
            } else {
                server.add_prompt(
                    Prompt::new(DYNAMIC_PROMPT, "Added by test_trigger_prompt_change"),
                    |_ctx: RequestContext, _req: GetPromptRequest| async move {
                        Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user(
                            "I come and go",
                        )]))
                    },
                )?;
                "added"
            };
            Ok::<_, HandlerError>(CallToolResult::text(format!("{DYNAMIC_PROMPT} {now}")))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_header_echo",
            "Echoes its region (and priority); both are mirrored in Mcp-Param-* headers \
             (SEP-2243) that must match the body",
        ),
        |_ctx: RequestContext, _req: CallToolRequest, input: HeaderEchoInput| async move {
            let priority = input
                .priority
                .map_or_else(String::new, |p| format!(", priority {p}"));
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Routed to region {}{priority}",
                input.region
            )))
        },
    )?;
    Ok(())
}
