//! Tasks: tool calls that run in the background while the client polls for them.
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
//! Task ids are 256 random bits (they are bearer handles in 2026-07-28); a task is bound to
//! its session (legacy) or to its authenticated caller (modern, when an auth layer named
//! one). Finished tasks are forgotten after their ttl.
//!
//! Not here: tasks the server asks the client to run (sampling or elicitation as tasks).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::context::{RequestShared, Scope};
use super::dispatch::{HasMeta, Outcome, complete, encode_result, execute_tool, is_modern, page};
use super::tool::{CallToolRequest, HandlerError, ToolEntry};
use crate::protocol::{
    ErrorObject, InputRequests, InputResponses, JsonObject, ListTasksResult, Meta, PaginatedParams,
    ResultType, TASKS_EXTENSION, Task, TaskIdParams, TaskStatus, TaskSupport, code, meta_keys,
};
use crate::sync::lock;

/// How long a task is kept when the client names no ttl: one hour.
const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// The longest ttl granted.
const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// The polling interval suggested to clients.
const POLL_INTERVAL_MS: u64 = 500;

/// Who may see a task.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Owner {
    /// A legacy session (its registry key).
    Session(u64),
    /// A modern caller: the authenticated principal, or anyone holding the id.
    Caller(Option<String>),
}

struct TaskEntry {
    task: Task,
    owner: Owner,
    modern: bool,
    /// The final result (as JSON) or error, once terminal.
    outcome: Option<Result<Value, ErrorObject>>,
    /// The questions waiting for `tasks/update` (modern).
    input_requests: Option<InputRequests>,
    /// Answers received so far (modern).
    answers: InputResponses,
    cancel: CancellationToken,
    /// Woken on every change (terminal state, new answers).
    changed: Arc<Notify>,
    ttl: Duration,
    started: Instant,
}

/// A server's tasks.
#[derive(Default)]
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, TaskEntry>>,
}

impl Tasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, TaskEntry>> {
        lock(&self.map)
    }

    /// Forgets tasks that ended more than their ttl after creation.
    fn purge(map: &mut HashMap<String, TaskEntry>) {
        map.retain(|_, t| !(t.task.status.is_terminal() && t.started.elapsed() > t.ttl));
    }
}

fn owner_of(shared: &RequestShared) -> Owner {
    match &shared.scope {
        Scope::Legacy(s) => Owner::Session(s.registry_key()),
        Scope::Modern(_) => Owner::Caller(shared.principal_digest()),
    }
}

/// ISO 8601 (UTC, seconds) of a system time.
fn iso8601(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn new_task_id() -> Result<String, ErrorObject> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|_| ErrorObject::internal("no randomness for a task id"))?;
    Ok(URL_SAFE_NO_PAD.encode(b))
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
    if is_modern(shared) {
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

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The task as the request's era shows it (2026-07-28 renames `ttl` and `pollInterval` and
/// inlines the result, error or questions).
fn task_json(t: &TaskEntry, modern: bool) -> JsonObject {
    let mut v = object(serde_json::to_value(&t.task).unwrap_or_default());
    if modern {
        if let Some(ttl) = v.remove("ttl") {
            v.insert("ttlMs".into(), ttl);
        }
        if let Some(p) = v.remove("pollInterval") {
            v.insert("pollIntervalMs".into(), p);
        }
        match &t.outcome {
            Some(Ok(r)) => {
                v.insert("result".into(), r.clone());
            }
            Some(Err(e)) => {
                v.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
            }
            None => {}
        }
        if let Some(q) = &t.input_requests {
            v.insert(
                "inputRequests".into(),
                serde_json::to_value(q).unwrap_or_default(),
            );
        }
    }
    v
}

fn set_status(t: &mut TaskEntry, status: TaskStatus, message: Option<String>) {
    if t.task.status.is_terminal() {
        return; // Terminal states never change.
    }
    t.task.status = status;
    t.task.status_message = message;
    t.task.last_updated_at = iso8601(SystemTime::now());
    t.changed.notify_waiters();
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
    let modern = is_modern(shared);
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
    let modern = is_modern(&origin);
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
        let changed = {
            let mut map = tasks.lock();
            let Some(t) = map.get_mut(&id) else { return };
            match outcome {
                Ok(result) => {
                    t.outcome = Some(Ok(serde_json::to_value(&result).unwrap_or_default()));
                    set_status(t, TaskStatus::Completed, None);
                    return;
                }
                Err(HandlerError::InputRequired(r)) if modern => {
                    t.input_requests = r.input_requests;
                    set_status(t, TaskStatus::InputRequired, None);
                    t.changed.clone()
                }
                Err(e) => {
                    let e = match e {
                        HandlerError::Protocol(e) => e,
                        HandlerError::Failed(m) => ErrorObject::internal(m),
                        HandlerError::InputRequired(_) => {
                            ErrorObject::internal("the handler asked for input a task cannot carry")
                        }
                    };
                    let message = Some(e.message.to_string());
                    t.outcome = Some(Err(e));
                    set_status(t, TaskStatus::Failed, message);
                    return;
                }
            }
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

/// True when every outstanding question of a task is answered, or it ended.
fn answered_or_over(tasks: &Tasks, id: &str) -> bool {
    let map = tasks.lock();
    map.get(id).is_none_or(|t| {
        t.task.status.is_terminal()
            || t.input_requests
                .as_ref()
                .is_none_or(|q| q.keys().all(|k| t.answers.contains_key(k)))
    })
}

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Failed to retrieve task: no task {id}"))
}

/// Finds a task the caller may see.
fn with_task<R>(
    shared: &RequestShared,
    id: &str,
    f: impl FnOnce(&mut TaskEntry) -> Result<R, ErrorObject>,
) -> Result<R, ErrorObject> {
    let mut map = shared.server.inner.tasks.lock();
    Tasks::purge(&mut map);
    match map.get_mut(id) {
        Some(t) if t.owner == owner_of(shared) && t.modern == is_modern(shared) => f(t),
        _ => Err(not_found(id)),
    }
}

/// `tasks/get`.
pub(crate) fn get(shared: &RequestShared, p: TaskIdParams) -> Result<Outcome, ErrorObject> {
    let modern = is_modern(shared);
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
    let modern = is_modern(shared);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_764_500_000);
        assert_eq!(iso8601(t), "2025-11-30T10:53:20Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00Z");
    }
}
