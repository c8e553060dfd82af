//! The task methods: tool calls that run as tasks, and `tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel` and `tasks/update`. The two eras have different task
//! protocols, so each has its own file, and the method table routes each era's task methods
//! to it:
//!
//! - `legacy.rs`: 2025-11-25 (the `task` param of `tools/call`, tasks of a session);
//! - `modern.rs`: 2026-07-28 (the tasks extension, rounds of questions, a call that goes on
//!   as a task where its handler says);
//! - `run.rs`: what both do to start a task and record how its runs end;
//! - `records.rs`: who may see a task, how each era shows it.
//!
//! Not here: the store the tasks live in (`crate::store`) and the tasks running on this
//! instance (`server/tasks.rs`); tasks the server asks the client to run (sampling or
//! elicitation as tasks).

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::ErrorObject;
use crate::server::registry::tool::{CallToolRequest, ToolEntry};
use crate::server::request::reply::Outcome;
use crate::server::request::request::RequestShared;

pub(super) mod legacy;
pub(super) mod modern;
mod records;
mod run;

pub(super) use modern::in_place_until_task;
pub(super) use run::{Plan, ToolOutput};

/// How a tool call runs, in the request's era.
pub(super) fn plan(
    shared: &RequestShared,
    entry: &ToolEntry,
    request: &CallToolRequest,
) -> Result<Plan, ErrorObject> {
    let support = entry
        .tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support)
        .unwrap_or_default();
    if shared.is_modern() {
        modern::plan(shared, support, entry)
    } else {
        legacy::plan(shared, support, request)
    }
}

/// Starts a tool call as a task and answers with the task, in the request's era.
pub(super) async fn start(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
) -> Outcome {
    if shared.is_modern() {
        modern::start(shared, entry, request, ttl).await
    } else {
        legacy::start(shared, entry, request, ttl).await
    }
}
