//! The methods about the connection itself rather than what the server offers:
//! `initialize` and `ping` (legacy sessions), `server/discover` (2026-07-28), and the
//! session state a legacy client sets (`logging/setLevel`, `resources/subscribe` and
//! `resources/unsubscribe`); and the notifications about the session,
//! `notifications/initialized` and `notifications/cancelled`.

use std::sync::Arc;

use crate::protocol::{
    CancelledParams, DiscoverResult, ErrorObject, InitializeParams, InitializeResult,
    ProtocolVersion, ProtocolVersions, RawJson, SetLevelParams, SubscribeParams,
    encode_notification, methods,
};
use crate::server::request::reply::{Outcome, cacheable, complete, empty};
use crate::server::request::request::{RequestShared, Scope};
use crate::server::session::{ClientInit, Session, init_bytes};
use crate::server::session_ref::SessionRef;

/// The legacy session of a request (the table only routes legacy methods here).
fn session_of(shared: &RequestShared) -> Result<&Arc<Session>, ErrorObject> {
    match &shared.scope {
        Scope::Legacy(s) => Ok(s),
        Scope::Modern(_) => Err(ErrorObject::method_not_found(&shared.method)),
    }
}

/// `initialize`: negotiates the version and records what the client said. With an
/// upstream, what the server is (capabilities, identity, instructions) is what the upstream
/// opened for the session says, and the version the upstream chose wins where it is one this
/// server speaks.
pub(super) async fn initialize(
    shared: &RequestShared,
    p: InitializeParams,
) -> Result<Outcome, ErrorObject> {
    let session = session_of(shared)?;
    if session.is_initialized() {
        return Err(already_initialized());
    }
    let accepted = session.versions();
    let Some(negotiated) = accepted.negotiate_legacy(&p.protocol_version) else {
        // The legacy spec's refusal of an `initialize` no version can answer.
        return Err(ErrorObject::invalid_params(format!(
            "Unsupported protocol version: this server accepts only {accepted}, none of them \
             negotiated by initialize"
        ))
        .with_data(serde_json::json!({
            "supported": accepted.wire_names(),
            "requested": p.protocol_version,
        })));
    };
    let server = &shared.server;
    // Before anything is kept or opened (an upstream's session, a gateway's child).
    let kept = kept_by_initialize(server.limits().max_session_bytes, &p)?;
    let (version, mut result) = match server.upstream() {
        Some(up) => {
            let client_info = p.client_info.clone();
            let capabilities = p.capabilities.clone();
            // A stateless server's throwaway session serves this request alone: nothing to
            // open for it.
            let r = if session.is_temporary() {
                up.describe().await?
            } else {
                up.open_session(SessionRef::of(session), p).await?
            };
            server.learn_upstream_info(&r.server_info);
            let version = ProtocolVersion::parse(&r.protocol_version)
                .filter(|v| !v.is_modern() && accepted.contains(*v))
                .unwrap_or(negotiated);
            let init = ClientInit {
                version,
                capabilities,
                info: Some(client_info),
            };
            (init, r)
        }
        None => {
            let version = negotiated;
            let r = InitializeResult {
                protocol_version: String::new(),
                capabilities: server.capabilities(),
                server_info: server.info().clone(),
                instructions: None,
                meta: None,
            };
            let init = ClientInit {
                version,
                capabilities: p.capabilities,
                info: Some(p.client_info),
            };
            (init, r)
        }
    };
    let v = version.version;
    if !session.set_init(version, kept) {
        return Err(already_initialized());
    }
    result.protocol_version = v.as_str().to_owned();
    result.capabilities.extensions = None;
    if v < ProtocolVersion::V2025_11_25 {
        result.capabilities.tasks = None;
    }
    if let Some(i) = &server.options().instructions {
        result.instructions = Some(i.clone());
    }
    result.meta = None;
    Ok(complete(shared, result))
}

/// The bytes the session will keep of `p` (its capabilities and client info), refused past
/// `max` (`max_session_bytes`).
fn kept_by_initialize(max: usize, p: &InitializeParams) -> Result<usize, ErrorObject> {
    init_bytes(&p.capabilities, Some(&p.client_info), max).ok_or_else(|| {
        ErrorObject::invalid_params(format!(
            "Initialize refused: the client's capabilities and clientInfo take more than the \
             {max} bytes a session may keep on this server (max_session_bytes)"
        ))
    })
}

fn already_initialized() -> ErrorObject {
    ErrorObject::invalid_request("Invalid request: the session is already initialized")
}

/// `ping`: answers exactly `{}`.
pub(super) fn ping(shared: &RequestShared, _: ()) -> Result<Outcome, ErrorObject> {
    Ok(empty(shared))
}

/// `server/discover` (2026-07-28): versions, capabilities and instructions (the upstream's,
/// when the server has one).
pub(super) async fn discover(shared: &RequestShared, _: ()) -> Result<Outcome, ErrorObject> {
    let server = &shared.server;
    let (mut capabilities, mut instructions) = match server.upstream() {
        Some(up) => {
            let r = up.describe().await?;
            server.learn_upstream_info(&r.server_info);
            (r.capabilities, r.instructions)
        }
        None => (server.capabilities(), None),
    };
    capabilities.tasks = None;
    if let Some(i) = &server.options().instructions {
        instructions = Some(i.clone());
    }
    Ok(cacheable(
        shared,
        DiscoverResult {
            supported_versions: match &shared.scope {
                Scope::Modern(meta) => meta.accepted.wire_names(),
                Scope::Legacy(_) => ProtocolVersions::ALL.wire_names(),
            }
            .into_iter()
            .map(str::to_owned)
            .collect(),
            capabilities,
            instructions,
            meta: None,
        },
    ))
}

/// `logging/setLevel`.
/// Like the subscriptions, the level is shared before the answer: a client that set it
/// expects the level to hold for what other instances send it next. With an upstream, the
/// request then goes on to it (its answer is the answer).
pub(super) async fn set_level(
    shared: &Arc<RequestShared>,
    raw: Option<&RawJson>,
    p: SetLevelParams,
) -> Result<Outcome, ErrorObject> {
    session_of(shared)?.set_log_level(p.level).done().await;
    Ok(forward_or(shared, raw).await)
}

/// `resources/subscribe` (`on`) and `resources/unsubscribe`. A change is shared (saved to
/// the session store) before the answer: a client that opens its GET stream on another
/// instance once subscribed must find the subscription there. A request that changes
/// nothing waits for nothing. With an upstream, the request then goes on to it.
pub(super) async fn subscribe(
    shared: &Arc<RequestShared>,
    raw: Option<&RawJson>,
    p: SubscribeParams,
    on: bool,
) -> Result<Outcome, ErrorObject> {
    let session = session_of(shared)?;
    let change = if on {
        session.subscribe(&p.uri)?
    } else {
        session.unsubscribe(&p.uri)
    };
    change.done().await;
    Ok(forward_or(shared, raw).await)
}

/// The upstream's answer to a request the server recorded, or `{}` without an upstream.
async fn forward_or(shared: &Arc<RequestShared>, raw: Option<&RawJson>) -> Outcome {
    match shared.server.upstream() {
        Some(up) => {
            let up = up.clone();
            super::forward::forward(shared, &up, raw.cloned()).await
        }
        None => empty(shared),
    }
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
