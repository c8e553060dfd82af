//! The per-request outbox: messages a handler emits while it runs (progress, logs, requests
//! to the client), drained in order by whoever drives the request (an HTTP response stream,
//! a stdio writer).
//!
//! It is a small bounded queue rather than a tokio channel because most requests never emit
//! anything: an empty `VecDeque` costs no allocation, while a channel allocates on creation.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::task::AtomicWaker;

/// How many messages may wait before a handler's sends wait for the reader.
pub(crate) const OUTBOX_CAPACITY: usize = 64;

#[derive(Default)]
struct Inner {
    queue: VecDeque<Bytes>,
    closed: bool,
    /// Senders waiting for room.
    blocked: Vec<Waker>,
}

/// The outbox of one request.
#[derive(Default)]
pub(crate) struct Outbox {
    inner: Mutex<Inner>,
    /// The driver waiting for messages.
    reader: AtomicWaker,
}

/// The request has finished (or its stream is gone): nothing more can be sent on it.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request has already finished; its stream is closed")]
pub(crate) struct OutboxClosed;

impl Outbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic elsewhere while holding it; the queue is still
        // consistent (every operation is a single push or pop).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a message, waiting while the outbox is full.
    pub(crate) async fn send(&self, message: Bytes) -> Result<(), OutboxClosed> {
        let mut message = Some(message);
        poll_fn(|cx| self.poll_send(cx, &mut message)).await
    }

    fn poll_send(
        &self,
        cx: &mut Context<'_>,
        slot: &mut Option<Bytes>,
    ) -> Poll<Result<(), OutboxClosed>> {
        let mut inner = self.lock();
        if inner.closed {
            return Poll::Ready(Err(OutboxClosed));
        }
        if inner.queue.len() >= OUTBOX_CAPACITY {
            inner.blocked.push(cx.waker().clone());
            return Poll::Pending;
        }
        if let Some(m) = slot.take() {
            inner.queue.push_back(m);
        }
        drop(inner);
        self.reader.wake();
        Poll::Ready(Ok(()))
    }

    /// Queues a message if there is room, without waiting; false if the outbox is full or
    /// closed (the message is dropped).
    pub(crate) fn try_send(&self, message: Bytes) -> bool {
        let mut inner = self.lock();
        if inner.closed || inner.queue.len() >= OUTBOX_CAPACITY {
            return false;
        }
        inner.queue.push_back(message);
        drop(inner);
        self.reader.wake();
        true
    }

    /// Takes the next message, registering the reader's waker when there is none.
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.reader.register(cx.waker());
        self.try_recv()
            .map_or(Poll::Pending, |m| Poll::Ready(Some(m)))
    }

    /// Takes the next message if one is waiting.
    pub(crate) fn try_recv(&self) -> Option<Bytes> {
        let mut inner = self.lock();
        let m = inner.queue.pop_front();
        if m.is_some() && !inner.blocked.is_empty() {
            for w in inner.blocked.drain(..) {
                w.wake();
            }
        }
        m
    }

    /// Closes the outbox: later sends fail, waiting senders are released.
    pub(crate) fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        for w in inner.blocked.drain(..) {
            w.wake();
        }
    }

    /// Wakes the reader (used when something else it watches changed, such as cancellation).
    pub(crate) fn wake_reader(&self) {
        self.reader.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn order_capacity_and_close() {
        let o = std::sync::Arc::new(Outbox::default());
        for i in 0..OUTBOX_CAPACITY {
            o.send(Bytes::from(i.to_string())).await.unwrap();
        }
        // Full: the next send waits until the reader takes one.
        let o2 = o.clone();
        let blocked = tokio::spawn(async move { o2.send(Bytes::from_static(b"last")).await });
        tokio::task::yield_now().await;
        assert!(!blocked.is_finished());
        assert_eq!(o.try_recv().as_deref(), Some(&b"0"[..]));
        blocked.await.unwrap().unwrap();
        let mut n = 0;
        while o.try_recv().is_some() {
            n += 1;
        }
        assert_eq!(n, OUTBOX_CAPACITY);
        o.close();
        assert!(o.send(Bytes::new()).await.is_err());
    }
}
