//! [`Client`]: the cheap-to-clone handle on one connection, and the state its parts share:
//! the transport, the configuration, the peer bookkeeping (ids, calls waiting for answers,
//! the server's requests being served), and what the handshake established.
//!
//! The parts of the client each add their methods to [`Client`] in their own file: the
//! handshake (`handshake.rs`), the call engine (`engine.rs`), MRTR rounds
//! (`input_rounds.rs`), the typed calls (`calls.rs`), subscriptions (`subscriptions.rs`);
//! the reader of what the server sends (`reader.rs`) works on [`Inner`]. The builder
//! assembles the state and starts the reader.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::callbacks::ProgressHandler;
use super::config::Config;
use super::mirror::ParamHeader;
use crate::client::transport::Transport;
use crate::error::{Error, TransportError};
use crate::peer::{InflightRequests, PendingAnswers, RequestIds};
use crate::protocol::{
    Implementation, LoggingLevel, RawJson, ServerCapabilities, SubscriptionFilter,
};
use crate::sync::{read, write};

/// What the handshake established.
#[derive(Debug, Clone)]
pub(super) struct SessionState {
    pub(super) modern: bool,
    /// The negotiated (legacy) or requested (modern) version string.
    pub(super) version: String,
    pub(super) server_info: Option<Implementation>,
    pub(super) capabilities: ServerCapabilities,
    pub(super) instructions: Option<String>,
    pub(super) supported_versions: Vec<String>,
    /// `x-mcp-header` annotations of the tools seen in `tools/list`, by tool name.
    pub(super) tool_headers: HashMap<String, Vec<ParamHeader>>,
}

/// What a waiting call keeps beside its entry in [`Inner::pending`].
pub(super) struct CallMeta {
    /// Restarts the caller's timeout (a progress notification arrived).
    pub(super) alive: Arc<Notify>,
    /// The caller's progress callback, when it asked for progress.
    pub(super) progress: Option<ProgressHandler>,
}

/// The state every clone of a [`Client`] shares.
pub(super) struct Inner {
    pub(super) transport: Arc<dyn Transport>,
    pub(super) config: Config,
    /// Ids of the client's requests.
    pub(super) ids: RequestIds,
    /// The client's calls waiting for the server's answers.
    pub(super) pending: PendingAnswers<Result<RawJson, Error>, CallMeta>,
    /// `subscriptions/listen` requests waiting for their acknowledgement.
    pub(super) listen_acks: PendingAnswers<SubscriptionFilter>,
    /// The server's requests being answered (legacy), for its cancellations.
    pub(super) serving: Arc<InflightRequests<tokio::task::AbortHandle>>,
    pub(super) state: RwLock<Option<SessionState>>,
    pub(super) log_level: RwLock<Option<LoggingLevel>>,
    /// Serialises re-initialisations.
    pub(super) reinit: tokio::sync::Mutex<()>,
    /// Counts finished handshakes (a re-initialisation compares it to know it is needed).
    pub(super) generation: AtomicU64,
    /// Set by [`Client::close`].
    pub(super) closed: AtomicBool,
    /// Set once the transport ended for good: `Some` with the reason it gave.
    pub(super) ended: OnceLock<Option<TransportError>>,
    /// Cancelled when the last `Client` handle is dropped: the reader then stops and lets go
    /// of the transport (a child process is killed, connections close).
    pub(super) dropped: CancellationToken,
    /// Cancelled once no call can be made any more (closed, or the transport ended).
    pub(super) gone: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

impl Inner {
    /// Why no call can be made any more, if none can: closed by the caller, or the
    /// transport ended.
    pub(super) fn end_error(&self) -> Option<Error> {
        if self.closed.load(Ordering::Acquire) {
            return Some(Error::session_closed());
        }
        self.ended.get().map(|reason| match reason {
            Some(e) => Error::from(e.clone()),
            None => Error::session_closed(),
        })
    }

    /// Ends every waiting call with [`end_error`](Self::end_error) (or `SessionClosed`) and
    /// stops answering the server.
    pub(super) fn fail_all(&self) {
        self.pending
            .fail_all(|| Err(self.end_error().unwrap_or(Error::session_closed())));
        self.listen_acks.clear();
        self.serving.cancel_all();
        self.gone.cancel();
    }
}

/// A connection to an MCP server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("Client")
            .field(
                "protocol_version",
                &state.as_ref().map(|s| s.version.clone()),
            )
            .field("server", &state.and_then(|s| s.server_info))
            .finish_non_exhaustive()
    }
}

impl Client {
    pub(super) fn state(&self) -> Option<SessionState> {
        read(&self.inner.state).clone()
    }

    /// Reads the handshake's state without copying it (the hot path of every call).
    pub(super) fn with_state<R>(&self, f: impl FnOnce(Option<&SessionState>) -> R) -> R {
        f(read(&self.inner.state).as_ref())
    }

    pub(super) fn set_state(&self, state: SessionState) {
        *write(&self.inner.state) = Some(state);
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The protocol version in use (`"2026-07-28"` for the modern era).
    pub fn protocol_version(&self) -> Option<String> {
        self.with_state(|s| s.map(|s| s.version.clone()))
    }

    /// True when the client speaks the stateless 2026-07-28 era with this server.
    pub fn is_modern(&self) -> bool {
        self.with_state(|s| s.is_some_and(|s| s.modern))
    }

    /// The server's identity, when it told it (`initialize`, or `server/discover`'s `_meta`).
    pub fn server_info(&self) -> Option<Implementation> {
        self.state().and_then(|s| s.server_info)
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.state().map(|s| s.capabilities).unwrap_or_default()
    }

    /// The server's instructions for the model, if any.
    pub fn instructions(&self) -> Option<String> {
        self.state().and_then(|s| s.instructions)
    }

    /// The versions a modern server listed in `server/discover`.
    pub fn supported_versions(&self) -> Vec<String> {
        self.state()
            .map(|s| s.supported_versions)
            .unwrap_or_default()
    }

    /// Waits until no call can be made any more (the transport ended: the server process
    /// exited, say; or [`close`](Self::close) was called), and says why.
    pub async fn closed(&self) -> Error {
        self.inner.gone.cancelled().await;
        self.inner.end_error().unwrap_or(Error::session_closed())
    }

    /// True once no call can be made any more (see [`closed`](Self::closed)): already while
    /// the calls that were waiting get their errors.
    pub fn is_closed(&self) -> bool {
        self.inner.end_error().is_some()
    }

    /// Closes the connection: cancels what is waiting and ends the session (HTTP DELETE, or
    /// the child process), bounded in time.
    pub async fn close(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inner.transport.close().await;
        self.inner.fail_all();
    }
}
