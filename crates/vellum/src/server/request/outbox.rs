//! The per-request outbox: messages a handler emits while it runs (progress, logs, requests
//! to the client), drained in order by whoever drives the request (an HTTP response stream,
//! a stdio writer).
//!
//! It is a small bounded queue rather than a tokio channel because most requests never emit
//! anything: an empty `VecDeque` costs no allocation, while a channel allocates on creation.
//! The HTTP transport uses the same queue (of SSE events) to feed GET streams, for the same
//! reason: thousands of idle streams should cost nothing until something is sent.
//!
//! Not here: what the reader does with the messages (the exchange and the transports).

use crate::sync::lock;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::task::AtomicWaker;

/// How many messages may wait before a handler's sends wait for the reader.
pub(crate) const OUTBOX_CAPACITY: usize = 64;

struct Inner<T> {
    queue: VecDeque<T>,
    closed: bool,
    /// Senders waiting for room.
    blocked: Vec<Waker>,
}

impl<T> Default for Inner<T> {
    fn default() -> Self {
        Inner {
            queue: VecDeque::new(),
            closed: false,
            blocked: Vec::new(),
        }
    }
}

/// The outbox of one request (or, with another item type, any single-reader queue).
pub(crate) struct Outbox<T = Bytes> {
    inner: Mutex<Inner<T>>,
    /// The driver waiting for messages.
    reader: AtomicWaker,
}

impl<T> Default for Outbox<T> {
    fn default() -> Self {
        Outbox {
            inner: Mutex::new(Inner::default()),
            reader: AtomicWaker::new(),
        }
    }
}

/// The request has finished (or its stream is gone): nothing more can be sent on it.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request has already finished; its stream is closed")]
pub(crate) struct OutboxClosed;

impl<T> Outbox<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        // A poisoned lock only means a panic elsewhere while holding it; the queue is still
        // consistent (every operation is a single push or pop).
        lock(&self.inner)
    }

    /// Queues a message, waiting while the outbox is full.
    pub(crate) async fn send(&self, message: T) -> Result<(), OutboxClosed> {
        let mut message = Some(message);
        poll_fn(|cx| self.poll_send(cx, &mut message)).await
    }

    fn poll_send(
        &self,
        cx: &mut Context<'_>,
        slot: &mut Option<T>,
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

    /// Queues a message unless the outbox is full or closed (for senders that must not
    /// wait); false when it was not queued.
    pub(crate) fn try_send(&self, message: T) -> bool {
        let mut inner = self.lock();
        if inner.closed || inner.queue.len() >= OUTBOX_CAPACITY {
            return false;
        }
        inner.queue.push_back(message);
        drop(inner);
        self.reader.wake();
        true
    }

    /// Takes the next message, registering the reader's waker when there is none; `None`
    /// once the outbox is closed and empty.
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.reader.register(cx.waker());
        let mut inner = self.lock();
        match inner.queue.pop_front() {
            Some(m) => {
                for w in inner.blocked.drain(..) {
                    w.wake();
                }
                Poll::Ready(Some(m))
            }
            None if inner.closed => Poll::Ready(None),
            None => Poll::Pending,
        }
    }

    /// Takes the next message if one is waiting.
    #[cfg(test)]
    pub(crate) fn try_recv(&self) -> Option<T> {
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
