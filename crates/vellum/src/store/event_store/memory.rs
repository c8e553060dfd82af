//! [`MemoryEventStore`]: events in this process's memory, bounded in bytes.
//!
//! Eviction: when an append takes the total above the bound, the oldest events of the whole
//! store (across all sessions, in append order) are dropped until it fits again. A replay
//! that would need a dropped event fails with [`StoreError::Evicted`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::future::{BoxFuture, ready};

use super::{EventId, EventStore, StoredEvent, StreamId};
use crate::protocol::RequestId;
use crate::store::error::StoreError;
use crate::sync::lock;

struct StreamLog {
    /// The seq of `events[0]`.
    first_seq: u64,
    events: VecDeque<Bytes>,
}

impl Default for StreamLog {
    fn default() -> Self {
        StreamLog {
            first_seq: 1,
            events: VecDeque::new(),
        }
    }
}

impl StreamLog {
    fn next_seq(&self) -> u64 {
        self.first_seq + self.events.len() as u64
    }
}

#[derive(Default)]
struct SessionLog {
    next_stream: u64,
    streams: HashMap<StreamId, StreamLog>,
    bytes: usize,
}

struct Inner {
    sessions: HashMap<Arc<str>, SessionLog>,
    /// Every stored event in append order: (session, stream, seq, size).
    order: VecDeque<(Arc<str>, StreamId, u64, usize)>,
    bytes: usize,
    max_bytes: usize,
}

/// An in-memory event store, bounded in bytes (see the module docs for eviction).
pub struct MemoryEventStore {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for MemoryEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.lock();
        f.debug_struct("MemoryEventStore")
            .field("sessions", &i.sessions.len())
            .field("bytes", &i.bytes)
            .field("max_bytes", &i.max_bytes)
            .finish()
    }
}

impl Default for MemoryEventStore {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_BYTES)
    }
}

impl MemoryEventStore {
    /// The default bound: 10 MiB of message bytes.
    pub const DEFAULT_MAX_BYTES: usize = 10 << 20;

    /// A store holding at most `max_bytes` of messages (at least one message is always kept).
    pub fn new(max_bytes: usize) -> Self {
        MemoryEventStore {
            inner: Mutex::new(Inner {
                sessions: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
                max_bytes,
            }),
        }
    }

    /// The bound in bytes.
    pub fn max_bytes(&self) -> usize {
        self.lock().max_bytes
    }

    /// Bytes of messages currently held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Sessions currently held.
    pub fn sessions(&self) -> usize {
        self.lock().sessions.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    fn do_open(&self, session: &str) -> StreamId {
        let mut i = self.lock();
        let key = session_key(&i, session);
        let log = i.sessions.entry(key).or_default();
        log.next_stream += 1;
        let id = StreamId(log.next_stream);
        log.streams.insert(id, StreamLog::default());
        id
    }

    fn do_append(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
    ) -> Result<EventId, StoreError> {
        let mut i = self.lock();
        let size = message.len();
        let key = session_key(&i, session);
        let log = i.sessions.entry(key.clone()).or_default();
        let s = match log.streams.get_mut(&stream) {
            Some(s) => s,
            None if stream == StreamId::STANDALONE => log.streams.entry(stream).or_default(),
            None => return Err(StoreError::UnknownStream),
        };
        let seq = s.next_seq();
        s.events.push_back(message);
        log.bytes += size;
        i.bytes += size;
        i.order.push_back((key, stream, seq, size));
        evict(&mut i);
        Ok(EventId { stream, seq })
    }

    fn do_replay(&self, session: &str, after: EventId) -> Result<Vec<StoredEvent>, StoreError> {
        let i = self.lock();
        let s = i
            .sessions
            .get(session)
            .and_then(|l| l.streams.get(&after.stream));
        let Some(s) = s else {
            // The standalone stream exists before its first event: a client that saw only
            // its priming event (seq 0) resumes to nothing missed.
            if after == EventId::start_of(StreamId::STANDALONE) {
                return Ok(Vec::new());
            }
            return Err(StoreError::UnknownStream);
        };
        let last = s.next_seq() - 1;
        if after.seq > last {
            // An id this stream never issued.
            return Err(StoreError::UnknownStream);
        }
        if after.seq + 1 < s.first_seq {
            return Err(StoreError::Evicted);
        }
        let skip = (after.seq + 1 - s.first_seq) as usize;
        Ok(s.events
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(n, m)| StoredEvent {
                id: EventId {
                    stream: after.stream,
                    seq: s.first_seq + n as u64,
                },
                message: m.clone(),
            })
            .collect())
    }

    fn do_close(&self, session: &str) {
        let mut i = self.lock();
        if let Some(log) = i.sessions.remove(session) {
            i.bytes -= log.bytes;
        }
    }
}

/// The map key for `session`, reusing the existing allocation when there is one.
fn session_key(i: &Inner, session: &str) -> Arc<str> {
    i.sessions
        .get_key_value(session)
        .map_or_else(|| Arc::from(session), |(k, _)| k.clone())
}

/// Drops the oldest events until the store fits its bound (keeping at least the newest).
fn evict(i: &mut Inner) {
    while i.bytes > i.max_bytes && i.order.len() > 1 {
        let Some((session, stream, seq, size)) = i.order.pop_front() else {
            break;
        };
        let Some(log) = i.sessions.get_mut(&session) else {
            // The session was closed; its bytes were already released.
            continue;
        };
        let Some(s) = log.streams.get_mut(&stream) else {
            continue;
        };
        if s.first_seq == seq && s.events.pop_front().is_some() {
            s.first_seq += 1;
            log.bytes -= size;
            i.bytes -= size;
        }
    }
}

impl EventStore for MemoryEventStore {
    fn open_stream(
        &self,
        session: &str,
        _requests: &[RequestId],
    ) -> BoxFuture<'static, Result<StreamId, StoreError>> {
        Box::pin(ready(Ok(self.do_open(session))))
    }

    fn append(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
    ) -> BoxFuture<'static, Result<EventId, StoreError>> {
        Box::pin(ready(self.do_append(session, stream, message)))
    }

    fn replay_after(
        &self,
        session: &str,
        after: EventId,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(ready(self.do_replay(session, after)))
    }

    fn session_closed(&self, session: &str) -> BoxFuture<'static, Result<(), StoreError>> {
        self.do_close(session);
        Box::pin(ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[tokio::test]
    async fn append_replay_and_isolation() {
        let st = MemoryEventStore::default();
        let a = st.open_stream("s1", &[]).await.unwrap();
        let other = st.open_stream("s1", &[]).await.unwrap();
        assert_ne!(a, other);
        let e1 = st.append("s1", a, b("one")).await.unwrap();
        st.append("s1", other, b("x")).await.unwrap();
        let e2 = st.append("s1", a, b("two")).await.unwrap();
        assert_eq!((e1.seq, e2.seq), (1, 2));
        let all = st.replay_after("s1", EventId::start_of(a)).await.unwrap();
        assert_eq!(
            all.iter().map(|e| &e.message[..]).collect::<Vec<_>>(),
            [&b"one"[..], b"two"]
        );
        let rest = st.replay_after("s1", e1).await.unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].id, e2);
        assert!(st.replay_after("s1", e2).await.unwrap().is_empty());
        assert!(matches!(
            st.replay_after("s2", e1).await,
            Err(StoreError::UnknownStream)
        ));
        let before_any = EventId::start_of(StreamId::STANDALONE);
        assert!(st.replay_after("s3", before_any).await.unwrap().is_empty());
        assert!(matches!(
            st.replay_after(
                "s1",
                EventId {
                    stream: StreamId(99),
                    seq: 0
                }
            )
            .await,
            Err(StoreError::UnknownStream)
        ));
        assert!(matches!(
            st.replay_after("s1", EventId { stream: a, seq: 50 }).await,
            Err(StoreError::UnknownStream)
        ));
        assert!(matches!(
            st.append("s1", StreamId(42), b("z")).await,
            Err(StoreError::UnknownStream)
        ));
        st.session_closed("s1").await.unwrap();
        assert_eq!(st.bytes(), 0);
        assert!(st.replay_after("s1", e1).await.is_err());
    }

    #[tokio::test]
    async fn eviction_is_oldest_first_and_visible() {
        let st = MemoryEventStore::new(10);
        let s = st.open_stream("s", &[]).await.unwrap();
        let first = st.append("s", s, b("aaaa")).await.unwrap();
        st.append("s", s, b("bbbb")).await.unwrap();
        st.append("s", s, b("cccc")).await.unwrap(); // 12 bytes > 10: "aaaa" goes
        assert_eq!(st.bytes(), 8);
        assert!(matches!(
            st.replay_after("s", EventId::start_of(s)).await,
            Err(StoreError::Evicted)
        ));
        let rest = st.replay_after("s", first).await.unwrap();
        assert_eq!(rest.len(), 2);
    }

    #[tokio::test]
    async fn standalone_needs_no_open() {
        let st = MemoryEventStore::default();
        let id = st.append("s", StreamId::STANDALONE, b("n")).await.unwrap();
        assert_eq!(id.to_string(), "0-1");
    }
}
