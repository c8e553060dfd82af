//! [`MemoryBus`]: a bus between handlers of one process (a broadcast channel), so they
//! behave like instances of one deployment.

use std::sync::Arc;

use futures_util::future::{BoxFuture, ready};
use tokio::sync::broadcast;

use super::{BusMessage, MessageBus};
use crate::store::error::StoreError;

/// A bus inside one process: handlers created with the same `MemoryBus` behave like
/// instances of one deployment.
#[derive(Debug, Clone)]
pub struct MemoryBus {
    tx: broadcast::Sender<BusMessage>,
    instance: Arc<str>,
}

impl MemoryBus {
    /// A new bus.
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(1024);
        MemoryBus {
            tx,
            instance: Arc::from("memory-0"),
        }
    }

    /// Another endpoint on the same bus, with its own instance id.
    pub fn endpoint(&self, instance: &str) -> Self {
        MemoryBus {
            tx: self.tx.clone(),
            instance: Arc::from(instance),
        }
    }
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl MessageBus for MemoryBus {
    fn instance_id(&self) -> &str {
        &self.instance
    }

    fn publish(&self, message: BusMessage) -> BoxFuture<'static, Result<(), StoreError>> {
        // No receiver is fine: nobody else serves the session.
        let _ = self.tx.send(message);
        Box::pin(ready(Ok(())))
    }

    fn subscribe(&self) -> broadcast::Receiver<BusMessage> {
        self.tx.subscribe()
    }
}
