//! [`ResponseBody`]: the one body type of every response the handler writes (empty, a few
//! ready chunks, or a live SSE stream), so the hot path needs no boxing of bodies.
//!
//! Not here: what goes into the body (`response.rs`, `sse_writer.rs`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::sse_writer::SseStream;

/// The body of a response from [`StreamableHttpHandler`](super::StreamableHttpHandler).
pub struct ResponseBody {
    kind: Kind,
}

enum Kind {
    /// Ready chunks (a JSON body, or a whole SSE exchange that finished at once); the
    /// length is known, so the response gets a `Content-Length`.
    Chunks { chunks: VecDeque<Bytes>, len: u64 },
    /// A live SSE stream.
    Stream(Pin<Box<SseStream>>),
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Chunks { len, .. } => write!(f, "ResponseBody({len} bytes)"),
            Kind::Stream(_) => f.write_str("ResponseBody(stream)"),
        }
    }
}

impl ResponseBody {
    /// An empty body.
    pub fn empty() -> Self {
        Self::chunks(VecDeque::new())
    }

    /// A body of one chunk.
    pub fn full(bytes: Bytes) -> Self {
        Self::chunks(VecDeque::from([bytes]))
    }

    /// A body of ready chunks, written together.
    pub(crate) fn chunks(chunks: VecDeque<Bytes>) -> Self {
        let len = chunks.iter().map(|c| c.len() as u64).sum();
        ResponseBody {
            kind: Kind::Chunks { chunks, len },
        }
    }

    /// True for a live stream (as opposed to ready chunks).
    pub(crate) fn is_stream(&self) -> bool {
        matches!(self.kind, Kind::Stream(_))
    }

    pub(crate) fn stream(stream: SseStream) -> Self {
        ResponseBody {
            kind: Kind::Stream(Box::pin(stream)),
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            Kind::Chunks { chunks, len } => Poll::Ready(chunks.pop_front().map(|c| {
                *len -= c.len() as u64;
                Ok(Frame::data(c))
            })),
            Kind::Stream(s) => s
                .as_mut()
                .poll_chunk(cx)
                .map(|c| c.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.kind, Kind::Chunks { chunks, .. } if chunks.is_empty())
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Chunks { len, .. } => SizeHint::with_exact(*len),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}
