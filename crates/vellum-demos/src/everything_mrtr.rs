//! The `everything` server's multi round-trip fixtures (2026-07-28, SEP-2322): tools and a
//! prompt that ask the client for input — the user (elicitation), its model (sampling), its
//! roots — and finish once the answers come back.
//!
//! Nothing here is MRTR-specific: a handler asks with `ctx.elicit`, `ctx.create_message` or
//! `ctx.list_roots` and awaits the answer (named with `ctx.with_input_key` where the client
//! expects a key; asked together with `tokio::join!` to ask in one round). With a 2026-07-28 client the SDK turns the
//! question into an `InputRequiredResult` (with a signed `requestState`) and runs the
//! handler again when the client retries with the answers; in a 2025 session the same
//! question is a request to the client on the response stream.

use serde_json::{Value, json};
use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::protocol::ElicitResult;

use crate::everything::{form, model_text, sampling};

/// A form schema with one required string property.
pub fn one_string(property: &str) -> Value {
    json!({
        "type": "object",
        "properties": {property: {"type": "string"}},
        "required": [property]
    })
}

/// The string the user entered under `property`, if they accepted.
pub fn entered(answer: &ElicitResult, property: &str) -> Option<String> {
    answer
        .content
        .as_ref()
        .and_then(|c| c.get(property))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Adds the `test_input_required_result_*` tools and the prompt
/// `test_input_required_result_prompt` to `server`.
pub fn add_mrtr_fixtures(server: &Server) -> Result<(), ConfigError> {
    server.add_tool(
        Tool::new(
            "test_input_required_result_elicitation",
            "Asks the user's name (elicitation), then greets them",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let answer = ctx
                .with_input_key("user_name")
                .elicit(form("What is your name?", one_string("name")))
                .await?;
            let name = entered(&answer, "name").unwrap_or_else(|| "stranger".into());
            Ok::<_, HandlerError>(CallToolResult::text(format!("Hello, {name}!")))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_input_required_result_sampling",
            "Asks the client's model for the capital of France (sampling)",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let answer = ctx
                .create_message(sampling("What is the capital of France?", 100))
                .await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "The model says: {}",
                model_text(&answer)
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_input_required_result_list_roots",
            "Asks the client for its roots, then lists them",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let roots = ctx.list_roots().await?;
            let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "{} root(s): {}",
                uris.len(),
                uris.join(", ")
            )))
        },
    )?;
    for (name, about) in [
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation; the retry must bring back the signed requestState",
        ),
        (
            "test_input_required_result_tampered_state",
            "Asks for a confirmation; a retry with an altered requestState is refused",
        ),
    ] {
        server.add_tool(
            Tool::new(name, about),
            |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"]
                });
                ctx.with_input_key("confirm")
                    .elicit(form("Please confirm", schema))
                    .await?;
                Ok::<_, HandlerError>(CallToolResult::text("state-ok: confirmed"))
            },
        )?;
    }
    server.add_tool(
        Tool::new(
            "test_input_required_result_multiple_inputs",
            "Asks the user, the client's model and the client's roots in one round",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let (who, model, roots) = (
                ctx.with_input_key("user_name"),
                ctx.with_input_key("greeting"),
                ctx.with_input_key("client_roots"),
            );
            let (name, greeting, roots) = tokio::join!(
                who.elicit(form("What is your name?", one_string("name"))),
                model.create_message(sampling("Generate a greeting", 50)),
                roots.list_roots(),
            );
            let (name, _greeting, roots) = (name?, greeting?, roots?);
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Hello, {}! ({} root(s))",
                entered(&name, "name").unwrap_or_default(),
                roots.roots.len()
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_input_required_result_multi_round",
            "Asks two questions, one round each",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let name = ctx
                .elicit(form("Step 1: What is your name?", one_string("name")))
                .await?;
            let color = ctx
                .elicit(form(
                    "Step 2: What is your favorite color?",
                    one_string("color"),
                ))
                .await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Multi-round complete: {} likes {}",
                entered(&name, "name").unwrap_or_default(),
                entered(&color, "color").unwrap_or_default()
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_input_required_result_capabilities",
            "Asks only what the client declared it can answer (elicitation, sampling)",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let caps = ctx.client_capabilities().clone();
            let mut asked = Vec::new();
            if caps.supports_form_elicitation() {
                ctx.elicit(form("Elicitation input", one_string("value")))
                    .await?;
                asked.push("elicitation");
            }
            if caps.supports_sampling() {
                ctx.create_message(sampling("Sample request", 50)).await?;
                asked.push("sampling");
            }
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "capabilities-ok: asked {}",
                if asked.is_empty() {
                    "nothing".to_owned()
                } else {
                    asked.join(" and ")
                }
            )))
        },
    )?;
    server.add_prompt(
        Prompt::new(
            "test_input_required_result_prompt",
            "Asks the user for the context to put in the prompt",
        ),
        |ctx: RequestContext, _req: GetPromptRequest| async move {
            let answer = ctx
                .elicit(form(
                    "What context should the prompt use?",
                    one_string("context"),
                ))
                .await?;
            Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user(format!(
                "Answer with this context in mind: {}",
                entered(&answer, "context").unwrap_or_default()
            ))]))
        },
    )?;
    Ok(())
}
