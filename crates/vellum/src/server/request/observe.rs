//! Message observers: code that sees every message the server sends and every notification
//! or answer it receives ([`MessageEvent`]), on every transport and in both eras. Observers
//! run synchronously, in the order they were added, and must not block.
//!
//! Not here: request middleware, which can change what a request does (`middleware.rs`).

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use crate::protocol::{Notification, Response};

/// One observer.
pub(crate) type ObserverFn = dyn Fn(&MessageEvent<'_>) + Send + Sync;
/// A server's message observers, in the order they were added.
pub(crate) type Observers = Arc<[Arc<ObserverFn>]>;

/// A message passing through the server, as observers see it.
#[derive(Debug)]
#[non_exhaustive]
pub enum MessageEvent<'a> {
    /// The server is sending this encoded JSON-RPC message (a response, a notification or a
    /// request to the client).
    Sending(&'a [u8]),
    /// A notification from the client.
    NotificationReceived(&'a Notification),
    /// The client's answer to one of the server's requests.
    ResponseReceived(&'a Response),
}

impl MessageEvent<'_> {
    /// The method of a notification or request (`None` for responses).
    pub fn method(&self) -> Option<Cow<'_, str>> {
        #[derive(Deserialize)]
        struct Peek<'a> {
            #[serde(borrow, default)]
            method: Option<Cow<'a, str>>,
        }
        match self {
            MessageEvent::Sending(b) => serde_json::from_slice::<Peek<'_>>(b).ok()?.method,
            MessageEvent::NotificationReceived(n) => Some(Cow::Borrowed(n.method.as_str())),
            MessageEvent::ResponseReceived(_) => None,
        }
    }
}

/// Runs the observers on one event.
pub(crate) fn observe(observers: &[Arc<ObserverFn>], event: &MessageEvent<'_>) {
    for o in observers {
        o(event);
    }
}
