//! The method table: every method a server answers, one entry each, with the eras that have
//! it, how its params are read and what serves it; and every notification it acts on, with
//! how its params are read and what handles it. [`dispatch_request`] and
//! [`handle_notification`] are the only places a method name is matched, for every
//! transport and both eras.
//!
//! The era decides where a request's context comes from (its session, or its own `_meta`)
//! and how its result is framed (`request/reply.rs`), not which handler runs. Two generic paths serve
//! most entries: the methods that may ask the client for input (`input.rs`: `tools/call`,
//! `resources/read`, `prompts/get`) and the plain lists (`lists.rs`).
//!
//! Not here: request middleware (it wraps this, see `request/middleware.rs`), the client's answers
//! to the server's own requests (`session.rs`), and any transport framing.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;

use crate::protocol::{
    CallToolParams, CancelledParams, CompleteParams, ErrorObject, GetPromptParams,
    InitializeParams, Notification, PaginatedParams, RawJson, ReadResourceParams, SetLevelParams,
    SubscribeParams, SubscriptionsListenParams, TaskIdParams, methods,
};
use crate::server::request::observe::MessageEvent;
use crate::server::request::reply::Outcome;
use crate::server::request::request::{RequestShared, Scope};
use crate::server::session::Session;
use crate::server::session_ref::SessionRef;

mod completion;
mod forward;
mod input;
mod lifecycle;
mod listen;
mod lists;
#[cfg(feature = "skills")]
mod skills;
mod tasks;

use crate::protocol::{echo, without_context_meta};
use input::{PromptGet, ResourceRead, ToolCall};
use lists::{Prompts, Resources, Templates, Tools};

/// Which eras have a method.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Eras {
    /// Both: sessions (≤ 2025-11-25) and 2026-07-28.
    Both,
    /// Only legacy sessions.
    Legacy,
    /// Only 2026-07-28.
    Modern,
}

impl Eras {
    fn admit(self, modern: bool) -> bool {
        match self {
            Eras::Both => true,
            Eras::Legacy => !modern,
            Eras::Modern => modern,
        }
    }
}

/// Decodes params into the method's type (their `_meta` without the 2026-07-28 context,
/// which the request's context holds: see `without_context_meta`).
fn parse<T: DeserializeOwned>(raw: &RawJson) -> Result<T, ErrorObject> {
    without_context_meta(|| raw.parse()).map_err(|e| {
        ErrorObject::invalid_params(format!("Invalid params: {}", echo(&e.to_string())))
    })
}

/// The params of a method that must have them.
fn required<T: DeserializeOwned>(raw: Option<&RawJson>) -> Result<T, ErrorObject> {
    match raw {
        None => Err(ErrorObject::invalid_params(
            "Invalid params: missing params",
        )),
        Some(r) => parse(r),
    }
}

/// The params of a method whose params may be left out (their default).
fn optional<T: DeserializeOwned + Default>(raw: Option<&RawJson>) -> Result<T, ErrorObject> {
    raw.map_or_else(|| Ok(T::default()), parse)
}

/// The params of a method that takes none: whatever was sent is not read.
fn ignored(_: Option<&RawJson>) -> Result<(), ErrorObject> {
    Ok(())
}

/// Expands the table into the dispatcher: a `match` on the method name (the same code as
/// a hand-written one: each entry's future is part of the dispatcher's, nothing is boxed or
/// called through a pointer), the list of methods served before `initialize`, and the
/// `match` of the notifications.
macro_rules! method_table {
    (
        requests {$(
            $(#[$attr:meta])*
            $name:ident $(+ $early:ident)?, $eras:ident, $decode:ident($params:ty),
                |$s:ident, $raw:ident, $p:ident| $serve:expr;
        )*}
        notifications {$(
            $nname:ident, $ndecode:ident($nparams:ty), |$ns:ident, $np:ident| $handle:expr;
        )*}
    ) => {
        /// Acts on a notification of `session`, if the table has it (false when it has not).
        /// A notification is never answered: params that do not decode are ignored.
        fn notify(session: &Arc<Session>, method: &str, raw: Option<&RawJson>) -> bool {
            match method {
                $(methods::$nname => {
                    let params: Result<$nparams, ErrorObject> = $ndecode(raw);
                    if let Ok($np) = params {
                        let $ns = session;
                        $handle
                    }
                    true
                })*
                _ => false,
            }
        }

        /// True for the methods a legacy session answers before it is initialized.
        fn served_before_initialize(method: &str) -> bool {
            false $(|| (method_table!(@early $($early)?) && method == methods::$name))*
        }

        async fn dispatch(
            shared: &Arc<RequestShared>,
            raw: Option<&RawJson>,
        ) -> Result<Outcome, ErrorObject> {
            let modern = shared.is_modern();
            match shared.method.as_str() {
                $($(#[$attr])* methods::$name if Eras::$eras.admit(modern) => {
                    let $p: $params = $decode(raw)?;
                    let ($s, $raw) = (shared, raw);
                    let _ = $raw;
                    $serve
                })*
                other => Err(ErrorObject::method_not_found(other)),
            }
        }
    };
    (@early before_initialize) => { true };
    (@early) => { false };
}

method_table! {
    requests {
        // method (+ served before initialize), eras, params,
        //     what serves it
        TOOLS_CALL, Both, required(CallToolParams),
            |s, raw, p| input::serve::<ToolCall>(s, raw, p).await;
        TOOLS_LIST, Both, optional(PaginatedParams),
            |s, raw, p| lists::serve::<Tools>(s, p);
        INITIALIZE + before_initialize, Legacy, required(InitializeParams),
            |s, raw, p| lifecycle::initialize(s, p).await;
        PING + before_initialize, Legacy, ignored(()),
            |s, raw, p| lifecycle::ping(s, p);
        DISCOVER, Modern, ignored(()),
            |s, raw, p| lifecycle::discover(s, p).await;
        RESOURCES_LIST, Both, optional(PaginatedParams),
            |s, raw, p| lists::serve::<Resources>(s, p);
        RESOURCES_TEMPLATES_LIST, Both, optional(PaginatedParams),
            |s, raw, p| lists::serve::<Templates>(s, p);
        RESOURCES_READ, Both, required(ReadResourceParams),
            |s, raw, p| input::serve::<ResourceRead>(s, raw, p).await;
        RESOURCES_SUBSCRIBE, Legacy, required(SubscribeParams),
            |s, raw, p| lifecycle::subscribe(s, raw, p, true).await;
        RESOURCES_UNSUBSCRIBE, Legacy, required(SubscribeParams),
            |s, raw, p| lifecycle::subscribe(s, raw, p, false).await;
        PROMPTS_LIST, Both, optional(PaginatedParams),
            |s, raw, p| lists::serve::<Prompts>(s, p);
        PROMPTS_GET, Both, required(GetPromptParams),
            |s, raw, p| input::serve::<PromptGet>(s, raw, p).await;
        COMPLETION_COMPLETE, Both, required(CompleteParams),
            |s, raw, p| completion::complete(s, p).await;
        LOGGING_SET_LEVEL, Legacy, required(SetLevelParams),
            |s, raw, p| lifecycle::set_level(s, raw, p).await;
        // The eras' task protocols differ: one entry per era.
        TASKS_GET, Legacy, required(TaskIdParams),
            |s, raw, p| tasks::legacy::get(s, p).await;
        TASKS_GET, Modern, required(TaskIdParams),
            |s, raw, p| tasks::modern::get(s, p).await;
        TASKS_RESULT, Legacy, required(TaskIdParams),
            |s, raw, p| tasks::legacy::result(s, p).await;
        TASKS_LIST, Legacy, optional(PaginatedParams),
            |s, raw, p| tasks::legacy::list(s, p).await;
        TASKS_CANCEL, Legacy, required(TaskIdParams),
            |s, raw, p| tasks::legacy::cancel(s, p).await;
        TASKS_CANCEL, Modern, required(TaskIdParams),
            |s, raw, p| tasks::modern::cancel(s, p).await;
        TASKS_UPDATE, Modern, required(tasks::modern::TaskUpdateParams),
            |s, raw, p| tasks::modern::update(s, p).await;
        // Without the feature `skills`: method not found, as for any method not served.
        #[cfg(feature = "skills")]
        SKILLS_LIST, Both, optional(PaginatedParams),
            |s, raw, p| skills::list(s, p);
        #[cfg(feature = "skills")]
        SKILLS_GET, Both, required(crate::protocol::GetSkillParams),
            |s, raw, p| skills::get(s, p);
        #[cfg(feature = "skills")]
        RESOURCES_DIRECTORY_READ, Both, required(crate::protocol::ReadDirectoryParams),
            |s, raw, p| skills::read_directory(s, p);
        SUBSCRIPTIONS_LISTEN, Modern, required(SubscriptionsListenParams),
            |s, raw, p| listen::listen(s, p).await;
    }
    notifications {
        // notification, params, what handles it (for a session). Progress from the client
        // and roots changes need nothing from the core: like every notification, observers see
        // them (and a server's upstream gets them).
        INITIALIZED, ignored(()), |session, p| lifecycle::initialized(session, p);
        CANCELLED, required(CancelledParams), |session, p| lifecycle::cancelled(session, p);
    }
}

/// The innermost step of every request (after any request middleware): the table, or the
/// server's upstream for every method the server does not answer itself.
pub(crate) async fn dispatch_request(shared: Arc<RequestShared>, raw: Option<RawJson>) -> Outcome {
    if let Scope::Legacy(session) = &shared.scope
        && !session.is_initialized()
        && !served_before_initialize(&shared.method)
    {
        return Outcome::Error(ErrorObject::invalid_request(
            "Invalid request: the session is not initialized yet",
        ));
    }
    if let Some(upstream) = shared.server.upstream()
        && forward::forwarded(&shared.method)
    {
        let upstream = upstream.clone();
        return forward::forward(&shared, &upstream, raw).await;
    }
    match dispatch(&shared, raw.as_ref()).await {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Error(e),
    }
}

/// Handles a notification from the client, at once, in the order notifications arrive:
/// the observers see it, then its entry in the table acts; one the table does not have goes
/// to the server's upstream, if it has one (roots changes, progress, unknown ones). Only a
/// session's notifications do anything (a 2026-07-28 request over HTTP is cancelled by
/// closing its stream).
pub(crate) fn handle_notification(session: Option<&Arc<Session>>, n: &Notification) {
    let Some(session) = session else { return };
    let server = session.server();
    server.observe(&MessageEvent::NotificationReceived(n));
    if !notify(session, &n.method, n.params.as_ref())
        && let Some(upstream) = server.upstream()
    {
        upstream.notification(Some(&SessionRef::of(session)), n);
    }
}

/// [`dispatch_request`] boxed, as the end of a request middleware chain.
pub(crate) fn dispatch_boxed(
    shared: Arc<RequestShared>,
    raw: Option<RawJson>,
) -> BoxFuture<'static, Outcome> {
    Box::pin(dispatch_request(shared, raw))
}
