//! The task methods: starting a tool call as a task (`tools/call` with a task), running its
//! handler in the background, and `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`
//! and `tasks/update`.
//!
//! - 2025-11-25 (experimental core): the client asks with the `task` param of `tools/call`
//!   (allowed by the tool's `execution.taskSupport`), gets a `CreateTaskResult`, and uses
//!   `tasks/get`, `tasks/result` (blocks until the end), `tasks/list` and `tasks/cancel`.
//!   Tasks belong to the session that created them. Questions the handler asks the client
//!   travel on the session's standalone stream.
//! - 2026-07-28 (extension `io.modelcontextprotocol/tasks`): a client that declares the
//!   extension in its request's capabilities gets a task (`resultType: "task"`) for any tool
//!   whose task support is not `forbidden`; it polls `tasks/get` (which carries the result or
//!   error), answers questions with `tasks/update` and stops with `tasks/cancel`. A handler's
//!   question (`ctx.elicit` …) turns the task to `input_required`; once answered, the handler
//!   runs again with the answers, exactly as a multi round-trip retry would.
//!
//! Not here: the store the tasks live in (`task_store.rs`), and tasks the server asks the
//! client to run (sampling or elicitation as tasks).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::super::handler_error::{Served, WireFailure};
use super::super::pagination::page;
use super::super::reply::{HasMeta, Outcome, complete, encode_result};
use super::super::request::{RequestShared, Scope, TASK_MAY, TASK_WANTED};
use super::super::session::Session;
use super::super::task_store::{
    DEFAULT_TTL, Local, MAX_TTL, POLL_INTERVAL_MS, RECHECK, Tasks, new_task_id, now, object,
    task_json,
};
use super::super::tool::{CallToolRequest, ToolEntry, execute_tool};
use crate::protocol::echo;
use crate::protocol::{
    CallToolResult, ErrorObject, InputResponses, JsonObject, ListTasksResult, Meta,
    PaginatedParams, ResultType, TASKS_EXTENSION, Task, TaskIdParams, TaskStatus, TaskSupport,
    code, encode_notification, meta_keys,
};
use crate::store::{
    Answered, StoreError, TaskEvent, TaskOutcome, TaskRecord, TaskSignal, TaskStore, TaskTransition,
};

/// The notification a legacy session gets when one of its tasks changes status.
const TASK_STATUS: &str = "notifications/tasks/status";

/// Who may see a task: its session (legacy), or its caller (modern: the authenticated
/// principal, or anyone holding the id).
fn owner_of(shared: &RequestShared) -> String {
    match &shared.scope {
        Scope::Legacy(s) => match s.id() {
            Some(id) => format!("s:{id}"),
            None => format!("k:{}", s.registry_key()),
        },
        Scope::Modern(_) => format!("c:{}", shared.principal_digest().unwrap_or_default()),
    }
}

fn store_failed(e: StoreError) -> ErrorObject {
    ErrorObject::internal(format!("The task store failed: {e}"))
}

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Failed to retrieve task: no task {}", echo(id)))
}

/// Whether a tool call runs as a task: `Ok(Some(ttl))` when it does.
pub(crate) fn decide(
    shared: &RequestShared,
    entry: &ToolEntry,
    request: &CallToolRequest,
) -> Result<Option<Duration>, ErrorObject> {
    let support = entry
        .tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support)
        .unwrap_or_default();
    let ttl = |requested: Option<u64>| {
        requested
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TTL)
            .min(MAX_TTL)
    };
    if shared.is_modern() {
        let declared = shared
            .client_capabilities()
            .supports_extension(TASKS_EXTENSION);
        return match (support, declared) {
            (TaskSupport::Forbidden, _) => Ok(None),
            // MRTR first: a task only where the handler says (`RequestContext::become_task`).
            (_, true) if entry.tool.input_before_task => {
                shared.task_mode.store(TASK_MAY, Ordering::Release);
                Ok(None)
            }
            (_, true) => Ok(Some(ttl(None))),
            (TaskSupport::Optional, false) => Ok(None),
            (TaskSupport::Required, false) => Err(ErrorObject::new(
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Tool {} only runs as a task", request.name),
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))),
        };
    }
    match (support, &request.task) {
        (TaskSupport::Forbidden, Some(_)) => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("Tool {} does not run as a task", request.name),
        )),
        (TaskSupport::Required, None) => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!(
                "Tool {} only runs as a task: call it with the `task` parameter",
                request.name
            ),
        )),
        (_, Some(t)) => Ok(Some(ttl(t.ttl))),
        (_, None) => Ok(None),
    }
}

/// A result of arbitrary shape, for the task methods whose results are built as JSON.
#[derive(Serialize, Deserialize)]
struct JsonResult {
    #[serde(flatten)]
    fields: JsonObject,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

impl HasMeta for JsonResult {
    fn meta_mut(&mut self) -> &mut Option<Meta> {
        &mut self.meta
    }
}

/// Starts a tool call as a task and answers with the task.
pub(crate) async fn start(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
) -> Outcome {
    start_with(shared, entry, request, ttl, InputResponses::new()).await
}

/// True when this synchronous call's handler may still ask to become a task (the tool takes
/// input before it becomes one, and the client asked for a task).
pub(crate) fn may_become_task(shared: &RequestShared) -> bool {
    shared.task_mode.load(Ordering::Acquire) == TASK_MAY
}

/// True when the call's handler called `become_task` (and so answers with a task).
pub(crate) fn wants_task(shared: &RequestShared) -> bool {
    shared.task_mode.load(Ordering::Acquire) == TASK_WANTED
}

/// A call whose handler called `become_task`: the task, its runs starting with the answers
/// gathered by multi round-trip so far.
pub(crate) async fn become_task(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
) -> Outcome {
    let answers = shared.used_answers();
    start_with(shared, entry, request, DEFAULT_TTL, answers).await
}

/// [`start`], with answers the handler already has.
async fn start_with(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
    answers: InputResponses,
) -> Outcome {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return Outcome::Error(ErrorObject::internal("tasks need a Tokio runtime"));
    };
    let id = match new_task_id() {
        Ok(id) => id,
        Err(e) => return Outcome::Error(e),
    };
    let created = now();
    let modern = shared.is_modern();
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
    let store = tasks.store();
    let mut record = TaskRecord::new(
        task,
        owner_of(shared),
        modern,
        store.instance_id().to_owned(),
    );
    record.answers = answers;
    // Registered before the record exists, so a cancellation that comes at once finds it.
    let local = tasks.run_here(&id);
    if let Err(e) = store.create(&record, ttl).await {
        tasks.done_here(&id);
        return Outcome::Error(store_failed(e));
    }
    let run = run_task(
        shared.clone(),
        entry,
        request,
        id.clone(),
        store,
        local.clone(),
    );
    let runner = tasks.clone();
    let ran = id.clone();
    rt.spawn(async move {
        tokio::select! {
            () = run => {}
            () = local.cancel.cancelled() => {}
        }
        runner.done_here(&ran);
    });
    let answer = task_json(&record, modern);
    if modern {
        encode_result(
            shared,
            JsonResult {
                fields: answer,
                meta: None,
            },
            ResultType::Task,
            None,
        )
    } else {
        complete(
            shared,
            JsonResult {
                fields: object(json!({ "task": answer })),
                meta: None,
            },
        )
    }
}

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
        && let Ok(m) = encode_notification(TASK_STATUS, Some(&task_json(&record, false)))
    {
        let _ = session.send_unrelated(m).await;
    }
}

/// Runs the handler in the background, round after round while it asks questions (modern),
/// and records the outcome.
async fn run_task(
    origin: Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    id: String,
    store: Arc<dyn TaskStore>,
    local: Local,
) {
    let modern = origin.is_modern();
    let session = match &origin.scope {
        Scope::Legacy(s) => Some(s.clone()),
        Scope::Modern(_) => None,
    };
    loop {
        let shared = Arc::new(origin.detached());
        if modern {
            let answers = match store.load(&id, &now()).await {
                Ok(Some(r)) => r.answers,
                _ => InputResponses::new(),
            };
            shared.set_task_answers(answers);
        }
        let run = execute_tool(shared.clone(), &entry, request.clone());
        tokio::pin!(run);
        // The handler's messages (progress, logs, questions to the client) have no request
        // stream to ride: legacy sessions get them on their standalone stream.
        let outcome = loop {
            tokio::select! {
                r = &mut run => break r,
                m = std::future::poll_fn(|cx| shared.outbox.poll_recv(cx)) => {
                    match (m, &session) {
                        (Some(m), Some(s)) => {
                            let _ = s.send_unrelated(m).await;
                        }
                        // Closed: nothing more can come; just wait for the handler.
                        (None, _) => break (&mut run).await,
                        (Some(_), None) => {}
                    }
                }
            }
        };
        let change = match outcome.map_err(|e| e.into_wire(Served::Task, modern)) {
            Ok(result) => finish(TaskStatus::Completed, None, result_outcome(&result)),
            // A failed tool is a result the model reads, as without a task.
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
        };
        let asking = matches!(change, TaskTransition::Ask(_));
        // Not applied: it ended meanwhile (cancelled, or failed by another instance).
        if !matches!(store.transition(&id, change, &now()).await, Ok(true)) {
            return;
        }
        status_changed(&store, session.as_ref(), &id).await;
        if !asking {
            return;
        }
        // Wait for the answers (or the end). Armed before each look, so no `tasks/update`
        // slips between the look and the wait.
        loop {
            let woken = local.changed.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match store.load(&id, &now()).await {
                Ok(Some(r)) if r.task.status.is_terminal() => return,
                Ok(Some(r)) if r.answered_or_over() => break,
                Ok(None) => return,
                // Not answered yet, or the store is unreachable for now: wait and look again.
                Ok(Some(_)) | Err(_) => {}
            }
            tokio::select! {
                () = &mut woken => {}
                () = tokio::time::sleep(RECHECK) => {}
            }
        }
        if !matches!(
            store.transition(&id, TaskTransition::Resume, &now()).await,
            Ok(true)
        ) {
            return;
        }
        status_changed(&store, session.as_ref(), &id).await;
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

/// The task, if the caller may see it (its owner, in the era it was created in).
async fn visible(shared: &RequestShared, id: &str) -> Result<TaskRecord, ErrorObject> {
    let store = shared.server.inner.tasks.store();
    match store.load(id, &now()).await.map_err(store_failed)? {
        Some(r) if r.owner == owner_of(shared) && r.modern == shared.is_modern() => Ok(r),
        _ => Err(not_found(id)),
    }
}

/// A 2026-07-28 request to a task method must declare the tasks extension (SEP-2663): else
/// -32021, before anything is looked up.
fn gate(shared: &RequestShared) -> Result<(), ErrorObject> {
    if shared.is_modern()
        && !shared
            .client_capabilities()
            .supports_extension(TASKS_EXTENSION)
    {
        return Err(ErrorObject::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "Missing required client capability: the {TASKS_EXTENSION} extension (for {})",
                shared.method
            ),
        )
        .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})));
    }
    Ok(())
}

/// `tasks/get`.
pub(crate) async fn get(shared: &RequestShared, p: TaskIdParams) -> Result<Outcome, ErrorObject> {
    gate(shared)?;
    let record = visible(shared, &p.task_id).await?;
    let fields = task_json(&record, shared.is_modern());
    Ok(complete(shared, JsonResult { fields, meta: None }))
}

/// `tasks/result` (2025-11-25): waits for the end, then answers what the call would have.
pub(crate) async fn result(
    shared: &RequestShared,
    p: TaskIdParams,
) -> Result<Outcome, ErrorObject> {
    let store = shared.server.inner.tasks.store();
    loop {
        // Subscribed before the state is read, so no change slips between the two.
        let mut signals = store.signals();
        let record = visible(shared, &p.task_id).await?;
        match record.outcome {
            Some(TaskOutcome::Result(v)) => {
                let mut meta = Meta::new();
                meta.insert(meta_keys::RELATED_TASK, json!({"taskId": p.task_id}));
                return Ok(complete(
                    shared,
                    JsonResult {
                        fields: object(v),
                        meta: Some(meta),
                    },
                ));
            }
            Some(TaskOutcome::Error(e)) => return Err(e),
            None if record.task.status.is_terminal() => {
                return Err(ErrorObject::invalid_params(format!(
                    "Task {} was cancelled",
                    p.task_id
                )));
            }
            None => {
                // Until a signal about this task, or a while (a lost signal, a dead instance).
                let _ = tokio::time::timeout(RECHECK, async {
                    loop {
                        match signals.recv().await {
                            Ok(s) if s.task == p.task_id => return,
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                std::future::pending::<()>().await;
                            }
                            _ => {}
                        }
                    }
                })
                .await;
            }
        }
    }
}

/// `tasks/list` (2025-11-25): the session's tasks, paginated.
pub(crate) async fn list(
    shared: &RequestShared,
    p: PaginatedParams,
) -> Result<Outcome, ErrorObject> {
    let store = shared.server.inner.tasks.store();
    let mine: BTreeMap<String, Task> = store
        .list(&owner_of(shared))
        .await
        .map_err(store_failed)?
        .into_iter()
        .filter(|r| !r.modern)
        .map(|r| (r.task.task_id.clone(), r.task))
        .collect();
    let (items, next) = page(
        &mine,
        p.cursor.as_deref(),
        shared.server.options().page_size,
    )?;
    Ok(complete(
        shared,
        ListTasksResult {
            tasks: items.into_iter().cloned().collect(),
            next_cursor: next,
            meta: None,
        },
    ))
}

/// `tasks/cancel`: from any instance; the one running the task hears it on the store's
/// signals and stops the handler.
pub(crate) async fn cancel(
    shared: &RequestShared,
    p: TaskIdParams,
) -> Result<Outcome, ErrorObject> {
    gate(shared)?;
    let modern = shared.is_modern();
    let tasks: &Arc<Tasks> = &shared.server.inner.tasks;
    let store = tasks.store();
    let mut record = visible(shared, &p.task_id).await?;
    let cancelled = TaskTransition::Finish {
        status: TaskStatus::Cancelled,
        message: Some("Cancelled by the client".into()),
        outcome: None,
    };
    let applied = !record.task.status.is_terminal()
        && store
            .transition(&p.task_id, cancelled.clone(), &now())
            .await
            .map_err(store_failed)?;
    if !applied {
        if modern {
            // Cooperative: already over, the same empty ack.
            return Ok(empty(shared));
        }
        let current = visible(shared, &p.task_id).await?;
        return Err(ErrorObject::invalid_params(format!(
            "Task {} already ended ({})",
            p.task_id,
            serde_json::to_value(current.task.status).unwrap_or_default()
        )));
    }
    let _ = store
        .signal(TaskSignal {
            task: p.task_id.clone(),
            event: TaskEvent::Cancelled,
        })
        .await;
    let session = match &shared.scope {
        Scope::Legacy(s) => Some(s),
        Scope::Modern(_) => None,
    };
    status_changed(&store, session, &p.task_id).await;
    if modern {
        return Ok(empty(shared));
    }
    if let TaskTransition::Finish {
        status, message, ..
    } = cancelled
    {
        record.task.status = status;
        record.task.status_message = message;
    }
    Ok(complete(
        shared,
        JsonResult {
            fields: task_json(&record, false),
            meta: None,
        },
    ))
}

fn empty(shared: &RequestShared) -> Outcome {
    complete(
        shared,
        JsonResult {
            fields: JsonObject::new(),
            meta: None,
        },
    )
}

/// `tasks/update` parameters (2026-07-28 extension).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskUpdateParams {
    task_id: String,
    #[serde(default)]
    input_responses: InputResponses,
}

/// `tasks/update`: answers to the questions of an `input_required` task, from any
/// instance; the one running it resumes the handler once every question is answered.
pub(crate) async fn update(
    shared: &RequestShared,
    p: TaskUpdateParams,
) -> Result<Outcome, ErrorObject> {
    gate(shared)?;
    visible(shared, &p.task_id).await?;
    let store = shared.server.inner.tasks.store();
    // Answers to keys not currently asked are ignored; an answered key is no longer asked
    // (tasks/get shows what is still missing: partial fulfillment).
    let answered = store
        .answer(&p.task_id, p.input_responses)
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
