//! A server's tasks at run time: the [`TaskStore`] the records live in (memory by default,
//! shared between instances with Redis), and the tasks running on this instance (what
//! cancels each one, what wakes it when its questions are answered), woken by the store's
//! signals whichever instance received the `tasks/update` or `tasks/cancel`.
//!
//! Task ids are 256 random bits (they are bearer handles in 2026-07-28); a task is bound to
//! its session (legacy) or to its authenticated caller (modern, when an auth layer named
//! one).
//!
//! Not here: the task methods and running a task's handler (`methods/tasks.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::request::{TASK_MAY, TASK_WANTED};
use super::{HandlerError, RequestContext, Server};
use crate::protocol::{ErrorObject, JsonObject};
use crate::store::{MemoryTaskStore, TaskEvent, TaskOutcome, TaskRecord, TaskStore, iso8601};
use crate::sync::{lock, read, write};

/// How long a task is kept when the client names no ttl: one hour.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// The longest ttl granted.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// The polling interval suggested to clients.
pub(crate) const POLL_INTERVAL_MS: u64 = 500;
/// How often a waiter re-reads a task even without a signal (a lost pub/sub message, a
/// store that cannot signal).
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// What stops and wakes a task running on this instance.
#[derive(Clone, Default)]
pub(crate) struct Local {
    pub(crate) cancel: CancellationToken,
    /// Woken when its questions are answered.
    pub(crate) changed: Arc<Notify>,
}

/// A server's tasks: the store, and the tasks running here.
pub(crate) struct Tasks {
    store: RwLock<Arc<dyn TaskStore>>,
    local: Mutex<HashMap<String, Local>>,
    listening: AtomicBool,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            store: RwLock::new(Arc::new(MemoryTaskStore::new())),
            local: Mutex::default(),
            listening: AtomicBool::new(false),
        }
    }
}

impl Tasks {
    /// The store.
    pub(crate) fn store(&self) -> Arc<dyn TaskStore> {
        read(&self.store).clone()
    }

    /// A task starts running here.
    pub(crate) fn run_here(self: &Arc<Self>, id: &str) -> Local {
        self.listen();
        let local = Local::default();
        lock(&self.local).insert(id.to_owned(), local.clone());
        local
    }

    /// A task stopped running here.
    pub(crate) fn done_here(&self, id: &str) {
        lock(&self.local).remove(id);
    }

    /// Acts on the store's signals for the tasks running here (started once).
    fn listen(self: &Arc<Self>) {
        if self.listening.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.listening.store(false, Ordering::Release);
            return;
        };
        let rx = self.store().signals();
        rt.spawn(listen_loop(rx, Arc::downgrade(self)));
    }
}

async fn listen_loop(mut rx: broadcast::Receiver<crate::store::TaskSignal>, tasks: Weak<Tasks>) {
    loop {
        let signal = match rx.recv().await {
            Ok(s) => s,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(tasks) = tasks.upgrade() else { return };
        let Some(local) = lock(&tasks.local).get(&signal.task).cloned() else {
            continue;
        };
        match signal.event {
            TaskEvent::Cancelled => local.cancel.cancel(),
            TaskEvent::Answered => local.changed.notify_waiters(),
            _ => {}
        }
    }
}

impl RequestContext {
    /// The point where a tool call becomes a task: for a tool registered
    /// [`with_input_before_task`](crate::protocol::Tool::with_input_before_task) and a
    /// 2026-07-28 client that declared the tasks extension, the handler gathers input by
    /// multi round-trip first (its questions end each round as usual), then calls this: the
    /// request answers with the new task (`resultType: "task"`) and the handler runs again
    /// in the background with the answers it got so far, this call returning `Ok` there.
    /// Everywhere else (a call that already is a task, a client without the extension, a
    /// legacy session) it returns `Ok(())` at once and the handler just goes on.
    ///
    /// Pass the error on with `?`: it is what turns the request into the task.
    ///
    /// ```no_run
    /// # use vellum::prelude::*;
    /// # async fn handler(ctx: RequestContext, form: vellum::protocol::ElicitParams) -> Result<CallToolResult, HandlerError> {
    /// let name = ctx.with_input_key("user_name").elicit(form).await?;
    /// ctx.become_task()?; // From here on, a task the client polls.
    /// # let _ = name; Ok(CallToolResult::text("done")) }
    /// ```
    pub fn become_task(&self) -> Result<(), HandlerError> {
        let wanted = self.shared.task_mode.compare_exchange(
            TASK_MAY,
            TASK_WANTED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        match wanted {
            Ok(_) => Err(HandlerError::Protocol(ErrorObject::internal(
                "becoming a task (pass this error on)",
            ))),
            Err(_) => Ok(()),
        }
    }
}

impl Server {
    /// Keeps this server's tasks in `store` instead of this process's memory: with a store
    /// shared by several instances (such as Redis), any instance answers `tasks/get`,
    /// `tasks/update`, `tasks/cancel`, `tasks/result` and `tasks/list`, and the instance
    /// running a task hears the answers and cancellations others received. Set it before
    /// serving: tasks already in the previous store stay there.
    pub fn set_task_store(&self, store: Arc<dyn TaskStore>) {
        *write(&self.inner.tasks.store) = store;
        // A listener on the previous store's signals would hear nothing of the new one.
        self.inner.tasks.listening.store(false, Ordering::Release);
    }
}

/// Now, as task times are written.
pub(crate) fn now() -> String {
    iso8601(SystemTime::now())
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
pub(crate) fn task_json(t: &TaskRecord, modern: bool) -> JsonObject {
    let mut v = object(serde_json::to_value(&t.task).unwrap_or_default());
    if modern {
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
    }
    v
}
