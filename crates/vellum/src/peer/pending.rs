//! [`PendingAnswers`]: this side's requests waiting for the peer's answer.
//!
//! Whoever sends a request registers it with [`PendingAnswers::wait_for`] before the request
//! leaves, and awaits the [`Waiter`] it gets back; the read side hands the peer's answer to
//! [`PendingAnswers::resolve`]. A waiter that is dropped or [abandoned](Waiter::abandon)
//! before its answer arrived removes its entry, so a late answer finds nobody and the map
//! never keeps requests nobody waits for.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::protocol::RequestId;
use crate::sync::lock;

/// One waiting request: where its answer goes, and what the waiting side keeps with it.
struct Entry<T, M> {
    answer: oneshot::Sender<T>,
    // Only the client reads it (`with`); the server keeps `()` there.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    meta: M,
}

/// Requests waiting for answers of type `T`, each with a value `M` the waiting side keeps
/// beside it (the client keeps its progress callback there; the server keeps nothing).
pub(crate) struct PendingAnswers<T, M = ()> {
    map: Mutex<HashMap<RequestId, Entry<T, M>>>,
}

impl<T, M> Default for PendingAnswers<T, M> {
    fn default() -> Self {
        PendingAnswers {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<T, M> std::fmt::Debug for PendingAnswers<T, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingAnswers")
            .field("waiting", &self.len())
            .finish()
    }
}

impl<T, M> PendingAnswers<T, M> {
    /// An empty map (allocates nothing until the first request).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Starts waiting for the answer to `id`. Ids come from one [`RequestIds`](super::RequestIds)
    /// counter, so none is waited for twice; were one reused, the newer waiter would replace
    /// the older, whose wait then ends without an answer.
    pub(crate) fn wait_for(&self, id: RequestId, meta: M) -> Waiter<'_, T, M> {
        let (answer, rx) = oneshot::channel();
        lock(&self.map).insert(id.clone(), Entry { answer, meta });
        Waiter {
            answers: self,
            id,
            rx,
            waiting: true,
        }
    }

    /// Hands the peer's answer to the request `id`; false when nobody waits for it (a late
    /// or duplicate answer, or one meant for another instance).
    pub(crate) fn resolve(&self, id: &RequestId, answer: T) -> bool {
        let entry = lock(&self.map).remove(id);
        entry.is_some_and(|e| e.answer.send(answer).is_ok())
    }

    #[cfg(feature = "client")]
    /// Runs `f` on what the waiting side keeps with request `id`, if it is still waiting.
    /// `f` runs under the map's lock: keep it short (clone what it needs and return).
    pub(crate) fn with<R>(&self, id: &RequestId, f: impl FnOnce(&M) -> R) -> Option<R> {
        lock(&self.map).get(id).map(|e| f(&e.meta))
    }

    #[cfg(feature = "client")]
    /// Ends every wait with the answer `answer()` makes (the conversation is over).
    pub(crate) fn fail_all(&self, mut answer: impl FnMut() -> T) {
        let entries: Vec<Entry<T, M>> = lock(&self.map).drain().map(|(_, e)| e).collect();
        for e in entries {
            let _ = e.answer.send(answer());
        }
    }

    /// Ends every wait without an answer ([`Waiter::answer`] returns `None`).
    pub(crate) fn clear(&self) {
        // Drop the senders outside the lock: a waiter woken by the drop may take it at once.
        let entries: Vec<Entry<T, M>> = lock(&self.map).drain().map(|(_, e)| e).collect();
        drop(entries);
    }

    /// How many requests are waiting.
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }

    fn forget(&self, id: &RequestId) {
        let entry = lock(&self.map).remove(id);
        drop(entry);
    }
}

/// The wait for one answer. Dropping it before the answer arrived forgets the request.
pub(crate) struct Waiter<'a, T, M = ()> {
    answers: &'a PendingAnswers<T, M>,
    id: RequestId,
    rx: oneshot::Receiver<T>,
    /// True while the entry may still be in the map.
    waiting: bool,
}

impl<T, M> std::fmt::Debug for Waiter<'_, T, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("id", &self.id)
            .field("waiting", &self.waiting)
            .finish()
    }
}

impl<T, M> Waiter<'_, T, M> {
    /// The id of the request.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// The answer, or `None` when the wait ended without one ([`PendingAnswers::clear`], or a
    /// newer waiter under the same id). Cancel-safe: awaiting it again after a timeout or a
    /// `select!` branch keeps waiting for the same answer.
    pub(crate) async fn answer(&mut self) -> Option<T> {
        let outcome = (&mut self.rx).await.ok();
        // Either way the entry left the map: `resolve` or `clear` took it out.
        self.waiting = false;
        outcome
    }

    /// Stops waiting now: a later answer finds nobody (call it before telling the peer
    /// that the request is cancelled, so the peer's answer cannot race the cancellation).
    pub(crate) fn abandon(&mut self) {
        if self.waiting {
            self.waiting = false;
            self.answers.forget(&self.id);
        }
    }

    /// True until the answer arrived or the wait was abandoned.
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting
    }
}

impl<T, M> Drop for Waiter<'_, T, M> {
    fn drop(&mut self) {
        self.abandon();
    }
}

// The client uses every part of the map; the server only some.
#[cfg(all(test, feature = "client"))]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn an_answer_reaches_its_waiter_once() {
        let pending: PendingAnswers<u32, &'static str> = PendingAnswers::new();
        let mut w = pending.wait_for(RequestId::Number(1), "progress");
        assert_eq!(pending.with(w.id(), |m| *m), Some("progress"));
        assert!(pending.resolve(&RequestId::Number(1), 7));
        assert!(
            !pending.resolve(&RequestId::Number(1), 8),
            "a duplicate finds nobody"
        );
        assert_eq!(w.answer().await, Some(7));
        assert!(!w.is_waiting());
        assert_eq!(pending.len(), 0);
    }

    #[tokio::test]
    async fn a_dropped_or_abandoned_waiter_is_forgotten() {
        let pending: PendingAnswers<u32> = PendingAnswers::new();
        let w = pending.wait_for(RequestId::Number(1), ());
        drop(w);
        assert_eq!(pending.len(), 0);
        assert!(!pending.resolve(&RequestId::Number(1), 1));

        let mut w = pending.wait_for(RequestId::from("x"), ());
        // A wait cut short by a timeout can be resumed, then abandoned.
        let timed_out = tokio::time::timeout(Duration::from_millis(1), w.answer()).await;
        assert!(timed_out.is_err());
        assert!(w.is_waiting());
        w.abandon();
        assert_eq!(pending.len(), 0);
    }

    #[tokio::test]
    async fn fail_all_and_clear_end_every_wait() {
        let pending: PendingAnswers<Result<u32, &'static str>> = PendingAnswers::new();
        let mut a = pending.wait_for(RequestId::Number(1), ());
        let mut b = pending.wait_for(RequestId::Number(2), ());
        pending.fail_all(|| Err("closed"));
        assert_eq!(a.answer().await, Some(Err("closed")));
        assert_eq!(b.answer().await, Some(Err("closed")));

        let mut c = pending.wait_for(RequestId::Number(3), ());
        pending.clear();
        assert_eq!(c.answer().await, None);
        assert_eq!(pending.len(), 0);
    }
}
