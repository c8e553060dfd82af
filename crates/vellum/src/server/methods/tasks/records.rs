//! What the task methods of both eras share about a task's record: who may see it, how
//! each era shows it, the errors about it, and the limits of its lifetime.
//!
//! Not here: the store the records live in (`crate::store`), and what runs a task
//! (`run.rs`).

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::echo;
use crate::protocol::{ErrorObject, JsonObject, Meta};
use crate::server::request::reply::{HasMeta, Outcome, complete};
use crate::server::request::request::{RequestShared, Scope};
use crate::store::{StoreError, TaskOutcome, TaskRecord, iso8601};

/// How long a task is kept when the client names no ttl: one hour (or the server's
/// `max_task_ttl`, if shorter).
const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// The polling interval suggested to clients.
pub(super) const POLL_INTERVAL_MS: u64 = 500;
/// How often a waiter re-reads a task even without a signal (a lost pub/sub message, a
/// store that cannot signal).
pub(super) const RECHECK: Duration = Duration::from_secs(1);

/// The ttl granted for a requested one (milliseconds; none: the default), clamped to the
/// server's `max_task_ttl`: what the task then reports.
pub(super) fn granted_ttl(shared: &RequestShared, requested: Option<u64>) -> Duration {
    requested
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TTL)
        .min(shared.server.limits().max_task_ttl)
}

/// Who may see a task: its session (legacy), or its caller (modern: the authenticated
/// principal, or anyone holding the id).
pub(super) fn owner_of(shared: &RequestShared) -> String {
    match &shared.scope {
        Scope::Legacy(s) => match s.id() {
            Some(id) => format!("s:{id}"),
            None => format!("k:{}", s.registry_key()),
        },
        Scope::Modern(_) => format!("c:{}", shared.principal_digest().unwrap_or_default()),
    }
}

pub(super) fn store_failed(e: StoreError) -> ErrorObject {
    match e {
        // Redis unreachable, or failing over: the same call may well work a moment later.
        StoreError::Backend(_) => {
            ErrorObject::internal(format!("The task store is unavailable; retry: {e}"))
        }
        e => ErrorObject::internal(format!("The task store failed: {e}")),
    }
}

pub(super) fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Failed to retrieve task: no task {}", echo(id)))
}

/// The task, if the caller may see it (its owner, in the era it was created in).
pub(super) async fn visible(shared: &RequestShared, id: &str) -> Result<TaskRecord, ErrorObject> {
    let store = shared.server.inner.tasks.store();
    match store.load(id, &now()).await.map_err(store_failed)? {
        Some(r) if r.owner == owner_of(shared) && r.modern == shared.is_modern() => Ok(r),
        _ => Err(not_found(id)),
    }
}

/// Now, as task times are written.
pub(super) fn now() -> String {
    iso8601(SystemTime::now())
}

pub(super) fn new_task_id() -> Result<String, ErrorObject> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|_| ErrorObject::internal("no randomness for a task id"))?;
    Ok(URL_SAFE_NO_PAD.encode(b))
}

pub(super) fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The task as 2025-11-25 shows it: the `Task` itself.
pub(super) fn legacy_json(t: &TaskRecord) -> JsonObject {
    object(serde_json::to_value(&t.task).unwrap_or_default())
}

/// The task as 2026-07-28 shows it: `ttl` and `pollInterval` renamed, the result, error or
/// questions inlined.
pub(super) fn modern_json(t: &TaskRecord) -> JsonObject {
    let mut v = legacy_json(t);
    if let Some(ttl) = v.remove("ttl") {
        v.insert("ttlMs".into(), ttl);
    }
    if let Some(p) = v.remove("pollInterval") {
        v.insert("pollIntervalMs".into(), p);
    }
    match &t.outcome {
        Some(TaskOutcome::Result(r)) => {
            v.insert("result".into(), r.clone());
        }
        Some(TaskOutcome::Error(e)) => {
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
    v
}

/// A result of arbitrary shape, for the task methods whose results are built as JSON.
#[derive(Serialize, Deserialize)]
pub(super) struct JsonResult {
    #[serde(flatten)]
    pub(super) fields: JsonObject,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Meta>,
}

impl JsonResult {
    pub(super) fn new(fields: JsonObject) -> Self {
        JsonResult { fields, meta: None }
    }
}

impl HasMeta for JsonResult {
    fn meta_mut(&mut self) -> &mut Option<Meta> {
        &mut self.meta
    }
}

/// The empty result (acknowledgements).
pub(super) fn empty(shared: &RequestShared) -> Outcome {
    complete(shared, JsonResult::new(JsonObject::new()))
}
