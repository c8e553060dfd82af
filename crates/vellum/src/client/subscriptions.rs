//! Subscriptions, in both eras: the legacy `resources/subscribe` and `resources/unsubscribe`,
//! and the 2026-07-28 `subscriptions/listen` stream, whose notifications arrive at the
//! client's notification callback while the [`Listen`] it returns is kept.

use std::time::Duration;

use serde_json::{Map, Value};

use super::call_options::CallOptions;
use super::engine::{Era, to_object};
use super::handle::Client;
use crate::error::{Error, Unsupported};
use crate::protocol::{SubscribeParams, SubscriptionFilter, methods};

impl Client {
    /// Subscribes to a resource's updates (legacy `resources/subscribe`; in the modern era use
    /// [`listen`](Self::listen)).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.subscription(methods::RESOURCES_SUBSCRIBE, uri).await
    }

    /// Ends a resource subscription (legacy `resources/unsubscribe`).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.subscription(methods::RESOURCES_UNSUBSCRIBE, uri).await
    }

    async fn subscription(&self, method: &str, uri: &str) -> Result<(), Error> {
        if self.is_modern() {
            return Err(Error::unsupported(Unsupported::SubscribeInModern {
                method: method.to_owned(),
            }));
        }
        let params = SubscribeParams {
            uri: uri.to_owned(),
            meta: None,
        };
        let _: Value = self
            .call(method, to_object(&params)?, &CallOptions::default())
            .await?;
        Ok(())
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28): the notifications it asks for arrive
    /// at the client's notification handler until the returned [`Listen`] is dropped or
    /// [`closed`](Listen::close). Waits for the server's acknowledgement and returns the
    /// filter the server honours.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Listen, Error> {
        if !self.is_modern() {
            return Err(Error::unsupported(Unsupported::ListenInLegacy));
        }
        let id = self.inner.ids.next(None);
        // Registered before the request leaves: the acknowledgement may beat the answer.
        let mut ack = self.inner.listen_acks.wait_for(id.clone(), ());
        let mut params = Map::new();
        params.insert("notifications".to_owned(), serde_json::to_value(&filter)?);
        let client = self.clone();
        let (end_tx, end_rx) = tokio::sync::oneshot::channel::<Error>();
        let task = tokio::spawn(async move {
            let opts = CallOptions {
                // The stream lives until the client closes it.
                timeout: Some(Duration::from_secs(60 * 60 * 24 * 365)),
                ..Default::default()
            };
            let r = client
                .call_once(
                    methods::SUBSCRIPTIONS_LISTEN,
                    &params,
                    &opts,
                    Era::Session,
                    Some(id),
                )
                .await;
            let e = match r {
                Ok(_) => Error::session_closed(),
                Err(e) => e,
            };
            let _ = end_tx.send(e);
        });
        let timeout = self.inner.config.request_timeout;
        let outcome = tokio::select! {
            r = ack.answer() => r.ok_or(Error::session_closed()),
            r = end_rx => Err(r.unwrap_or(Error::session_closed())),
            () = tokio::time::sleep(timeout) => Err(Error::timeout(timeout)),
        };
        drop(ack);
        match outcome {
            Ok(honoured) => Ok(Listen {
                honoured,
                task: Some(task),
            }),
            Err(e) => {
                task.abort();
                Err(e)
            }
        }
    }
}

/// An open `subscriptions/listen` stream; dropping it ends the subscription.
#[derive(Debug)]
pub struct Listen {
    honoured: SubscriptionFilter,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Listen {
    /// The notifications the server agreed to send (its acknowledgement).
    pub fn honoured(&self) -> &SubscriptionFilter {
        &self.honoured
    }

    /// Ends the subscription (the client closes the stream, which cancels it).
    pub fn close(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}
