//! [`Upstream`]: what a server forwards its requests to instead of serving them from its own
//! registries (a gateway in front of another MCP server).
//!
//! A server with an upstream still answers what is about the connection itself: `initialize`
//! (negotiated and recorded here; the result's capabilities, identity and instructions come
//! from [`Upstream::open_session`]), `ping`, `server/discover` (from
//! [`Upstream::describe`]) and `subscriptions/listen` (its streams are this server's). The
//! session state a legacy client sets (`logging/setLevel`, `resources/subscribe`,
//! `resources/unsubscribe`) is recorded here and then forwarded. Every other request, whatever
//! its method, goes to [`Upstream::forward`] on the one dispatch path, after what every
//! request gets (its `_meta`, the 2026-07-28 multi round-trip attempt, per-tool scopes) and
//! before the result is framed for the client's era.
//!
//! Not here: the forwarding path itself (`methods/forward.rs`) and any upstream (the
//! gateway, `crate::gateway`, is one).

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::handler_error::HandlerError;
use super::request::context::RequestContext;
use super::session_ref::SessionRef;
use crate::protocol::{
    ErrorObject, InitializeParams, InitializeResult, Notification, ParamHeader, RawJson,
};

/// Where a server's requests go when it forwards them (which ones: the module docs of
/// `server/upstream.rs`).
///
/// Set with [`Server::set_upstream`](super::Server::set_upstream). Each method returns a
/// boxed future (the trait is object safe), and none is called with a lock held.
pub trait Upstream: Send + Sync + 'static {
    /// A legacy session initializes: open what serves it, with the client's own `initialize`
    /// params, and say what the server is (the result's capabilities, `serverInfo`,
    /// `instructions` and the version the upstream chose; the server negotiates the version
    /// it answers within its own). An error is the answer to `initialize`.
    fn open_session(
        &self,
        session: SessionRef,
        params: InitializeParams,
    ) -> BoxFuture<'static, Result<InitializeResult, ErrorObject>>;

    /// What the server is, for `server/discover` and `subscriptions/listen` of 2026-07-28
    /// requests (which belong to no session).
    fn describe(&self) -> BoxFuture<'static, Result<InitializeResult, ErrorObject>>;

    /// Serves one request: its raw params in (without the `inputResponses` and
    /// `requestState` the server took out), its raw result out. Its context says who asks,
    /// in which era and session, and asks the client what the upstream asks.
    fn forward(
        &self,
        request: ForwardedRequest,
    ) -> BoxFuture<'static, Result<RawJson, HandlerError>>;

    /// A notification of the client the server does not consume itself
    /// (`notifications/roots/list_changed`, unknown ones); `session` is the legacy session
    /// it came in.
    fn notification(&self, _session: Option<&SessionRef>, _notification: &Notification) {}

    /// A legacy session ended (closed by the client, expired, or dropped).
    fn session_closed(&self, _session: &SessionRef) {}

    /// The `x-mcp-header` arguments of one of the upstream's tools, when known: the server
    /// then checks a 2026-07-28 call's `Mcp-Param-*` headers against them (SEP-2243) before
    /// forwarding it, as it does for its own tools.
    fn param_headers(&self, _tool: &str) -> Option<Arc<[ParamHeader]>> {
        None
    }

    /// A `subscriptions/listen` stream started (`watching`) or stopped watching a resource:
    /// an upstream that must subscribe to hear about it does so here (calls balance: one
    /// `false` for each `true`).
    fn watch_resource(&self, _uri: &str, _watching: bool) {}
}

/// One request on its way to an [`Upstream`].
#[derive(Debug)]
#[non_exhaustive]
pub struct ForwardedRequest {
    /// The request's context: its id, method, era, session, `_meta`, HTTP parts, and the way
    /// to ask the client (progress, logs, sampling, elicitation, roots).
    pub context: RequestContext,
    /// The params as the client sent them, less what the server consumed (`inputResponses`
    /// and `requestState` of a 2026-07-28 retry).
    pub params: Option<RawJson>,
}
