//! What ties instances of one deployment together: the event store, the session store and
//! the message bus of a handler. Every piece is optional; with none, a session lives in the
//! process that created it (the default).
//!
//! Not here: what a session does with them (`session_hooks.rs`, `session_table.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::store::{BusMessage, EventStore, MessageBus, SessionRecord, SessionStore, StoreError};

/// The shared backends of a handler.
pub(crate) struct Cluster {
    pub(crate) events: Option<Arc<dyn EventStore>>,
    pub(crate) sessions: Option<Arc<dyn SessionStore>>,
    pub(crate) bus: Option<Arc<dyn MessageBus>>,
    /// How long a stored session lives without activity.
    pub(crate) ttl: Duration,
}

/// Spawns background work when a runtime is there to run it.
pub(crate) fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(f: F) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(f);
    }
}

impl Cluster {
    /// Stores a new session (before its id is handed out).
    pub(crate) async fn create(&self, id: &str, record: &SessionRecord) -> Result<(), StoreError> {
        match &self.sessions {
            Some(s) => s.create(id, record, self.ttl).await,
            None => Ok(()),
        }
    }

    /// Loads a session another instance created.
    pub(crate) async fn load(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        match &self.sessions {
            Some(s) => s.load(id).await,
            None => Ok(None),
        }
    }

    /// Renews a session's TTL; false only when the store says it is gone (an unreachable
    /// store keeps sessions: they resume when it comes back).
    pub(crate) async fn touch(&self, id: &str) -> bool {
        match &self.sessions {
            Some(s) => !matches!(s.touch(id, self.ttl).await, Ok(false)),
            None => true,
        }
    }

    /// A session ended here for good: forget its events and record, tell the others. The
    /// returned future finishes once the others were told (DELETE waits for it); dropping
    /// it still lets the work finish in the background.
    pub(crate) fn session_ended(&self, id: &str) -> tokio::task::JoinHandle<()> {
        let events = self.events.as_ref().map(|e| e.session_closed(id));
        let record = self.sessions.as_ref().map(|s| s.delete(id));
        let bus = self.bus.as_ref().map(|b| {
            b.publish(BusMessage::SessionClosed {
                session: id.to_owned(),
            })
        });
        tokio::spawn(async move {
            if let Some(f) = record {
                let _ = f.await;
            }
            if let Some(f) = bus {
                let _ = f.await;
            }
            if let Some(f) = events {
                let _ = f.await;
            }
        })
    }
}
