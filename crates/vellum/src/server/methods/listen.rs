//! `subscriptions/listen` (2026-07-28): the modern replacement of the legacy GET stream and
//! `resources/subscribe`. A listen request is served like any other, except that it never
//! finishes: it sends `notifications/subscriptions/acknowledged` (tagged with the
//! subscription id, which is the listen request's id) for the part of the filter this server
//! honours, registers with the server's listeners, and then waits; the server pushes the
//! notifications it asked for into the request's outbox. The stream ends when the client
//! closes it (HTTP) or cancels the request (stdio), which drops this future and unregisters
//! it.
//!
//! Not here: the registry of open streams and the pushing (`listeners.rs`).

use std::sync::Arc;

use crate::protocol::{
    EmptyResult, ErrorObject, SubscriptionFilter, SubscriptionsAcknowledgedParams,
    SubscriptionsListenParams, encode_notification, methods,
};
use crate::server::listeners::subscription_meta;
use crate::server::request::reply::{Outcome, complete};
use crate::server::request::request::RequestShared;
use crate::server::upstream::Upstream;

/// `subscriptions/listen`.
pub(super) async fn listen(
    shared: &Arc<RequestShared>,
    p: SubscriptionsListenParams,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let upstream = shared.server.upstream().cloned();
    let caps = match &upstream {
        Some(up) => up.describe().await?.capabilities,
        None => shared.server.capabilities(),
    };
    let lists = |cap: Option<bool>, asked: Option<bool>| {
        (cap == Some(true) && asked == Some(true)).then_some(true)
    };
    let asked = p.notifications;
    let resources = caps.resources.as_ref();
    let granted = SubscriptionFilter {
        tools_list_changed: lists(
            caps.tools.as_ref().and_then(|c| c.list_changed),
            asked.tools_list_changed,
        ),
        prompts_list_changed: lists(
            caps.prompts.as_ref().and_then(|c| c.list_changed),
            asked.prompts_list_changed,
        ),
        resources_list_changed: lists(
            resources.and_then(|c| c.list_changed),
            asked.resources_list_changed,
        ),
        resource_subscriptions: asked
            .resource_subscriptions
            .filter(|uris| !uris.is_empty() && resources.and_then(|c| c.subscribe) == Some(true)),
    };
    let ack = SubscriptionsAcknowledgedParams {
        notifications: granted.clone(),
        meta: Some(subscription_meta(&shared.id)),
    };
    let message =
        encode_notification(methods::SUBSCRIPTIONS_ACKNOWLEDGED, Some(&ack)).map_err(|e| {
            ErrorObject::internal(format!("the acknowledgement could not be encoded: {e}"))
        })?;
    if shared.outbox.send(message).await.is_err() {
        return Ok(Outcome::Silent);
    }
    if granted == SubscriptionFilter::default() {
        // Nothing to listen for: the stream ends at once.
        return Ok(complete(
            shared,
            EmptyResult {
                meta: Some(subscription_meta(&shared.id)),
            },
        ));
    }
    let _watching = upstream.map(|up| Watching::start(up, &granted));
    let _registered = shared
        .server
        .inner
        .listeners
        .register(shared, &shared.id, granted);
    std::future::pending::<()>().await;
    Ok(Outcome::Silent)
}

/// The resources a listen stream watches, told to the server's upstream while it is open.
struct Watching {
    upstream: Arc<dyn Upstream>,
    uris: Vec<String>,
}

impl Watching {
    fn start(upstream: Arc<dyn Upstream>, granted: &SubscriptionFilter) -> Self {
        let uris = granted.resource_subscriptions.clone().unwrap_or_default();
        for uri in &uris {
            upstream.watch_resource(uri, true);
        }
        Watching { upstream, uris }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        for uri in &self.uris {
            self.upstream.watch_resource(uri, false);
        }
    }
}
