//! The methods about the connection itself rather than what the server offers:
//! `initialize` and `ping` (legacy sessions), `server/discover` (2026-07-28), and the
//! session state a legacy client sets (`logging/setLevel`, `resources/subscribe` and
//! `resources/unsubscribe`); and the notifications about the session,
//! `notifications/initialized` and `notifications/cancelled`.

use std::sync::Arc;

use crate::protocol::{
    CancelledParams, DiscoverResult, ErrorObject, InitializeParams, InitializeResult,
    ProtocolVersion, SetLevelParams, SubscribeParams, encode_notification, methods,
};
use crate::server::request::reply::{Outcome, cacheable, complete, empty};
use crate::server::request::request::{RequestShared, Scope};
use crate::server::session::{ClientInit, Session};

/// The legacy session of a request (the table only routes legacy methods here).
fn session_of(shared: &RequestShared) -> Result<&Arc<Session>, ErrorObject> {
    match &shared.scope {
        Scope::Legacy(s) => Ok(s),
        Scope::Modern(_) => Err(ErrorObject::method_not_found(&shared.method)),
    }
}

/// `initialize`: negotiates the version and records what the client said.
pub(super) fn initialize(
    shared: &RequestShared,
    p: InitializeParams,
) -> Result<Outcome, ErrorObject> {
    let session = session_of(shared)?;
    let version = ProtocolVersion::negotiate_legacy(&p.protocol_version);
    let init = ClientInit {
        version,
        capabilities: p.capabilities,
        info: Some(p.client_info),
    };
    if !session.set_init(init) {
        return Err(ErrorObject::invalid_request(
            "Invalid request: the session is already initialized",
        ));
    }
    let server = &shared.server;
    let mut capabilities = server.capabilities();
    capabilities.extensions = None;
    if version < ProtocolVersion::V2025_11_25 {
        capabilities.tasks = None;
    }
    Ok(complete(
        shared,
        InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: server.info().clone(),
            instructions: server.options().instructions.clone(),
            meta: None,
        },
    ))
}

/// `ping`: answers exactly `{}`.
pub(super) fn ping(shared: &RequestShared, _: ()) -> Result<Outcome, ErrorObject> {
    Ok(empty(shared))
}

/// `server/discover` (2026-07-28): versions, capabilities and instructions.
pub(super) fn discover(shared: &RequestShared, _: ()) -> Result<Outcome, ErrorObject> {
    let server = &shared.server;
    let mut capabilities = server.capabilities();
    capabilities.tasks = None;
    Ok(cacheable(
        shared,
        DiscoverResult {
            supported_versions: DiscoverResult::all_versions(),
            capabilities,
            instructions: server.options().instructions.clone(),
            meta: None,
        },
    ))
}

/// `logging/setLevel`.
/// Like the subscriptions, the level is shared before the answer: a client that set it
/// expects the level to hold for what other instances send it next.
pub(super) async fn set_level(
    shared: &RequestShared,
    p: SetLevelParams,
) -> Result<Outcome, ErrorObject> {
    session_of(shared)?.set_log_level(p.level).done().await;
    Ok(empty(shared))
}

/// `resources/subscribe` (`on`) and `resources/unsubscribe`. A change is shared (saved to
/// the session store) before the answer: a client that opens its GET stream on another
/// instance once subscribed must find the subscription there. A request that changes
/// nothing waits for nothing.
pub(super) async fn subscribe(
    shared: &RequestShared,
    p: SubscribeParams,
    on: bool,
) -> Result<Outcome, ErrorObject> {
    let session = session_of(shared)?;
    let change = if on {
        session.subscribe(&p.uri)
    } else {
        session.unsubscribe(&p.uri)
    };
    change.done().await;
    Ok(empty(shared))
}

/// `notifications/initialized`: the handshake is complete.
pub(super) fn initialized(session: &Session, (): ()) {
    session.mark_initialized();
}

/// `notifications/cancelled`: the request stops, here or (with hooks that share the
/// session) on the instance running it.
pub(super) fn cancelled(session: &Session, p: CancelledParams) {
    if !session.cancel_inflight(&p.request_id)
        && let Some(h) = session.hooks()
        && let Ok(m) = encode_notification(methods::CANCELLED, Some(&p))
    {
        // Not running here: it may run on another instance of the deployment.
        h.unmatched_cancel(m);
    }
}
