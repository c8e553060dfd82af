//! Event stores: what makes an SSE stream resumable. The [`EventStore`] trait (the four
//! operations of the Go SDK's `EventStore`: open a stream, append, replay after an id,
//! session closed; plus following a stream another instance writes), the ids it assigns, and
//! one file per implementation: `memory.rs` (this process) and `redis.rs` (shared).
//!
//! Not here: when events are written or replayed (the HTTP transport decides), or SSE framing.

use std::fmt;
use std::str::FromStr;

use bytes::Bytes;
use futures_util::future::{BoxFuture, ready};
use futures_util::stream::BoxStream;

use super::error::StoreError;
use crate::protocol::RequestId;

pub(super) mod memory;
#[cfg(feature = "redis")]
pub(super) mod redis;

/// A stream of one session: every POST that carries requests opens one; the standalone
/// GET stream is [`StreamId::STANDALONE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The session's standalone stream (the GET stream), which always exists.
    pub const STANDALONE: StreamId = StreamId(0);
}

/// An SSE event id: the stream it belongs to and its position there.
///
/// The wire form is `"<stream>-<seq>"` (both decimal). Position 0 is the stream's start:
/// resuming after it replays the whole stream. Because ids encode their stream, a client's
/// `Last-Event-ID` always names the stream to resume and can never point into another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId {
    /// The stream.
    pub stream: StreamId,
    /// The position in the stream (1 for the first event).
    pub seq: u64,
}

impl EventId {
    /// The id before the first event of `stream`.
    pub const fn start_of(stream: StreamId) -> EventId {
        EventId { stream, seq: 0 }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stream.0, self.seq)
    }
}

/// A `Last-Event-ID` that is not one of ours.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("malformed event id")]
pub struct MalformedEventId;

impl FromStr for EventId {
    type Err = MalformedEventId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, b) = s.trim().split_once('-').ok_or(MalformedEventId)?;
        let digits =
            |x: &str| !x.is_empty() && x.len() <= 20 && x.bytes().all(|c| c.is_ascii_digit());
        if !digits(a) || !digits(b) {
            return Err(MalformedEventId);
        }
        Ok(EventId {
            stream: StreamId(a.parse().map_err(|_| MalformedEventId)?),
            seq: b.parse().map_err(|_| MalformedEventId)?,
        })
    }
}

/// One stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its id.
    pub id: EventId,
    /// The encoded JSON-RPC message.
    pub message: Bytes,
}

/// Stores the events of SSE streams so a client that lost its connection can resume with
/// `Last-Event-ID` and receive exactly what it missed on that stream.
///
/// Implementations must be safe for concurrent use across sessions. Every operation returns
/// a `'static` future: an implementation copies what it needs from the arguments.
pub trait EventStore: Send + Sync + 'static {
    /// Opens a new stream in `session` for the requests `requests` and returns its id (never
    /// [`StreamId::STANDALONE`]).
    fn open_stream(
        &self,
        session: &str,
        requests: &[RequestId],
    ) -> BoxFuture<'static, Result<StreamId, StoreError>>;

    /// Appends one encoded message to a stream and returns the id it was given. Appending to
    /// [`StreamId::STANDALONE`] needs no `open_stream`.
    fn append(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
    ) -> BoxFuture<'static, Result<EventId, StoreError>>;

    /// Appends as [`EventStore::append`] for the one writer of a stream, which knows the
    /// position the event is to get: `expected`, one past the last id it was given (1 for
    /// the first event). A store that may run an append twice (a retry over a lost answer)
    /// or lose its latest events (a failover to a replica that had not received them) uses
    /// it to store the event once and never to give out an id twice. Default: `append`.
    fn append_expecting(
        &self,
        session: &str,
        stream: StreamId,
        message: Bytes,
        expected: u64,
    ) -> BoxFuture<'static, Result<EventId, StoreError>> {
        let _ = expected;
        self.append(session, stream, message)
    }

    /// The events of `after.stream` that come after `after`, in order. Fails with
    /// [`StoreError::Evicted`] when any of them is gone (never a silently partial replay),
    /// and with [`StoreError::UnknownStream`] for streams it does not know. The standalone
    /// stream is known before its first event: replaying after its start is empty.
    fn replay_after(
        &self,
        session: &str,
        after: EventId,
    ) -> BoxFuture<'static, Result<Vec<StoredEvent>, StoreError>>;

    /// Forgets a session and all its streams.
    fn session_closed(&self, session: &str) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Marks a stream complete: every request on it was answered. Stores read by other
    /// instances use it to end [`EventStore::follow`]ers. Default: nothing.
    fn close_stream(
        &self,
        _session: &str,
        _stream: StreamId,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(ready(Ok(())))
    }

    /// Follows a stream that another instance may still be writing: every event after
    /// `after`, then each new one as it is appended, until the stream is complete; fails
    /// with [`StoreError::WriterGone`] when the writing instance dies first. `None` when the
    /// store cannot follow (streams written in this process are followed locally instead).
    fn follow(
        &self,
        _session: &str,
        _after: EventId,
    ) -> Option<BoxStream<'static, Result<StoredEvent, StoreError>>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_id_round_trip_and_garbage() {
        let id = EventId {
            stream: StreamId(3),
            seq: 17,
        };
        assert_eq!(id.to_string(), "3-17");
        assert_eq!("3-17".parse::<EventId>().unwrap(), id);
        for bad in [
            "",
            "-",
            "1-",
            "-1",
            "1_2",
            "a-1",
            "1-b",
            "1-2-3",
            "99999999999999999999999-1",
            "+1-2",
        ] {
            assert!(bad.parse::<EventId>().is_err(), "{bad:?} should not parse");
        }
    }
}
