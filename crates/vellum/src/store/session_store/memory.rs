//! [`MemorySessionStore`]: session records in this process's memory, each with a deadline
//! that activity renews; an expired record is dropped when it is next looked at.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, ready};

use super::{SessionRecord, SessionStore};
use crate::store::error::StoreError;
use crate::sync::lock;

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
