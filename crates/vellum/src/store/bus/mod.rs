//! The message bus between server instances that share sessions: what one instance must
//! tell the others so a session works wherever its requests land. The [`MessageBus`] trait,
//! the [`BusMessage`]s it carries, and one file per implementation: `memory.rs` (instances in
//! one process) and `redis.rs` (pub/sub).
//!
//! Not here: what an instance does with a message (the HTTP transport's cluster logic).

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::error::StoreError;
use super::event_store::EventId;

pub(super) mod memory;
#[cfg(feature = "redis")]
pub(super) mod redis;

/// One message between instances. Every instance receives every message and acts on the
/// ones about sessions it serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BusMessage {
    /// A client answered a server→client request on another instance: the encoded JSON-RPC
    /// response, for the instance whose handler waits for it.
    ClientResponse {
        /// The session.
        session: String,
        /// The encoded response message.
        message: String,
    },
    /// Cancel a request of the session, wherever it runs.
    Cancel {
        /// The session.
        session: String,
        /// The encoded `notifications/cancelled` message.
        message: String,
    },
    /// A message for the session's standalone (GET) stream, for the instance holding it.
    Standalone {
        /// The session.
        session: String,
        /// The event id it was stored under, if events are stored.
        id: Option<String>,
        /// The encoded message.
        message: String,
    },
    /// The session's record changed (log level, subscriptions, handshake): refresh caches.
    SessionChanged {
        /// The session.
        session: String,
    },
    /// The session ended (DELETE, timeout): close it everywhere.
    SessionClosed {
        /// The session.
        session: String,
    },
    /// A list of the server named `server` changed on instance `from`: every other instance
    /// tells its own listening streams (2026-07-28 listen streams that asked for the list,
    /// legacy GET streams). About no session.
    ListChanged {
        /// The sending instance.
        from: String,
        /// The server's name (its `serverInfo.name`), so tenants do not mix.
        server: String,
        /// `tools`, `resources` or `prompts`.
        list: String,
    },
    /// A resource of the server named `server` changed on instance `from`: every other
    /// instance tells its streams subscribed to `uri`. About no session.
    ResourceUpdated {
        /// The sending instance.
        from: String,
        /// The server's name (its `serverInfo.name`).
        server: String,
        /// The resource.
        uri: String,
    },
    /// A task changed (the task store's signals): about a task, not a session.
    Task(TaskSignal),
    /// This instance's bus connection was lost and stands again: messages published
    /// meanwhile never arrived here, so whoever caches what they announce refreshes it
    /// (listen streams hear a fresh `list_changed`). Raised by the bus itself, here only;
    /// never published.
    Reconnected,
}

/// A change of a task that other instances may have to act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSignal {
    /// The task id.
    pub task: String,
    /// What happened.
    pub event: TaskEvent,
}

/// What happened to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TaskEvent {
    /// Every open question is answered: the running instance resumes the handler.
    Answered,
    /// Cancelled: the running instance stops the handler.
    Cancelled,
    /// The status changed (waiters re-read the task).
    StatusChanged,
}

impl BusMessage {
    /// The session the message is about (empty for a task's message and the server-wide ones).
    pub fn session(&self) -> &str {
        match self {
            BusMessage::Task(_) | BusMessage::Reconnected => "",
            BusMessage::ClientResponse { session, .. }
            | BusMessage::Cancel { session, .. }
            | BusMessage::Standalone { session, .. }
            | BusMessage::SessionChanged { session }
            | BusMessage::SessionClosed { session } => session,
            BusMessage::ListChanged { .. } | BusMessage::ResourceUpdated { .. } => "",
        }
    }

    /// The standalone event's id, parsed.
    pub fn event_id(&self) -> Option<EventId> {
        match self {
            BusMessage::Standalone { id: Some(id), .. } => id.parse().ok(),
            _ => None,
        }
    }

    /// The carried message as bytes.
    pub fn message_bytes(&self) -> Option<Bytes> {
        match self {
            BusMessage::ClientResponse { message, .. }
            | BusMessage::Cancel { message, .. }
            | BusMessage::Standalone { message, .. } => Some(Bytes::from(message.clone())),
            _ => None,
        }
    }
}

/// Carries [`BusMessage`]s between the instances of a deployment.
pub trait MessageBus: Send + Sync + 'static {
    /// This instance's id (unique among live instances).
    fn instance_id(&self) -> &str;

    /// Sends a message to every instance (this one included).
    fn publish(&self, message: BusMessage) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Every message published from now on (the receiver lags and drops the oldest if it
    /// falls more than its capacity behind).
    fn subscribe(&self) -> broadcast::Receiver<BusMessage>;
}
