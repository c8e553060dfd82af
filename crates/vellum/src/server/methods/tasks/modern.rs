//! Tasks of 2026-07-28 (the extension `io.modelcontextprotocol/tasks`): a client that
//! declares the extension in its request's capabilities gets a task (`resultType: "task"`)
//! for any tool whose task support is not `forbidden`, and every task method needs the
//! extension too (SEP-2663). It polls `tasks/get` (which carries the result or error),
//! answers questions with `tasks/update` and stops with `tasks/cancel`.
//!
//! A task runs in rounds: a handler's question (`ctx.elicit` …) ends the round and turns the
//! task to `input_required`; once every question is answered, the next round runs the
//! handler again with the answers, exactly as a multi round-trip retry would. A tool
//! registered `with_input_before_task` is served in place (multi round-trip) until its
//! handler calls `RequestContext::become_task`: the call then answers with a new task whose
//! first round is that very handler, resumed (never run again to get there).

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::records::{
    JsonResult, RECHECK, empty, granted_ttl, modern_json, not_found, now, store_failed, visible,
};
use super::run::{self, Plan, Run, ToolOutput, run_tool};
use crate::protocol::{
    ErrorObject, InputResponses, ResultType, TASKS_EXTENSION, TaskIdParams, TaskSupport, code,
};
use crate::server::handler_error::HandlerError;
use crate::server::registry::tool::{CallToolRequest, ToolEntry};
use crate::server::request::reply::{Outcome, complete, encode_result};
use crate::server::request::request::{RequestShared, TaskPhase};
use crate::server::tasks::Local;
use crate::store::{Answered, TaskEvent, TaskSignal, TaskStore, TaskTransition};

/// How a call runs: as a task for a client that declared the extension (in place first for
/// a tool that takes input before it becomes one).
pub(super) fn plan(
    shared: &RequestShared,
    support: TaskSupport,
    entry: &ToolEntry,
) -> Result<Plan, ErrorObject> {
    let declared = shared
        .client_capabilities()
        .supports_extension(TASKS_EXTENSION);
    match (support, declared) {
        (TaskSupport::Forbidden, _) => Ok(Plan::InPlace),
        (_, true) if entry.tool.input_before_task => Ok(Plan::MayBecomeTask),
        (_, true) => Ok(Plan::Task(granted_ttl(shared, None))),
        (TaskSupport::Optional, false) => Ok(Plan::InPlace),
        (TaskSupport::Required, false) => Err(ErrorObject::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("Tool {} only runs as a task", entry.tool.name),
        )
        .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))),
    }
}

/// Starts the call as a task and answers with it (`resultType: "task"`).
pub(super) async fn start(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
) -> Outcome {
    start_with(shared, entry, request, ttl, InputResponses::new(), None).await
}

/// Serves a call whose handler may go on as a task: in place, until the handler awaits
/// `RequestContext::become_task`, which suspends it; the call then answers with a new task,
/// and the suspended handler, moved into it, is its first round.
pub(crate) async fn in_place_until_task(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
) -> Result<ToolOutput, HandlerError> {
    shared.set_task_phase(TaskPhase::MayBecome);
    // The task's later rounds run the handler again for the same request.
    let kept = request.clone();
    let mut run = run_tool(shared.clone(), entry.clone(), request);
    let finished = std::future::poll_fn(|cx| match run.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending if shared.task_phase() == TaskPhase::Becoming => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    })
    .await;
    if let Some(result) = finished {
        return result.map(ToolOutput::Result);
    }
    // The answers it got by multi round-trip are its task's too (for the later rounds).
    let answers = shared.used_answers();
    let task = start_with(
        shared,
        entry,
        kept,
        granted_ttl(shared, None),
        answers,
        Some(run),
    )
    .await;
    Ok(ToolOutput::Task(task))
}

/// Creates the task and starts its rounds, the first one `first` when the handler already
/// runs; answers with the task.
async fn start_with(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
    answers: InputResponses,
    first: Option<Run>,
) -> Outcome {
    let created = match run::create(shared, &request, ttl, answers).await {
        Ok(created) => created,
        Err(e) => return Outcome::Error(e),
    };
    let rounds = Rounds {
        origin: shared.clone(),
        entry,
        request,
        id: created.record.task.task_id.clone(),
        store: created.store.clone(),
        local: created.local.clone(),
    };
    let record = created.spawn(rounds.run(first));
    encode_result(
        shared,
        JsonResult::new(modern_json(&record)),
        ResultType::Task,
        None,
    )
}

/// What the rounds of a task running here need.
struct Rounds {
    /// The request that created the task (each new round is a detached copy of it).
    origin: Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    id: String,
    store: Arc<dyn TaskStore>,
    local: Local,
}

impl Rounds {
    /// Runs round after round while the handler asks, and records each round's end.
    async fn run(self, mut first: Option<Run>) {
        loop {
            let (shared, run) = match first.take() {
                Some(run) => (self.origin.clone(), run),
                None => self.next_round().await,
            };
            let change = run::ended(&shared, &self.id, run.await);
            let asking = matches!(change, TaskTransition::Ask(_));
            if !run::apply(&self.store, &self.id, change, None).await || !asking {
                return;
            }
            if !self.answered().await
                || !run::apply(&self.store, &self.id, TaskTransition::Resume, None).await
            {
                return;
            }
        }
    }

    /// A new run of the handler with the answers collected so far.
    async fn next_round(&self) -> (Arc<RequestShared>, Run) {
        let shared = Arc::new(self.origin.detached());
        let answers = match self.store.load(&self.id, &now()).await {
            Ok(Some(r)) => r.answers,
            _ => InputResponses::new(),
        };
        shared.set_task_answers(answers);
        let run = run_tool(shared.clone(), self.entry.clone(), self.request.clone());
        (shared, run)
    }

    /// Waits until the questions are answered (true) or the task is over (false). Armed
    /// before each look, so no `tasks/update` slips between the look and the wait.
    async fn answered(&self) -> bool {
        loop {
            let woken = self.local.changed.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match self.store.load(&self.id, &now()).await {
                Ok(Some(r)) if r.task.status.is_terminal() => return false,
                Ok(Some(r)) if r.answered_or_over() => return true,
                Ok(None) => return false,
                // Not answered yet, or the store is unreachable for now: wait and look again.
                Ok(Some(_)) | Err(_) => {}
            }
            tokio::select! {
                () = &mut woken => {}
                () = tokio::time::sleep(RECHECK) => {}
            }
        }
    }
}

/// Every task method needs the tasks extension declared (SEP-2663): else -32021, before
/// anything is looked up.
fn gate(shared: &RequestShared) -> Result<(), ErrorObject> {
    if shared
        .client_capabilities()
        .supports_extension(TASKS_EXTENSION)
    {
        return Ok(());
    }
    Err(ErrorObject::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: the {TASKS_EXTENSION} extension (for {})",
            shared.method
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})))
}

/// `tasks/get`: the task, with its result, error or questions.
pub(crate) async fn get(shared: &RequestShared, p: TaskIdParams) -> Result<Outcome, ErrorObject> {
    gate(shared)?;
    let record = visible(shared, &p.task_id).await?;
    Ok(complete(shared, JsonResult::new(modern_json(&record))))
}

/// `tasks/cancel`: from any instance (the one running the task hears it on the store's
/// signals and stops the handler). Cooperative: a task already over gets the same empty
/// acknowledgement.
pub(crate) async fn cancel(
    shared: &RequestShared,
    p: TaskIdParams,
) -> Result<Outcome, ErrorObject> {
    gate(shared)?;
    let record = visible(shared, &p.task_id).await?;
    run::cancel(&shared.server.inner.tasks.store(), &record, None).await?;
    Ok(empty(shared))
}

/// `tasks/update` parameters.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskUpdateParams {
    task_id: String,
    #[serde(default)]
    input_responses: InputResponses,
}

/// `tasks/update`: answers to the questions of an `input_required` task, from any
/// instance; the one running it starts the next round once every question is answered.
pub(crate) async fn update(
    shared: &RequestShared,
    p: TaskUpdateParams,
) -> Result<Outcome, ErrorObject> {
    gate(shared)?;
    let record = visible(shared, &p.task_id).await?;
    let store = shared.server.inner.tasks.store();
    // Answers to keys not currently asked are ignored; an answered key is no longer asked
    // (tasks/get shows what is still missing: partial fulfillment).
    let mut answers = p.input_responses;
    let asked = record.input_requests.unwrap_or_default();
    answers.retain(|key, _| asked.contains_key(key));
    run::charge_answers(shared, &p.task_id, &answers)?;
    let answered = store
        .answer(&p.task_id, answers)
        .await
        .map_err(store_failed)?;
    match answered {
        Answered::Unknown => return Err(not_found(&p.task_id)),
        Answered::Recorded {
            any: true,
            remaining: 0,
        } => {
            let _ = store
                .signal(TaskSignal {
                    task: p.task_id.clone(),
                    event: TaskEvent::Answered,
                })
                .await;
        }
        _ => {}
    }
    Ok(empty(shared))
}
