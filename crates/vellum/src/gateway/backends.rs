//! [`Backends`]: every backend connection of a gateway, and when each opens and closes.
//!
//! - A legacy front session gets a link of its own (unless backends are shared), opened at its
//!   `initialize` with the client's params, or lazily from the session's recorded init (a
//!   session restored from the session store on another instance), and closed with the
//!   session.
//! - The pool: shared links for 2026-07-28 requests, stateless requests and (with
//!   `shared_backends`) every session; a request takes the least loaded. A pool slot whose
//!   link ended opens again on the next request.
//! - At most `max_backends` links exist at once (opening ones included); each opens within
//!   `start_timeout`. A link that ends on its own (the child exited, wrote something that is
//!   not JSON-RPC, the upstream went) fails its calls (the client does that), ends its session
//!   (its next request gets 404), and frees its place.
//!
//! Opening is single-flight: requests that need a link being opened wait for that one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, Shared};

use super::GatewayOptions;
use super::backend::{Backend, open};
use super::link::{Link, wait_until};
use crate::client::Client;
use crate::protocol::{ErrorObject, InitializeParams};
use crate::server::{SessionRef, WeakServer};
use crate::sync::lock;

/// How long the calls of a backend that ended get to answer before its session closes.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// A link being opened, awaitable by every request that needs it.
type Opening = Shared<BoxFuture<'static, Result<Arc<Link>, ErrorObject>>>;

/// Where a link goes once open.
#[derive(Clone)]
enum Place {
    /// It serves this session alone.
    Session(SessionRef),
    /// It is this slot of the pool.
    Pool(usize),
}

impl Place {
    fn session(&self) -> Option<&SessionRef> {
        match self {
            Place::Session(s) => Some(s),
            Place::Pool(_) => None,
        }
    }
}

/// One place for a link.
enum Slot {
    Opening(Opening),
    Open(Arc<Link>),
}

impl Slot {
    /// The open link, if it still serves.
    fn live(&self) -> Option<Arc<Link>> {
        match self {
            Slot::Open(l) if l.client().is_some_and(|c| !c.is_closed()) => Some(l.clone()),
            _ => None,
        }
    }
}

/// Every backend connection of one gateway.
pub(super) struct Backends {
    pub(super) backend: Backend,
    pub(super) options: GatewayOptions,
    /// The front server (for shared links' announcements), once attached.
    pub(super) server: OnceLock<WeakServer>,
    /// Links of sessions, by session key.
    sessions: Mutex<HashMap<u64, Slot>>,
    /// The pool's slots (`None`: empty).
    pool: Mutex<Vec<Option<Slot>>>,
    /// Links open or opening (bounded by `max_backends`).
    open: AtomicUsize,
    /// Resources watched on the pool (by listen streams and sessions sharing it), counted.
    watched: Mutex<HashMap<String, usize>>,
    /// Set once the gateway shuts down: links then end as asked, not on their own.
    closing: std::sync::atomic::AtomicBool,
    /// Told each time a place is freed.
    freed: tokio::sync::Notify,
}

impl Backends {
    pub(super) fn new(backend: Backend, options: GatewayOptions) -> Arc<Self> {
        let size = options.shared_backends.unwrap_or(1).max(1);
        Arc::new(Backends {
            backend,
            options,
            server: OnceLock::new(),
            sessions: Mutex::new(HashMap::new()),
            pool: Mutex::new((0..size).map(|_| None).collect()),
            open: AtomicUsize::new(0),
            watched: Mutex::new(HashMap::new()),
            closing: std::sync::atomic::AtomicBool::new(false),
            freed: tokio::sync::Notify::new(),
        })
    }

    /// True when every request shares the pool (no link per session).
    pub(super) fn shared(&self) -> bool {
        self.options.shared_backends.is_some()
    }

    /// How many links are open or opening.
    pub(super) fn count(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The link serving `session`: its own, or (shared backends) one of the pool.
    pub(super) async fn link_for(
        self: &Arc<Self>,
        session: Option<&SessionRef>,
    ) -> Result<Arc<Link>, ErrorObject> {
        match session {
            Some(s) if !self.shared() => self.session_link(s, None).await,
            _ => self.pool_link().await,
        }
    }

    /// The link of `session`, opened with `init` (its `initialize` params) or, lazily, with
    /// what the session recorded.
    pub(super) async fn session_link(
        self: &Arc<Self>,
        session: &SessionRef,
        init: Option<InitializeParams>,
    ) -> Result<Arc<Link>, ErrorObject> {
        let opening = {
            let mut map = lock(&self.sessions);
            let slot = map.get(&session.key());
            if let Some(l) = slot.and_then(Slot::live) {
                return Ok(l);
            }
            match slot {
                Some(Slot::Opening(f)) => f.clone(),
                // Its backend ended: the session closes once the calls in flight have their
                // errors (a session never gets a second backend behind its client's back).
                Some(Slot::Open(_)) => {
                    return Err(ErrorObject::internal(
                        "the MCP server behind this session has ended; the session is closing",
                    ));
                }
                _ => {
                    let init = init.or_else(|| session.initialize_params());
                    let f = self.start(Place::Session(session.clone()), init)?;
                    map.insert(session.key(), Slot::Opening(f.clone()));
                    f
                }
            }
        };
        opening.await
    }

    /// The least loaded link of the pool, opening the pool's empty slots.
    pub(super) async fn pool_link(self: &Arc<Self>) -> Result<Arc<Link>, ErrorObject> {
        let waiting = {
            let mut pool = lock(&self.pool);
            let mut best: Option<Arc<Link>> = None;
            let mut opening = None;
            let mut refused = None;
            for (i, slot) in pool.iter_mut().enumerate() {
                if let Some(l) = slot.as_ref().and_then(Slot::live) {
                    if best.as_ref().is_none_or(|b| l.load() < b.load()) {
                        best = Some(l);
                    }
                    continue;
                }
                if let Some(Slot::Opening(f)) = slot {
                    opening.get_or_insert_with(|| f.clone());
                    continue;
                }
                match self.start(Place::Pool(i), None) {
                    Ok(f) => {
                        opening.get_or_insert_with(|| f.clone());
                        *slot = Some(Slot::Opening(f));
                    }
                    Err(e) => refused = Some(e),
                }
            }
            if let Some(l) = best {
                return Ok(l);
            }
            match (opening, refused) {
                (Some(f), _) => f,
                (None, Some(e)) => return Err(e),
                (None, None) => return Err(gone()),
            }
        };
        waiting.await
    }

    /// Opens every pool slot now (a gateway whose backends are shared keeps them ready).
    pub(super) async fn fill_pool(self: &Arc<Self>) -> Result<(), ErrorObject> {
        self.pool_link().await?;
        let opening: Vec<Opening> = lock(&self.pool)
            .iter()
            .filter_map(|slot| match slot {
                Some(Slot::Opening(f)) => Some(f.clone()),
                _ => None,
            })
            .collect();
        for f in opening {
            f.await?;
        }
        Ok(())
    }

    /// Starts opening a link (for `session`, or for the pool) in a task of its own, so it
    /// goes on even when the request that started it is cancelled.
    fn start(
        self: &Arc<Self>,
        place: Place,
        init: Option<InitializeParams>,
    ) -> Result<Opening, ErrorObject> {
        let max = self.options.max_backends;
        let reserved = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        if reserved.is_err() {
            return Err(ErrorObject::internal(format!(
                "the gateway runs its limit of {max} backends (--max-children); try again later"
            )));
        }
        let this = self.clone();
        let task = tokio::spawn(async move { this.open_link(place, init).await });
        let joined: BoxFuture<'static, Result<Arc<Link>, ErrorObject>> = Box::pin(async move {
            task.await
                .unwrap_or_else(|_| Err(ErrorObject::internal("opening the backend failed")))
        });
        Ok(joined.shared())
    }

    /// Opens a link within the start timeout, installs it, and watches it until it ends.
    async fn open_link(
        self: Arc<Self>,
        place: Place,
        init: Option<InitializeParams>,
    ) -> Result<Arc<Link>, ErrorObject> {
        let server = self.server.get().cloned().unwrap_or_default();
        let link = Link::new(place.session().cloned(), server);
        let timeout = self.options.start_timeout;
        let opened =
            tokio::time::timeout(timeout, open(&self.backend, &link, init, &self.options)).await;
        let (client, info, label) = match opened {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => {
                self.release(&place, None);
                let why = crate::error::chain(&e);
                tracing::warn!(target: "vellum::gateway", "cannot start the backend: {why}");
                return Err(ErrorObject::internal(format!(
                    "cannot start the MCP server: {why}"
                )));
            }
            Err(_) => {
                self.release(&place, None);
                tracing::warn!(
                    target: "vellum::gateway",
                    "the backend did not start within {}s",
                    timeout.as_secs_f64()
                );
                return Err(ErrorObject::internal(format!(
                    "the MCP server did not start within {}s",
                    timeout.as_secs_f64()
                )));
            }
        };
        tracing::debug!(target: "vellum::gateway", "{label} started");
        if client.is_modern() {
            // That era announces list changes only on a listen stream.
            link.listens().lists(&client).await;
        }
        if client.is_modern() || place.session().is_none() {
            // 2026-07-28 calls mirror `x-mcp-header` arguments into headers: the client
            // core mirrors them to the backend, the front checks the client's.
            link.learn_tools(&client).await;
        }
        link.connected(client, info, label);
        self.install(&place, &link);
        tokio::spawn(self.clone().watch(place.clone(), link.clone()));
        if place.session().is_some_and(|s| !s.is_open()) {
            // The session ended while its link opened: the watcher frees the place.
            if let Some(c) = link.client().cloned() {
                tokio::spawn(async move { c.close().await });
            }
        }
        Ok(link)
    }

    /// Puts an opened link in its place.
    fn install(&self, place: &Place, link: &Arc<Link>) {
        match place {
            Place::Session(s) => {
                lock(&self.sessions).insert(s.key(), Slot::Open(link.clone()));
            }
            Place::Pool(i) => {
                if let Some(slot) = lock(&self.pool).get_mut(*i) {
                    *slot = Some(Slot::Open(link.clone()));
                }
            }
        }
    }

    /// Waits for a link to end; frees its place, and ends its session when it ended on its
    /// own.
    async fn watch(self: Arc<Self>, place: Place, link: Arc<Link>) {
        let Some(client) = link.client().cloned() else {
            return;
        };
        let why = client.closed().await;
        let session = place.session();
        if self.closing.load(Ordering::Acquire) || session.is_some_and(|s| !s.is_open()) {
            tracing::debug!(target: "vellum::gateway", "{} closed with its session", link.label());
        } else {
            tracing::warn!(
                target: "vellum::gateway",
                "{} ended: {}{}",
                link.label(),
                crate::error::chain(&why),
                if session.is_some() { "; its session ends" } else { "" }
            );
        }
        if let Some(s) = session {
            // No new request of it; its calls answer with the backend's end; then it closes.
            s.retire();
            link.settled(SETTLE).await;
            s.close();
        }
        self.release(&place, Some(&link));
        // Let the transport go (the child's process is reaped, connections close).
        client.close().await;
    }

    /// Frees a link's place (or that of an opening that failed: `link` none).
    fn release(&self, place: &Place, link: Option<&Arc<Link>>) {
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.freed.notify_waiters();
        let same = |slot: &Slot| match (slot, link) {
            (Slot::Open(l), Some(link)) => Arc::ptr_eq(l, link),
            (Slot::Opening(_), None) => true,
            _ => false,
        };
        match place {
            Place::Session(s) => {
                let mut map = lock(&self.sessions);
                if map.get(&s.key()).is_some_and(same) {
                    map.remove(&s.key());
                }
            }
            Place::Pool(i) => {
                let mut pool = lock(&self.pool);
                if let Some(slot) = pool.get_mut(*i)
                    && slot.as_ref().is_some_and(same)
                {
                    *slot = None;
                }
            }
        }
    }

    /// The `x-mcp-header` arguments of a tool, as a pool link learned them.
    pub(super) fn param_headers(&self, tool: &str) -> Option<Arc<[crate::protocol::ParamHeader]>> {
        lock(&self.pool)
            .iter()
            .find_map(|slot| slot.as_ref().and_then(Slot::live)?.param_headers(tool))
    }

    /// A session ended: its link closes (the watcher frees its place).
    pub(super) fn session_closed(&self, session: &SessionRef) {
        let slot = lock(&self.sessions).remove(&session.key());
        if let Some(Slot::Open(link)) = slot
            && let Some(client) = link.client().cloned()
        {
            tokio::spawn(async move { client.close().await });
        }
        // An opening link sees its session gone when it opens, and closes.
    }

    /// Counts a resource watched on the pool; true when it is the first (or, `watching`
    /// false, the last) watcher, so the pool must subscribe (unsubscribe).
    pub(super) fn count_watch(&self, uri: &str, watching: bool) -> bool {
        let mut w = lock(&self.watched);
        if watching {
            let n = w.entry(uri.to_owned()).or_insert(0);
            *n += 1;
            *n == 1
        } else {
            match w.get_mut(uri) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    w.remove(uri);
                    true
                }
                None => false,
            }
        }
    }

    /// Closes every link (the gateway shuts down).
    pub(super) async fn close_all(&self) {
        self.closing.store(true, Ordering::Release);
        let mut clients = Vec::new();
        for (_, slot) in lock(&self.sessions).drain() {
            if let Slot::Open(l) = slot {
                clients.extend(l.client().cloned());
            }
        }
        for slot in lock(&self.pool).iter_mut() {
            if let Some(Slot::Open(l)) = slot.take() {
                clients.extend(l.client().cloned());
            }
        }
        futures_util::future::join_all(clients.iter().map(Client::close)).await;
        // Links still opening, and the watchers of those just closed, free their places.
        wait_until(&self.freed, SETTLE, || self.count() == 0).await;
    }
}

/// The error of a link that went away while a request waited for it.
fn gone() -> ErrorObject {
    ErrorObject::internal("the backend connection ended")
}
