//! [`Exchange`]: one request being served, as a stream of what must be sent for it: the
//! messages its handler emits (in order), then its outcome.
//!
//! The exchange runs inside whatever polls it (an HTTP response body, a stdio task): no task
//! is spawned and no channel allocated for a request that just answers.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::BoxFuture;

use super::context::RequestShared;
use super::dispatch::{Outcome, handle_request};
use super::middleware::{MessageEvent, Observers, observe};
use super::session::InflightGuard;
use crate::protocol::RawJson;
use crate::protocol::encode_error;

/// One step of an exchange.
#[derive(Debug)]
pub(crate) enum Step {
    /// A message for the request's stream (progress, log, a request to the client).
    Message(Bytes),
    /// The request is done; the exchange yields nothing after this.
    Finished(Outcome),
}

/// A request being served.
pub(crate) struct Exchange {
    shared: Arc<RequestShared>,
    /// The server's message observers, taken once per request (none: nothing to do).
    observers: Option<Observers>,
    handler: Option<BoxFuture<'static, Outcome>>,
    /// The outcome, held back until the messages emitted before it are out.
    outcome: Option<Outcome>,
    finished: bool,
    /// Registered in the session's in-flight map until the request finishes.
    _inflight: Option<InflightGuard>,
}

impl Exchange {
    /// Starts serving `shared`'s request with these params.
    pub(crate) fn new(
        shared: Arc<RequestShared>,
        params: Option<RawJson>,
        inflight: Option<InflightGuard>,
    ) -> Self {
        let middleware = shared.server.middleware();
        let fut = handle_request(shared.clone(), params, middleware.chain());
        Exchange {
            observers: middleware.observers(),
            shared,
            handler: Some(Box::pin(fut)),
            outcome: None,
            finished: false,
            _inflight: inflight,
        }
    }

    /// The request's shared state.
    pub(crate) fn shared(&self) -> &Arc<RequestShared> {
        &self.shared
    }

    /// True once [`Step::Finished`] was yielded.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Polls for the next step.
    pub(crate) fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Option<Step>> {
        if self.finished {
            return Poll::Ready(None);
        }
        if self.shared.is_cancelled() && self.outcome.is_none() {
            // Cancelled: drop the handler, send nothing more (not even queued messages).
            self.handler = None;
            return Poll::Ready(Some(self.finish(Outcome::Silent)));
        }
        if let Some(fut) = self.handler.as_mut()
            && let Poll::Ready(outcome) = fut.as_mut().poll(cx)
        {
            self.handler = None;
            self.outcome = Some(outcome);
        }
        // Messages emitted before (or while) the handler finished go out first.
        match self.shared.outbox.poll_recv(cx) {
            Poll::Ready(Some(m)) => {
                if let Some(o) = &self.observers {
                    observe(o, &MessageEvent::Sending(&m));
                }
                return Poll::Ready(Some(Step::Message(m)));
            }
            Poll::Ready(None) | Poll::Pending => {}
        }
        match self.outcome.take() {
            Some(outcome) => {
                self.observe_outcome(&outcome);
                Poll::Ready(Some(self.finish(outcome)))
            }
            None => Poll::Pending,
        }
    }

    fn observe_outcome(&self, outcome: &Outcome) {
        let Some(o) = &self.observers else { return };
        match outcome {
            Outcome::Reply(b) => observe(o, &MessageEvent::Sending(b)),
            Outcome::Error(e) => {
                let b = encode_error(Some(&self.shared.id), e);
                observe(o, &MessageEvent::Sending(&b));
            }
            Outcome::Silent => {}
        }
    }

    fn finish(&mut self, outcome: Outcome) -> Step {
        self.finished = true;
        self.shared.outbox.close();
        // The id is free again as soon as the answer exists (before it is written out).
        self._inflight = None;
        Step::Finished(outcome)
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.shared.outbox.close();
    }
}

impl futures_util::Stream for Exchange {
    type Item = Step;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Step>> {
        self.get_mut().poll_step(cx)
    }
}
