//! The `everything` server's task fixtures (the 2026-07-28 tasks extension, SEP-2663, and the
//! 2025-11-25 experimental tasks): tools that run in the background while the client polls,
//! fail in either of the two ways a task can fail, ask the user while they run, or may not
//! run as a task at all.
//!
//! A tool says whether it may run as a task with [`Tool::with_task_support`]; the SDK decides
//! per request (the client must declare the extension), keeps the task, answers `tasks/get`,
//! `tasks/update` and `tasks/cancel`, and turns a handler's question into the task's
//! `input_required` state. The handlers are ordinary tool handlers.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::protocol::{ErrorObject, TaskSupport};

use crate::everything::form;
use crate::everything_mrtr::{entered, one_string};

/// The longest `slow_compute` sleeps, whatever it is asked.
pub const MAX_COMPUTE: Duration = Duration::from_secs(600);

/// Input of `greet`.
#[derive(Deserialize, JsonSchema)]
pub struct GreetInput {
    /// Who to greet.
    pub name: String,
}

/// Input of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
pub struct SlowComputeInput {
    /// How long the computation takes, in seconds (at most 600).
    pub seconds: f64,
    /// A label to put in the result.
    #[serde(default)]
    pub label: Option<String>,
}

/// Input of `confirm_delete`.
#[derive(Deserialize, JsonSchema)]
pub struct ConfirmDeleteInput {
    /// The file to delete (nothing is deleted: the tool only asks).
    #[serde(default)]
    pub filename: Option<String>,
}

/// Adds the task fixtures to `server`.
pub fn add_task_fixtures(server: &Server) -> Result<(), ConfigError> {
    server.add_tool(
        Tool::new("greet", "Greets someone at once; never runs as a task")
            .with_task_support(TaskSupport::Forbidden),
        |_ctx: RequestContext, _req: CallToolRequest, input: GreetInput| async move {
            Ok::<_, HandlerError>(CallToolResult::text(format!("Hello, {}!", input.name)))
        },
    )?;
    server.add_tool(
        Tool::new(
            "slow_compute",
            "Computes for the given number of seconds; runs as a task for clients that can \
             poll",
        )
        .with_task_support(TaskSupport::Optional),
        |_ctx: RequestContext, _req: CallToolRequest, input: SlowComputeInput| async move {
            let time = Duration::try_from_secs_f64(input.seconds)
                .unwrap_or_default()
                .min(MAX_COMPUTE);
            // A cancelled task drops this future, sleep included.
            tokio::time::sleep(time).await;
            let label = input.label.unwrap_or_else(|| "computation".into());
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "{label} done after {} s",
                time.as_secs_f64()
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "failing_job",
            "Runs only as a task, then reports a tool error (the task completes with isError)",
        )
        .with_task_support(TaskSupport::Required),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Err::<CallToolResult, _>(HandlerError::failed("The job failed, as it always does"))
        },
    )?;
    server.add_tool(
        Tool::new(
            "protocol_error_job",
            "Fails with a protocol error (a task ends failed, with the error inlined)",
        )
        .with_task_support(TaskSupport::Optional),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Err::<CallToolResult, _>(HandlerError::Protocol(ErrorObject::internal(
                "The job crashed",
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "confirm_delete",
            "Asks the user to confirm a deletion (a task waits in input_required)",
        )
        .with_task_support(TaskSupport::Optional),
        |ctx: RequestContext, _req: CallToolRequest, input: ConfirmDeleteInput| async move {
            let file = input.filename.unwrap_or_else(|| "the file".into());
            let schema = json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}});
            let answer = ctx.elicit(form(&format!("Delete {file}?"), schema)).await?;
            let confirmed = answer
                .content
                .as_ref()
                .and_then(|c| c.get("confirm"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            Ok::<_, HandlerError>(CallToolResult::text(if confirmed {
                format!("{file} deleted (not really)")
            } else {
                format!("{file} kept")
            }))
        },
    )?;
    server.add_tool(
        Tool::new(
            "multi_input",
            "Asks the user two questions at once (a task waits for both)",
        )
        .with_task_support(TaskSupport::Optional),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}
            });
            let (first, second) = tokio::join!(
                ctx.elicit(form("Who are you?", schema.clone())),
                ctx.elicit(form("Shall we go on?", schema)),
            );
            let (first, _second) = (first?, second?);
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Both answered ({})",
                entered(&first, "name").unwrap_or_default()
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "test_tool_with_task",
            "Asks the user's name by multi round-trip, then runs as a task",
        )
        .with_task_support(TaskSupport::Required)
        .with_input_before_task(),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let answer = ctx
                .with_input_key("user_name")
                .elicit(form("What is your name?", one_string("name")))
                .await?;
            // Everything asked: the rest runs as a task the client polls.
            ctx.become_task().await;
            let name = entered(&answer, "name").unwrap_or_default();
            Ok::<_, HandlerError>(CallToolResult::text(format!("Hello, {name}, from a task")))
        },
    )?;
    Ok(())
}
