//! Storage behind the Streamable HTTP transport: the [`EventStore`] that makes SSE streams
//! resumable (`Last-Event-ID`), and its in-memory implementation.
//!
//! Not here: anything about HTTP. A store sees sessions, streams and encoded messages only.

mod event;
mod memory;

pub use event::{EventId, EventStore, StoreError, StoredEvent, StreamId};
pub use memory::MemoryEventStore;
