//! [`MemoryTaskStore`]: tasks in this process's memory (the default). Servers given the same
//! store (clones share it) behave like instances of one deployment; a task dies with its
//! process, so there is nothing to detect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, ready};
use tokio::sync::broadcast;

use super::{Answered, TaskRecord, TaskSignal, TaskStore, TaskTransition};
use crate::protocol::{InputResponses, TaskStatus};
use crate::store::error::StoreError;
use crate::sync::lock;

struct Entry {
    record: TaskRecord,
    /// Forgotten once terminal and past this instant.
    expires: Instant,
}

/// A task store in memory. Cheap to clone; clones share the tasks.
#[derive(Clone)]
pub struct MemoryTaskStore {
    map: Arc<Mutex<HashMap<String, Entry>>>,
    tx: broadcast::Sender<TaskSignal>,
    instance: Arc<str>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(1024);
        MemoryTaskStore {
            map: Arc::default(),
            tx,
            instance: Arc::from("memory-0"),
        }
    }

    /// Another handle on the same tasks with its own instance id (for several servers in one
    /// process acting as instances).
    pub fn endpoint(&self, instance: &str) -> Self {
        MemoryTaskStore {
            map: self.map.clone(),
            tx: self.tx.clone(),
            instance: Arc::from(instance),
        }
    }

    /// How many tasks it holds (expired ones excluded).
    pub fn len(&self) -> usize {
        let mut map = lock(&self.map);
        purge(&mut map);
        map.len()
    }

    /// True when it holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<R>(&self, id: &str, f: impl FnOnce(&mut TaskRecord) -> R) -> Option<R> {
        let mut map = lock(&self.map);
        purge(&mut map);
        map.get_mut(id).map(|e| f(&mut e.record))
    }
}

fn purge(map: &mut HashMap<String, Entry>) {
    let now = Instant::now();
    map.retain(|_, e| !(e.record.task.status.is_terminal() && now > e.expires));
}

/// Applies a transition to a record (shared by every store that keeps records whole).
pub(in crate::store) fn apply(r: &mut TaskRecord, change: TaskTransition, updated: &str) -> bool {
    if r.task.status.is_terminal() {
        return false;
    }
    let (status, message) = match change {
        TaskTransition::Ask(questions) => {
            r.input_requests = Some(questions);
            (TaskStatus::InputRequired, None)
        }
        TaskTransition::Resume => {
            r.input_requests = None;
            (TaskStatus::Working, None)
        }
        TaskTransition::Finish {
            status,
            message,
            outcome,
        } => {
            r.input_requests = None;
            r.outcome = outcome;
            (status, message)
        }
    };
    r.task.status = status;
    r.task.status_message = message;
    r.task.last_updated_at = updated.to_owned();
    true
}

/// Records answers in a record: see [`TaskStore::answer`].
pub(in crate::store) fn record_answers(r: &mut TaskRecord, answers: InputResponses) -> Answered {
    let mut any = false;
    if let Some(open) = r.input_requests.as_mut() {
        for (k, v) in answers {
            if open.remove(&k).is_some() {
                r.answers.insert(k, v);
                any = true;
            }
        }
    }
    Answered::Recorded {
        any,
        remaining: r.input_requests.as_ref().map_or(0, |q| q.len()),
    }
}

impl TaskStore for MemoryTaskStore {
    fn instance_id(&self) -> &str {
        &self.instance
    }

    fn create(
        &self,
        record: &TaskRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut map = lock(&self.map);
        purge(&mut map);
        map.insert(
            record.task.task_id.clone(),
            Entry {
                record: record.clone(),
                expires: Instant::now() + ttl,
            },
        );
        Box::pin(ready(Ok(())))
    }

    fn load(
        &self,
        id: &str,
        _updated: &str,
    ) -> BoxFuture<'static, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(ready(Ok(self.with(id, |r| r.clone()))))
    }

    fn list(&self, owner: &str) -> BoxFuture<'static, Result<Vec<TaskRecord>, StoreError>> {
        let mut map = lock(&self.map);
        purge(&mut map);
        let mut mine: Vec<TaskRecord> = map
            .values()
            .filter(|e| e.record.owner == owner)
            .map(|e| e.record.clone())
            .collect();
        mine.sort_by(|a, b| {
            (&a.task.created_at, &a.task.task_id).cmp(&(&b.task.created_at, &b.task.task_id))
        });
        Box::pin(ready(Ok(mine)))
    }

    fn transition(
        &self,
        id: &str,
        change: TaskTransition,
        updated: &str,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let applied = self
            .with(id, |r| apply(r, change, updated))
            .unwrap_or(false);
        Box::pin(ready(Ok(applied)))
    }

    fn answer(
        &self,
        id: &str,
        answers: InputResponses,
    ) -> BoxFuture<'static, Result<Answered, StoreError>> {
        let done = self
            .with(id, |r| record_answers(r, answers))
            .unwrap_or(Answered::Unknown);
        Box::pin(ready(Ok(done)))
    }

    fn signal(&self, signal: TaskSignal) -> BoxFuture<'static, Result<(), StoreError>> {
        // No receiver is fine: nobody waits.
        let _ = self.tx.send(signal);
        Box::pin(ready(Ok(())))
    }

    fn signals(&self) -> broadcast::Receiver<TaskSignal> {
        self.tx.subscribe()
    }
}
