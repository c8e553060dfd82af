//! [`RedisBus`]: bus messages over one Redis pub/sub channel (`<prefix>:bus`), each in an
//! envelope naming its sender (sharded pub/sub on a Redis Cluster). The connection's listener
//! decodes what arrives.

use futures_util::future::BoxFuture;
use tokio::sync::broadcast;

use super::{BusMessage, MessageBus};
use crate::store::error::StoreError;
use crate::store::redis::{Envelope, Redis, retrying};

impl Redis {
    /// The bus on this connection.
    pub fn bus(&self) -> RedisBus {
        RedisBus(self.clone())
    }
}

/// [`MessageBus`] on Redis pub/sub.
#[derive(Clone, Debug)]
pub struct RedisBus(Redis);

impl MessageBus for RedisBus {
    fn instance_id(&self) -> &str {
        self.0.instance_id()
    }

    fn publish(&self, message: BusMessage) -> BoxFuture<'static, Result<(), StoreError>> {
        let conn = self.0.conn();
        let cluster = self.0.is_cluster();
        let channel = format!("{}:bus", self.0.options().prefix);
        let env = serde_json::to_string(&Envelope {
            from: self.0.instance_id().to_owned(),
            message,
        });
        Box::pin(async move {
            let env = env.map_err(|e| StoreError::backend(e.to_string()))?;
            // Sharded pub/sub on a cluster (see the `redis` module's `target.rs`).
            let verb = if cluster { "SPUBLISH" } else { "PUBLISH" };
            let _: i64 = retrying(conn, |mut c| {
                let (channel, env) = (channel.clone(), env.clone());
                async move {
                    redis::cmd(verb)
                        .arg(channel)
                        .arg(env)
                        .query_async(&mut c)
                        .await
                }
            })
            .await?;
            Ok(())
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<BusMessage> {
        self.0.bus_messages()
    }
}
