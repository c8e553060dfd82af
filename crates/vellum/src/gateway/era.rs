//! A 2026-07-28 backend behind legacy session state: that era has no `logging/setLevel`, no
//! `resources/subscribe` and no stream for unsolicited messages, so the link keeps the level
//! for every request's `_meta` (the client core does), opens a `subscriptions/listen` stream
//! for the list changes the backend announces as soon as it is connected, and one per
//! resource a front session subscribes to.
//!
//! Not here: a legacy backend, which hears those methods as they are (`forward.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::client::{Client, Listen};
use crate::protocol::{
    ErrorObject, RawJson, ServerCapabilities, SetLevelParams, SubscribeParams, SubscriptionFilter,
    methods,
};
use crate::server::HandlerError;
use crate::sync::lock;

/// The listen streams a link holds open on a 2026-07-28 backend: the lists (key `""`) and
/// each resource watched.
#[derive(Default)]
pub(super) struct Listens(Mutex<HashMap<String, Listen>>);

impl Listens {
    /// Opens the stream for the list changes the backend announces (none to open when it
    /// announces none).
    pub(super) async fn lists(&self, client: &Client) {
        let caps = client.server_capabilities();
        let filter = list_filter(&caps);
        if filter == SubscriptionFilter::default() {
            return;
        }
        match client.listen(filter).await {
            Ok(l) => {
                lock(&self.0).insert(String::new(), l);
            }
            Err(e) => tracing::debug!(target: "vellum::gateway", "no listen stream: {e}"),
        }
    }

    /// Serves a legacy session-state method against a 2026-07-28 backend; `None` for any
    /// other method.
    pub(super) async fn serve(
        &self,
        client: &Client,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<Result<RawJson, HandlerError>> {
        let outcome = match method {
            methods::LOGGING_SET_LEVEL => match parse::<SetLevelParams>(params) {
                Ok(p) => client
                    .set_logging_level(p.level)
                    .await
                    .map_err(|e| HandlerError::Protocol(ErrorObject::internal(e.to_string()))),
                Err(e) => Err(e),
            },
            methods::RESOURCES_SUBSCRIBE => match parse::<SubscribeParams>(params) {
                Ok(p) => self.watch(client, p.uri).await,
                Err(e) => Err(e),
            },
            methods::RESOURCES_UNSUBSCRIBE => match parse::<SubscribeParams>(params) {
                Ok(p) => {
                    lock(&self.0).remove(&p.uri);
                    Ok(())
                }
                Err(e) => Err(e),
            },
            _ => return None,
        };
        Some(outcome.map(|()| RawJson::empty_object()))
    }

    /// Opens the stream for one resource's updates.
    async fn watch(&self, client: &Client, uri: String) -> Result<(), HandlerError> {
        if lock(&self.0).contains_key(&uri) {
            return Ok(());
        }
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![uri.clone()]),
            ..Default::default()
        };
        let listen = client
            .listen(filter)
            .await
            .map_err(|e| HandlerError::Protocol(ErrorObject::internal(e.to_string())))?;
        lock(&self.0).insert(uri, listen);
        Ok(())
    }
}

/// The list changes a backend announces, as a listen filter.
fn list_filter(caps: &ServerCapabilities) -> SubscriptionFilter {
    let on = |c: Option<bool>| (c == Some(true)).then_some(true);
    SubscriptionFilter {
        tools_list_changed: on(caps.tools.as_ref().and_then(|c| c.list_changed)),
        prompts_list_changed: on(caps.prompts.as_ref().and_then(|c| c.list_changed)),
        resources_list_changed: on(caps.resources.as_ref().and_then(|c| c.list_changed)),
        resource_subscriptions: None,
    }
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&RawJson>) -> Result<T, HandlerError> {
    let raw = params.ok_or_else(|| {
        HandlerError::Protocol(ErrorObject::invalid_params(
            "Invalid params: missing params",
        ))
    })?;
    raw.parse().map_err(|e| {
        HandlerError::Protocol(ErrorObject::invalid_params(format!("Invalid params: {e}")))
    })
}
