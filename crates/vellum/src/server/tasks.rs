//! A server's tasks at run time: the [`TaskStore`] the records live in (memory by default,
//! shared between instances with Redis), and the tasks running on this instance (what
//! cancels each one, what wakes it when its questions are answered), woken by the store's
//! signals whichever instance received the `tasks/update` or `tasks/cancel`.
//!
//! Not here: the task methods, the records' shapes and running a task's handler
//! (`methods/tasks/`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::task_ledger::TaskLedger;
use crate::store::{MemoryTaskStore, TaskEvent, TaskStore};
use crate::sync::{lock, read, write};

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
    /// The tasks this instance keeps, counted against the server's limits.
    pub(crate) ledger: TaskLedger,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            store: RwLock::new(Arc::new(MemoryTaskStore::new())),
            local: Mutex::default(),
            listening: AtomicBool::new(false),
            ledger: TaskLedger::default(),
        }
    }
}

impl Tasks {
    /// The store.
    pub(crate) fn store(&self) -> Arc<dyn TaskStore> {
        read(&self.store).clone()
    }

    /// Keeps the tasks in `store` from now on (see `Server::set_task_store`).
    pub(crate) fn set_store(&self, store: Arc<dyn TaskStore>) {
        *write(&self.store) = store;
        // A listener on the previous store's signals would hear nothing of the new one.
        self.listening.store(false, Ordering::Release);
    }

    /// A task starts running here.
    pub(crate) fn run_here(self: &Arc<Self>, id: &str) -> Local {
        self.listen();
        let local = Local::default();
        lock(&self.local).insert(id.to_owned(), local.clone());
        local
    }

    /// A task stopped running here (its charge in the ledger lapses with its TTL).
    pub(crate) fn done_here(&self, id: &str) {
        lock(&self.local).remove(id);
        self.ledger.stopped(id);
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
