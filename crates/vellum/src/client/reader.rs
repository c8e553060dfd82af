//! The reader: one task per client that takes everything the transport brings and routes
//! it. Answers go to the calls waiting for them, progress to its call, acknowledgements to
//! `listen`, cancellations to the server's requests being answered, every notification to
//! the application's callback; a legacy server's requests are answered in their own tasks.
//!
//! When the transport ends, every waiting call fails (with the transport's reason, if it gave
//! one) and so does every later call.

use std::sync::{Arc, Weak};

use tokio_util::sync::CancellationToken;

use super::answers::answer_request;
use super::callbacks::ServerNotification;
use super::handle::Inner;
use crate::client::transport::{Incoming, OutgoingKind, OutgoingMessage, Transport};
use crate::error::Error;
use crate::protocol::{
    ErrorObject, Message, Notification, Request, RequestId, Response, encode_error,
    encode_response, meta_keys,
};
use crate::sync::read;

/// Reads until the transport ends or the last `Client` handle is dropped.
pub(super) async fn read_loop(
    inner: Weak<Inner>,
    transport: Arc<dyn Transport>,
    dropped: CancellationToken,
) {
    let mut reason = None;
    loop {
        let incoming = tokio::select! {
            i = transport.recv() => i,
            () = dropped.cancelled() => return,
        };
        let Some(incoming) = incoming else { break };
        let Some(inner) = inner.upgrade() else { return };
        match incoming {
            Incoming::Message(Message::Response(r)) => deliver(&inner, r),
            Incoming::Failed { id, error } => {
                inner.pending.resolve(&id, Err(Error::from(error)));
            }
            Incoming::Message(Message::Notification(n)) => on_notification(&inner, n),
            Incoming::Message(Message::Request(r)) => serve_request(&inner, r),
            Incoming::Ended(error) => {
                reason = Some(error);
                break;
            }
        }
    }
    if let Some(inner) = inner.upgrade() {
        if let Some(e) = &reason {
            tracing::debug!("the transport ended: {}", crate::error::chain(e));
        }
        // After `Client::close` the calls fail with `SessionClosed` whatever the reason
        // (`end_error` looks at `closed` first): closing is what ended the transport.
        let _ = inner.ended.set(reason);
        inner.fail_all();
    }
}

fn deliver(inner: &Inner, r: Response) {
    let Some(id) = r.id else {
        tracing::warn!(
            "the server sent an error without an id: {:?}",
            r.outcome.err()
        );
        return;
    };
    if !inner.pending.resolve(&id, r.outcome.map_err(Error::rpc)) {
        tracing::debug!(%id, "a response to no waiting call (late or duplicate); ignored");
    }
}

fn on_notification(inner: &Arc<Inner>, n: Notification) {
    let decoded = ServerNotification::decode(n);
    match &decoded {
        ServerNotification::Progress(p) => {
            // Progress restarts the wait of the call it belongs to.
            let progress = inner.pending.with(&p.progress_token, |call| {
                call.alive.notify_one();
                call.progress.clone()
            });
            if let Some(Some(f)) = progress {
                f(p);
            }
        }
        ServerNotification::Cancelled(c) => {
            inner.serving.cancel(&c.request_id);
        }
        ServerNotification::SubscriptionsAcknowledged(a) => {
            let id = a
                .meta
                .as_ref()
                .and_then(|m| m.get_as::<RequestId>(meta_keys::SUBSCRIPTION_ID))
                .and_then(Result::ok);
            if let Some(id) = id {
                inner.listen_acks.resolve(&id, a.notifications.clone());
            }
        }
        _ => {}
    }
    if let Some(f) = &inner.config.notifications {
        f(decoded);
    }
}

/// Answers a legacy server's request (ping, sampling, elicitation, roots) in its own task,
/// which the server can cancel.
fn serve_request(inner: &Arc<Inner>, r: Request) {
    let id = r.id.clone();
    let serving = inner.clone();
    let started = inner.serving.spawn(&id, async move {
        let inner = serving;
        let bytes = match answer_request(&inner.config, &r).await {
            Ok(v) => match encode_response(&r.id, &v) {
                Ok(b) => b,
                Err(e) => encode_error(
                    Some(&r.id),
                    &ErrorObject::internal(format!("the answer could not be encoded: {e}")),
                ),
            },
            Err(e) => encode_error(Some(&r.id), &e),
        };
        send_response(&inner, bytes, &r.method).await;
    });
    if let Err(still_running) = started {
        let inner = inner.clone();
        let bytes = encode_error(Some(&id), &still_running.error_object());
        tokio::spawn(async move { send_response(&inner, bytes, "request").await });
    }
}

/// Sends the answer to one of the server's requests.
async fn send_response(inner: &Inner, bytes: bytes::Bytes, method: &str) {
    let version = read(&inner.state).as_ref().map(|s| s.version.clone());
    let message = OutgoingMessage {
        bytes,
        kind: OutgoingKind::Response,
        method: None,
        protocol_version: version,
        modern: false,
        mirrors: Vec::new(),
    };
    if let Err(e) = inner.transport.send(message).await {
        tracing::warn!(
            "the answer to the server's {method} could not be sent: {}",
            crate::error::chain(&e)
        );
    }
}
