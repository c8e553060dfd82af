//! Middleware: code that runs around every request the server dispatches (auth checks,
//! metrics, logging, rewriting), and observers that see every message the server sends and
//! every notification or answer it receives. Both wrap the one dispatch path, so they apply
//! to every transport and both protocol eras alike.
//!
//! ## Order
//! - Request middleware nest in the order they were added: the first added is the outermost.
//!   With `add_request_middleware(a)` then `add_request_middleware(b)`, a request runs
//!   `a → b → dispatch → b → a`. A middleware that does not call [`Next::run`] answers the
//!   request itself (for example with an error); the handler never runs.
//! - Message observers run in the order they were added, synchronously, before the message
//!   is handed to the transport (outgoing) or after it was decoded (incoming). They see the
//!   messages a handler emits (progress, logs, questions to the client), final responses
//!   (including those a request middleware produced), messages that belong to no request
//!   (list changes, resource updates), and the client's notifications and answers.
//!
//! Not here: HTTP-level concerns (headers, status codes, authentication of the connection),
//! which belong in a tower layer around the transport.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;

use super::context::RequestContext;
use super::dispatch::{Outcome, dispatch_request};
use crate::protocol::{Notification, RawJson, Response};

/// A request on its way to its handler, as request middleware see it.
#[derive(Debug)]
pub struct IncomingRequest {
    ctx: RequestContext,
    params: Option<RawJson>,
}

impl IncomingRequest {
    pub(crate) fn new(ctx: RequestContext, params: Option<RawJson>) -> Self {
        IncomingRequest { ctx, params }
    }

    /// The method.
    pub fn method(&self) -> &str {
        self.ctx.method()
    }

    /// The request's context: id, protocol version, client, session, HTTP parts (where an
    /// auth layer put the caller's identity).
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// The raw parameters.
    pub fn params(&self) -> Option<&RawJson> {
        self.params.as_ref()
    }

    /// Replaces the parameters the handler will see.
    pub fn set_params(&mut self, params: Option<RawJson>) {
        self.params = params;
    }
}

type RequestFn = dyn Fn(IncomingRequest, Next) -> BoxFuture<'static, Outcome> + Send + Sync;
type ObserverFn = dyn Fn(&MessageEvent<'_>) + Send + Sync;
/// A server's message observers, in the order they were added.
pub(crate) type Observers = Arc<[Arc<ObserverFn>]>;

/// The rest of the chain: the middleware added after this one, then the dispatcher.
pub struct Next {
    chain: Arc<[Arc<RequestFn>]>,
    index: usize,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &(self.chain.len() - self.index))
            .finish()
    }
}

impl Next {
    /// Passes the request on and resolves to what the rest of the chain answered.
    pub fn run(self, request: IncomingRequest) -> BoxFuture<'static, Outcome> {
        match self.chain.get(self.index).cloned() {
            Some(m) => m(
                request,
                Next {
                    chain: self.chain,
                    index: self.index + 1,
                },
            ),
            None => Box::pin(dispatch_request(request.ctx.shared, request.params)),
        }
    }
}

/// A message passing through the server, as observers see it.
#[derive(Debug)]
#[non_exhaustive]
pub enum MessageEvent<'a> {
    /// The server is sending this encoded JSON-RPC message (a response, a notification or a
    /// request to the client).
    Sending(&'a [u8]),
    /// A notification from the client.
    NotificationReceived(&'a Notification),
    /// The client's answer to one of the server's requests.
    ResponseReceived(&'a Response),
}

impl MessageEvent<'_> {
    /// The method of a notification or request (`None` for responses).
    pub fn method(&self) -> Option<Cow<'_, str>> {
        #[derive(Deserialize)]
        struct Peek<'a> {
            #[serde(borrow, default)]
            method: Option<Cow<'a, str>>,
        }
        match self {
            MessageEvent::Sending(b) => serde_json::from_slice::<Peek<'_>>(b).ok()?.method,
            MessageEvent::NotificationReceived(n) => Some(Cow::Borrowed(n.method.as_str())),
            MessageEvent::ResponseReceived(_) => None,
        }
    }
}

/// The middleware of one server.
#[derive(Default, Clone)]
pub(crate) struct Middleware {
    requests: Option<Arc<[Arc<RequestFn>]>>,
    observers: Option<Arc<[Arc<ObserverFn>]>>,
}

impl Middleware {
    pub(crate) fn add_request<F, Fut>(&mut self, f: F)
    where
        F: Fn(IncomingRequest, Next) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        let f: Arc<RequestFn> = Arc::new(move |r, n| Box::pin(f(r, n)));
        let mut v: Vec<_> = self
            .requests
            .iter()
            .flat_map(|a| a.iter().cloned())
            .collect();
        v.push(f);
        self.requests = Some(v.into());
    }

    pub(crate) fn add_observer<F>(&mut self, f: F)
    where
        F: Fn(&MessageEvent<'_>) + Send + Sync + 'static,
    {
        let mut v: Vec<_> = self
            .observers
            .iter()
            .flat_map(|a| a.iter().cloned())
            .collect();
        v.push(Arc::new(f));
        self.observers = Some(v.into());
    }

    /// The chain for one request, if there is any middleware.
    pub(crate) fn chain(&self) -> Option<Next> {
        self.requests.clone().map(|chain| Next { chain, index: 0 })
    }

    /// The observers, if any (cloned out so no lock is held while they run).
    pub(crate) fn observers(&self) -> Option<Observers> {
        self.observers.clone()
    }
}

/// Runs the observers on one event.
pub(crate) fn observe(observers: &[Arc<ObserverFn>], event: &MessageEvent<'_>) {
    for o in observers {
        o(event);
    }
}
