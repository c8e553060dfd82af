//! [`SessionRef`]: the handle an [`Upstream`](super::Upstream) keeps on a legacy session of
//! its server, to reach the session's client outside any request and to end the session.
//!
//! Not here: the session itself (`session.rs`).

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::session::Session;
use crate::error::Error;
use crate::protocol::{
    ClientCapabilities, Implementation, InitializeParams, LoggingLevel, encode_notification,
};

/// A handle on a legacy session of a server with an [`Upstream`](crate::server::Upstream):
/// what the upstream keeps
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
    /// The handle of `session`.
    pub(crate) fn of(session: &Session) -> Self {
        SessionRef {
            key: session.registry_key(),
            session: session.weak_self(),
        }
    }

    fn live(&self) -> Result<Arc<Session>, Error> {
        self.session
            .upgrade()
            .filter(|s| !s.is_closed())
            .ok_or(Error::session_closed())
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
    pub async fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), Error> {
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
        let raw = session
            .request_client(method, params, None, timeout)
            .await?;
        Ok(raw.parse()?)
    }

    /// Stops the session taking new requests (over HTTP the client's next request gets 404,
    /// so it initializes a new session), leaving the requests in flight to finish: for an
    /// upstream whose backend of the session ended, until its calls have their errors; then
    /// [`close`](Self::close) it.
    pub fn retire(&self) {
        if let Some(s) = self.session.upgrade() {
            s.retire();
        }
    }

    /// Ends the session: its running requests are cancelled, and the transport forgets it
    /// (over HTTP the client's next request gets 404, so it initializes a new one).
    pub fn close(&self) {
        if let Some(s) = self.session.upgrade() {
            s.close();
        }
    }
}
