//! What ties instances of one deployment together: the event store, the session store and
//! the message bus, and the session hooks that use them. Every piece is optional; with none,
//! a session lives in the process that created it (the default).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;

use crate::error::Error;
use crate::protocol::decode_message;
use crate::protocol::{CancelledParams, Message};
use crate::server::session::{Session, SessionHooks};
use crate::store::{
    BusMessage, EventStore, MessageBus, SessionRecord, SessionStore, StoreError, StreamId,
};
use crate::sync::lock;

use super::sessions::{HttpSession, LiveStreams, Owner};
use super::sse::SseEvent;

/// The shared backends of a handler.
pub(crate) struct Cluster {
    pub(crate) events: Option<Arc<dyn EventStore>>,
    pub(crate) sessions: Option<Arc<dyn SessionStore>>,
    pub(crate) bus: Option<Arc<dyn MessageBus>>,
    /// How long a stored session lives without activity.
    pub(crate) ttl: Duration,
}

fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(f: F) {
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

    /// Acts on a bus message about a session served here.
    pub(crate) fn apply_bus(&self, s: &Arc<HttpSession>, message: BusMessage) {
        match message {
            BusMessage::ClientResponse { message, .. } => {
                if let Ok(Message::Response(r)) = decode_message(&Bytes::from(message))
                    && let Some(id) = &r.id
                {
                    s.core.resolve(id, r.outcome);
                }
            }
            BusMessage::Cancel { message, .. } => {
                if let Ok(Message::Notification(n)) = decode_message(&Bytes::from(message))
                    && let Some(p) = n.params.and_then(|p| p.parse::<CancelledParams>().ok())
                {
                    s.core.cancel_inflight(&p.request_id);
                }
            }
            BusMessage::Standalone { .. } => {
                let id = message.event_id();
                if let (Some(tx), Some(m)) =
                    (s.live.sink(StreamId::STANDALONE), message.message_bytes())
                {
                    if let Some(id) = id {
                        s.live.advance_standalone(id.seq);
                    }
                    let _ = tx.try_send(SseEvent { id, message: m });
                }
            }
            BusMessage::SessionChanged { session } => {
                let (Some(store), core) = (self.sessions.clone(), s.core.clone()) else {
                    return;
                };
                spawn(async move {
                    if let Ok(Some(record)) = store.load(&session).await {
                        core.apply(&record);
                    }
                });
            }
            BusMessage::SessionClosed { .. } => {}
        }
    }
}

/// The hooks of an HTTP session: its standalone stream, and its links to other instances.
pub(crate) struct HttpHooks {
    session_id: Arc<str>,
    live: Arc<LiveStreams>,
    owner: Option<Owner>,
    cluster: Arc<Cluster>,
    /// The newest record waiting to be saved, and whether a save is under way (saves are
    /// serialized so an older record never overwrites a newer one).
    pending: Arc<Mutex<Option<SessionRecord>>>,
    saving: Arc<AtomicBool>,
}

impl HttpHooks {
    pub(crate) fn new(
        session_id: Arc<str>,
        live: Arc<LiveStreams>,
        owner: Option<Owner>,
        cluster: Arc<Cluster>,
    ) -> Self {
        HttpHooks {
            session_id,
            live,
            owner,
            cluster,
            pending: Arc::new(Mutex::new(None)),
            saving: Arc::new(AtomicBool::new(false)),
        }
    }

    fn publish(&self, message: BusMessage) {
        if let Some(bus) = &self.cluster.bus {
            spawn(bus.publish(message).map_ok_unit());
        }
    }
}

trait MapOkUnit {
    fn map_ok_unit(self) -> BoxFuture<'static, ()>;
}

impl MapOkUnit for BoxFuture<'static, Result<(), StoreError>> {
    fn map_ok_unit(self) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = self.await;
        })
    }
}

impl SessionHooks for HttpHooks {
    fn send(&self, message: Bytes) -> BoxFuture<'static, Result<(), Error>> {
        let live = self.live.clone();
        let stored = self
            .cluster
            .events
            .as_ref()
            .map(|s| s.append(&self.session_id, StreamId::STANDALONE, message.clone()));
        let bus = self.cluster.bus.clone();
        let session = self.session_id.to_string();
        Box::pin(async move {
            let id = match stored {
                Some(f) => {
                    let id = f.await.map_err(Error::EventStore)?;
                    live.advance_standalone(id.seq);
                    Some(id)
                }
                None => None,
            };
            match live.sink(StreamId::STANDALONE) {
                Some(tx) => {
                    // A full buffer means the reader stalls; with a store it can resume.
                    let _ = tx.try_send(SseEvent { id, message });
                }
                None => {
                    // The session's GET stream may be open on another instance.
                    if let Some(bus) = bus {
                        let message = String::from_utf8_lossy(&message).into_owned();
                        let _ = bus
                            .publish(BusMessage::Standalone {
                                session,
                                id: id.map(|i| i.to_string()),
                                message,
                            })
                            .await;
                    }
                }
            }
            Ok(())
        })
    }

    fn state_changed(&self, session: &Session) {
        let Some(store) = self.cluster.sessions.clone() else {
            return;
        };
        let Some(mut record) = session.record() else {
            return;
        };
        record.owner = self.owner.clone();
        *lock(&self.pending) = Some(record);
        if self.saving.swap(true, Ordering::AcqRel) {
            return; // The running saver picks up the newest record.
        }
        let pending = self.pending.clone();
        let saving = self.saving.clone();
        let bus = self.cluster.bus.clone();
        let id = self.session_id.clone();
        spawn(async move {
            loop {
                let next = lock(&pending).take();
                let Some(record) = next else {
                    saving.store(false, Ordering::Release);
                    // A change may have landed between `take` and the flag.
                    if lock(&pending).is_none() || saving.swap(true, Ordering::AcqRel) {
                        break;
                    }
                    continue;
                };
                if matches!(store.save(&id, &record).await, Ok(true))
                    && let Some(bus) = &bus
                {
                    let _ = bus
                        .publish(BusMessage::SessionChanged {
                            session: id.to_string(),
                        })
                        .await;
                }
            }
        });
    }

    fn unmatched_response(&self, message: Bytes) {
        self.publish(BusMessage::ClientResponse {
            session: self.session_id.to_string(),
            message: String::from_utf8_lossy(&message).into_owned(),
        });
    }

    fn unmatched_cancel(&self, message: Bytes) {
        self.publish(BusMessage::Cancel {
            session: self.session_id.to_string(),
            message: String::from_utf8_lossy(&message).into_owned(),
        });
    }

    fn request_id_prefix(&self) -> Option<&str> {
        self.cluster.bus.as_ref().map(|b| b.instance_id())
    }
}
