//! [`Link`]: one backend connection (a [`Client`]) and the front requests in flight on it,
//! which decide where the backend's questions (sampling, elicitation, roots), logs and
//! notifications go.
//!
//! A link serves one front session alone (the default for legacy sessions), or is shared (the
//! pool: 2026-07-28 requests, stateless requests, and every session with shared backends).
//! A question of the backend goes to the front request in flight on the link when there is
//! one (or several of one session: the newest); to the link's session when none is; and is
//! refused when requests of several clients are in flight on a shared link, so a question is
//! never shown to a client it is not for.
//!
//! Not here: opening the client (`backend.rs`) and forwarding a request (`forward.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::era::Listens;
use crate::client::{Client, ServerNotification};
use crate::error::Error;
use crate::protocol::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, ErrorObject,
    InitializeResult, ListRootsResult, LoggingMessageParams, ParamHeader, encode_notification,
    methods,
};
use crate::server::{HandlerError, RequestContext, SessionRef, WeakServer};
use crate::sync::{lock, read, write};

/// How many messages may wait for one front request's stream or a session's stream (a
/// backend flooding faster than the client reads loses the newest, with a warning).
const QUEUE: usize = 256;

/// How long a question of the backend outside any request waits for the client's answer.
const QUESTION_TIMEOUT: Duration = crate::server::DEFAULT_CLIENT_REQUEST_TIMEOUT;

/// What the backend sent that belongs on one front request's stream.
pub(super) enum Event {
    /// A notification to pass on as it is (progress with the front token, a log line).
    Notify(String, Value),
    /// A log line to pass on if the front request's level admits it.
    Log(LoggingMessageParams),
    /// The front request must end now with this (a 2026-07-28 question became an input
    /// round).
    Abort(HandlerError),
}

/// Who a front request is for: the questions of one session may go to any of its requests.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Session(u64),
    Alone(u64),
}

/// A front request in flight on the link.
struct Call {
    id: u64,
    origin: Origin,
    ctx: RequestContext,
    events: mpsc::Sender<Event>,
    asking: Arc<Asking>,
}

/// The backend's questions being asked through one front request: its answer waits for
/// them to end (a question the backend gave up is cancelled at the client before the
/// answer goes out).
#[derive(Default)]
pub(super) struct Asking {
    count: AtomicUsize,
    done: tokio::sync::Notify,
}

impl Asking {
    /// Waits (at most `limit`) until no question is being asked.
    pub(super) async fn settled(&self, limit: Duration) {
        wait_until(&self.done, limit, || {
            self.count.load(Ordering::Acquire) == 0
        })
        .await;
    }
}

/// One question being asked (dropped when it ends, answered or not).
struct Asked(Arc<Asking>);

impl Asked {
    fn new(asking: &Arc<Asking>) -> Asked {
        asking.count.fetch_add(1, Ordering::AcqRel);
        Asked(asking.clone())
    }
}

impl Drop for Asked {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.done.notify_waiters();
        }
    }
}

/// Where a question or message of the backend goes.
enum Target {
    Call(RequestContext, mpsc::Sender<Event>, Arc<Asking>),
    Session(SessionRef),
    Nobody(String),
}

/// One backend connection.
pub(super) struct Link {
    /// Set once connected (the client's callbacks reach the link, so it exists first).
    client: OnceLock<Client>,
    /// What the backend said it is.
    info: OnceLock<InitializeResult>,
    /// The front session this link serves alone; `None` for a shared link.
    session: Option<SessionRef>,
    /// The front server, for a shared link's announcements.
    server: WeakServer,
    /// Names the backend in logs and errors (`child 1234`, `upstream https://…`).
    label: OnceLock<String>,
    calls: Mutex<Vec<Call>>,
    /// Told each time the last front request in flight leaves.
    idle: tokio::sync::Notify,
    next_call: AtomicU64,
    /// Messages for the link's session outside any request, in order.
    unsolicited: Option<mpsc::Sender<Bytes>>,
    /// The listen streams held open on a 2026-07-28 backend.
    listens: Listens,
    /// This link (for the tasks it starts on itself).
    me: std::sync::Weak<Link>,
    /// The `x-mcp-header` arguments of the backend's tools, by tool, where learned.
    tool_headers: RwLock<HashMap<String, Arc<[ParamHeader]>>>,
}

impl Link {
    /// A link not connected yet: for `session` alone, or shared.
    pub(super) fn new(session: Option<SessionRef>, server: WeakServer) -> Arc<Link> {
        let unsolicited = session.as_ref().map(|s| {
            let (tx, mut rx) = mpsc::channel::<Bytes>(QUEUE);
            let s = s.clone();
            tokio::spawn(async move {
                while let Some(m) = rx.recv().await {
                    if s.send(m).await.is_err() && !s.is_open() {
                        return;
                    }
                }
            });
            tx
        });
        Arc::new_cyclic(|me| Link {
            me: me.clone(),
            client: OnceLock::new(),
            info: OnceLock::new(),
            session,
            server,
            label: OnceLock::new(),
            calls: Mutex::new(Vec::new()),
            idle: tokio::sync::Notify::new(),
            next_call: AtomicU64::new(1),
            unsolicited,
            listens: Listens::default(),
            tool_headers: RwLock::new(HashMap::new()),
        })
    }

    /// Records the connected client and what the backend is.
    pub(super) fn connected(&self, client: Client, info: InitializeResult, label: String) {
        let _ = self.client.set(client);
        let _ = self.info.set(info);
        let _ = self.label.set(label);
    }

    pub(super) fn client(&self) -> Option<&Client> {
        self.client.get()
    }

    pub(super) fn info(&self) -> Option<&InitializeResult> {
        self.info.get()
    }

    pub(super) fn listens(&self) -> &Listens {
        &self.listens
    }

    pub(super) fn session(&self) -> Option<&SessionRef> {
        self.session.as_ref()
    }

    pub(super) fn label(&self) -> &str {
        self.label.get().map_or("the backend", String::as_str)
    }

    /// Lists the backend's tools to learn their `x-mcp-header` arguments by the rules the
    /// server core applies to its own tools (and, for a 2026-07-28 backend, lets the client
    /// core learn them too, to mirror them to it).
    pub(super) async fn learn_tools(&self, client: &Client) {
        if client.is_modern() {
            let _ = client.list_all_tools().await;
        }
        let mut learned = HashMap::new();
        let mut cursor: Option<Value> = None;
        loop {
            let mut params = serde_json::Map::new();
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), c);
            }
            let page = match client
                .request_raw(methods::TOOLS_LIST, params, Default::default())
                .await
                .and_then(|r| Ok(r.parse::<crate::protocol::ListToolsResult>()?))
            {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(target: "vellum::gateway", "{}: no tool list: {e}", self.label());
                    return;
                }
            };
            for t in page.tools {
                if let Ok(h) = ParamHeader::of_schema(&t.input_schema)
                    && !h.is_empty()
                {
                    learned.insert(t.name, Arc::from(h));
                }
            }
            match page.next_cursor {
                Some(c) => cursor = Some(Value::String(c)),
                None => break,
            }
        }
        *write(&self.tool_headers) = learned;
    }

    /// The `x-mcp-header` arguments of one of the backend's tools, if learned.
    pub(super) fn param_headers(&self, tool: &str) -> Option<Arc<[ParamHeader]>> {
        read(&self.tool_headers).get(tool).cloned()
    }

    /// How many front requests are in flight on it.
    pub(super) fn load(&self) -> usize {
        lock(&self.calls).len()
    }

    /// Waits (at most `limit`) until no front request is in flight on it: after the
    /// backend ended, its calls have their errors by then.
    pub(super) async fn settled(&self, limit: Duration) {
        wait_until(&self.idle, limit, || self.load() == 0).await;
    }

    /// Registers a front request in flight until the guard drops; its events arrive on the
    /// receiver.
    pub(super) fn register(
        self: &Arc<Self>,
        ctx: &RequestContext,
    ) -> (
        CallGuard,
        mpsc::Sender<Event>,
        mpsc::Receiver<Event>,
        Arc<Asking>,
    ) {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let origin = match ctx.session() {
            Some(s) => Origin::Session(s.key()),
            None => Origin::Alone(id),
        };
        let (events, rx) = mpsc::channel(QUEUE);
        let asking = Arc::new(Asking::default());
        lock(&self.calls).push(Call {
            id,
            origin,
            ctx: ctx.clone(),
            events: events.clone(),
            asking: asking.clone(),
        });
        let guard = CallGuard {
            link: self.clone(),
            id,
        };
        (guard, events, rx, asking)
    }

    /// Where a question or message of the backend goes now.
    fn target(&self) -> Target {
        let calls = lock(&self.calls);
        let Some(newest) = calls.last() else {
            return match &self.session {
                Some(s) => Target::Session(s.clone()),
                None => Target::Nobody(format!(
                    "{} is shared and no request is in flight on it, so no client can be asked",
                    self.label()
                )),
            };
        };
        let one_client = matches!(newest.origin, Origin::Session(_))
            && calls.iter().all(|c| c.origin == newest.origin);
        if calls.len() == 1 || one_client {
            return Target::Call(
                newest.ctx.clone(),
                newest.events.clone(),
                newest.asking.clone(),
            );
        }
        Target::Nobody(format!(
            "{} is shared and requests of {} clients are in flight on it: the proxy cannot \
             tell which one this is for",
            self.label(),
            calls.len()
        ))
    }

    /// `sampling/createMessage` of the backend.
    pub(super) async fn ask_sampling(
        &self,
        p: CreateMessageParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        match self.target() {
            Target::Call(ctx, events, asking) => {
                let _asked = Asked::new(&asking);
                settle(ctx.create_message(p).await, &events)
            }
            Target::Session(s) => asked(
                s.request(methods::SAMPLING_CREATE_MESSAGE, &p, QUESTION_TIMEOUT)
                    .await,
            ),
            Target::Nobody(why) => Err(ErrorObject::internal(why)),
        }
    }

    /// `elicitation/create` of the backend.
    pub(super) async fn ask_elicitation(
        &self,
        p: ElicitParams,
    ) -> Result<ElicitResult, ErrorObject> {
        match self.target() {
            Target::Call(ctx, events, asking) => {
                let _asked = Asked::new(&asking);
                settle(ctx.elicit(p).await, &events)
            }
            Target::Session(s) => asked(
                s.request(methods::ELICITATION_CREATE, &p, QUESTION_TIMEOUT)
                    .await,
            ),
            Target::Nobody(why) => Err(ErrorObject::internal(why)),
        }
    }

    /// `roots/list` of the backend.
    pub(super) async fn ask_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        match self.target() {
            Target::Call(ctx, events, asking) => {
                let _asked = Asked::new(&asking);
                settle(ctx.list_roots().await, &events)
            }
            Target::Session(s) => asked(
                s.request(
                    methods::ROOTS_LIST,
                    &serde_json::json!({}),
                    QUESTION_TIMEOUT,
                )
                .await,
            ),
            Target::Nobody(why) => Err(ErrorObject::internal(why)),
        }
    }

    /// A notification of the backend (the client already routed progress, cancellations
    /// and acknowledgements).
    pub(super) fn on_notification(&self, n: ServerNotification) {
        match n {
            ServerNotification::Progress(_)
            | ServerNotification::Cancelled(_)
            | ServerNotification::SubscriptionsAcknowledged(_) => {}
            ServerNotification::Log(l) => self.log(l),
            ServerNotification::ToolsListChanged => self.list_changed(methods::TOOLS_LIST_CHANGED),
            ServerNotification::PromptsListChanged => {
                self.list_changed(methods::PROMPTS_LIST_CHANGED)
            }
            ServerNotification::ResourcesListChanged => {
                self.list_changed(methods::RESOURCES_LIST_CHANGED)
            }
            ServerNotification::ResourceUpdated(p) => match &self.session {
                Some(_) => self.to_session(methods::RESOURCES_UPDATED, &p),
                None => {
                    if let Some(server) = self.server.upgrade() {
                        server.notify_resource_updated(&p.uri);
                    }
                }
            },
            ServerNotification::ElicitationComplete(p) => {
                self.pass_on(methods::ELICITATION_COMPLETE, serde_json::to_value(p).ok());
            }
            ServerNotification::Other(n) => {
                let params = n.params.as_ref().and_then(|p| p.parse::<Value>().ok());
                self.pass_on(&n.method, params);
            }
        }
    }

    /// A log line: to the request in flight, else the session's stream; a shared link's
    /// lines only where they can be told apart, filtered by the front request's level.
    fn log(&self, l: LoggingMessageParams) {
        match (self.target(), &self.session) {
            (Target::Call(_, events, _), Some(_)) => {
                if let Ok(v) = serde_json::to_value(&l) {
                    queue(&events, Event::Notify(methods::MESSAGE.to_owned(), v));
                }
            }
            (Target::Call(_, events, _), None) => queue(&events, Event::Log(l)),
            (Target::Session(_), _) => self.to_session(methods::MESSAGE, &l),
            (Target::Nobody(why), _) => {
                tracing::debug!("a log line of {} dropped: {why}", self.label())
            }
        }
    }

    /// A list changed: the link's session hears it, or (shared) every client that asked.
    fn list_changed(&self, method: &'static str) {
        if method == methods::TOOLS_LIST_CHANGED
            && !read(&self.tool_headers).is_empty()
            && let (Some(client), Some(me)) = (self.client.get().cloned(), self.me.upgrade())
        {
            tokio::spawn(async move { me.learn_tools(&client).await });
        }
        match &self.session {
            Some(_) => self.to_session(method, &serde_json::json!({})),
            None => {
                if let Some(server) = self.server.upgrade() {
                    server.notify_list_changed(method);
                }
            }
        }
    }

    /// Any other notification: to the request in flight, else the session's stream.
    fn pass_on(&self, method: &str, params: Option<Value>) {
        let params = params.unwrap_or_else(|| serde_json::json!({}));
        match self.target() {
            Target::Call(_, events, _) => {
                queue(&events, Event::Notify(method.to_owned(), params));
            }
            Target::Session(_) => self.to_session(method, &params),
            Target::Nobody(why) => {
                tracing::debug!("{method} of {} dropped: {why}", self.label());
            }
        }
    }

    /// Queues a notification for the link's session's stream.
    fn to_session<P: serde::Serialize + ?Sized>(&self, method: &str, params: &P) {
        let (Some(tx), Ok(m)) = (&self.unsolicited, encode_notification(method, Some(params)))
        else {
            return;
        };
        if tx.try_send(m).is_err() {
            tracing::warn!(
                "{method} of {} dropped: the client reads too slowly",
                self.label()
            );
        }
    }
}

/// Waits (at most `limit`) until `done` holds, checking it each time `told` is notified.
pub(super) async fn wait_until(
    told: &tokio::sync::Notify,
    limit: Duration,
    done: impl Fn() -> bool,
) {
    let wait = async {
        loop {
            let next = told.notified();
            if done() {
                return;
            }
            next.await;
        }
    };
    let _ = tokio::time::timeout(limit, wait).await;
}

/// Queues an event for a front request, dropping it when the request's queue is full.
pub(super) fn queue(events: &mpsc::Sender<Event>, event: Event) {
    if events.try_send(event).is_err() {
        tracing::warn!("a message of the backend dropped: the client reads too slowly");
    }
}

/// What a question asked through a front request gives the backend. A 2026-07-28 question
/// ends the front request with an input round (the client retries with the answer, and the
/// backend is asked again); the backend's own question then fails, as its call is cancelled.
fn settle<T>(answer: Result<T, Error>, events: &mpsc::Sender<Event>) -> Result<T, ErrorObject> {
    match answer {
        Ok(v) => Ok(v),
        Err(e) if e.is_input_required() => {
            queue(events, Event::Abort(HandlerError::from(e)));
            Err(ErrorObject::internal(
                "the question went to the client as an input round; the call is retried with its answer",
            ))
        }
        Err(e) => Err(question_error(e)),
    }
}

/// The answer to a question asked on a session's stream.
fn asked<T>(answer: Result<T, Error>) -> Result<T, ErrorObject> {
    answer.map_err(question_error)
}

/// What the backend hears when its question could not be answered.
fn question_error(e: Error) -> ErrorObject {
    e.into_rpc_error().unwrap_or_else(|other| {
        ErrorObject::internal(format!(
            "the client could not be asked: {}",
            crate::error::chain(&other)
        ))
    })
}

/// Unregisters a front request from its link when it ends.
pub(super) struct CallGuard {
    link: Arc<Link>,
    id: u64,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let mut calls = lock(&self.link.calls);
        calls.retain(|c| c.id != self.id);
        if calls.is_empty() {
            drop(calls);
            self.link.idle.notify_waiters();
        }
    }
}
