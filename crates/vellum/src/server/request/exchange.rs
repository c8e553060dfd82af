//! [`Exchange`]: one request being served, as a stream of what must be sent for it: the
//! messages its handler emits (in order), then its outcome.
//!
//! The exchange runs inside whatever polls it (an HTTP response body, a stdio task): no task
//! is spawned and no channel allocated for a request that just answers.
//!
//! Every transport starts a request here, the same way: [`Session::begin`] for a request
//! that arrived for a session (HTTP's `Mcp-Session-Id`, a message-stream connection), which
//! registers it in flight so that `notifications/cancelled` and duplicate ids find it, and
//! [`Exchange::sessionless`] for a 2026-07-28 request over HTTP, which stands alone.
//!
//! Not here: what runs (`methods/`, wrapped in the request middleware), and how a transport
//! writes the steps (JSON body, SSE events, a line per message).
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::BoxFuture;

use super::context::RequestContext;
use super::middleware::IncomingRequest;
use super::observe::{MessageEvent, Observers, observe};
use super::reply::Outcome;
use super::request::{RequestShared, Scope};
use crate::protocol::{ErrorObject, RawJson, Request, encode_error};
use crate::server::Server;
use crate::server::methods::{dispatch_boxed, dispatch_request};
use crate::server::modern_meta::ModernMeta;
use crate::server::session::{InflightGuard, Session};

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

impl Session {
    /// Starts serving a request that arrived for this session: a legacy request (its scope is
    /// this session), or a 2026-07-28 request on a message-stream connection (`modern`: its
    /// own `_meta`), which this session still tracks for cancellation. `http` is the HTTP
    /// request it came in, if any. Fails (with the error to answer) when a request with the
    /// same id is still in flight.
    pub(crate) fn begin(
        self: &Arc<Self>,
        request: Request,
        modern: Option<Box<ModernMeta>>,
        http: Option<http::request::Parts>,
    ) -> Result<Exchange, ErrorObject> {
        let scope = match modern {
            Some(meta) => Scope::Modern(meta),
            None => Scope::Legacy(self.clone()),
        };
        let shared = Arc::new(RequestShared::new(
            request.id,
            request.method,
            scope,
            self.server().clone(),
            http,
        ));
        let guard = self.register_inflight(&shared).map_err(|()| {
            ErrorObject::invalid_request(
                "Invalid request: a request with this id is already in progress",
            )
        })?;
        Ok(Exchange::start(shared, request.params, Some(guard)))
    }
}

impl Exchange {
    /// Starts serving a 2026-07-28 request that belongs to no session (HTTP): its context is
    /// its own `_meta`, and closing its stream is what cancels it.
    pub(crate) fn sessionless(
        server: Server,
        request: Request,
        meta: Box<ModernMeta>,
        http: Option<http::request::Parts>,
    ) -> Self {
        let shared = Arc::new(RequestShared::new(
            request.id,
            request.method,
            Scope::Modern(meta),
            server,
            http,
        ));
        Exchange::start(shared, request.params, None)
    }

    /// Starts serving `shared`'s request with these params: through the server's request
    /// middleware when it has any, straight to the dispatcher otherwise.
    fn start(
        shared: Arc<RequestShared>,
        params: Option<RawJson>,
        inflight: Option<InflightGuard>,
    ) -> Self {
        let middleware = shared.server.middleware();
        let handler = match middleware.chain(dispatch_boxed) {
            Some(next) => next.run(IncomingRequest::new(
                RequestContext::new(shared.clone()),
                params,
            )),
            None => Box::pin(dispatch_request(shared.clone(), params)),
        };
        Exchange {
            observers: middleware.observers(),
            shared,
            handler: Some(handler),
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
