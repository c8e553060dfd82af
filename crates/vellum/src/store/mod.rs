//! Storage behind the Streamable HTTP transport: the [`EventStore`] that makes SSE streams
//! resumable (`Last-Event-ID`), the [`SessionStore`] that lets any instance serve a session,
//! and the [`MessageBus`] between instances; in-memory implementations of each.
//!
//! Not here: anything about HTTP. A store sees sessions, streams and encoded messages only.

mod bus;
mod event;
mod memory;
#[cfg(feature = "redis")]
pub mod redis;
mod session;

pub use bus::{BusMessage, MemoryBus, MessageBus};
pub use event::{EventId, EventStore, StoreError, StoredEvent, StreamId};
pub use memory::MemoryEventStore;
pub use session::{MemorySessionStore, SessionRecord, SessionStore};
