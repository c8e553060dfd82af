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
//! Message observers are defined in `observe.rs` and re-exported here.
//!
//! Not here: HTTP-level concerns (headers, status codes, authentication of the connection),
//! which belong in a tower layer around the transport.

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::context::RequestContext;
pub use super::observe::MessageEvent;
use super::observe::Observers;
use super::reply::Outcome;
use super::request::RequestShared;
use crate::protocol::RawJson;

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

/// What a chain ends in: the dispatcher (given by whoever starts the request, so that the
/// chain does not depend on what it wraps).
pub(crate) type Terminal = fn(Arc<RequestShared>, Option<RawJson>) -> BoxFuture<'static, Outcome>;

/// The rest of the chain: the middleware added after this one, then the dispatcher.
pub struct Next {
    chain: Arc<[Arc<RequestFn>]>,
    index: usize,
    end: Terminal,
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
                    end: self.end,
                },
            ),
            None => (self.end)(request.ctx.shared, request.params),
        }
    }
}

/// The middleware of one server.
#[derive(Default, Clone)]
pub(crate) struct Middleware {
    requests: Option<Arc<[Arc<RequestFn>]>>,
    observers: Option<Observers>,
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

    /// The chain for one request ending in `end`, if there is any middleware.
    pub(crate) fn chain(&self, end: Terminal) -> Option<Next> {
        self.requests.clone().map(|chain| Next {
            chain,
            index: 0,
            end,
        })
    }

    /// The observers, if any (cloned out so no lock is held while they run).
    pub(crate) fn observers(&self) -> Option<Observers> {
        self.observers.clone()
    }
}
