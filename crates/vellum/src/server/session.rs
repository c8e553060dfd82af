//! A legacy session: what `initialize` negotiated, and the bookkeeping that lets requests,
//! cancellations and the client's answers find each other. Transport-agnostic: the HTTP
//! handler keeps one per `Mcp-Session-Id`, stdio one per connection.
//!
//! A session owns no task. Its state is a few atomics and small maps that stay empty
//! (allocation-free) until used.
//!
//! Not here: serving the session's requests (`exchange.rs`, `methods/`), and HTTP's view of
//! sessions (the transport's session table).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::Serialize;
use tokio::sync::oneshot;

use super::Server;
use super::outbox::Outbox;
use super::redact::redact_session_id;
use crate::error::Error;
use crate::protocol::{
    CancelledParams, ClientCapabilities, ErrorObject, Implementation, LoggingLevel,
    ProtocolVersion, RawJson, RequestId, methods,
};
use crate::protocol::{encode_notification, encode_request};
use crate::store::SessionRecord;
use crate::sync::lock;

/// What the client said in `initialize`.
#[derive(Debug, Clone)]
pub(crate) struct ClientInit {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Option<Implementation>,
}

/// What a transport does for a session beyond serving its requests: where messages that
/// belong to no request go (the standalone GET stream on HTTP, stdout on stdio), and, when
/// several instances share the session, how changes and stray messages reach the others.
pub(crate) trait SessionHooks: Send + Sync {
    /// Delivers (or stores for later delivery) one encoded message.
    fn send(&self, message: Bytes) -> BoxFuture<'static, Result<(), Error>>;

    /// The session's shared state (log level, subscriptions, handshake) changed.
    fn state_changed(&self, _session: &Session) {}

    /// The client answered a request nobody here waits for (it may be another instance's).
    fn unmatched_response(&self, _message: Bytes) {}

    /// The client cancelled a request that does not run here.
    fn unmatched_cancel(&self, _message: Bytes) {}

    /// A prefix that makes this instance's request ids unique among instances sharing the
    /// session.
    fn request_id_prefix(&self) -> Option<&str> {
        None
    }
}

/// A request of the client being served, as its session sees it: an id it answers, and a
/// way to stop it (`notifications/cancelled`, the session's end).
pub(crate) trait InflightRequest: Send + Sync {
    /// The request's id.
    fn request_id(&self) -> &RequestId;
    /// Cancels the request: its driver drops the handler and sends nothing more.
    fn cancel(&self);
}

type Pending = oneshot::Sender<Result<RawJson, ErrorObject>>;

/// One legacy session.
pub(crate) struct Session {
    id: Option<Arc<str>>,
    server: Server,
    /// A stateless request's throwaway session: it cannot ask the client anything.
    temporary: bool,
    init: OnceLock<ClientInit>,
    initialized: AtomicBool,
    /// 0 = no level set; otherwise 1 + the level's index.
    log_level: AtomicU8,
    next_request_id: AtomicI64,
    /// Our requests to the client, waiting for answers.
    pending: Mutex<HashMap<RequestId, Pending>>,
    /// The client's requests being served (for cancellation and duplicate-id detection).
    inflight: Mutex<HashMap<RequestId, Weak<dyn InflightRequest>>>,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<BTreeSet<String>>,
    hooks: OnceLock<Arc<dyn SessionHooks>>,
    closed: AtomicBool,
    registry_key: u64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id.as_deref().map(redact_session_id))
            .field("temporary", &self.temporary)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session that waits for `initialize`.
    pub(crate) fn new(server: Server, id: Option<Arc<str>>) -> Arc<Session> {
        Self::build(server, id, false, None)
    }

    /// A throwaway session for one stateless request, as if initialized with `version`.
    pub(crate) fn temporary(server: Server, version: ProtocolVersion) -> Arc<Session> {
        let init = ClientInit {
            version,
            capabilities: ClientCapabilities::default(),
            info: None,
        };
        let s = Self::build(server, None, true, Some(init));
        // No `logging/setLevel` can reach a throwaway session: log from `info` up, as the Go
        // SDK does, so a stateless handler's logs reach its response.
        s.store_log_level(LoggingLevel::Info);
        s
    }

    /// A throwaway session for a stateless `initialize` (it negotiates, then is dropped).
    pub(crate) fn temporary_uninitialized(server: Server) -> Arc<Session> {
        Self::build(server, None, true, None)
    }

    fn build(
        server: Server,
        id: Option<Arc<str>>,
        temporary: bool,
        init: Option<ClientInit>,
    ) -> Arc<Session> {
        let registry_key = server.next_session_key();
        let s = Arc::new(Session {
            id,
            server,
            temporary,
            init: OnceLock::new(),
            initialized: AtomicBool::new(temporary),
            log_level: AtomicU8::new(0),
            next_request_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
            inflight: Mutex::new(HashMap::new()),
            subscriptions: Mutex::new(BTreeSet::new()),
            hooks: OnceLock::new(),
            closed: AtomicBool::new(false),
            registry_key,
        });
        if let Some(init) = init {
            let _ = s.init.set(init);
        }
        if !temporary {
            s.server.register_session(registry_key, Arc::downgrade(&s));
        }
        s
    }

    /// The key of this session in its server's session table (stable for its lifetime).
    pub(crate) fn registry_key(&self) -> u64 {
        self.registry_key
    }

    /// The transport's session id.
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The server this session talks to.
    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    /// Records the outcome of `initialize`; false if the session was already initialized.
    pub(crate) fn set_init(&self, init: ClientInit) -> bool {
        self.init.set(init).is_ok()
    }

    /// True once `initialize` succeeded.
    pub(crate) fn is_initialized(&self) -> bool {
        self.init.get().is_some()
    }

    /// Records `notifications/initialized`.
    pub(crate) fn mark_initialized(&self) {
        if !self.initialized.swap(true, Ordering::AcqRel) {
            self.changed();
        }
    }

    /// True once the client sent `notifications/initialized` (the handshake is complete).
    pub(crate) fn handshake_complete(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// How many of the client's requests are being served now.
    pub(crate) fn inflight_count(&self) -> usize {
        lock(&self.inflight).len()
    }

    /// The negotiated version (the default legacy version before `initialize`).
    pub(crate) fn protocol_version(&self) -> ProtocolVersion {
        self.init
            .get()
            .map_or(ProtocolVersion::DEFAULT_LEGACY, |i| i.version)
    }

    pub(crate) fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.init.get().map(|i| &i.capabilities)
    }

    pub(crate) fn client_info(&self) -> Option<&Implementation> {
        self.init.get().and_then(|i| i.info.as_ref())
    }

    /// The level set by `logging/setLevel`, if any.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        match self.log_level.load(Ordering::Acquire) {
            0 => None,
            n => LoggingLevel::ALL.get(usize::from(n) - 1).copied(),
        }
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        self.store_log_level(level);
        self.changed();
    }

    fn store_log_level(&self, level: LoggingLevel) {
        let idx = LoggingLevel::ALL
            .iter()
            .position(|l| *l == level)
            .unwrap_or(0);
        self.log_level.store(idx as u8 + 1, Ordering::Release);
    }

    /// Installs the transport's hooks (once).
    pub(crate) fn set_hooks(&self, hooks: Arc<dyn SessionHooks>) {
        let _ = self.hooks.set(hooks);
    }

    /// The transport's hooks, if installed.
    pub(crate) fn hooks(&self) -> Option<&Arc<dyn SessionHooks>> {
        self.hooks.get()
    }

    fn changed(&self) {
        if let Some(h) = self.hooks.get() {
            h.state_changed(self);
        }
    }

    /// A session restored from a stored record (served by an instance that did not create
    /// it).
    pub(crate) fn restore(server: Server, id: Arc<str>, record: &SessionRecord) -> Arc<Session> {
        let s = Self::build(
            server,
            Some(id),
            false,
            Some(ClientInit {
                version: record.protocol_version,
                capabilities: record.client_capabilities.clone(),
                info: record.client_info.clone(),
            }),
        );
        s.apply(record);
        s
    }

    /// Applies the mutable parts of a stored record (log level, subscriptions, handshake).
    pub(crate) fn apply(&self, record: &SessionRecord) {
        self.initialized
            .store(record.initialized, Ordering::Release);
        match record.log_level {
            Some(l) => self.store_log_level(l),
            None => self.log_level.store(0, Ordering::Release),
        }
        *lock(&self.subscriptions) = record.subscriptions.clone();
    }

    /// The session's shareable state as a record (`owner` is the transport's business).
    pub(crate) fn record(&self) -> Option<SessionRecord> {
        let init = self.init.get()?;
        let mut r = SessionRecord::new(init.version, init.capabilities.clone());
        r.client_info = init.info.clone();
        r.log_level = self.log_level();
        r.initialized = self.handshake_complete();
        r.subscriptions = lock(&self.subscriptions).clone();
        Some(r)
    }

    /// Sends a message that belongs to no request (list changes, resource updates).
    pub(crate) async fn send_unrelated(&self, message: Bytes) -> Result<(), Error> {
        if self.is_closed() {
            return Err(Error::SessionClosed);
        }
        match self.hooks.get() {
            Some(hooks) => hooks.send(message).await,
            None => Err(Error::Unsupported(
                "this session has no stream for unsolicited messages".into(),
            )),
        }
    }

    /// Registers a request being served. Fails if a request with this id is still running.
    pub(crate) fn register_inflight<R: InflightRequest + 'static>(
        self: &Arc<Self>,
        request: &Arc<R>,
    ) -> Result<InflightGuard, ()> {
        let id = request.request_id();
        let mut map = lock(&self.inflight);
        if map.contains_key(id) {
            return Err(());
        }
        let weak: Weak<dyn InflightRequest> = Arc::downgrade(request) as Weak<R>;
        map.insert(id.clone(), weak.clone());
        Ok(InflightGuard {
            session: Arc::downgrade(self),
            id: id.clone(),
            request: weak,
        })
    }

    /// Cancels a request of the client (`notifications/cancelled`); false if it does not
    /// run here.
    pub(crate) fn cancel_inflight(&self, id: &RequestId) -> bool {
        let target = lock(&self.inflight).get(id).and_then(Weak::upgrade);
        match target {
            Some(request) => {
                request.cancel();
                true
            }
            None => false,
        }
    }

    /// Delivers the client's answer to one of our requests; false if nobody waits for it.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<RawJson, ErrorObject>) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Sends a request to the client on `outbox` (the stream of the request being served)
    /// and waits for the answer, which arrives through [`Session::resolve`].
    pub(crate) async fn request_client<P: Serialize + ?Sized>(
        self: &Arc<Self>,
        method: &str,
        params: &P,
        outbox: &Outbox,
        timeout: Duration,
    ) -> Result<RawJson, Error> {
        if self.temporary {
            return Err(Error::Unsupported(
                "a stateless server cannot send requests to the client".into(),
            ));
        }
        if self.is_closed() {
            return Err(Error::SessionClosed);
        }
        let n = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let id = match self.hooks.get().and_then(|h| h.request_id_prefix()) {
            Some(prefix) => RequestId::String(format!("{prefix}-{n}").into()),
            None => RequestId::Number(n),
        };
        let message = encode_request(&id, method, Some(params))?;
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let mut guard = PendingGuard {
            session: self,
            id: &id,
            outbox,
            armed: true,
        };
        outbox
            .send(message)
            .await
            .map_err(|_| Error::RequestFinished)?;
        let outcome = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => return Err(Error::SessionClosed),
            Err(_) => {
                guard.cancel_on_peer("timed out").await;
                return Err(Error::Timeout(timeout));
            }
        };
        guard.armed = false;
        outcome.map_err(Error::Remote)
    }

    /// Adds a resource subscription; true if it is new.
    pub(crate) fn subscribe(&self, uri: &str) -> bool {
        let new = lock(&self.subscriptions).insert(uri.to_owned());
        if new {
            self.changed();
        }
        new
    }

    /// Removes a resource subscription.
    pub(crate) fn unsubscribe(&self, uri: &str) -> bool {
        let removed = lock(&self.subscriptions).remove(uri);
        if removed {
            self.changed();
        }
        removed
    }

    /// True if the client subscribed to `uri`.
    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// Ends the session: running requests are cancelled, waiting questions fail.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let running: Vec<_> = lock(&self.inflight).drain().map(|(_, w)| w).collect();
        for w in running {
            if let Some(s) = w.upgrade() {
                s.cancel();
            }
        }
        lock(&self.pending).clear();
        self.server.unregister_session(self.registry_key);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.temporary {
            self.server.unregister_session(self.registry_key);
        }
    }
}

/// Unregisters an in-flight request when its driver finishes.
pub(crate) struct InflightGuard {
    session: Weak<Session>,
    id: RequestId,
    request: Weak<dyn InflightRequest>,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        let Some(s) = self.session.upgrade() else {
            return;
        };
        let mut map = lock(&s.inflight);
        // Only remove our own entry (`ptr_eq` works on dead weak pointers too).
        if map
            .get(&self.id)
            .is_some_and(|w| Weak::ptr_eq(w, &self.request))
        {
            map.remove(&self.id);
        }
    }
}

/// Removes a waiting question when the asking handler gives up (dropped or timed out).
struct PendingGuard<'a> {
    session: &'a Arc<Session>,
    id: &'a RequestId,
    outbox: &'a Outbox,
    armed: bool,
}

impl PendingGuard<'_> {
    async fn cancel_on_peer(&mut self, reason: &str) {
        self.armed = false;
        lock(&self.session.pending).remove(self.id);
        let params = CancelledParams {
            request_id: self.id.clone(),
            reason: Some(reason.to_owned()),
            meta: None,
        };
        if let Ok(msg) = encode_notification(methods::CANCELLED, Some(&params)) {
            let _ = self.outbox.send(msg).await;
        }
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(&self.session.pending).remove(self.id);
        }
    }
}
