//! [`StoreError`]: why an operation of any store failed: the server's event store, session
//! store, task store and bus, the DPoP replay cache, and the client's token store.

use std::path::PathBuf;
use std::sync::Arc;

use crate::protocol::RequestId;

/// Why a store operation failed.
///
/// The one error of every store trait of the crate (the server's [`EventStore`],
/// [`SessionStore`], task store and [`MessageBus`], the DPoP replay cache, the OAuth client's
/// token store), so an
/// implementation written for one reads like one written for another. Cheap to clone:
/// sources are shared.
///
/// [`EventStore`]: crate::store::EventStore
/// [`SessionStore`]: crate::store::SessionStore
/// [`MessageBus`]: crate::store::MessageBus
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
    /// The store holds as many entries as it may (e.g. the DPoP replay cache, flooded with
    /// fresh proofs): new entries are refused until old ones expire.
    #[error("the store is full")]
    Full,
    /// The backend failed (connection lost, no answer within the store timeout, a reply it
    /// cannot read, …): worth retrying later. The source says why; make one with
    /// [`StoreError::backend`].
    #[error("store backend unavailable: {0}")]
    Backend(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// A file of a store on disk could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A file of a store on disk is not a record (the detail says where, never what it
    /// holds).
    #[error("{}: not a token record ({detail})", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Where the parse failed.
        detail: String,
    },
}

impl StoreError {
    /// A [`Backend`](Self::Backend) failure caused by `source` (an error, or a message:
    /// `StoreError::backend("unexpected reply")`).
    pub fn backend(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
        StoreError::Backend(Arc::from(source.into()))
    }
}
