//! [`InflightRequests`]: the requests this side is serving (the peer's, or its own being
//! read by a transport), by id.
//!
//! The serving side registers each request before it starts (refusing an id that still
//! runs), keeps a [`Cancel`] handle to stop it when the peer sends `notifications/cancelled`
//! or the conversation ends, and removes its own entry, by its [`Ticket`], when the request
//! finishes. [`InflightRequests::spawn`] does all three for a request run as its own task.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;
#[cfg(feature = "client")]
use std::{
    future::Future,
    sync::{Arc, Weak},
};

#[cfg(feature = "client")]
use crate::protocol::ErrorObject;
use crate::protocol::RequestId;
use crate::sync::lock;

/// How a request being served is stopped.
pub(crate) trait Cancel: Clone {
    /// Stops the request; false if it had already ended.
    fn cancel(&self) -> bool;

    /// True when the request is known to have ended although its entry is still there (see
    /// [`InflightRequests::spawn`]): its id may be reused.
    fn has_ended(&self) -> bool {
        false
    }
}

#[cfg(feature = "client")]
/// A request run as a task is stopped by aborting the task (its future is dropped).
impl Cancel for tokio::task::AbortHandle {
    fn cancel(&self) -> bool {
        let running = !self.is_finished();
        self.abort();
        running
    }

    fn has_ended(&self) -> bool {
        self.is_finished()
    }
}

/// A request with this id is still being served: the peer reused a running id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StillRunning;

#[cfg(feature = "client")]
impl StillRunning {
    /// The JSON-RPC error that answers the second request.
    pub(crate) fn error_object(self) -> ErrorObject {
        ErrorObject::invalid_request(
            "Invalid request: a request with this id is already in progress",
        )
    }
}

/// One registration: a request that finishes removes the entry only if it still holds its
/// ticket, and not a later request's that reused the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

struct Table<H> {
    map: HashMap<RequestId, (Ticket, H)>,
    /// The next ticket; counted under the lock, so it costs no atomic operation.
    next: u64,
}

/// The requests being served, each with the handle `H` that stops it.
pub(crate) struct InflightRequests<H> {
    table: Mutex<Table<H>>,
}

impl<H> Default for InflightRequests<H> {
    fn default() -> Self {
        InflightRequests {
            table: Mutex::new(Table {
                map: HashMap::new(),
                next: 0,
            }),
        }
    }
}

impl<H> std::fmt::Debug for InflightRequests<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InflightRequests")
            .field("running", &self.len())
            .finish()
    }
}

impl<H> InflightRequests<H> {
    /// An empty table (allocates nothing until the first request).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Registers the request `id` with the handle `start` makes from the request's ticket.
    /// `start` runs under the table's lock, so a request started there (a spawned task)
    /// cannot finish, and remove itself, before it is registered. Fails, without calling
    /// `start`, while a request with this id still runs.
    /// Removes the entry of the finished request `id` registered with `ticket` (if a later
    /// request reused the id, its entry stays).
    pub(crate) fn finish(&self, id: &RequestId, ticket: Ticket) {
        let mut table = lock(&self.table);
        if table.map.get(id).is_some_and(|(t, _)| *t == ticket) {
            let entry = table.map.remove(id);
            drop(table);
            // The handle may be the last owner of something with a destructor of its own.
            drop(entry);
        }
    }

    /// How many requests are being served.
    pub(crate) fn len(&self) -> usize {
        lock(&self.table).map.len()
    }
}

impl<H: Cancel> InflightRequests<H> {
    /// Registers the request `id` with the handle `start` makes from the request's ticket.
    /// `start` runs under the table's lock, so a request started there (a spawned task)
    /// cannot finish, and remove itself, before it is registered; it must not take the
    /// lock itself. Fails, without calling `start`, while a request with this id still runs.
    pub(crate) fn start(
        &self,
        id: &RequestId,
        start: impl FnOnce(Ticket) -> H,
    ) -> Result<Ticket, StillRunning> {
        let mut table = lock(&self.table);
        let ticket = Ticket(table.next);
        match table.map.entry(id.clone()) {
            Entry::Occupied(slot) if !slot.get().1.has_ended() => Err(StillRunning),
            Entry::Occupied(mut slot) => {
                // A leftover of a request that ended without removing its entry.
                let stale = std::mem::replace(slot.get_mut(), (ticket, start(ticket)));
                table.next += 1;
                drop(table);
                drop(stale);
                Ok(ticket)
            }
            Entry::Vacant(slot) => {
                slot.insert((ticket, start(ticket)));
                table.next += 1;
                Ok(ticket)
            }
        }
    }

    /// Cancels the request `id` (the peer's `notifications/cancelled`); false if no request
    /// with this id runs here. The entry stays until the request finishes.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        // Cancel outside the lock: stopping a request may run its cleanup, which finishes it.
        let handle = lock(&self.table).map.get(id).map(|(_, h)| h.clone());
        handle.is_some_and(|h| h.cancel())
    }

    /// Cancels every request and empties the table (the conversation is over).
    pub(crate) fn cancel_all(&self) {
        let handles: Vec<H> = lock(&self.table).map.drain().map(|(_, (_, h))| h).collect();
        for h in handles {
            h.cancel();
        }
    }
}

#[cfg(feature = "client")]
impl InflightRequests<tokio::task::AbortHandle> {
    /// Runs `task` as the request `id` in a task of its own, registered until it ends:
    /// answered, or aborted by [`cancel`](Self::cancel) (even before it first ran).
    pub(crate) fn spawn<F>(self: &Arc<Self>, id: &RequestId, task: F) -> Result<(), StillRunning>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.start(id, |ticket| {
            // Moved into the task before it starts, so aborting it unregisters it too.
            let registered = Registered {
                table: Arc::downgrade(self),
                id: id.clone(),
                ticket,
            };
            let _starting = Starting::enter();
            tokio::spawn(async move {
                let _registered = registered;
                task.await;
            })
            .abort_handle()
        })
        .map(|_| ())
    }
}

#[cfg(feature = "client")]
thread_local! {
    /// True while this thread is inside `tokio::spawn` for [`InflightRequests::spawn`],
    /// which holds the table's lock.
    static STARTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as starting a task until dropped (also when `spawn` panics).
#[cfg(feature = "client")]
struct Starting;

#[cfg(feature = "client")]
impl Starting {
    fn enter() -> Starting {
        STARTING.set(true);
        Starting
    }
}

#[cfg(feature = "client")]
impl Drop for Starting {
    fn drop(&mut self) {
        STARTING.set(false);
    }
}

/// Unregisters a spawned request when its task's future is dropped.
#[cfg(feature = "client")]
struct Registered {
    table: Weak<InflightRequests<tokio::task::AbortHandle>>,
    id: RequestId,
    ticket: Ticket,
}

#[cfg(feature = "client")]
impl Drop for Registered {
    fn drop(&mut self) {
        // A runtime shutting down drops the future inside `spawn`, under the table's lock:
        // leave the entry then (its finished handle lets the id be reused) rather than
        // deadlock on the lock.
        if STARTING.get() {
            return;
        }
        if let Some(table) = self.table.upgrade() {
            table.finish(&self.id, self.ticket);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Clone)]
    struct Flag(Arc<AtomicBool>);

    impl Cancel for Flag {
        fn cancel(&self) -> bool {
            !self.0.swap(true, Ordering::AcqRel)
        }
    }

    #[test]
    fn a_running_id_is_refused_and_cancelled_by_id() {
        let table: InflightRequests<Flag> = InflightRequests::new();
        let a = Flag(Arc::default());
        let id = RequestId::Number(1);
        let ticket = table.start(&id, |_| a.clone()).unwrap();
        assert_eq!(
            table.start(&id, |_| unreachable!("not called for a running id")),
            Err(StillRunning)
        );
        assert!(table.cancel(&id));
        assert!(a.0.load(Ordering::Acquire));
        assert!(!table.cancel(&id), "already cancelled");
        assert!(!table.cancel(&RequestId::Number(2)));
        assert_eq!(
            table.len(),
            1,
            "a cancelled request stays until it finishes"
        );
        table.finish(&id, ticket);
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn finish_removes_only_its_own_entry_and_cancel_all_stops_everything() {
        let table: InflightRequests<Flag> = InflightRequests::new();
        let (a, b) = (Flag(Arc::default()), Flag(Arc::default()));
        let id = RequestId::from("r");
        let old = table.start(&id, |_| a.clone()).unwrap();
        table.cancel_all();
        let new = table.start(&id, |_| b.clone()).unwrap();
        assert_ne!(old, new);
        table.finish(&id, old);
        assert_eq!(
            table.len(),
            1,
            "a later request under the same id keeps its entry"
        );
        table.cancel_all();
        assert_eq!(table.len(), 0);
        assert!(a.0.load(Ordering::Acquire) && b.0.load(Ordering::Acquire));
    }

    #[cfg(feature = "client")]
    #[tokio::test]
    async fn a_spawned_request_leaves_the_table_when_it_ends_or_is_aborted() {
        use std::time::Duration;

        let table = Arc::new(InflightRequests::new());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        table
            .spawn(&RequestId::Number(1), async move {
                let _ = rx.await;
            })
            .unwrap();
        table
            .spawn(&RequestId::Number(2), std::future::pending())
            .unwrap();
        assert_eq!(table.len(), 2);
        assert!(table.cancel(&RequestId::Number(2)));
        tx.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            while table.len() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("both requests leave the table");
    }

    #[cfg(feature = "client")]
    #[tokio::test]
    async fn a_task_aborted_before_it_ran_does_not_block_its_id() {
        let table = Arc::new(InflightRequests::new());
        let id = RequestId::Number(1);
        table.spawn(&id, std::future::pending()).unwrap();
        // Aborted before the (current-thread) runtime ever polled it.
        assert!(table.cancel(&id));
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while table.spawn(&id, async {}).is_err() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the id is free again once the aborted task is gone");
    }

    #[cfg(feature = "client")]
    #[test]
    fn spawning_on_a_runtime_that_shut_down_does_not_deadlock() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let handle = rt.handle().clone();
            drop(rt);
            let _entered = handle.enter();
            let table = Arc::new(InflightRequests::new());
            // The runtime drops the task's future inside `spawn`, under the table's lock.
            let _ = table.spawn(&RequestId::Number(1), async {});
            let _ = done.send(table.spawn(&RequestId::Number(1), async {}).is_ok());
        });
        let reused = finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("spawn returned instead of deadlocking");
        assert!(reused, "the id of a task that never ran is free again");
    }
}
