//! Storage behind the Streamable HTTP transport: the [`EventStore`] that makes SSE streams
//! resumable (`Last-Event-ID`), the [`SessionStore`] that lets any instance serve a session,
//! the [`TaskStore`] that lets any instance answer for a task,
//! and the [`MessageBus`] between instances; in-memory implementations of each, and Redis
//! ones behind the `redis` feature ([`redis`]).
//!
//! Every kind has the same layout: its trait and the types the trait speaks of in
//! `<kind>/mod.rs`, then one file per implementation, `<kind>/memory.rs` and `<kind>/redis.rs`
//! (`event_store/`, `session_store/`, `bus/`). [`StoreError`] is shared by all three; the Redis
//! connection they share is in `redis/`.
//!
//! Not here: anything about HTTP, or about the server. A store sees sessions, streams and
//! encoded messages only.

mod bus;
mod error;
mod event_store;
#[cfg(feature = "redis")]
pub mod redis;
mod session_store;
mod task_store;

pub use bus::memory::MemoryBus;
pub use bus::{BusMessage, MessageBus};
pub use error::StoreError;
pub use event_store::memory::MemoryEventStore;
pub use event_store::{EventId, EventStore, StoredEvent, StreamId};
pub use session_store::memory::MemorySessionStore;
pub use session_store::{SessionRecord, SessionStore};
pub(crate) use task_store::iso8601;
pub use task_store::memory::MemoryTaskStore;
pub use task_store::{
    Answered, TaskEvent, TaskOutcome, TaskRecord, TaskSignal, TaskStore, TaskTransition,
};
