//! Session stores: where the state of a legacy session lives so that any server instance
//! can serve it, not only the one that ran `initialize`.
//!
//! The HTTP handler keeps every session it serves in local memory; a store is the shared
//! truth behind that cache. Without a store (the default), sessions live only in the process
//! that created them.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, ready};
use serde::{Deserialize, Serialize};

use super::event::StoreError;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};
use crate::sync::lock;

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

/// A session store in this process's memory: several handlers in one process can share
/// their sessions through it (and tests exercise the cross-instance logic with it).
#[derive(Default)]
pub struct MemorySessionStore {
    map: Mutex<HashMap<String, (SessionRecord, Instant)>>,
}

impl std::fmt::Debug for MemorySessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySessionStore")
            .field("sessions", &self.len())
            .finish()
    }
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Live (unexpired) sessions.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.lock().values().filter(|(_, exp)| *exp > now).count()
    }

    /// True when no live session is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (SessionRecord, Instant)>> {
        lock(&self.map)
    }

    fn live<'a>(
        map: &'a mut HashMap<String, (SessionRecord, Instant)>,
        id: &str,
    ) -> Option<&'a mut (SessionRecord, Instant)> {
        let now = Instant::now();
        if map.get(id).is_some_and(|(_, exp)| *exp <= now) {
            map.remove(id);
        }
        map.get_mut(id)
    }
}

impl SessionStore for MemorySessionStore {
    fn create(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.lock()
            .insert(id.to_owned(), (record.clone(), Instant::now() + ttl));
        Box::pin(ready(Ok(())))
    }

    fn load(&self, id: &str) -> BoxFuture<'static, Result<Option<SessionRecord>, StoreError>> {
        let r = Self::live(&mut self.lock(), id).map(|(r, _)| r.clone());
        Box::pin(ready(Ok(r)))
    }

    fn save(
        &self,
        id: &str,
        record: &SessionRecord,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let mut map = self.lock();
        let found = match Self::live(&mut map, id) {
            Some(slot) => {
                slot.0 = record.clone();
                true
            }
            None => false,
        };
        Box::pin(ready(Ok(found)))
    }

    fn touch(&self, id: &str, ttl: Duration) -> BoxFuture<'static, Result<bool, StoreError>> {
        let mut map = self.lock();
        let found = match Self::live(&mut map, id) {
            Some(slot) => {
                slot.1 = Instant::now() + ttl;
                true
            }
            None => false,
        };
        Box::pin(ready(Ok(found)))
    }

    fn delete(&self, id: &str) -> BoxFuture<'static, Result<bool, StoreError>> {
        let existed = self.lock().remove(id).is_some();
        Box::pin(ready(Ok(existed)))
    }
}
