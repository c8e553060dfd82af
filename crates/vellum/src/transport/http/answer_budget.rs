//! The answer budget: bytes of responses produced but not yet written, counted per
//! connection and in total from the moment they exist until the peer has taken them (the
//! buffer holding them is dropped once written, or with the connection).
//!
//! Every response of [`serve`](super::serve) goes through [`AnswerFuture`]:
//! - a request on a connection past its budget waits before it starts (it produces
//!   nothing until the peer reads, or the write timeout closes the connection);
//! - a finished answer (a body of known length) of [`TRACK_FROM`] bytes or more is counted
//!   whole when the response is ready, within the total budget: past it, connections whose
//!   peers stalled are closed to make room, else the answer is refused with 503;
//! - a live stream (SSE of unknown length) counts each chunk as it goes out, and takes no
//!   new event while its connection is past its budget, so the handler sending them waits
//!   (its outbox fills: backpressure, not buffering).
//!
//! Smaller finished answers are not counted (the common case pays nothing): each is below
//! [`TRACK_FROM`], at most one per stream.
//!
//! Not here: the budgets and the write timeout (`connection_table.rs`,
//! `connection_task.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use http::Response;
use http_body::{Body, Frame, SizeHint};

use super::body::ResponseBody;
use super::connection_table::{ConnectionState, RequestGuard};
use super::rejection::Rejection;
use super::trace::log_event;

/// Finished answers at least this long are counted against the answer budget.
pub(super) const TRACK_FROM: usize = 16 * 1024;

pin_project_lite::pin_project! {
    /// A response future of [`serve`](super::serve): waits for room before it starts, then
    /// counts what it answers.
    pub(super) struct AnswerFuture<F> {
        #[pin]
        inner: F,
        guard: Option<RequestGuard>,
        started: bool,
    }
}

impl<F> AnswerFuture<F> {
    /// `inner` answering a request in progress on `guard`'s connection.
    pub(super) fn new(inner: F, guard: RequestGuard) -> Self {
        AnswerFuture {
            inner,
            guard: Some(guard),
            started: false,
        }
    }
}

impl<F, B, E> Future for AnswerFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body,
{
    type Output = Result<Response<AnswerBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(guard) = this.guard.as_ref() else {
            // Polled after it finished: hyper never does.
            return Poll::Pending;
        };
        if !*this.started {
            ready!(guard.connection().poll_room(cx));
            *this.started = true;
        }
        let resp = ready!(this.inner.poll(cx))?;
        let Some(guard) = this.guard.take() else {
            return Poll::Pending;
        };
        Poll::Ready(Ok(admit(resp, guard)))
    }
}

/// Counts a ready response's body: a finished answer whole (or refused when the total
/// budget has no room), a live stream by its chunks.
fn admit<B: Body>(resp: Response<B>, guard: RequestGuard) -> Response<AnswerBody<B>> {
    let exact = resp.body().size_hint().exact();
    let (live, pending) = match exact.map(|n| usize::try_from(n).unwrap_or(usize::MAX)) {
        None => (true, 0),
        Some(n) if n < TRACK_FROM => (false, 0),
        Some(n) if guard.connection().try_charge(n) => (false, n),
        Some(n) => return refuse(n, guard),
    };
    resp.map(|body| AnswerBody {
        inner: Inner::Served { body },
        charge: Charge { guard, pending },
        live,
    })
}

/// A finished answer the total budget had no room for: 503, its bytes dropped.
fn refuse<B: Body>(bytes: usize, guard: RequestGuard) -> Response<AnswerBody<B>> {
    let logger = guard.connection().table().logger.as_ref();
    log_event!(
        logger,
        debug,
        bytes,
        "answer refused: the answer budget is spent"
    );
    let rejection = Rejection::AnswerBudgetExhausted;
    let reason = rejection.reason();
    let resp = rejection.into_response();
    super::metrics::refused(resp.status().as_u16(), reason);
    resp.map(|body| AnswerBody {
        inner: Inner::Refused { body },
        charge: Charge { guard, pending: 0 },
        live: false,
    })
}

/// The bytes of a finished answer counted but not yet handed out, given back with the
/// body; and the request, in progress until then.
struct Charge {
    guard: RequestGuard,
    pending: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        if self.pending > 0 {
            self.guard.connection().release(self.pending);
        }
    }
}

pin_project_lite::pin_project! {
    #[project = InnerProj]
    enum Inner<B> {
        Served { #[pin] body: B },
        Refused { body: ResponseBody },
    }
}

pin_project_lite::pin_project! {
    /// The body of a response of [`serve`](super::serve): the handler's (or its layer's), each
    /// chunk carrying its part of the answer budget until written.
    pub(super) struct AnswerBody<B> {
        #[pin]
        inner: Inner<B>,
        charge: Charge,
        live: bool,
    }
}

impl<B> std::fmt::Debug for AnswerBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerBody")
            .field("pending", &self.charge.pending)
            .field("live", &self.live)
            .finish_non_exhaustive()
    }
}

impl<B: Body> Body for AnswerBody<B> {
    type Data = AnswerBuf<B::Data>;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let body = match this.inner.project() {
            InnerProj::Refused { body } => {
                let frame = ready!(Pin::new(body).poll_frame(cx));
                return Poll::Ready(frame.map(|r| match r {
                    Ok(f) => Ok(f.map_data(AnswerBuf::Own)),
                    Err(never) => match never {},
                }));
            }
            InnerProj::Served { body } => body,
        };
        let conn = this.charge.guard.connection();
        if *this.live {
            // A stream takes no new event while its connection is past its budget.
            ready!(conn.poll_room(cx));
        }
        let frame = ready!(body.poll_frame(cx));
        let live = *this.live;
        let pending = &mut this.charge.pending;
        Poll::Ready(frame.map(|r| {
            r.map(|f| {
                f.map_data(|data| {
                    let len = data.remaining();
                    let charge = if live {
                        if len > 0 {
                            conn.charge(len);
                        }
                        len
                    } else {
                        let c = len.min(*pending);
                        *pending -= c;
                        c
                    };
                    AnswerBuf::served(data, charge, conn)
                })
            })
        }))
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Served { body } => body.is_end_stream(),
            Inner::Refused { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Served { body } => body.size_hint(),
            Inner::Refused { body } => body.size_hint(),
        }
    }
}

/// A chunk of an [`AnswerBody`]: the bytes it counts in the answer budget are given back
/// when it is dropped (written, or gone with its connection); each write of it tells the
/// connection that its peer reads.
pub(super) enum AnswerBuf<D> {
    /// A chunk of the served body.
    Served {
        /// The bytes.
        data: D,
        /// Its connection and the bytes it counts, when it counts any.
        charge: Option<Counted>,
    },
    /// A chunk of the server's own answer.
    Own(Bytes),
}

/// The connection a chunk's bytes are counted on, and how many.
pub(super) struct Counted {
    connection: Arc<ConnectionState>,
    bytes: usize,
}

impl std::fmt::Debug for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counted")
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.connection.release(self.bytes);
    }
}

impl<D> AnswerBuf<D> {
    fn served(data: D, bytes: usize, connection: &Arc<ConnectionState>) -> Self {
        let charge = (bytes > 0).then(|| Counted {
            connection: connection.clone(),
            bytes,
        });
        AnswerBuf::Served { data, charge }
    }
}

impl<D> std::fmt::Debug for AnswerBuf<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerBuf::Served { charge, .. } => f
                .debug_struct("Served")
                .field("charge", charge)
                .finish_non_exhaustive(),
            AnswerBuf::Own(b) => f.debug_tuple("Own").field(&b.len()).finish(),
        }
    }
}

impl<D: Buf> Buf for AnswerBuf<D> {
    fn remaining(&self) -> usize {
        match self {
            AnswerBuf::Served { data, .. } => data.remaining(),
            AnswerBuf::Own(b) => b.remaining(),
        }
    }

    fn chunk(&self) -> &[u8] {
        match self {
            AnswerBuf::Served { data, .. } => data.chunk(),
            AnswerBuf::Own(b) => b.chunk(),
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [std::io::IoSlice<'a>]) -> usize {
        match self {
            AnswerBuf::Served { data, .. } => data.chunks_vectored(dst),
            AnswerBuf::Own(b) => b.chunks_vectored(dst),
        }
    }

    fn advance(&mut self, cnt: usize) {
        match self {
            AnswerBuf::Served { data, charge } => {
                data.advance(cnt);
                if let Some(c) = charge
                    && cnt > 0
                {
                    c.connection.progressed();
                }
            }
            AnswerBuf::Own(b) => b.advance(cnt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::ConnectionLimits;
    use crate::transport::http::connection_table::ConnectionTable;
    use http_body_util::BodyExt;
    use std::convert::Infallible;

    fn table(total: usize) -> Arc<ConnectionTable> {
        ConnectionTable::new(
            ConnectionLimits::default()
                .max_connections(Some(10))
                .max_unsent_bytes(Some(total)),
            None,
        )
    }

    fn connection(total: usize) -> Arc<ConnectionState> {
        table(total).open().unwrap()
    }

    #[tokio::test]
    async fn a_finished_answer_counts_until_its_chunks_are_dropped() {
        let c = connection(1 << 20);
        let body = ResponseBody::full(Bytes::from(vec![b'x'; TRACK_FROM]));
        let resp = AnswerFuture::new(
            async { Ok::<_, Infallible>(Response::new(body)) },
            c.begin(),
        )
        .await
        .unwrap();
        assert_eq!(c.table().unsent(), TRACK_FROM, "counted when ready");
        let mut body = resp.into_body();
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        drop(body);
        assert_eq!(
            c.table().unsent(),
            TRACK_FROM,
            "the chunk still holds its bytes"
        );
        drop(chunk);
        assert_eq!(c.table().unsent(), 0);
    }

    #[tokio::test]
    async fn small_answers_are_not_counted_and_big_ones_past_the_budget_are_refused() {
        let t = table(TRACK_FROM);
        let c = t.open().unwrap();
        let small = ResponseBody::full(Bytes::from_static(b"{}"));
        let r = AnswerFuture::new(
            async { Ok::<_, Infallible>(Response::new(small)) },
            c.begin(),
        )
        .await
        .unwrap();
        assert_eq!(c.table().unsent(), 0);
        drop(r);
        let big = || ResponseBody::full(Bytes::from(vec![b'x'; TRACK_FROM]));
        let first = AnswerFuture::new(
            async { Ok::<_, Infallible>(Response::new(big())) },
            c.begin(),
        )
        .await
        .unwrap();
        assert_eq!(first.status(), 200);
        // Another connection's answer finds the total spent (nobody stalled yet).
        let other = t.open().unwrap();
        let second = AnswerFuture::new(
            async { Ok::<_, Infallible>(Response::new(big())) },
            other.begin(),
        )
        .await
        .unwrap();
        assert_eq!(second.status(), 503);
        assert!(second.headers().contains_key(http::header::RETRY_AFTER));
        drop(first);
        assert_eq!(c.table().unsent(), 0);
    }

    #[tokio::test]
    async fn a_connection_holding_its_budget_starts_nothing_new_until_its_peer_reads() {
        let c = connection(TRACK_FROM);
        let big = ResponseBody::full(Bytes::from(vec![b'x'; TRACK_FROM]));
        let first = AnswerFuture::new(async { Ok::<_, Infallible>(Response::new(big)) }, c.begin())
            .await
            .unwrap();
        let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = started.clone();
        let next = AnswerFuture::new(
            async move {
                s.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, Infallible>(Response::new(ResponseBody::empty()))
            },
            c.begin(),
        );
        let next = tokio::spawn(next);
        tokio::task::yield_now().await;
        assert!(
            !started.load(std::sync::atomic::Ordering::SeqCst),
            "it waits for room"
        );
        drop(first);
        let r = tokio::time::timeout(std::time::Duration::from_secs(10), next)
            .await
            .expect("it starts once the peer read")
            .unwrap()
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(started.load(std::sync::atomic::Ordering::SeqCst));
    }
}
