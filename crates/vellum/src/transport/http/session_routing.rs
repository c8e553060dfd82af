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
use super::endpoint::Inner;
use super::headers::{names, text};
use super::rejection::Rejection;
use super::response::status_only;
use super::session_table::{ActivityGuard, Expiry, HttpSession, new_session_id};
use super::trace::log_event;

/// What a POST turned out to be, after routing.
pub(super) enum Route {
    /// A legacy request for an existing or new session (or a stateless throwaway session).
    Legacy {
        session: Arc<Session>,
        http: Option<Arc<HttpSession>>,
        activity: Option<ActivityGuard>,
        /// A new session: insert on success and send its id.
        new: bool,
    },
    /// A modern request: its own `_meta` is its context.
    Modern(Box<ModernMeta>),
}

impl Inner {
    /// Finds the live session a request names: 404 when unknown or closed, 403 when it
    /// belongs to another principal.
    pub(super) async fn session(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<Arc<HttpSession>>, Rejection> {
        let Some(id) = text(&parts.headers, &names::SESSION_ID) else {
            return Ok(None);
        };
        let s = match self.sessions.get(id) {
            Some(s) if !s.closed.is_cancelled() && !s.core.is_closed() => s,
            Some(s) => {
                if !s.closed.is_cancelled() {
                    // The server ended it (a gateway whose upstream went): end it for good
                    // here, in the stores and on the other instances.
                    let _ = self.sessions.close(&s.id).await;
                }
                return Err(Rejection::UnknownSession);
            }
            None => self.restore(parts, id).await?,
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
        &self,
        parts: &http::request::Parts,
        id: &str,
    ) -> Result<Arc<HttpSession>, Rejection> {
        // The session lives on in the store: another instance serves it better than one
        // that is about to go.
        if self.is_draining() {
            return Err(Rejection::Draining);
        }
        let record = match self.sessions.cluster.load(id).await {
            Ok(Some(r)) => r,
            Ok(None) => return Err(Rejection::UnknownSession),
            Err(_) => return Err(Rejection::StoreUnavailable),
        };
        let server = (self.factory)(parts).ok_or(Rejection::NoServer)?;
        let id: Arc<str> = Arc::from(id);
        let core = Session::restore(server, id.clone(), &record);
        let http = self.sessions.make(id, core, record.owner.clone());
        self.sessions.start_sweeper(self.expiry());
        // Serving it here is activity: renew its time to live at once.
        self.sessions.cluster.touch(&http.id).await;
        Ok(self.sessions.insert(http))
    }

    pub(super) fn expiry(&self) -> Expiry {
        Expiry {
            idle: self.options.session_timeout,
            handshake: self.options.initialize_timeout,
        }
    }

    pub(super) fn stateless_route(
        &self,
        parts: &http::request::Parts,
        payload: &Payload,
        version: Option<ProtocolVersion>,
    ) -> Result<Route, Rejection> {
        let server = (self.factory)(parts).ok_or(Rejection::NoServer)?;
        let session = if is_initialize(payload) {
            // A stateless `initialize` still negotiates (no session id is sent back).
            Session::temporary_uninitialized(server)
        } else {
            Session::temporary(server, version.unwrap_or(ProtocolVersion::DEFAULT_LEGACY))
        };
        Ok(Route::Legacy {
            session,
            http: None,
            activity: None,
            new: false,
        })
    }

    pub(super) fn new_session_route(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Route, Rejection> {
        if self.is_draining() {
            return Err(Rejection::Draining);
        }
        if let Some(max) = self.options.max_sessions
            && self.sessions.len() >= max
        {
            return Err(Rejection::TooManySessions);
        }
        let owner = parts
            .extensions
            .get::<Caller>()
            .map(|c| (c.issuer.clone(), c.subject.clone()));
        if let (Some(max), Some(o)) = (self.options.max_sessions_per_principal, &owner)
            && self.sessions.owned_by(o) >= max
        {
            return Err(Rejection::TooManySessions);
        }
        let server = (self.factory)(parts).ok_or(Rejection::NoServer)?;
        let id = new_session_id().map_err(|_| Rejection::TooManySessions)?;
        let core = Session::new(server, Some(id.clone()));
        let http = self.sessions.make(id, core.clone(), owner);
        let activity = http.activity(&self.sessions);
        self.sessions.start_sweeper(self.expiry());
        Ok(Route::Legacy {
            session: core,
            http: Some(http),
            activity: Some(activity),
            new: true,
        })
    }

    pub(super) async fn delete(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Response<ResponseBody>, Rejection> {
        if self.options.stateless
            || text(&parts.headers, &names::PROTOCOL_VERSION)
                .is_some_and(ProtocolVersion::looks_modern)
        {
            return Err(Rejection::MethodNotAllowed { allow: "POST" });
        }
        let http = self
            .session(parts)
            .await?
            .ok_or(Rejection::MissingSession)?;
        // Answer once the stores and the other instances know (so they answer 404 next).
        let _ = self.sessions.close(&http.id).await;
        log_event!(self.options.logger.as_ref(), info, "mcp.session.id" = %redact_session_id(&http.id), "session deleted");
        Ok(status_only(StatusCode::NO_CONTENT))
    }
}

/// How many requests a payload holds (not counting notifications and answers).
pub(super) fn request_count(p: &Payload) -> usize {
    match p {
        Payload::Single(m) => usize::from(matches!(m, Message::Request(_))),
        Payload::Batch(v) => v
            .iter()
            .filter(|m| matches!(m, Message::Request(_)))
            .count(),
    }
}

/// True for a lone `initialize` request.
pub(super) fn is_initialize(p: &Payload) -> bool {
    matches!(p, Payload::Single(Message::Request(r)) if r.method == methods::INITIALIZE)
}
