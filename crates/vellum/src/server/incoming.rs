//! What the client sends that is not a request: notifications (`initialized`,
//! `cancelled`, progress, roots changes) and its answers to the server's own requests. Both
//! are handled at once, in the order they arrive, and never answered.
//!
//! Not here: requests (`methods/`), and the waiting for answers (`session.rs`).

use std::sync::Arc;

use super::observe::MessageEvent;
use super::session::Session;
use super::session_ref::SessionRef;
use crate::protocol::{
    CancelledParams, Notification, Response, encode_error, encode_notification,
    encode_response_raw, methods,
};

/// Handles a notification from the client. Notifications never get an answer.
pub(crate) fn handle_notification(session: Option<&Arc<Session>>, n: &Notification) {
    if let Some(s) = session {
        s.server().observe(&MessageEvent::NotificationReceived(n));
    }
    match n.method.as_str() {
        methods::INITIALIZED => {
            if let Some(s) = session {
                s.mark_initialized();
            }
        }
        methods::CANCELLED => {
            if let (Some(s), Some(p)) = (
                session,
                n.params
                    .as_ref()
                    .and_then(|p| p.parse::<CancelledParams>().ok()),
            ) && !s.cancel_inflight(&p.request_id)
                && let Some(h) = s.hooks()
                && let Ok(m) = encode_notification(methods::CANCELLED, Some(&p))
            {
                // Not running here: it may run on another instance of the deployment.
                h.unmatched_cancel(m);
            }
        }
        // Progress from the client and roots changes need no action from the core; a
        // server with an upstream passes them on.
        _ => {
            if let Some(s) = session
                && let Some(up) = s.server().upstream()
            {
                up.notification(Some(&SessionRef::of(s)), n);
            }
        }
    }
}

/// Delivers the client's answer to one of our requests.
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
