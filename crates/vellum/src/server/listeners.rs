//! The open `subscriptions/listen` streams (2026-07-28) of a server, and the notifications
//! pushed into them: a listen request registers here with the filter the server granted,
//! and from then on each list change or resource update it asked for goes into the
//! request's outbox, tagged with its subscription id (the listen request's id). Dropping the
//! request's handler unregisters it.
//!
//! Not here: the `subscriptions/listen` method itself (`methods/listen.rs`), and legacy
//! sessions' unsolicited messages (those go to the session's standalone stream, see
//! `Server::fan_out`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::registry::list_kind::ListKind;
use crate::protocol::encode_notification;
use crate::protocol::{
    Meta, NotificationParams, RequestId, ResourceUpdatedParams, SubscriptionFilter, meta_keys,
    methods,
};
use crate::sync::lock;
use bytes::Bytes;

/// Where a listen stream's notifications go (the listen request's outbox).
pub(crate) trait ListenTarget: Send + Sync {
    /// Queues a message without waiting; a full queue drops it.
    fn push(&self, message: Bytes);
}

/// One open listen stream.
struct Listener {
    key: u64,
    request: Weak<dyn ListenTarget>,
    subscription_id: RequestId,
    filter: SubscriptionFilter,
    uris: BTreeSet<String>,
}

impl Listener {
    fn wants(&self, kind: ListKind) -> bool {
        let f = &self.filter;
        match kind {
            ListKind::Tools => f.tools_list_changed == Some(true),
            ListKind::Resources => f.resources_list_changed == Some(true),
            ListKind::Prompts => f.prompts_list_changed == Some(true),
        }
    }

    /// Queues a message without waiting: a listener too slow to drain 64 waiting messages
    /// misses the newest ones (each of these notifications only says "look again").
    fn push(&self, message: Bytes) {
        if let Some(r) = self.request.upgrade() {
            r.push(message);
        }
    }
}

/// The `_meta` that ties a notification to its listen stream.
pub(crate) fn subscription_meta(id: &RequestId) -> Meta {
    let mut m = Meta::new();
    m.insert(meta_keys::SUBSCRIPTION_ID, id);
    m
}

/// The open listen streams of a server.
#[derive(Default)]
pub(crate) struct Listeners {
    next_key: AtomicU64,
    list: Mutex<Vec<Listener>>,
}

impl Listeners {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        lock(&self.list)
    }

    /// Registers a listen request with the filter the server granted; the guard unregisters
    /// it when the request's handler is dropped.
    pub(crate) fn register<T: ListenTarget + 'static>(
        self: &Arc<Self>,
        request: &Arc<T>,
        subscription_id: &RequestId,
        filter: SubscriptionFilter,
    ) -> ListenerGuard {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let uris = filter
            .resource_subscriptions
            .iter()
            .flatten()
            .cloned()
            .collect();
        let request: Weak<dyn ListenTarget> = Arc::downgrade(request) as Weak<T>;
        self.lock().push(Listener {
            key,
            request,
            subscription_id: subscription_id.clone(),
            filter,
            uris,
        });
        ListenerGuard {
            listeners: Arc::downgrade(self),
            key,
        }
    }

    /// True when no stream is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Tells the streams that asked for it that a list changed.
    pub(crate) fn list_changed(&self, kind: ListKind) {
        self.each(
            |l| l.wants(kind),
            |id| {
                encode_notification(
                    kind.method(),
                    Some(&NotificationParams {
                        meta: Some(subscription_meta(id)),
                    }),
                )
            },
        );
    }

    /// Tells the streams subscribed to `uri` that it changed.
    pub(crate) fn resource_updated(&self, uri: &str) {
        self.each(
            |l| l.uris.contains(uri),
            |id| {
                encode_notification(
                    methods::RESOURCES_UPDATED,
                    Some(&ResourceUpdatedParams {
                        uri: uri.to_owned(),
                        meta: Some(subscription_meta(id)),
                    }),
                )
            },
        );
    }

    /// Sends a message built per listener (each carries its own subscription id).
    fn each<E>(
        &self,
        wants: impl Fn(&Listener) -> bool,
        encode: impl Fn(&RequestId) -> Result<Bytes, E>,
    ) {
        for l in self.lock().iter().filter(|l| wants(l)) {
            if let Ok(m) = encode(&l.subscription_id) {
                l.push(m);
            }
        }
    }
}

/// Unregisters a listen stream when its handler ends.
pub(crate) struct ListenerGuard {
    listeners: Weak<Listeners>,
    key: u64,
}

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        if let Some(l) = self.listeners.upgrade() {
            l.lock().retain(|x| x.key != self.key);
        }
    }
}
