//! Reading a request body within its bounds: the size limit, a whole-body deadline, a
//! minimum transfer rate, and a budget of bytes buffered for bodies across every connection
//! of the handler. The budget counts every body from its first byte but one per connection
//! ([`Exemption`]): an HTTP/1.1 connection carries one body at a time, and the bodies of an
//! HTTP/2 connection share one exemption, so many streams cannot each hold an uncounted part.
//!
//! A body that breaks a bound is refused at once and its bytes are dropped with the future
//! that read them (hyper then closes the connection: a body that was not read to its end
//! cannot be followed by another request).
//!
//! Not here: what the body means (`post.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use http_body::Body;
use http_body_util::BodyExt;
use tokio::time::Instant;

use super::rejection::Rejection;

/// The bytes of a connection's exempt body that the budget does not count: one read
/// buffer's worth, which every connection may hold anyway (hyper buffers up to as much for
/// the request head), so a fresh client's small body is never refused for the others' sake.
pub(super) const UNCOUNTED_BYTES: usize = 64 * 1024;

/// The one exemption of an HTTP/2 connection's bodies: held by one body at a time.
#[derive(Debug, Default)]
pub(crate) struct BodyExemption {
    taken: AtomicBool,
}

impl BodyExemption {
    /// A connection's exemption, free.
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }

    fn give_back(&self) {
        self.taken.store(false, Ordering::Release);
    }
}

/// A request extension carrying its HTTP/2 connection's [`BodyExemption`] (what
/// [`serve`](super::serve) inserts beside the `ConnectionInfo` when a layer wraps the handler).
#[derive(Debug, Clone)]
pub(crate) struct ConnectionExemption(pub(crate) Arc<BodyExemption>);

impl ConnectionExemption {
    /// The exemption an HTTP/2 request carries in its extensions (none for HTTP/1.1, whose
    /// bodies are exempt each).
    pub(super) fn of<B>(req: &http::Request<B>) -> Option<Arc<BodyExemption>> {
        if req.version() < http::Version::HTTP_2 {
            return None;
        }
        req.extensions()
            .get::<ConnectionExemption>()
            .map(|e| e.0.clone())
    }
}

/// Which of a body's bytes the budget leaves uncounted.
#[derive(Debug)]
pub(super) enum Exemption {
    /// An HTTP/1.1 body, alone on its connection: its first [`UNCOUNTED_BYTES`].
    Own,
    /// An HTTP/2 body: its connection's exemption when no other body holds it, else none.
    Shared(Arc<BodyExemption>),
    /// None (an HTTP/2 body on a connection the handler does not know).
    None,
}

impl Exemption {
    /// The exemption of a body of `version`, given its connection's shared one.
    pub(super) fn of(version: http::Version, shared: Option<Arc<BodyExemption>>) -> Self {
        match version {
            http::Version::HTTP_09 | http::Version::HTTP_10 | http::Version::HTTP_11 => {
                Exemption::Own
            }
            _ => shared.map_or(Exemption::None, Exemption::Shared),
        }
    }
}

/// How long a body may take before the minimum rate applies (a client's first bytes may
/// wait for a slow start, a TLS record, a proxy).
pub(super) const RATE_GRACE: Duration = Duration::from_secs(5);

/// The bounds one body is read within.
#[derive(Debug, Clone, Copy)]
pub(super) struct BodyLimits {
    /// The most bytes (413 beyond).
    pub(super) max_bytes: usize,
    /// The whole body must have arrived this long after its headers (408 otherwise).
    pub(super) timeout: Option<Duration>,
    /// After [`RATE_GRACE`], at least this many bytes per second on average (408 otherwise).
    pub(super) min_rate: Option<u64>,
}

/// The bytes buffered for bodies being received, across every connection of a handler.
#[derive(Debug)]
pub(super) struct BodyBudget {
    used: AtomicUsize,
    max: Option<usize>,
}

impl BodyBudget {
    /// A budget of `max` bytes (`None`: unbounded, only counted).
    pub(super) fn new(max: Option<usize>) -> Arc<Self> {
        Arc::new(BodyBudget {
            used: AtomicUsize::new(0),
            max,
        })
    }

    /// The bytes held now (for tests and logs).
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Whether nothing is left (a body without an exemption is refused before it is read).
    fn is_spent(&self) -> bool {
        self.max.is_some_and(|max| self.used() >= max)
    }

    /// Takes `n` more bytes, or fails (taking nothing) when that would pass the budget.
    fn take(&self, n: usize) -> bool {
        let Some(max) = self.max else {
            self.used.fetch_add(n, Ordering::AcqRel);
            return true;
        };
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|total| *total <= max)
            })
            .is_ok()
    }
}

/// The part of the budget one body holds (and its connection's exemption, if it took it);
/// given back when dropped.
#[derive(Debug)]
pub(super) struct Held {
    budget: Arc<BodyBudget>,
    bytes: usize,
    uncounted: usize,
    shared: Option<Arc<BodyExemption>>,
}

impl Held {
    /// The budget's part of a body about to be read; refused at once when the body would be
    /// counted from its first byte and nothing is left.
    fn new(budget: &Arc<BodyBudget>, exemption: Exemption) -> Result<Self, Rejection> {
        let (uncounted, shared) = match exemption {
            Exemption::Own => (UNCOUNTED_BYTES, None),
            Exemption::Shared(e) if e.take() => (UNCOUNTED_BYTES, Some(e)),
            Exemption::Shared(_) | Exemption::None => (0, None),
        };
        if uncounted == 0 && budget.is_spent() {
            return Err(Rejection::BodyBudgetExhausted);
        }
        Ok(Held {
            budget: budget.clone(),
            bytes: 0,
            uncounted,
            shared,
        })
    }

    /// Accounts for a body that has now received `total` bytes.
    fn grow_to(&mut self, total: usize) -> Result<(), Rejection> {
        let counted = total.saturating_sub(self.uncounted);
        if counted > self.bytes {
            if !self.budget.take(counted - self.bytes) {
                return Err(Rejection::BodyBudgetExhausted);
            }
            self.bytes = counted;
        }
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        }
        if let Some(e) = &self.shared {
            e.give_back();
        }
    }
}

/// Reads a whole body within `limits`, holding its bytes against `budget` (all but those
/// `exemption` leaves uncounted): 413 beyond the size limit, 408 past the deadline or below
/// the minimum rate, 503 when the budget is spent, 400 if the body breaks off. The bytes
/// stay counted until the returned [`Held`] is dropped (once the body is decoded).
pub(super) async fn read_body<B>(
    body: B,
    limits: BodyLimits,
    budget: &Arc<BodyBudget>,
    exemption: Exemption,
) -> Result<(Bytes, Held), Rejection>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = limits.max_bytes;
    if let Some(upper) = body.size_hint().upper()
        && upper > limit as u64
    {
        return Err(Rejection::PayloadTooLarge(limit));
    }
    let start = Instant::now();
    let total_deadline = limits.timeout.map(|t| start + t);
    let mut held = Held::new(budget, exemption)?;
    let mut body = std::pin::pin!(body);
    // One frame (the usual case: the body came with its headers) is returned as it is;
    // more are gathered into one buffer, grown as bytes arrive (never from the declared
    // length, which a client could set without sending anything).
    let mut first: Option<Bytes> = None;
    let mut rest: Option<BytesMut> = None;
    let mut received = 0usize;
    while !body.is_end_stream() {
        let deadline = next_deadline(start, total_deadline, limits.min_rate, received);
        let frame = match deadline {
            Some(d) => match tokio::time::timeout_at(d, body.frame()).await {
                Ok(f) => f,
                Err(_) => return Err(Rejection::BodyTimeout),
            },
            None => body.frame().await,
        };
        let Some(frame) = frame else { break };
        let Ok(data) = frame.map_err(|_| Rejection::UnreadableBody)?.into_data() else {
            continue; // trailers
        };
        let mut data = data;
        let n = data.remaining();
        received = received.saturating_add(n);
        if received > limit {
            return Err(Rejection::PayloadTooLarge(limit));
        }
        held.grow_to(received)?;
        match (&mut first, &mut rest) {
            (None, _) => first = Some(data.copy_to_bytes(n)),
            (Some(f), None) => {
                let mut buf = BytesMut::with_capacity((f.len() + n).next_power_of_two());
                buf.extend_from_slice(f);
                buf.put(&mut data);
                rest = Some(buf);
            }
            (Some(_), Some(buf)) => buf.put(&mut data),
        }
    }
    let bytes = match (first, rest) {
        (_, Some(buf)) => buf.freeze(),
        (Some(f), None) => f,
        (None, None) => Bytes::new(),
    };
    Ok((bytes, held))
}

/// When the next bytes must have arrived: the whole-body deadline, or earlier the moment
/// the average rate since the grace period would fall below `min_rate`.
fn next_deadline(
    start: Instant,
    total: Option<Instant>,
    min_rate: Option<u64>,
    received: usize,
) -> Option<Instant> {
    let by_rate = min_rate.filter(|r| *r > 0).map(|rate| {
        let secs = received as f64 / rate as f64;
        start + RATE_GRACE + Duration::from_secs_f64(secs.min(1e9))
    });
    match (total, by_rate) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_counts_beyond_the_uncounted_part_and_gives_back() {
        let budget = BodyBudget::new(Some(100));
        let mut a = Held::new(&budget, Exemption::Own).unwrap();
        a.grow_to(UNCOUNTED_BYTES).unwrap();
        assert_eq!(budget.used(), 0);
        a.grow_to(UNCOUNTED_BYTES + 60).unwrap();
        assert_eq!(budget.used(), 60);
        let mut b = Held::new(&budget, Exemption::Own).unwrap();
        assert!(matches!(
            b.grow_to(UNCOUNTED_BYTES + 41),
            Err(Rejection::BodyBudgetExhausted)
        ));
        assert_eq!(budget.used(), 60);
        b.grow_to(UNCOUNTED_BYTES + 40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn http2_bodies_share_one_exemption_per_connection() {
        let budget = BodyBudget::new(Some(100));
        let conn = BodyExemption::new();
        let mut first = Held::new(&budget, Exemption::Shared(conn.clone())).unwrap();
        first.grow_to(UNCOUNTED_BYTES).unwrap();
        assert_eq!(budget.used(), 0, "the first body holds the exemption");
        // The connection's next body counts from its first byte.
        let mut second = Held::new(&budget, Exemption::Shared(conn.clone())).unwrap();
        second.grow_to(100).unwrap();
        assert_eq!(budget.used(), 100);
        // The budget is spent: a new body without the exemption is refused before any read.
        assert!(matches!(
            Held::new(&budget, Exemption::Shared(conn.clone())),
            Err(Rejection::BodyBudgetExhausted)
        ));
        assert!(matches!(
            Held::new(&budget, Exemption::None),
            Err(Rejection::BodyBudgetExhausted)
        ));
        // Another connection's first body still has its own.
        let other = Held::new(&budget, Exemption::Shared(BodyExemption::new()));
        assert!(other.is_ok());
        drop(first);
        let third = Held::new(&budget, Exemption::Shared(conn)).unwrap();
        assert_eq!(
            third.uncounted, UNCOUNTED_BYTES,
            "given back with the first body"
        );
    }

    #[test]
    fn rate_deadline_moves_with_the_bytes() {
        let start = Instant::now();
        let d0 = next_deadline(start, None, Some(1000), 0).unwrap();
        assert_eq!(d0, start + RATE_GRACE);
        let d1 = next_deadline(start, None, Some(1000), 2000).unwrap();
        assert_eq!(d1, start + RATE_GRACE + Duration::from_secs(2));
        let total = start + Duration::from_secs(1);
        assert_eq!(
            next_deadline(start, Some(total), Some(1000), 2000),
            Some(total)
        );
        assert_eq!(next_deadline(start, None, None, 5), None);
    }
}
