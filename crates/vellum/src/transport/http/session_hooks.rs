//! [`HttpHooks`]: what a legacy session over HTTP does beyond serving its requests:
//! delivering messages that belong to no request (the standalone stream, stored for
//! resumption, or sent to the instance whose GET stream is open), saving its state to the
//! session store, and handing stray answers and cancellations to the other instances.
//!
//! Not here: the backends themselves (`cluster.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::error::Error;
use crate::server::{Session, SessionHooks};
use crate::store::{BusMessage, SessionRecord, StoreError, StreamId};
use crate::sync::lock;

use super::cluster::{Cluster, spawn};
use super::live_streams::LiveStreams;
use super::sse_writer::SseEvent;

/// Who owns a session: the `(issuer, subject)` of the principal that created it.
pub(crate) type Owner = (String, String);

/// The hooks of an HTTP session: its standalone stream, and its links to other instances.
pub(crate) struct HttpHooks {
    session_id: Arc<str>,
    live: Arc<LiveStreams>,
    owner: Option<Owner>,
    cluster: Arc<Cluster>,
    /// The generation of the newest change and the newest record waiting to be saved, and
    /// whether a save is under way (saves are serialized so an older record never
    /// overwrites a newer one).
    pending: Arc<Mutex<(u64, Option<SessionRecord>)>>,
    saving: Arc<AtomicBool>,
    /// The generation of the newest record saved and announced: a change of generation
    /// `g` is shared once this reaches `g` (a newer record includes it).
    shared: Arc<watch::Sender<u64>>,
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
            pending: Arc::new(Mutex::new((0, None))),
            saving: Arc::new(AtomicBool::new(false)),
            shared: Arc::new(watch::Sender::new(0)),
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
        let stored = self.cluster.events.as_ref().map(|s| {
            super::metrics::event_stored(message.len());
            s.append(&self.session_id, StreamId::STANDALONE, message.clone())
        });
        let bus = self.cluster.bus.clone();
        let session = self.session_id.to_string();
        Box::pin(async move {
            let id = match stored {
                Some(f) => {
                    let id = f.await.map_err(Error::event_store)?;
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

    fn state_changed(&self, session: &Session) -> Option<BoxFuture<'static, ()>> {
        let store = self.cluster.sessions.clone()?;
        let mut record = session.record()?;
        record.owner = self.owner.clone();
        let generation = {
            let mut pending = lock(&self.pending);
            pending.0 += 1;
            pending.1 = Some(record);
            pending.0
        };
        let mut done = self.shared.subscribe();
        // Waits for this change, or a newer one, to be saved and announced. The saver runs
        // on its own task, so a request that stops waiting does not stop the save.
        let wait: BoxFuture<'static, ()> = Box::pin(async move {
            let _ = done.wait_for(|saved| *saved >= generation).await;
        });
        if self.saving.swap(true, Ordering::AcqRel) {
            return Some(wait); // The running saver picks up the newest record.
        }
        let pending = self.pending.clone();
        let saving = self.saving.clone();
        let shared = self.shared.clone();
        let bus = self.cluster.bus.clone();
        let id = self.session_id.clone();
        spawn(async move {
            loop {
                let next = {
                    let mut p = lock(&pending);
                    p.1.take().map(|r| (p.0, r))
                };
                let Some((generation, record)) = next else {
                    saving.store(false, Ordering::Release);
                    // A change may have landed between `take` and the flag.
                    if lock(&pending).1.is_none() || saving.swap(true, Ordering::AcqRel) {
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
                // A failed save is not retried (as before): the waiters are let go either
                // way, an unreachable store must not hold answers back forever.
                shared.send_replace(generation);
            }
        });
        Some(wait)
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

    fn listening_here(&self) -> bool {
        self.live.sink(StreamId::STANDALONE).is_some()
    }
}
