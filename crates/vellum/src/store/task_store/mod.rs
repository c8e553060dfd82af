//! The [`TaskStore`]: where a server keeps its tasks (tool calls running in the background
//! while the client polls), so that any instance sharing the store answers `tasks/get`,
//! `tasks/update`, `tasks/cancel`, `tasks/result` and `tasks/list` for a task another
//! instance runs. The trait, the [`TaskRecord`] it keeps, and one file per implementation:
//! `memory.rs` (one process) and `redis.rs` (shared, behind the `redis` feature).
//!
//! A task runs on one instance (the record names it). Changes that the running instance must
//! act on (answers to its questions, a cancellation) travel as [`TaskSignal`]s over the
//! store's [`TaskStore::signal`], which the Redis store carries on the message bus. A store
//! that can tell when the running instance died (Redis: a heartbeat per task) fails its
//! tasks with a clear error once the heartbeat window passes.
//!
//! Not here: running a task's handler, and the task methods (the server's `methods/tasks/`).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

pub use super::bus::{TaskEvent, TaskSignal};
use super::error::StoreError;
use crate::protocol::{ErrorObject, InputRequests, InputResponses, Task, TaskStatus};

pub(super) mod memory;
#[cfg(feature = "redis")]
pub(super) mod redis;

/// How a task ended: the result its request would have had, or a protocol error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskOutcome {
    /// The result (as JSON).
    Result(Value),
    /// The error.
    Error(ErrorObject),
}

/// One task as a store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task as `tasks/get` shows it (id, status, times, ttl, polling interval).
    pub task: Task,
    /// Who may see it: an opaque string the server derives from the session or the caller.
    pub owner: String,
    /// Whether it was created by a 2026-07-28 request (it is only visible in that era).
    pub modern: bool,
    /// The instance running it ([`TaskStore::instance_id`] of that instance's store).
    pub instance: String,
    /// How it ended, once terminal (none when cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TaskOutcome>,
    /// The questions still waiting for `tasks/update` (status `input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// The answers received so far, for the handler's next round.
    #[serde(default)]
    pub answers: InputResponses,
}

impl TaskRecord {
    /// A new record of a task that just started.
    pub fn new(task: Task, owner: String, modern: bool, instance: String) -> Self {
        TaskRecord {
            task,
            owner,
            modern,
            instance,
            outcome: None,
            input_requests: None,
            answers: InputResponses::new(),
        }
    }

    /// True when no question is outstanding (or the task is over).
    pub fn answered_or_over(&self) -> bool {
        self.task.status.is_terminal() || self.input_requests.as_ref().is_none_or(|q| q.is_empty())
    }
}

/// A change of a task's state, applied by [`TaskStore::transition`]. Terminal states never
/// change: a transition of a terminal task is refused (returns `false`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskTransition {
    /// The handler asks questions: status `input_required` with these questions.
    Ask(InputRequests),
    /// The questions were answered: back to `working` (the answers stay for the handler).
    Resume,
    /// The task ended (`completed`, `failed` or `cancelled`), with its outcome if any.
    Finish {
        /// The terminal status.
        status: TaskStatus,
        /// The status message.
        message: Option<String>,
        /// The result or error (none for a cancellation).
        outcome: Option<TaskOutcome>,
    },
}

/// What [`TaskStore::answer`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answered {
    /// No such task.
    Unknown,
    /// Recorded; `remaining` questions are still open, `any` tells whether an answer matched
    /// an open question.
    Recorded {
        /// Whether at least one answer matched an open question.
        any: bool,
        /// How many questions are still open.
        remaining: usize,
    },
}

/// Keeps tasks where every instance of a deployment finds them.
///
/// Every method answers for one task id (no method spans several tasks' keys, so a sharded
/// backend can keep each task in one place). `updated` arguments are the ISO 8601 time the
/// caller stamps on the change.
pub trait TaskStore: Send + Sync + 'static {
    /// This instance's id (written into the records of the tasks it runs).
    fn instance_id(&self) -> &str;

    /// Stores a new task, kept for `ttl` from now (and while it runs).
    fn create(
        &self,
        record: &TaskRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>>;

    /// The task, if it exists. A store that can tell that the running instance died turns the
    /// task to `failed` first (with `updated` as its time), and says so with a
    /// [`TaskEvent::StatusChanged`] signal.
    fn load(
        &self,
        id: &str,
        updated: &str,
    ) -> BoxFuture<'static, Result<Option<TaskRecord>, StoreError>>;

    /// The tasks of one owner (for `tasks/list`), in creation order.
    fn list(&self, owner: &str) -> BoxFuture<'static, Result<Vec<TaskRecord>, StoreError>>;

    /// Applies a change unless the task is terminal (or unknown): whether it applied.
    fn transition(
        &self,
        id: &str,
        change: TaskTransition,
        updated: &str,
    ) -> BoxFuture<'static, Result<bool, StoreError>>;

    /// Records answers to open questions (answers to keys not asked are ignored; an answered
    /// key is no longer open).
    fn answer(
        &self,
        id: &str,
        answers: InputResponses,
    ) -> BoxFuture<'static, Result<Answered, StoreError>>;

    /// Tells every instance sharing the store (this one included) about a change.
    fn signal(&self, signal: TaskSignal) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Every signal from now on (lagging receivers drop the oldest).
    fn signals(&self) -> broadcast::Receiver<TaskSignal>;
}

/// ISO 8601 (UTC, seconds) of a system time: the times of a task.
pub(crate) fn iso8601(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::iso8601;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_764_500_000);
        assert_eq!(iso8601(t), "2025-11-30T10:53:20Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00Z");
    }
}
