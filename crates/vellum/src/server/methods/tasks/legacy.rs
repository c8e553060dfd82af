//! Tasks of 2025-11-25 (the experimental core, SEP-1686): the client asks for one with the
//! `task` param of `tools/call` (allowed by the tool's `execution.taskSupport`), gets a
//! `CreateTaskResult`, and uses `tasks/get`, `tasks/result` (which waits for the end),
//! `tasks/list` and `tasks/cancel`. Tasks belong to the session that created them; the
//! handler runs once, and its messages and questions to the client travel on the session's
//! standalone stream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::records::{
    JsonResult, RECHECK, granted_ttl, legacy_json, object, owner_of, store_failed, visible,
};
use super::run::{self, CANCELLED, Plan};
use crate::protocol::{
    ErrorObject, InputResponses, ListTasksResult, Meta, PaginatedParams, Task, TaskIdParams,
    TaskStatus, TaskSupport, code, meta_keys,
};
use crate::server::registry::pagination::page;
use crate::server::registry::tool::{CallToolRequest, ToolEntry, execute_tool};
use crate::server::request::reply::{Outcome, complete};
use crate::server::request::request::RequestShared;
use crate::store::{TaskOutcome, TaskStore};

/// How a call runs: as a task when it has the `task` param (and the tool allows it).
pub(super) fn plan(
    shared: &RequestShared,
    support: TaskSupport,
    request: &CallToolRequest,
) -> Result<Plan, ErrorObject> {
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
        (_, Some(t)) => Ok(Plan::Task(granted_ttl(shared, t.ttl))),
        (_, None) => Ok(Plan::InPlace),
    }
}

/// Starts the call as a task and answers with it (`{"task": …}`).
pub(super) async fn start(
    shared: &Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    ttl: Duration,
) -> Outcome {
    let created = match run::create(shared, &request, ttl, InputResponses::new()).await {
        Ok(created) => created,
        Err(e) => return Outcome::Error(e),
    };
    let work = run_once(
        Arc::new(shared.detached()),
        entry,
        request,
        created.record.task.task_id.clone(),
        created.store.clone(),
    );
    let record = created.spawn(work);
    complete(
        shared,
        JsonResult::new(object(json!({ "task": legacy_json(&record) }))),
    )
}

/// The task's one run, and its outcome recorded. The handler's messages (progress, logs,
/// questions to the client) have no request stream to ride: they go to the session's
/// standalone stream.
async fn run_once(
    shared: Arc<RequestShared>,
    entry: Arc<ToolEntry>,
    request: CallToolRequest,
    id: String,
    store: Arc<dyn TaskStore>,
) {
    let session = shared.session().cloned();
    let run = execute_tool(shared.clone(), &entry, request);
    tokio::pin!(run);
    let outcome = loop {
        tokio::select! {
            r = &mut run => break r,
            m = std::future::poll_fn(|cx| shared.outbox.poll_recv(cx)) => match (m, &session) {
                (Some(m), Some(s)) => {
                    let _ = s.send_unrelated(m).await;
                }
                (Some(_), None) => {}
                // Closed: nothing more can come; just wait for the handler.
                (None, _) => break (&mut run).await,
            }
        }
    };
    run::apply(
        &store,
        &id,
        run::ended(&shared, &id, outcome),
        session.as_ref(),
    )
    .await;
}

/// `tasks/get`.
pub(crate) async fn get(shared: &RequestShared, p: TaskIdParams) -> Result<Outcome, ErrorObject> {
    let record = visible(shared, &p.task_id).await?;
    Ok(complete(shared, JsonResult::new(legacy_json(&record))))
}

/// `tasks/result`: waits for the end, then answers what the call would have.
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

/// `tasks/list`: the session's tasks, paginated.
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

/// `tasks/cancel`: from any instance (the one running the task hears it on the store's
/// signals and stops the handler); the cancelled task, or an error for one already over.
pub(crate) async fn cancel(
    shared: &RequestShared,
    p: TaskIdParams,
) -> Result<Outcome, ErrorObject> {
    let store = shared.server.inner.tasks.store();
    let mut record = visible(shared, &p.task_id).await?;
    if !run::cancel(&store, &record, shared.session()).await? {
        let current = visible(shared, &p.task_id).await?;
        return Err(ErrorObject::invalid_params(format!(
            "Task {} already ended ({})",
            p.task_id,
            serde_json::to_value(current.task.status).unwrap_or_default()
        )));
    }
    record.task.status = TaskStatus::Cancelled;
    record.task.status_message = Some(CANCELLED.into());
    Ok(complete(shared, JsonResult::new(legacy_json(&record))))
}
