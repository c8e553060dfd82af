//! Session stores: where the state of a legacy session lives so that any server instance
//! can serve it, not only the one that ran `initialize`. The [`SessionStore`] trait, the
//! [`SessionRecord`] it keeps, and one file per implementation: `memory.rs` (this process)
//! and `redis.rs` (shared).
//!
//! The HTTP handler keeps every session it serves in local memory; a store is the shared
//! truth behind that cache. Without a store (the default), sessions live only in the process
//! that created them. Not here: the session table itself, or when records are written.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};

pub(super) mod memory;
#[cfg(feature = "redis")]
pub(super) mod redis;

/// Everything an instance needs to serve a session it did not create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The negotiated protocol version.
    pub protocol_version: ProtocolVersion,
    /// The client's capabilities from `initialize`.
    pub client_capabilities: ClientCapabilities,
    /// The client's identity from `initialize`.
    pub client_info: Option<Implementation>,
    /// The level set by `logging/setLevel`.
    pub log_level: Option<LoggingLevel>,
    /// Whether the client sent `notifications/initialized`.
    pub initialized: bool,
    /// Resource URIs the client subscribed to.
    pub subscriptions: BTreeSet<String>,
    /// The `(issuer, subject)` of the principal the session is bound to.
    pub owner: Option<(String, String)>,
}

impl SessionRecord {
    /// A record for a freshly initialized session.
    pub fn new(protocol_version: ProtocolVersion, client_capabilities: ClientCapabilities) -> Self {
        SessionRecord {
            protocol_version,
            client_capabilities,
            client_info: None,
            log_level: None,
            initialized: false,
            subscriptions: BTreeSet::new(),
            owner: None,
        }
    }
}

/// Stores session records, each with a time to live that activity renews.
pub trait SessionStore: Send + Sync + 'static {
    /// Stores a new session (it expires after `ttl` without a `touch`).
    fn create(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>>;

    /// The record of a live session; `None` when unknown, expired or deleted.
    fn load(&self, id: &str) -> BoxFuture<'static, Result<Option<SessionRecord>, StoreError>>;

    /// Replaces the record of a live session (false if it is gone).
    fn save(
        &self,
        id: &str,
        record: &SessionRecord,
    ) -> BoxFuture<'static, Result<bool, StoreError>>;

    /// Renews a session's time to live (false if it is gone).
    fn touch(&self, id: &str, ttl: Duration) -> BoxFuture<'static, Result<bool, StoreError>>;

    /// Deletes a session (false if it was already gone).
    fn delete(&self, id: &str) -> BoxFuture<'static, Result<bool, StoreError>>;
}
