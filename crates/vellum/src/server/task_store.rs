//! The task store of a server: tool calls running in the background while the client
//! polls for them, each with its owner, status, outcome, questions and answers. Finished
//! tasks are forgotten after their ttl.
//!
//! Task ids are 256 random bits (they are bearer handles in 2026-07-28); a task is bound to
//! its session (legacy) or to its authenticated caller (modern, when an auth layer named
//! one).
//!
//! Not here: the task methods and running a task's handler (`methods/tasks.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ErrorObject, InputRequests, InputResponses, JsonObject, Task, TaskStatus};
use crate::sync::lock;

/// How long a task is kept when the client names no ttl: one hour.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// The longest ttl granted.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// The polling interval suggested to clients.
pub(crate) const POLL_INTERVAL_MS: u64 = 500;

/// Who may see a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A legacy session (its registry key).
    Session(u64),
    /// A modern caller: the authenticated principal, or anyone holding the id.
    Caller(Option<String>),
}

pub(crate) struct TaskEntry {
    pub(crate) task: Task,
    pub(crate) owner: Owner,
    pub(crate) modern: bool,
    /// The final result (as JSON) or error, once terminal.
    pub(crate) outcome: Option<Result<Value, ErrorObject>>,
    /// The questions waiting for `tasks/update` (modern).
    pub(crate) input_requests: Option<InputRequests>,
    /// Answers received so far (modern).
    pub(crate) answers: InputResponses,
    pub(crate) cancel: CancellationToken,
    /// Woken on every change (terminal state, new answers).
    pub(crate) changed: Arc<Notify>,
    pub(crate) ttl: Duration,
    pub(crate) started: Instant,
}

/// A server's tasks.
#[derive(Default)]
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, TaskEntry>>,
}

impl Tasks {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, TaskEntry>> {
        lock(&self.map)
    }

    /// Forgets tasks that ended more than their ttl after creation.
    pub(crate) fn purge(map: &mut HashMap<String, TaskEntry>) {
        map.retain(|_, t| !(t.task.status.is_terminal() && t.started.elapsed() > t.ttl));
    }
}

/// ISO 8601 (UTC, seconds) of a system time.
pub(crate) fn iso8601(t: SystemTime) -> String {
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

pub(crate) fn new_task_id() -> Result<String, ErrorObject> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|_| ErrorObject::internal("no randomness for a task id"))?;
    Ok(URL_SAFE_NO_PAD.encode(b))
}

pub(crate) fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The task as the request's era shows it (2026-07-28 renames `ttl` and `pollInterval` and
/// inlines the result, error or questions).
pub(crate) fn task_json(t: &TaskEntry, modern: bool) -> JsonObject {
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

pub(crate) fn set_status(t: &mut TaskEntry, status: TaskStatus, message: Option<String>) {
    if t.task.status.is_terminal() {
        return; // Terminal states never change.
    }
    t.task.status = status;
    t.task.status_message = message;
    t.task.last_updated_at = iso8601(SystemTime::now());
    t.changed.notify_waiters();
}

/// True when every outstanding question of a task is answered, or it ended.
pub(crate) fn answered_or_over(tasks: &Tasks, id: &str) -> bool {
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

impl Tasks {
    /// Runs `f` on a task `owner` may see (in the era it was created in).
    pub(crate) fn with<R>(
        &self,
        id: &str,
        owner: &Owner,
        modern: bool,
        f: impl FnOnce(&mut TaskEntry) -> Result<R, ErrorObject>,
    ) -> Result<R, ErrorObject> {
        let mut map = self.lock();
        Self::purge(&mut map);
        match map.get_mut(id) {
            Some(t) if t.owner == *owner && t.modern == modern => f(t),
            _ => Err(not_found(id)),
        }
    }
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
