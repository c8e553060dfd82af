//! [`Upstream`]: what a server forwards its requests to instead of serving them from its own
//! registries (a gateway in front of another MCP server), and [`SessionRef`], the handle an
//! upstream keeps on a session of this server.
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

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::context::RequestContext;
use super::handler_error::HandlerError;
use super::session::Session;
use crate::error::Error;
use crate::protocol::{
    ClientCapabilities, ErrorObject, Implementation, InitializeParams, InitializeResult,
    LoggingLevel, Notification, RawJson, encode_notification,
};

/// Where a server's requests go when it forwards them (see the [module](self) for which).
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
    fn forward(&self, request: ForwardedRequest) -> BoxFuture<'static, Result<RawJson, HandlerError>>;

    /// A notification of the client the server does not consume itself
    /// (`notifications/roots/list_changed`, unknown ones); `session` is the legacy session
    /// it came in.
    fn notification(&self, _session: Option<&SessionRef>, _notification: &Notification) {}

    /// A legacy session ended (closed by the client, expired, or dropped).
    fn session_closed(&self, _session: &SessionRef) {}

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

/// A handle on a legacy session of a server with an [`Upstream`]: what the upstream keeps
/// to reach the session's client outside any request, and to end the session.
///
/// Cheap to clone; it does not keep the session alive. Equal handles name the same session.
#[derive(Clone)]
pub struct SessionRef {
    key: u64,
    session: Weak<Session>,
}

impl std::fmt::Debug for SessionRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRef")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SessionRef {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for SessionRef {}

impl std::hash::Hash for SessionRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl SessionRef {
    pub(crate) fn new(key: u64, session: Weak<Session>) -> Self {
        SessionRef { key, session }
    }

    fn live(&self) -> Result<Arc<Session>, Error> {
        self.session
            .upgrade()
            .filter(|s| !s.is_closed())
            .ok_or(Error::SessionClosed)
    }

    /// A number naming this session among the server's sessions (stable for its life; a
    /// stdio session has no transport id, but has this).
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The transport's session id (`Mcp-Session-Id`), if it has one.
    pub fn id(&self) -> Option<String> {
        self.session.upgrade()?.id().map(str::to_owned)
    }

    /// True while the session is open.
    pub fn is_open(&self) -> bool {
        self.live().is_ok()
    }

    /// What the client said in `initialize`, as params to send on (for an upstream that opens
    /// what serves the session lazily, e.g. after the session was restored on another
    /// instance); `None` before `initialize` or once the session is gone.
    pub fn initialize_params(&self) -> Option<InitializeParams> {
        let s = self.session.upgrade()?;
        if !s.is_initialized() {
            return None;
        }
        Some(InitializeParams {
            protocol_version: s.protocol_version().as_str().to_owned(),
            capabilities: s
                .client_capabilities()
                .cloned()
                .unwrap_or_else(ClientCapabilities::default),
            client_info: s
                .client_info()
                .cloned()
                .unwrap_or_else(|| Implementation::new("unknown", "0")),
            meta: None,
        })
    }

    /// The level the client set with `logging/setLevel`, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.session.upgrade()?.log_level()
    }

    /// True if the client subscribed to `uri` (`resources/subscribe`).
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.session.upgrade().is_some_and(|s| s.is_subscribed(uri))
    }

    /// Sends an encoded message that belongs to no request (a list change, a resource
    /// update, a log line) on the session's stream for them (the GET stream over HTTP).
    pub async fn send(&self, message: Bytes) -> Result<(), Error> {
        self.live()?.send_unrelated(message).await
    }

    /// Sends a notification that belongs to no request.
    pub async fn notify<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> Result<(), Error> {
        self.send(encode_notification(method, Some(params))?).await
    }

    /// Asks the client something outside any request (on the session's stream for
    /// unsolicited messages) and waits at most `timeout` for the answer.
    pub async fn request<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<R, Error> {
        let session = self.live()?;
        let raw = session.request_client(method, params, None, timeout).await?;
        Ok(raw.parse()?)
    }

    /// Ends the session: its running requests are cancelled, and the transport forgets it
    /// (over HTTP the client's next request gets 404, so it initializes a new one).
    pub fn close(&self) {
        if let Some(s) = self.session.upgrade() {
            s.close();
        }
    }
}
