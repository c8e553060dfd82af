//! [`Server`]: an MCP server's identity, options and what it offers. Cheap to clone (one
//! `Arc`), so a transport's factory may hand out the same server to every session, or build
//! one per tenant.
//!
//! This file holds the server's state, as the types that own each part of it (the
//! [`Registry`], the [`Sessions`], the [`Tasks`], the [`Listeners`], the middleware), and
//! what the server does on its own: advertising capabilities, announcing list changes and
//! resource updates to the sessions and listen streams that asked (and over the bus, to the
//! other instances of a deployment). `impl Server` is here and in `registry/registration.rs`
//! (registering tools, resources, prompts, completions and skills), nowhere else.
//!
//! Not here: serving requests (`methods/`).

use std::future::Future;
use std::sync::{Arc, OnceLock, RwLock, Weak};

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

use super::announce::Announcer;
use super::limits::StateLimits;
use super::listeners::Listeners;
use super::mrtr::RequestStateKey;
use super::options::ServerOptions;
use super::registry::cache_hints::{CacheHints, Cached};
use super::registry::list_kind::ListKind;
use super::registry::registry::Registry;
use super::request::middleware::{IncomingRequest, Middleware, Next};
use super::request::observe::{MessageEvent, observe};
use super::request::reply::Outcome;
use super::session::{Session, Sessions};
use super::session_ref::SessionRef;
use super::tasks::Tasks;
use super::upstream::Upstream;
use crate::protocol::{CacheHint, encode_notification};
use crate::protocol::{
    Implementation, JsonObject, ListCapability, NotificationParams, ResourceUpdatedParams,
    ResourcesCapability, ServerCapabilities, methods,
};
use crate::store::{BusMessage, MessageBus, TaskStore};
use crate::sync::{read, write};

/// The shared state behind every clone of a [`Server`].
pub(crate) struct ServerInner {
    pub(crate) info: Implementation,
    pub(crate) options: ServerOptions,
    pub(crate) registry: Registry,
    /// The cache hints of the cacheable results (replaceable: see `set_cache_hint`).
    pub(crate) cache_hints: RwLock<CacheHints>,
    /// What a client may make the server keep (replaceable: see `set_limits`).
    limits: RwLock<StateLimits>,
    /// The server's identity as encoded JSON, for the `_meta` of modern results (written
    /// as is into each, never rebuilt).
    pub(crate) info_json: Box<RawValue>,
    /// The key `requestState` is signed with (replaceable: see `set_request_state_key`).
    state_key: RwLock<Arc<RequestStateKey>>,
    /// Request middleware and message observers.
    middleware: RwLock<Middleware>,
    /// Tool calls running as tasks.
    pub(crate) tasks: Arc<Tasks>,
    /// Open `subscriptions/listen` streams (2026-07-28).
    pub(crate) listeners: Arc<Listeners>,
    /// The bus to the other instances of a deployment, once a transport attached it: list
    /// changes and resource updates then reach their streams too.
    bus: OnceLock<Arc<dyn MessageBus>>,
    /// Ends the task hearing the bus when the server goes: a per-request factory makes one
    /// server a request, and each would otherwise leave a task and a bus receiver behind
    /// until the next bus message.
    bus_listener: OnceLock<tokio_util::sync::DropGuard>,
    /// The legacy sessions served, which hear the announcements.
    sessions: Sessions,
    /// Where requests are forwarded instead of served here, once set (a gateway).
    upstream: OnceLock<Arc<dyn Upstream>>,
    /// The upstream's identity as encoded JSON, once learned: what 2026-07-28 results name as
    /// their server (a gateway answers as the server behind it, in both eras).
    upstream_info: OnceLock<Box<RawValue>>,
    /// When each list's change notification goes out (tools, resources, prompts).
    announcers: [Announcer; 3],
}

/// An MCP server: identity, options, and what it offers.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with this identity and these options, offering nothing yet.
    pub fn new(info: Implementation, options: ServerOptions) -> Server {
        let info_json =
            serde_json::value::to_raw_value(&info).unwrap_or_else(|_| RawValue::NULL.to_owned());
        Server {
            inner: Arc::new(ServerInner {
                info,
                state_key: RwLock::new(Arc::new(
                    options
                        .request_state_key
                        .clone()
                        .unwrap_or_else(RequestStateKey::random),
                )),
                cache_hints: RwLock::new(options.cache_hints),
                limits: RwLock::new(options.limits),
                options,
                registry: Registry::default(),
                info_json,
                middleware: RwLock::default(),
                listeners: Arc::default(),
                bus: OnceLock::new(),
                bus_listener: OnceLock::new(),
                tasks: Arc::default(),
                sessions: Sessions::default(),
                upstream: OnceLock::new(),
                upstream_info: OnceLock::new(),
                announcers: Default::default(),
            }),
        }
    }

    /// The server's identity.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The server's options.
    pub fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    /// Replaces the key `requestState` is signed and verified with (for a server built
    /// elsewhere, such as `vellum serve --request-state-key-file` does with the demos):
    /// states signed before are then verified with the new key only, so rotate with
    /// [`RequestStateKey::also_verifying`] or a key file that keeps the old line.
    pub fn set_request_state_key(&self, key: RequestStateKey) {
        *write(&self.inner.state_key) = Arc::new(key);
    }

    /// Sets the cache hints of one result for every later answer, as
    /// [`ServerOptions::with_cache_hint`](ServerOptions::with_cache_hint) does before
    /// the server exists (for a server built elsewhere, as `vellum serve --list-ttl` does
    /// with the demos).
    pub fn set_cache_hint(&self, result: Cached, hint: CacheHint) {
        let mut hints = write(&self.inner.cache_hints);
        *hints = hints.with(result, hint);
        // The cached pages of `tools/list` carry the old hint: make them stale.
        self.inner.registry.cache.tools_changed();
    }

    /// The cache hint of one result now.
    pub fn cache_hint(&self, result: Cached) -> CacheHint {
        read(&self.inner.cache_hints).get(result)
    }

    /// Replaces what a client may make the server keep (sessions' bytes and
    /// subscriptions, tasks), as [`ServerOptions::with_limits`] does before the server
    /// exists (for a server built elsewhere, as `vellum serve --max-session-bytes` does
    /// with the demos). What is kept already stays; later requests meet the new limits.
    pub fn set_limits(&self, limits: StateLimits) {
        *write(&self.inner.limits) = limits;
    }

    /// What a client may make the server keep now.
    pub fn limits(&self) -> StateLimits {
        *read(&self.inner.limits)
    }

    /// The key `requestState` is signed with now.
    pub(crate) fn state_key(&self) -> Arc<RequestStateKey> {
        read(&self.inner.state_key).clone()
    }

    /// Keeps this server's tasks in `store` instead of this process's memory: with a store
    /// shared by several instances (such as Redis), any instance answers `tasks/get`,
    /// `tasks/update`, `tasks/cancel`, `tasks/result` and `tasks/list`, and the instance
    /// running a task hears the answers and cancellations others received. Set it before
    /// serving: tasks already in the previous store stay there.
    pub fn set_task_store(&self, store: Arc<dyn TaskStore>) {
        self.inner.tasks.set_store(store);
    }

    /// Adds request middleware: `f` runs around every request this server dispatches, on
    /// every transport and in both eras, and decides whether to pass it on
    /// (`next.run(request).await`) or answer it itself. The first added runs first
    /// (outermost). See [`middleware`](super::request::middleware) for the order.
    ///
    /// ```
    /// use vellum::server::{Outcome, Server, ServerOptions};
    /// use vellum::protocol::{ErrorObject, Implementation};
    ///
    /// let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
    /// server.add_request_middleware(|req, next| async move {
    ///     if req.method() == "tools/call" && req.context().http().is_none() {
    ///         return Outcome::Error(ErrorObject::invalid_request("tools need HTTP here"));
    ///     }
    ///     let started = std::time::Instant::now();
    ///     let outcome = next.run(req).await;
    ///     let _elapsed = started.elapsed(); // record a metric
    ///     outcome
    /// });
    /// ```
    pub fn add_request_middleware<F, Fut>(&self, f: F) -> &Self
    where
        F: Fn(IncomingRequest, Next) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        write(&self.inner.middleware).add_request(f);
        self
    }

    /// Adds a message observer: `f` sees every message the server sends (responses,
    /// notifications, requests to the client) and every notification and answer it
    /// receives, in the order observers were added. It must not block.
    pub fn add_message_observer<F>(&self, f: F) -> &Self
    where
        F: Fn(&MessageEvent<'_>) + Send + Sync + 'static,
    {
        write(&self.inner.middleware).add_observer(f);
        self
    }

    /// Forwards this server's requests to `upstream` instead of serving them from its own
    /// registries (see [`Upstream`] for what stays here). Set once, before serving; a
    /// later call returns `false` and changes nothing.
    pub fn set_upstream(&self, upstream: Arc<dyn Upstream>) -> bool {
        self.inner.upstream.set(upstream).is_ok()
    }

    /// The upstream requests are forwarded to, if one is set.
    pub(crate) fn upstream(&self) -> Option<&Arc<dyn Upstream>> {
        self.inner.upstream.get()
    }

    /// Records the upstream's identity, as it described itself (the first one learned stays).
    pub(crate) fn learn_upstream_info(&self, info: &Implementation) {
        if self.inner.upstream_info.get().is_none()
            && let Ok(json) = serde_json::value::to_raw_value(info)
        {
            let _ = self.inner.upstream_info.set(json);
        }
    }

    /// True once the upstream's identity is known (always true without an upstream).
    pub(crate) fn knows_upstream_info(&self) -> bool {
        self.upstream().is_none() || self.inner.upstream_info.get().is_some()
    }

    /// The identity 2026-07-28 results carry: the upstream's once known, else this server's.
    pub(crate) fn announced_info(&self) -> &RawValue {
        self.inner
            .upstream_info
            .get()
            .unwrap_or(&self.inner.info_json)
    }

    /// A session of this server ended: its upstream, if any, is told.
    pub(crate) fn session_ended(&self, session: &Session) {
        if let Some(up) = self.upstream() {
            up.session_closed(&SessionRef::of(session));
        }
    }

    pub(crate) fn middleware(&self) -> Middleware {
        read(&self.inner.middleware).clone()
    }

    /// Runs the observers on one event (nothing when there are none).
    pub(crate) fn observe(&self, event: &MessageEvent<'_>) {
        if let Some(o) = read(&self.inner.middleware).observers() {
            observe(&o, event);
        }
    }

    /// The capabilities this server advertises now.
    pub fn capabilities(&self) -> ServerCapabilities {
        if let Some(c) = &self.inner.options.capabilities {
            return c.clone();
        }
        let r = self.inner.registry.read();
        let listed = Some(ListCapability {
            list_changed: Some(true),
        });
        let tasks = r.tools.values().any(|t| {
            t.tool
                .execution
                .as_ref()
                .and_then(|e| e.task_support)
                .is_some_and(|s| s != crate::protocol::TaskSupport::Forbidden)
        });
        ServerCapabilities {
            // 2025-11-25 tasks and the 2026-07-28 tasks extension; each era's framing drops
            // the other's field.
            tasks: tasks.then(|| {
                serde_json::from_value(serde_json::json!({
                    "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}
                }))
                .unwrap_or_default()
            }),
            extensions: (tasks || r.has_skills()).then(|| {
                let mut e = JsonObject::new();
                if tasks {
                    e.insert(
                        crate::protocol::TASKS_EXTENSION.into(),
                        Value::Object(JsonObject::new()),
                    );
                }
                if r.has_skills() {
                    // Skills are served by the SDK, directories included.
                    e.insert(
                        crate::protocol::SKILLS_EXTENSION.into(),
                        serde_json::json!({ "directoryRead": true }),
                    );
                }
                e
            }),
            logging: Some(JsonObject::new()),
            completions: (r.completion.is_some() || !r.completers.is_empty()).then(JsonObject::new),
            tools: (!r.tools.is_empty()).then(|| listed.clone()).flatten(),
            prompts: (!r.prompts.is_empty()).then(|| listed.clone()).flatten(),
            resources: (!r.resources.is_empty() || !r.templates.is_empty()).then_some(
                ResourcesCapability {
                    subscribe: Some(true),
                    list_changed: Some(true),
                },
            ),
            ..Default::default()
        }
    }

    /// Tells every client that asked that a list changed: `notification` is the list's
    /// notification (`notifications/tools/list_changed`, `…/prompts/…`, `…/resources/…`),
    /// announced as a change of this server's own registries is (debounced, to legacy
    /// sessions and to `subscriptions/listen` streams, across instances with a bus). For a
    /// server whose lists are another's (an [`Upstream`]'s); false for any other method.
    pub fn notify_list_changed(&self, notification: &str) -> bool {
        let kind = [ListKind::Tools, ListKind::Resources, ListKind::Prompts]
            .into_iter()
            .find(|k| k.method() == notification);
        if let Some(kind) = kind {
            self.changed(kind);
        }
        kind.is_some()
    }

    /// A handle that does not keep this server alive (for what a server owns that must
    /// reach back to it, such as its upstream).
    pub fn downgrade(&self) -> WeakServer {
        WeakServer(Arc::downgrade(&self.inner))
    }

    /// Tells every subscribed client that a resource changed
    /// (`notifications/resources/updated`).
    pub fn notify_resource_updated(&self, uri: &str) {
        let params = ResourceUpdatedParams {
            uri: uri.to_owned(),
            meta: None,
        };
        let Ok(message) = encode_notification(methods::RESOURCES_UPDATED, Some(&params)) else {
            return;
        };
        if let Some(bus) = self.inner.bus.get() {
            spawn_publish(
                bus,
                BusMessage::ResourceUpdated {
                    from: bus.instance_id().to_owned(),
                    server: self.inner.info.name.clone(),
                    uri: uri.to_owned(),
                },
            );
        }
        self.deliver_resource_updated(uri, message);
    }

    /// Tells the streams held here that `uri` changed: listen streams subscribed to it, and
    /// subscribed legacy sessions (with a bus, only those whose GET stream is open here:
    /// every instance does the same, so each stream hears it once).
    fn deliver_resource_updated(&self, uri: &str, message: Bytes) {
        self.inner.listeners.resource_updated(uri);
        let here_only = self.inner.bus.get().is_some();
        let targets: Vec<Arc<Session>> = self
            .inner
            .sessions
            .live()
            .into_iter()
            .filter(|s| s.is_subscribed(uri) && (!here_only || s.listening_here()))
            .collect();
        self.fan_out(targets, message);
    }

    /// Connects this server to the other instances of a deployment (once; later calls do
    /// nothing): its list changes and resource updates are published on `bus`, and theirs
    /// are delivered to the streams held here. The HTTP transport calls it when its options
    /// carry a bus.
    pub(crate) fn attach_bus(&self, bus: &Arc<dyn MessageBus>) {
        if self.inner.bus.get().is_some() || self.inner.bus.set(bus.clone()).is_err() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut rx = bus.subscribe();
        let me = bus.instance_id().to_owned();
        let weak = Arc::downgrade(&self.inner);
        let gone = tokio_util::sync::CancellationToken::new();
        let _ = self.inner.bus_listener.set(gone.clone().drop_guard());
        rt.spawn(gone.run_until_cancelled_owned(async move {
            loop {
                let message = match rx.recv().await {
                    Ok(m) => m,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(inner) = weak.upgrade() else { return };
                Server { inner }.on_bus(&me, message);
            }
        }));
    }

    /// A server-wide announcement from another instance.
    fn on_bus(&self, me: &str, message: BusMessage) {
        match message {
            BusMessage::ListChanged { from, server, list }
                if from != me && server == self.inner.info.name =>
            {
                let Some(kind) = ListKind::from_name(&list) else {
                    return;
                };
                if !self.announces_changes_of(kind) {
                    return;
                }
                if let Ok(message) =
                    encode_notification(kind.method(), Some(&NotificationParams::default()))
                {
                    self.deliver_list_changed(kind, self.sessions_listening_here(), message);
                }
            }
            BusMessage::ResourceUpdated { from, server, uri }
                if from != me && server == self.inner.info.name =>
            {
                let params = ResourceUpdatedParams {
                    uri: uri.clone(),
                    meta: None,
                };
                if let Ok(message) = encode_notification(methods::RESOURCES_UPDATED, Some(&params))
                {
                    self.deliver_resource_updated(&uri, message);
                }
            }
            BusMessage::Reconnected => self.resync_lists(),
            _ => {}
        }
    }

    /// The bus was cut off and stands again: list changes announced meanwhile never
    /// arrived, so the streams held here hear that every list this server has may have
    /// changed (a spurious announcement costs a client one list call; a missed one leaves
    /// it stale).
    fn resync_lists(&self) {
        let caps = self.capabilities();
        let has = |kind| match kind {
            ListKind::Tools => caps.tools.is_some(),
            ListKind::Resources => caps.resources.is_some(),
            ListKind::Prompts => caps.prompts.is_some(),
        };
        for kind in ListKind::ALL {
            if !has(kind) || !self.announces_changes_of(kind) {
                continue;
            }
            if let Ok(message) =
                encode_notification(kind.method(), Some(&NotificationParams::default()))
            {
                self.deliver_list_changed(kind, self.sessions_listening_here(), message);
            }
        }
    }

    fn sessions_listening_here(&self) -> Vec<Arc<Session>> {
        self.inner
            .sessions
            .live()
            .into_iter()
            .filter(|s| s.listening_here())
            .collect()
    }

    /// Tells the streams held here that a list changed: legacy `targets` and the listen
    /// streams that asked for it.
    fn deliver_list_changed(&self, kind: ListKind, targets: Vec<Arc<Session>>, message: Bytes) {
        self.fan_out(targets, message);
        self.inner.listeners.list_changed(kind);
    }

    /// What the server offers.
    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The legacy sessions this server serves.
    pub(crate) fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    fn fan_out(&self, targets: Vec<Arc<Session>>, message: Bytes) {
        if targets.is_empty() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let server = self.clone();
        rt.spawn(async move { server.send_to_each(targets, message).await });
    }

    /// Sends `message` to each of `targets` in turn (what the fan-outs share).
    async fn send_to_each(&self, targets: Vec<Arc<Session>>, message: Bytes) {
        for s in targets {
            self.observe(&MessageEvent::Sending(&message));
            // A session without a listening stream simply misses it (documented).
            let _ = s.send_unrelated(message.clone()).await;
        }
    }

    /// Whether clients were promised `listChanged` notifications for this list: always with
    /// the inferred capabilities, only where set with capabilities given in the options.
    fn announces_changes_of(&self, kind: ListKind) -> bool {
        let Some(caps) = &self.inner.options.capabilities else {
            return true;
        };
        let promised = match kind {
            ListKind::Tools => caps.tools.as_ref().and_then(|c| c.list_changed),
            ListKind::Prompts => caps.prompts.as_ref().and_then(|c| c.list_changed),
            ListKind::Resources => caps.resources.as_ref().and_then(|c| c.list_changed),
        };
        promised == Some(true)
    }

    /// A list changed: announce it. The first change goes out at once; what changes while
    /// that fan-out runs goes out once more right after it ([`Announcer`]).
    pub(crate) fn changed(&self, kind: ListKind) {
        if !self.announces_changes_of(kind) {
            return;
        }
        if self.inner.sessions.live().is_empty()
            && self.inner.listeners.is_empty()
            && self.inner.bus.get().is_none()
        {
            // Nobody to tell (registration before serving): clients list afresh anyway.
            return;
        }
        let announcer = &self.inner.announcers[kind.index()];
        if !announcer.changed() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            // Registration before any runtime exists: no session can be listening yet.
            announcer.abandon();
            return;
        };
        let server = self.clone();
        rt.spawn(async move {
            loop {
                server.announce_change(kind).await;
                if !server.inner.announcers[kind.index()].sent() {
                    break;
                }
            }
        });
    }

    /// One announcement of a change of `kind`: to the streams held here, and through the
    /// bus to the other instances' (which deliver to theirs, see `attach_bus`).
    async fn announce_change(&self, kind: ListKind) {
        let Ok(message) = encode_notification(kind.method(), Some(&NotificationParams::default()))
        else {
            return;
        };
        let targets = match self.inner.bus.get() {
            Some(bus) => {
                spawn_publish(
                    bus,
                    BusMessage::ListChanged {
                        from: bus.instance_id().to_owned(),
                        server: self.inner.info.name.clone(),
                        list: kind.name().to_owned(),
                    },
                );
                self.sessions_listening_here()
            }
            None => self.inner.sessions.live(),
        };
        self.inner.listeners.list_changed(kind);
        self.send_to_each(targets, message).await;
    }
}

/// A [`Server`] that is not kept alive by this handle ([`Server::downgrade`]).
#[derive(Clone, Debug, Default)]
pub struct WeakServer(Weak<ServerInner>);

impl WeakServer {
    /// The server, while it exists.
    pub fn upgrade(&self) -> Option<Server> {
        self.0.upgrade().map(|inner| Server { inner })
    }
}

/// Publishes without waiting (a lost announcement only means a client lists later).
fn spawn_publish(bus: &Arc<dyn MessageBus>, message: BusMessage) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(bus.publish(message));
    }
}
