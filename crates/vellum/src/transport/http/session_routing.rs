//! Which session a request belongs to, and the session's lifecycle as HTTP sees it: the
//! session an `Mcp-Session-Id` names (404 when unknown, 403 when it belongs to another
//! caller, restored from the session store when another instance created it), a new session
//! for `initialize` (within the session caps), a throwaway one for stateless requests, and
//! DELETE.
//!
//! Not here: the table of sessions itself (`session_table.rs`).

use std::sync::Arc;

use http::{Response, StatusCode};

use crate::protocol::{Message, Payload, ProtocolVersion, methods};
use crate::server::{Caller, ModernMeta, Session, redact_session_id};

use super::body::ResponseBody;
use super::client_address::ClientKey;
use super::headers::{names, text};
use super::rejection::Rejection;
use super::response::status_only;
use super::session_caps::{Caps, Full, Holder};
use super::session_table::{ActivityGuard, HttpSession, new_session_id};
use super::state::Inner;
use super::trace::log_event;

/// Where the requests of a POST are served, after routing.
pub(super) enum Route {
    /// One 2026-07-28 request: its own `_meta` is its context.
    Modern(Box<ModernMeta>),
    /// Legacy requests of a stateless handler: a throwaway session for this POST alone.
    Throwaway(Arc<Session>),
    /// Legacy requests of a live session (kept active while they run).
    Session(ActivityGuard),
    /// The `initialize` of a new session: the session exists once it succeeded, and its id
    /// then goes out.
    NewSession(ActivityGuard),
}

impl Route {
    /// The legacy session the requests are served in (none for a modern request).
    pub(super) fn legacy_session(&self) -> Option<&Arc<Session>> {
        match self {
            Route::Modern(_) => None,
            Route::Throwaway(session) => Some(session),
            Route::Session(a) | Route::NewSession(a) => Some(&a.session().core),
        }
    }

    /// The version a legacy request speaks: its header's, else its session's (the one
    /// negotiated; 2025-03-26 for a stateless request without the header).
    pub(super) fn version(&self, header: Option<ProtocolVersion>) -> ProtocolVersion {
        match (header, self) {
            (Some(v), _) => v,
            (None, Route::Session(a) | Route::NewSession(a)) => a.session().core.protocol_version(),
            (None, Route::Modern(_) | Route::Throwaway(_)) => ProtocolVersion::DEFAULT_LEGACY,
        }
    }
}

/// Routes a legacy POST: a stateless handler's throwaway session; else the session its
/// `Mcp-Session-Id` names; else a new session for an `initialize`; else 400.
pub(super) async fn legacy_route(
    inner: &Inner,
    parts: &http::request::Parts,
    payload: &Payload,
    version: Option<ProtocolVersion>,
) -> Result<Route, Rejection> {
    if inner.options.stateless {
        stateless_route(inner, parts, payload, version)
    } else if let Some(http) = session(inner, parts).await? {
        Ok(Route::Session(http.activity(&inner.sessions)))
    } else if is_initialize(payload) {
        new_session_route(inner, parts)
    } else {
        Err(Rejection::MissingSession)
    }
}

/// Refuses a POST whose requests would take its session past the in-flight cap (every
/// request of a batch counts, not the POST that carries them).
pub(super) fn check_in_flight(
    inner: &Inner,
    route: &Route,
    payload: &Payload,
) -> Result<(), Rejection> {
    let (Route::Session(a) | Route::NewSession(a), Some(max)) =
        (route, inner.options.max_in_flight_per_session)
    else {
        return Ok(());
    };
    if a.session()
        .attached_inflight()
        .saturating_add(request_count(payload))
        > max
    {
        return Err(Rejection::TooManyRequests);
    }
    Ok(())
}

/// Finds the live session a request names: 404 when unknown or closed, 403 when it belongs
/// to another principal.
pub(super) async fn session(
    inner: &Inner,
    parts: &http::request::Parts,
) -> Result<Option<Arc<HttpSession>>, Rejection> {
    let Some(id) = text(&parts.headers, &names::SESSION_ID) else {
        return Ok(None);
    };
    let s = match inner.sessions.get(id) {
        Some(s) if !s.closed.is_cancelled() && !s.core.is_ending() => s,
        Some(s) => {
            if !s.closed.is_cancelled() && s.core.is_closed() {
                // The server ended it (a gateway whose upstream went): end it for good here,
                // in the stores and on the other instances.
                let _ = inner.sessions.close(&s.id).await;
            }
            return Err(Rejection::UnknownSession);
        }
        None => restore(inner, parts, id).await?,
    };
    if let Some(owner) = &s.owner {
        let caller = parts.extensions.get::<Caller>();
        if !caller.is_some_and(|c| c.issuer == owner.0 && c.subject == owner.1) {
            return Err(Rejection::WrongPrincipal);
        }
    }
    Ok(Some(s))
}

/// Serves a session this instance does not have: load it from the session store.
async fn restore(
    inner: &Inner,
    parts: &http::request::Parts,
    id: &str,
) -> Result<Arc<HttpSession>, Rejection> {
    // The session lives on in the store: another instance serves it better than one that is
    // about to go.
    if inner.is_draining() {
        return Err(Rejection::Draining);
    }
    let record = match inner.sessions.cluster.load(id).await {
        Ok(Some(r)) => r,
        Ok(None) => return Err(Rejection::UnknownSession),
        Err(_) => return Err(Rejection::StoreUnavailable),
    };
    let server = (inner.factory)(parts).ok_or(Rejection::NoServer)?;
    let id: Arc<str> = Arc::from(id);
    let core = Session::restore(server, id.clone(), &record);
    let http = inner
        .sessions
        .make(id, core, record.owner.clone(), None, None);
    inner.sessions.start_sweeper(inner.expiry());
    // Serving it here is activity: renew its time to live at once.
    inner.sessions.cluster.touch(&http.id).await;
    Ok(inner.sessions.insert(http))
}

/// A throwaway session for one stateless POST.
fn stateless_route(
    inner: &Inner,
    parts: &http::request::Parts,
    payload: &Payload,
    version: Option<ProtocolVersion>,
) -> Result<Route, Rejection> {
    let server = (inner.factory)(parts).ok_or(Rejection::NoServer)?;
    let session = if is_initialize(payload) {
        // A stateless `initialize` still negotiates (no session id is sent back).
        Session::temporary_uninitialized(server, inner.options.protocol_versions)
    } else {
        Session::temporary(server, version.unwrap_or(ProtocolVersion::DEFAULT_LEGACY))
    };
    Ok(Route::Throwaway(session))
}

/// A new session for an `initialize`, within the session caps.
fn new_session_route(inner: &Inner, parts: &http::request::Parts) -> Result<Route, Rejection> {
    if inner.is_draining() {
        return Err(Rejection::Draining);
    }
    let table = &inner.sessions;
    let full = |which| Rejection::TooManySessions {
        retry_after_secs: table.caps.retry_after_secs(&which, table.now()),
    };
    let owner = parts
        .extensions
        .get::<Caller>()
        .map(|c| (c.issuer.clone(), c.subject.clone()));
    // Without an owner, sessions count against the client's address (when capped so).
    let address = match owner {
        Some(_) => None,
        None => parts
            .extensions
            .get::<ClientKey>()
            .filter(|_| inner.options.max_sessions_per_address.is_some())
            .map(|k| k.0),
    };
    let holder = match &owner {
        Some(o) => Some(Holder::Owner(o.clone())),
        None => address.map(Holder::Address),
    };
    let caps = Caps {
        total: inner.options.max_sessions,
        per_principal: inner.options.max_sessions_per_principal,
        per_address: inner.options.max_sessions_per_address,
    };
    // Reserved now, not when the session enters the table after its `initialize` was
    // answered: the `initialize` under way count against the caps too.
    let slot = table
        .caps
        .reserve(caps, || table.len(), holder)
        .map_err(full)?;
    let server = (inner.factory)(parts).ok_or(Rejection::NoServer)?;
    let id = new_session_id().map_err(|_| full(Full::Total))?;
    let core = Session::new(server, Some(id.clone()), inner.options.protocol_versions);
    let http = inner.sessions.make(id, core, owner, address, Some(slot));
    let activity = http.activity(&inner.sessions);
    inner.sessions.start_sweeper(inner.expiry());
    Ok(Route::NewSession(activity))
}

/// Serves a DELETE: ends the session it names.
pub(super) async fn delete(
    inner: &Inner,
    parts: &http::request::Parts,
) -> Result<Response<ResponseBody>, Rejection> {
    if inner.options.stateless
        || text(&parts.headers, &names::PROTOCOL_VERSION).is_some_and(ProtocolVersion::looks_modern)
    {
        return Err(Rejection::MethodNotAllowed { allow: "POST" });
    }
    let http = session(inner, parts)
        .await?
        .ok_or(Rejection::MissingSession)?;
    // Answer once the stores and the other instances know (so they answer 404 next).
    let _ = inner.sessions.close(&http.id).await;
    log_event!(inner.options.logger.as_ref(), info, "mcp.session.id" = %redact_session_id(&http.id), "session deleted");
    Ok(status_only(StatusCode::NO_CONTENT))
}

/// How many requests a payload holds (not counting notifications and answers).
fn request_count(p: &Payload) -> usize {
    match p {
        Payload::Single(m) => usize::from(matches!(m, Message::Request(_))),
        Payload::Batch(v) => v
            .iter()
            .filter(|m| matches!(m, Message::Request(_)))
            .count(),
    }
}

/// True for a lone `initialize` request.
fn is_initialize(p: &Payload) -> bool {
    matches!(p, Payload::Single(Message::Request(r)) if r.method == methods::INITIALIZE)
}
