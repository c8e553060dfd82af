//! A legacy session: what `initialize` negotiated, and the bookkeeping that lets requests,
//! cancellations and the client's answers find each other. Transport-agnostic: the HTTP
//! handler keeps one per `Mcp-Session-Id`, stdio one per connection.
//!
//! A session owns no task. Its state is a few atomics and small maps that stay empty
//! (allocation-free) until used.
//!
//! Not here: serving the session's requests (`request/exchange.rs`, `methods/`), and HTTP's view of
//! sessions (the transport's session table).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::Serialize;

use super::Server;
use super::limits::json_len;
use super::request::observe::MessageEvent;
use super::request::outbox::Outbox;
use super::subscriptions::Subscriptions;
use crate::error::{Error, Unsupported};
use crate::peer::{
    Cancel, InflightRequests, PendingAnswers, RequestIds, Ticket, Waiter, cancelled_notification,
};
use crate::protocol::{
    ClientCapabilities, ErrorObject, Implementation, LoggingLevel, ProtocolVersion,
    ProtocolVersions, RawJson, RequestId,
};
use crate::protocol::{Response, encode_error, encode_request, encode_response_raw};
use crate::store::SessionRecord;
use crate::sync::lock;

/// A session id shortened for logs and `Debug`: never show one in full (it is a bearer
/// secret), but tell two apart.
pub(crate) fn redact_session_id(id: &str) -> String {
    let keep: String = id.chars().take(6).collect();
    format!("{keep}…")
}

/// The legacy sessions a server serves, held weakly (a session lives as long as its
/// transport keeps it), so that the server's announcements reach them.
#[derive(Default)]
pub(crate) struct Sessions {
    live: Mutex<HashMap<u64, Weak<Session>>>,
    last_key: AtomicU64,
}

impl Sessions {
    /// A key for a new session, unique in this server.
    pub(crate) fn next_key(&self) -> u64 {
        self.last_key.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn register(&self, key: u64, session: Weak<Session>) {
        lock(&self.live).insert(key, session);
    }

    pub(crate) fn unregister(&self, key: u64) {
        lock(&self.live).remove(&key);
    }

    /// The sessions still open and initialized.
    pub(crate) fn live(&self) -> Vec<Arc<Session>> {
        lock(&self.live)
            .values()
            .filter_map(Weak::upgrade)
            .filter(|s| !s.is_closed() && s.is_initialized())
            .collect()
    }
}

/// The bytes a session keeps of what its client said in `initialize` (capabilities and
/// info, as JSON), or `None` when that is more than `max`.
pub(crate) fn init_bytes(
    capabilities: &ClientCapabilities,
    info: Option<&Implementation>,
    max: usize,
) -> Option<usize> {
    let caps = json_len(capabilities, max)?;
    let info = json_len(&info, max - caps)?;
    Some(caps + info)
}

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

    /// The session's shared state (log level, subscriptions, handshake) changed. The
    /// future, if any, finishes once the change is shared (saved where other instances read
    /// it); a request that made the change awaits it before its answer, so that a client
    /// acting on the answer elsewhere finds the change there.
    fn state_changed(&self, _session: &Session) -> Option<BoxFuture<'static, ()>> {
        None
    }

    /// The client answered a request nobody here waits for (it may be another instance's).
    fn unmatched_response(&self, _message: Bytes) {}

    /// The client cancelled a request that does not run here.
    fn unmatched_cancel(&self, _message: Bytes) {}

    /// A prefix that makes this instance's request ids unique among instances sharing the
    /// session.
    fn request_id_prefix(&self) -> Option<&str> {
        None
    }

    /// Whether the session's stream for unsolicited messages is open on this instance
    /// (server-wide announcements crossing instances go only where it is, so each reaches
    /// the stream once).
    fn listening_here(&self) -> bool {
        true
    }
}

/// A change of a session's shared state on its way to the other instances: await
/// [`Shared::done`] to know it arrived, or drop it to let it travel in the background.
#[must_use = "await `done` before answering, or drop it to share in the background"]
pub(crate) struct Shared(Option<BoxFuture<'static, ()>>);

impl Shared {
    /// Finishes once the change is shared (at once without a session store).
    pub(crate) async fn done(self) {
        if let Some(f) = self.0 {
            f.await;
        }
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

/// One legacy session.
pub(crate) struct Session {
    id: Option<Arc<str>>,
    server: Server,
    /// A stateless request's throwaway session: it cannot ask the client anything.
    temporary: bool,
    /// What its `initialize` may negotiate.
    versions: ProtocolVersions,
    init: OnceLock<ClientInit>,
    initialized: AtomicBool,
    /// 0 = no level set; otherwise 1 + the level's index.
    log_level: AtomicU8,
    /// Ids of our requests to the client.
    request_ids: RequestIds,
    /// Our requests to the client, waiting for answers.
    pending: PendingAnswers<Result<RawJson, ErrorObject>>,
    /// The client's requests being served (for cancellation and duplicate-id detection).
    inflight: InflightRequests<Weak<dyn InflightRequest>>,
    /// The bytes kept of what the client said in `initialize` (see [`init_bytes`]).
    init_bytes: AtomicUsize,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<Subscriptions>,
    hooks: OnceLock<Arc<dyn SessionHooks>>,
    /// Takes no new requests (the transport answers as for a closed session); those in
    /// flight finish.
    retiring: AtomicBool,
    closed: AtomicBool,
    registry_key: u64,
    /// This session, for the handles an upstream keeps (`SessionRef`).
    me: Weak<Session>,
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
    /// A session that waits for an `initialize`, to negotiate within `versions`.
    pub(crate) fn new(
        server: Server,
        id: Option<Arc<str>>,
        versions: ProtocolVersions,
    ) -> Arc<Session> {
        Self::build(server, id, false, None, versions)
    }

    /// A throwaway session for one stateless request, as if initialized with `version`.
    pub(crate) fn temporary(server: Server, version: ProtocolVersion) -> Arc<Session> {
        let init = ClientInit {
            version,
            capabilities: ClientCapabilities::default(),
            info: None,
        };
        let s = Self::build(server, None, true, Some(init), ProtocolVersions::ALL);
        // No `logging/setLevel` can reach a throwaway session: log from `info` up, as the Go
        // SDK does, so a stateless handler's logs reach its response.
        s.store_log_level(LoggingLevel::Info);
        s
    }

    /// A throwaway session for a stateless `initialize` (it negotiates, then is dropped).
    pub(crate) fn temporary_uninitialized(
        server: Server,
        versions: ProtocolVersions,
    ) -> Arc<Session> {
        Self::build(server, None, true, None, versions)
    }

    fn build(
        server: Server,
        id: Option<Arc<str>>,
        temporary: bool,
        init: Option<ClientInit>,
        versions: ProtocolVersions,
    ) -> Arc<Session> {
        let registry_key = server.sessions().next_key();
        let s = Arc::new_cyclic(|me| Session {
            id,
            server,
            temporary,
            versions,
            init: OnceLock::new(),
            initialized: AtomicBool::new(temporary),
            log_level: AtomicU8::new(0),
            request_ids: RequestIds::new(),
            pending: PendingAnswers::new(),
            inflight: InflightRequests::new(),
            init_bytes: AtomicUsize::new(0),
            subscriptions: Mutex::default(),
            hooks: OnceLock::new(),
            retiring: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            registry_key,
            me: me.clone(),
        });
        if let Some(init) = init {
            let _ = s.init.set(init);
        }
        if !temporary {
            s.server
                .sessions()
                .register(registry_key, Arc::downgrade(&s));
        }
        s
    }

    /// The key of this session in its server's session table (stable for its lifetime).
    pub(crate) fn registry_key(&self) -> u64 {
        self.registry_key
    }

    /// This session, weakly (what its handles hold).
    pub(crate) fn weak_self(&self) -> Weak<Session> {
        self.me.clone()
    }

    /// True for a stateless request's throwaway session.
    pub(crate) fn is_temporary(&self) -> bool {
        self.temporary
    }

    /// The transport's session id.
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The server this session talks to.
    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    /// The versions its `initialize` may negotiate.
    pub(crate) fn versions(&self) -> ProtocolVersions {
        self.versions
    }

    /// Records the outcome of `initialize`, which keeps `bytes` (see [`init_bytes`]); false
    /// if the session was already initialized.
    pub(crate) fn set_init(&self, init: ClientInit, bytes: usize) -> bool {
        let set = self.init.set(init).is_ok();
        if set {
            self.init_bytes.store(bytes, Ordering::Release);
        }
        set
    }

    /// True once `initialize` succeeded.
    pub(crate) fn is_initialized(&self) -> bool {
        self.init.get().is_some()
    }

    /// Records `notifications/initialized`.
    pub(crate) fn mark_initialized(&self) {
        if !self.initialized.swap(true, Ordering::AcqRel) {
            // A notification has no answer to hold back: the change is shared in the
            // background.
            drop(self.changed());
        }
    }

    /// True once the client sent `notifications/initialized` (the handshake is complete).
    pub(crate) fn handshake_complete(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// How many of the client's requests are being served now.
    pub(crate) fn inflight_count(&self) -> usize {
        self.inflight.len()
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

    /// Sets the level; the future finishes once the change is shared (see
    /// [`SessionHooks::state_changed`]).
    pub(crate) fn set_log_level(&self, level: LoggingLevel) -> Shared {
        self.store_log_level(level);
        self.changed()
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

    /// Whether its stream for unsolicited messages is open on this instance.
    pub(crate) fn listening_here(&self) -> bool {
        self.hooks.get().is_some_and(|h| h.listening_here())
    }

    /// The transport's hooks, if installed.
    pub(crate) fn hooks(&self) -> Option<&Arc<dyn SessionHooks>> {
        self.hooks.get()
    }

    fn changed(&self) -> Shared {
        Shared(self.hooks.get().and_then(|h| h.state_changed(self)))
    }

    /// A session restored from a stored record (served by an instance that did not create
    /// it).
    pub(crate) fn restore(server: Server, id: Arc<str>, record: &SessionRecord) -> Arc<Session> {
        // A record this deployment wrote, within the limit when it was written: its bytes
        // count as they are, whatever the limit is now.
        let bytes = init_bytes(
            &record.client_capabilities,
            record.client_info.as_ref(),
            usize::MAX,
        )
        .unwrap_or(0);
        let s = Self::build(
            server,
            Some(id),
            false,
            Some(ClientInit {
                version: record.protocol_version,
                capabilities: record.client_capabilities.clone(),
                info: record.client_info.clone(),
            }),
            // Initialized already: nothing left to negotiate.
            ProtocolVersions::ALL,
        );
        s.init_bytes.store(bytes, Ordering::Release);
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
        lock(&self.subscriptions).replace(record.subscriptions.clone());
    }

    /// The session's shareable state as a record (`owner` is the transport's business).
    pub(crate) fn record(&self) -> Option<SessionRecord> {
        let init = self.init.get()?;
        let mut r = SessionRecord::new(init.version, init.capabilities.clone());
        r.client_info = init.info.clone();
        r.log_level = self.log_level();
        r.initialized = self.handshake_complete();
        r.subscriptions = lock(&self.subscriptions).uris().clone();
        Some(r)
    }

    /// Sends a message that belongs to no request (list changes, resource updates).
    pub(crate) async fn send_unrelated(&self, message: Bytes) -> Result<(), Error> {
        if self.is_closed() {
            return Err(Error::session_closed());
        }
        match self.hooks.get() {
            Some(hooks) => hooks.send(message).await,
            None => Err(Error::unsupported(Unsupported::NoUnsolicitedStream)),
        }
    }

    /// Registers a request being served. Fails if a request with this id is still running.
    pub(crate) fn register_inflight<R: InflightRequest + 'static>(
        self: &Arc<Self>,
        request: &Arc<R>,
    ) -> Result<InflightGuard, ()> {
        let id = request.request_id();
        let weak: Weak<dyn InflightRequest> = Arc::downgrade(request) as Weak<R>;
        let ticket = self
            .inflight
            .start(id, |_| weak)
            .map_err(|_still_running| ())?;
        Ok(InflightGuard {
            session: Arc::downgrade(self),
            id: id.clone(),
            ticket,
        })
    }

    /// Cancels a request of the client (`notifications/cancelled`); false if it does not
    /// run here.
    pub(crate) fn cancel_inflight(&self, id: &RequestId) -> bool {
        self.inflight.cancel(id)
    }

    /// Delivers the client's answer to one of our requests; false if nobody waits for it.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<RawJson, ErrorObject>) -> bool {
        self.pending.resolve(id, outcome)
    }

    /// Sends a request to the client and waits for the answer, which arrives through
    /// [`Session::resolve`]: on `outbox` (the stream of the request being served), or with
    /// none on the session's stream for unsolicited messages. A question given up before its
    /// answer (the caller dropped it) is cancelled at the client.
    pub(crate) async fn request_client<P: Serialize + ?Sized>(
        self: &Arc<Self>,
        method: &str,
        params: &P,
        outbox: Option<&Outbox>,
        timeout: Duration,
    ) -> Result<RawJson, Error> {
        if self.temporary {
            return Err(Error::unsupported(Unsupported::StatelessServerRequest));
        }
        if self.is_closed() {
            return Err(Error::session_closed());
        }
        let prefix = self.hooks.get().and_then(|h| h.request_id_prefix());
        let id = self.request_ids.next(prefix);
        let message = encode_request(&id, method, Some(params))?;
        // Dropping the waiter (the handler gave up) forgets the question.
        let waiter = self.pending.wait_for(id, ());
        match outbox {
            Some(o) => o
                .send(message)
                .await
                .map_err(|_| Error::request_finished())?,
            None => self.send_unrelated(message).await?,
        }
        let mut question = Question {
            waiter,
            outbox,
            session: self,
        };
        match tokio::time::timeout(timeout, question.waiter.answer()).await {
            Ok(Some(outcome)) => outcome.map_err(Error::rpc),
            Ok(None) => Err(Error::session_closed()),
            // The guard tells the client.
            Err(_) => Err(Error::timeout(timeout)),
        }
    }

    /// Adds a resource subscription; the future finishes once it is shared (nothing to
    /// wait for if it was there already). Refused, nothing kept, when the session would pass
    /// its `max_subscriptions_per_session` or `max_session_bytes`.
    pub(crate) fn subscribe(&self, uri: &str) -> Result<Shared, ErrorObject> {
        let others = self.init_bytes.load(Ordering::Acquire);
        let new = lock(&self.subscriptions).add(uri, others, &self.server.limits())?;
        Ok(if new { self.changed() } else { Shared(None) })
    }

    /// Removes a resource subscription; the future finishes once the removal is shared.
    pub(crate) fn unsubscribe(&self, uri: &str) -> Shared {
        let removed = lock(&self.subscriptions).remove(uri);
        if removed {
            self.changed()
        } else {
            Shared(None)
        }
    }

    /// True if the client subscribed to `uri`.
    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).uris().contains(uri)
    }

    /// Ends the session: running requests are cancelled, waiting questions fail.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inflight.cancel_all();
        self.pending.clear();
        self.server.sessions().unregister(self.registry_key);
        self.tell_upstream_closed();
    }

    /// Tells the server (its upstream, if it has one) that this session is over.
    fn tell_upstream_closed(&self) {
        if !self.temporary {
            self.server.session_ended(self);
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Takes no new requests from now on, leaving those in flight to finish (close it once
    /// they have).
    pub(crate) fn retire(&self) {
        self.retiring.store(true, Ordering::Release);
    }

    /// True once closed or retiring: a new request of it is refused as for a closed session.
    pub(crate) fn is_ending(&self) -> bool {
        self.retiring.load(Ordering::Acquire) || self.is_closed()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.temporary {
            self.server.sessions().unregister(self.registry_key);
            if !self.closed.swap(true, Ordering::AcqRel) {
                self.tell_upstream_closed();
            }
        }
    }
}

/// A question to the client waiting for its answer: when the asker stops waiting first (it
/// timed out, or dropped the question), the client is told with `notifications/cancelled`
/// on the stream the question went out on.
struct Question<'a> {
    waiter: Waiter<'a, Result<RawJson, ErrorObject>, ()>,
    outbox: Option<&'a Outbox>,
    session: &'a Arc<Session>,
}

impl Drop for Question<'_> {
    fn drop(&mut self) {
        if !self.waiter.is_waiting() {
            return;
        }
        self.waiter.abandon();
        let Ok(message) = cancelled_notification(self.waiter.id(), "the server stopped waiting")
        else {
            return;
        };
        match self.outbox {
            // Nothing waits on a full or closed stream: the question is forgotten here anyway.
            Some(o) => {
                o.try_send(message);
            }
            None => {
                let session = self.session.clone();
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        let _ = session.send_unrelated(message).await;
                    });
                }
            }
        }
    }
}

/// Unregisters an in-flight request when its driver finishes.
pub(crate) struct InflightGuard {
    session: Weak<Session>,
    id: RequestId,
    ticket: Ticket,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        let Some(s) = self.session.upgrade() else {
            return;
        };
        // Only our own entry goes (the ticket tells it from a later request's).
        s.inflight.finish(&self.id, self.ticket);
    }
}

/// A request being served is cancelled through its shared state, while it still runs.
impl Cancel for Weak<dyn InflightRequest> {
    fn cancel(&self) -> bool {
        match self.upgrade() {
            Some(shared) => {
                shared.cancel();
                true
            }
            None => false,
        }
    }
}

/// Delivers the client's answer to one of the server's requests (to the question waiting
/// for it here, else to the instance that asked, through the session's hooks).
pub(crate) fn handle_response(session: &Session, r: Response) {
    session
        .server()
        .observe(&MessageEvent::ResponseReceived(&r));
    let Some(id) = r.id.clone() else { return };
    let stray = session.hooks().map(|_| match &r.outcome {
        Ok(result) => encode_response_raw(&id, result.as_bytes()),
        Err(e) => encode_error(Some(&id), e),
    });
    if !session.resolve(&id, r.outcome)
        && let (Some(h), Some(m)) = (session.hooks(), stray)
    {
        // Nobody waits here: the request may be another instance's.
        h.unmatched_response(m);
    }
}
