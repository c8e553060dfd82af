//! [`StoreError`]: why an operation of any store (event store, session store, bus) failed.

use crate::protocol::RequestId;

/// Why a store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The session or stream is not (or no longer) in the store.
    #[error("unknown stream")]
    UnknownStream,
    /// Events after the requested id were evicted: the stream cannot be replayed whole.
    #[error("events after this id were evicted from the store")]
    Evicted,
    /// The instance writing a followed stream stopped before its requests were answered.
    #[error("the server instance serving this stream is gone")]
    WriterGone {
        /// The requests of the stream that will never be answered.
        requests: Vec<RequestId>,
    },
    /// The backend failed (connection lost, no answer within the store timeout, …): worth
    /// retrying later.
    #[error("store backend unavailable: {0}")]
    Backend(String),
}
