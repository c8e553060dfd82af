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
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::super::handler_error::{Served, WireFailure};
use super::super::pagination::page;
use super::super::reply::{HasMeta, Outcome, complete, encode_result};
use super::super::request::{RequestShared, Scope};
use super::super::task_store::{
    DEFAULT_TTL, MAX_TTL, Owner, POLL_INTERVAL_MS, TaskEntry, Tasks, answered_or_over, iso8601,
    new_task_id, object, set_status, task_json,
};
use super::super::tool::{CallToolRequest, ToolEntry, execute_tool};
use crate::protocol::{
    CallToolResult, ErrorObject, InputResponses, JsonObject, ListTasksResult, Meta,
    PaginatedParams, ResultType, TASKS_EXTENSION, Task, TaskIdParams, TaskStatus, TaskSupport,
    code, meta_keys,
};

fn owner_of(shared: &RequestShared) -> Owner {
    match &shared.scope {
        Scope::Legacy(s) => Owner::Session(s.registry_key()),
        Scope::Modern(_) => Owner::Caller(shared.principal_digest()),
    }
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
pub(crate) fn start(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
) -> Outcome {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return Outcome::Error(ErrorObject::internal("tasks need a Tokio runtime"));
    };
    let id = match new_task_id() {
        Ok(id) => id,
        Err(e) => return Outcome::Error(e),
    };
    let now = iso8601(SystemTime::now());
    let modern = shared.is_modern();
    let cancel = CancellationToken::new();
    let changed = Arc::new(Notify::new());
    let task = Task {
        task_id: id.clone(),
        status: TaskStatus::Working,
        status_message: None,
        created_at: now.clone(),
        last_updated_at: now,
        ttl: Some(ttl.as_millis() as u64),
        poll_interval: Some(POLL_INTERVAL_MS),
    };
    let tasks = shared.server.inner.tasks.clone();
    {
        let mut map = tasks.lock();
        Tasks::purge(&mut map);
        map.insert(
            id.clone(),
            TaskEntry {
                task: task.clone(),
                owner: owner_of(shared),
                modern,
                outcome: None,
                input_requests: None,
                answers: InputResponses::new(),
                cancel: cancel.clone(),
                changed: changed.clone(),
                ttl,
                started: Instant::now(),
            },
        );
    }
    let run = run_task(shared.clone(), entry, request, id.clone(), tasks.clone());
    rt.spawn(async move {
        tokio::select! {
            () = run => {}
            () = cancel.cancelled() => {}
        }
    });
    let answer = {
        let map = tasks.lock();
        match map.get(&id) {
            Some(t) => task_json(t, modern),
            None => object(json!({})),
        }
    };
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

/// Runs the handler in the background, round after round while it asks questions (modern),
/// and records the outcome.
async fn run_task(
    origin: Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    id: String,
    tasks: Arc<Tasks>,
) {
    let modern = origin.is_modern();
    let session = match &origin.scope {
        Scope::Legacy(s) => Some(s.clone()),
        Scope::Modern(_) => None,
    };
    loop {
        let shared = Arc::new(origin.detached());
        if modern {
            let answers = tasks
                .lock()
                .get(&id)
                .map(|t| t.answers.clone())
                .unwrap_or_default();
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
        let changed = 'recorded: {
            let mut map = tasks.lock();
            let Some(t) = map.get_mut(&id) else { return };
            let result = match outcome.map_err(|e| e.into_wire(Served::Task, modern)) {
                Ok(result) => result,
                // A failed tool is a result the model reads, as without a task.
                Err(WireFailure::ToolError(m)) => CallToolResult::error(m),
                Err(WireFailure::InputRequired(r)) => {
                    t.input_requests = r.input_requests;
                    set_status(t, TaskStatus::InputRequired, None);
                    break 'recorded t.changed.clone();
                }
                Err(WireFailure::Error(e)) => {
                    let message = Some(e.message.to_string());
                    t.outcome = Some(Err(e));
                    set_status(t, TaskStatus::Failed, message);
                    return;
                }
            };
            t.outcome = Some(Ok(serde_json::to_value(&result).unwrap_or_default()));
            set_status(t, TaskStatus::Completed, None);
            return;
        };
        // Wait for the answers (or a cancellation); registered before looking, so no
        // `tasks/update` slips between the look and the wait.
        let waiting = changed.notified();
        tokio::pin!(waiting);
        waiting.as_mut().enable();
        if !answered_or_over(&tasks, &id) {
            waiting.await;
        }
        let mut map = tasks.lock();
        let Some(t) = map.get_mut(&id) else { return };
        if t.task.status.is_terminal() {
            return;
        }
        t.input_requests = None;
        set_status(t, TaskStatus::Working, None);
    }
}

/// Finds a task the caller may see.
fn with_task<R>(
    shared: &RequestShared,
    id: &str,
    f: impl FnOnce(&mut TaskEntry) -> Result<R, ErrorObject>,
) -> Result<R, ErrorObject> {
    let owner = owner_of(shared);
    shared
        .server
        .inner
        .tasks
        .with(id, &owner, shared.is_modern(), f)
}

/// `tasks/get`.
pub(crate) fn get(shared: &RequestShared, p: TaskIdParams) -> Result<Outcome, ErrorObject> {
    let modern = shared.is_modern();
    let fields = with_task(shared, &p.task_id, |t| Ok(task_json(t, modern)))?;
    Ok(complete(shared, JsonResult { fields, meta: None }))
}

/// `tasks/result` (2025-11-25): waits for the end, then answers what the call would have.
pub(crate) async fn result(
    shared: &RequestShared,
    p: TaskIdParams,
) -> Result<Outcome, ErrorObject> {
    loop {
        let changed = with_task(shared, &p.task_id, |t| Ok(t.changed.clone()))?;
        // Registered before the state is read, so no change slips between the two.
        let waiting = changed.notified();
        let (outcome, done) = with_task(shared, &p.task_id, |t| {
            Ok((t.outcome.clone(), t.task.status.is_terminal()))
        })?;
        match outcome {
            Some(Ok(v)) => {
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
            Some(Err(e)) => return Err(e),
            None if done => {
                return Err(ErrorObject::invalid_params(format!(
                    "Task {} was cancelled",
                    p.task_id
                )));
            }
            None => waiting.await,
        }
    }
}

/// `tasks/list` (2025-11-25): the session's tasks, paginated.
pub(crate) fn list(shared: &RequestShared, p: PaginatedParams) -> Result<Outcome, ErrorObject> {
    let owner = owner_of(shared);
    let mine: BTreeMap<String, Task> = {
        let mut map = shared.server.inner.tasks.lock();
        Tasks::purge(&mut map);
        map.iter()
            .filter(|(_, t)| t.owner == owner && !t.modern)
            .map(|(k, t)| (k.clone(), t.task.clone()))
            .collect()
    };
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

/// `tasks/cancel`.
pub(crate) fn cancel(shared: &RequestShared, p: TaskIdParams) -> Result<Outcome, ErrorObject> {
    let modern = shared.is_modern();
    let fields = with_task(shared, &p.task_id, |t| {
        if t.task.status.is_terminal() {
            if modern {
                return Ok(JsonObject::new()); // Cooperative: already over.
            }
            return Err(ErrorObject::invalid_params(format!(
                "Task {} already ended ({})",
                p.task_id,
                serde_json::to_value(t.task.status).unwrap_or_default()
            )));
        }
        t.cancel.cancel();
        set_status(
            t,
            TaskStatus::Cancelled,
            Some("Cancelled by the client".into()),
        );
        Ok(if modern {
            JsonObject::new()
        } else {
            task_json(t, false)
        })
    })?;
    Ok(complete(shared, JsonResult { fields, meta: None }))
}

/// `tasks/update` parameters (2026-07-28 extension).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskUpdateParams {
    task_id: String,
    #[serde(default)]
    input_responses: InputResponses,
}

/// `tasks/update`: answers to the questions of an `input_required` task.
pub(crate) fn update(shared: &RequestShared, p: TaskUpdateParams) -> Result<Outcome, ErrorObject> {
    with_task(shared, &p.task_id, |t| {
        let outstanding = t.input_requests.clone().unwrap_or_default();
        let mut any = false;
        for (k, v) in p.input_responses {
            // Answers to keys not currently asked are ignored.
            if outstanding.contains_key(&k) {
                t.answers.insert(k, v);
                any = true;
            }
        }
        if any && outstanding.keys().all(|k| t.answers.contains_key(k)) {
            t.changed.notify_waiters();
        }
        Ok(())
    })?;
    Ok(complete(
        shared,
        JsonResult {
            fields: JsonObject::new(),
            meta: None,
        },
    ))
}
