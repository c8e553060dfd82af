//! Starting a task and running its handler in the background, in either era: the record
//! and its registration as running here, the background task (which a `tasks/cancel`
//! ends), what the end of a run does to the task, and telling every instance and the
//! task's legacy session that its status changed.
//!
//! What a run is differs by era and is in `legacy.rs` (one run, its messages on the
//! session's standalone stream) and `modern.rs` (a run per round while the handler asks).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::records::{POLL_INTERVAL_MS, legacy_json, new_task_id, now, owner_of, store_failed};
use crate::protocol::{
    CallToolResult, ErrorObject, InputResponses, Task, TaskStatus, encode_notification,
};
use crate::server::handler_error::{HandlerError, Served, WireFailure};
use crate::server::limits::json_len;
use crate::server::registry::tool::{CallToolRequest, ToolEntry, execute_tool};
use crate::server::request::reply::Outcome;
use crate::server::request::request::{QuestionsVerdict, RequestShared};
use crate::server::session::Session;
use crate::server::task_ledger::{Over, Payer};
use crate::server::tasks::{Local, Tasks};
use crate::store::{TaskEvent, TaskOutcome, TaskRecord, TaskSignal, TaskStore, TaskTransition};

/// The notification a legacy session gets when one of its tasks changes status.
const TASK_STATUS: &str = "notifications/tasks/status";

/// How a tool call runs, decided before its handler starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// In place: the handler's result answers the call.
    InPlace,
    /// As a task from the start, kept this long.
    Task(Duration),
    /// In place, until its handler goes on as a task (`RequestContext::become_task`).
    MayBecomeTask,
}

/// What a tool call served in place answers: the handler's result, or the task it went on
/// as.
pub(crate) enum ToolOutput {
    Result(CallToolResult),
    Task(Outcome),
}

/// One run of a tool's handler, owned, so that it can move into a task's background work.
pub(crate) type Run = BoxFuture<'static, Result<CallToolResult, HandlerError>>;

/// A run of `entry`'s handler for `request`, with `shared` as its context.
pub(super) fn run_tool(
    shared: Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
) -> Run {
    Box::pin(async move { execute_tool(shared, &entry, request).await })
}

/// A task created in the store and registered as running here, its work not started yet.
pub(super) struct Created {
    pub(super) record: TaskRecord,
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) local: Local,
    here: RunningHere,
    runtime: tokio::runtime::Handle,
}

/// A task's hold on this instance, from its charge in the ledger until its work ends
/// however it ends (finished, cancelled, panicked, or dropped with the request before it
/// started): dropping it unregisters the task here, so its charge lapses with its TTL, or
/// goes at once if its record was never stored.
struct RunningHere {
    tasks: Arc<Tasks>,
    id: String,
    /// Whether its record is in the store (else nothing is kept, so nothing is charged).
    stored: bool,
}

impl Drop for RunningHere {
    fn drop(&mut self) {
        self.tasks.done_here(&self.id);
        if !self.stored {
            self.tasks.ledger.release(&self.id);
        }
    }
}

/// Creates the record of a task for `shared`'s call `request` (working, kept for `ttl`,
/// with the `answers` its handler already has), unless it would pass a cap of the server's
/// `StateLimits` (then nothing is kept).
pub(super) async fn create(
    shared: &RequestShared,
    request: &CallToolRequest,
    ttl: Duration,
    answers: InputResponses,
) -> Result<Created, ErrorObject> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| ErrorObject::internal("tasks need a Tokio runtime"))?;
    let id = new_task_id()?;
    let created = now();
    let task = Task {
        task_id: id.clone(),
        status: TaskStatus::Working,
        status_message: None,
        created_at: created.clone(),
        last_updated_at: created,
        ttl: Some(ttl.as_millis() as u64),
        poll_interval: Some(POLL_INTERVAL_MS),
    };
    let tasks = shared.server.inner.tasks.clone();
    let limits = shared.server.limits();
    // Its input is kept while it runs (each round of a 2026-07-28 task runs it again).
    let input = json_len(&request.arguments, limits.max_task_bytes)
        .and_then(|a| Some(a + json_len(&answers, limits.max_task_bytes)?))
        .ok_or(Over::Bytes(limits.max_task_bytes))
        .and_then(|input| {
            tasks
                .ledger
                .reserve(&id, payer_of(shared), input, ttl, &limits)
        });
    if let Err(over) = input {
        return Err(refused(over));
    }
    // From here, a return or the request being dropped at an await below gives the charge
    // back.
    let mut here = RunningHere {
        tasks: tasks.clone(),
        id: id.clone(),
        stored: false,
    };
    let store = tasks.store();
    let mut record = TaskRecord::new(
        task,
        owner_of(shared),
        shared.is_modern(),
        store.instance_id().to_owned(),
    );
    record.answers = answers;
    // Registered before the record exists, so a cancellation that comes at once finds it.
    let local = tasks.run_here(&id);
    store.create(&record, ttl).await.map_err(store_failed)?;
    here.stored = true;
    Ok(Created {
        record,
        store,
        local,
        here,
        runtime,
    })
}

/// Who a task of `shared` is charged to: its legacy session, and its principal or, for a
/// caller without one, its client address (whatever the era: a 2026-07-28 request has no
/// session, and an address may open many).
fn payer_of(shared: &RequestShared) -> Payer {
    let principal = shared.principal_digest();
    Payer {
        session: shared
            .session()
            .filter(|s| !s.is_temporary())
            .map(|s| s.registry_key()),
        address: match principal {
            Some(_) => None,
            None => shared.client_key(),
        },
        principal,
    }
}

/// The error of a task refused by a cap.
fn refused(over: Over) -> ErrorObject {
    ErrorObject::invalid_params(format!("Task refused: {over}; nothing was kept"))
}

impl Created {
    /// Runs `work` in the background until it ends or the task is cancelled; the record to
    /// answer the call with.
    pub(super) fn spawn(self, work: impl Future<Output = ()> + Send + 'static) -> TaskRecord {
        let Created {
            record,
            local,
            here,
            runtime,
            ..
        } = self;
        runtime.spawn(async move {
            // Dropped when this ends, also by a panic of the handler.
            let _here = here;
            tokio::select! {
                () = work => {}
                () = local.cancel.cancelled() => {}
            }
        });
        record
    }
}

/// What the end of a run (`shared`'s, of task `id`) does to its task: the result (a failed
/// tool is a result the model reads, as without a task), the failure, or its questions. An
/// outcome past the task byte budgets is not kept: the task fails saying so.
pub(super) fn ended(
    shared: &RequestShared,
    id: &str,
    outcome: Result<CallToolResult, HandlerError>,
) -> TaskTransition {
    let change = transition_of(shared, outcome);
    let TaskTransition::Finish {
        outcome: Some(kept),
        ..
    } = &change
    else {
        return change;
    };
    match charge_bytes(shared, id, kept) {
        Ok(()) => change,
        Err(over) => {
            let e = ErrorObject::invalid_params(format!("The task's result was not kept: {over}"));
            finish(
                TaskStatus::Failed,
                Some(e.message.to_string()),
                TaskOutcome::Error(e),
            )
        }
    }
}

/// Charges the `answers` a `tasks/update` keeps for task `id` to its payer: refused (and
/// then not kept) past a task byte budget.
pub(super) fn charge_answers(
    shared: &RequestShared,
    id: &str,
    answers: &InputResponses,
) -> Result<(), ErrorObject> {
    // A task charged by another instance (shared store) is charged nothing here: one update
    // still keeps no more than the server-wide budget.
    charge_bytes(shared, id, answers).map_err(|over| {
        ErrorObject::invalid_params(format!("Answers refused: {over}; nothing was kept"))
    })
}

/// Charges the bytes of `value` (a result or answers task `id` keeps) to the task's payer.
fn charge_bytes(
    shared: &RequestShared,
    id: &str,
    value: &impl serde::Serialize,
) -> Result<(), Over> {
    let limits = shared.server.limits();
    let bytes = json_len(value, limits.max_task_bytes).ok_or(Over::Bytes(limits.max_task_bytes))?;
    shared
        .server
        .inner
        .tasks
        .ledger
        .add_bytes(id, bytes, &limits)
}

/// [`ended`] before the byte budgets.
fn transition_of(
    shared: &RequestShared,
    outcome: Result<CallToolResult, HandlerError>,
) -> TaskTransition {
    // The questions decide the run's end, whatever the handler returned (see
    // `methods/input.rs`).
    let outcome = match shared.questions_verdict() {
        Some(QuestionsVerdict::InvalidAnswer(e)) => Err(HandlerError::Protocol(e)),
        Some(QuestionsVerdict::Pending) => {
            let asked = match outcome {
                Err(HandlerError::InputRequired(r)) => r,
                _ => Box::default(),
            };
            let asked = shared.input_required(asked);
            return TaskTransition::Ask(asked.input_requests.unwrap_or_default());
        }
        None => outcome,
    };
    match outcome.map_err(|e| e.into_wire(Served::Task, shared.is_modern())) {
        Ok(result) => finish(TaskStatus::Completed, None, result_outcome(&result)),
        Err(WireFailure::ToolError(m)) => finish(
            TaskStatus::Completed,
            None,
            result_outcome(&CallToolResult::error(m)),
        ),
        Err(WireFailure::InputRequired(r)) => {
            TaskTransition::Ask(shared.input_required(r).input_requests.unwrap_or_default())
        }
        Err(WireFailure::Error(e)) => finish(
            TaskStatus::Failed,
            Some(e.message.to_string()),
            TaskOutcome::Error(e),
        ),
    }
}

fn finish(status: TaskStatus, message: Option<String>, outcome: TaskOutcome) -> TaskTransition {
    TaskTransition::Finish {
        status,
        message,
        outcome: Some(outcome),
    }
}

fn result_outcome(result: &CallToolResult) -> TaskOutcome {
    TaskOutcome::Result(serde_json::to_value(result).unwrap_or_default())
}

/// Applies `change` to task `id` and tells of it (see [`status_changed`]); false when it
/// was not applied (the task ended meanwhile: cancelled, or failed by another instance).
pub(super) async fn apply(
    store: &Arc<dyn TaskStore>,
    id: &str,
    change: TaskTransition,
    session: Option<&Arc<Session>>,
) -> bool {
    if !matches!(store.transition(id, change, &now()).await, Ok(true)) {
        return false;
    }
    status_changed(store, session, id).await;
    true
}

/// Cancels the task unless it already ended (then `Ok(false)`), and tells the instance
/// running it (which drops its handler) and its legacy `session`.
pub(super) async fn cancel(
    store: &Arc<dyn TaskStore>,
    record: &TaskRecord,
    session: Option<&Arc<Session>>,
) -> Result<bool, ErrorObject> {
    let id = record.task.task_id.as_str();
    let cancelled = TaskTransition::Finish {
        status: TaskStatus::Cancelled,
        message: Some(CANCELLED.into()),
        outcome: None,
    };
    let applied = !record.task.status.is_terminal()
        && store
            .transition(id, cancelled, &now())
            .await
            .map_err(store_failed)?;
    if !applied {
        return Ok(false);
    }
    let _ = store
        .signal(TaskSignal {
            task: id.to_owned(),
            event: TaskEvent::Cancelled,
        })
        .await;
    status_changed(store, session, id).await;
    Ok(true)
}

/// The status message of a cancelled task.
pub(super) const CANCELLED: &str = "Cancelled by the client";

/// Tells every instance that a task changed status, and its legacy session (SEP-1686:
/// `notifications/tasks/status` on status changes; the session's standalone stream, on
/// whichever instance holds it).
async fn status_changed(store: &Arc<dyn TaskStore>, session: Option<&Arc<Session>>, id: &str) {
    let _ = store
        .signal(TaskSignal {
            task: id.to_owned(),
            event: TaskEvent::StatusChanged,
        })
        .await;
    let Some(session) = session else { return };
    if let Ok(Some(record)) = store.load(id, &now()).await
        && let Ok(m) = encode_notification(TASK_STATUS, Some(&legacy_json(&record)))
    {
        let _ = session.send_unrelated(m).await;
    }
}
