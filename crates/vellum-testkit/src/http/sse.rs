//! Server-sent events as a test sees them: [`parse_sse`] for a whole body, [`SseReader`] for
//! a body read block by block as it arrives (comments, priming events and `retry` included).
//! Both split blocks with the same parser.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use super::Answer;
use super::answer::answer_of;
use crate::{DEADLINE, within};

/// One block of an SSE stream as it arrived: an event, a `retry`-only block, or comments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseBlock {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n` (`None` when the block has no data line).
    pub data: Option<String>,
    /// The `retry:` field, if any.
    pub retry: Option<u64>,
    /// How many comment lines (`:` …) the block had.
    pub comments: usize,
}

impl SseBlock {
    /// True for a block that carries a message (non-empty data).
    pub fn is_message(&self) -> bool {
        self.data.as_deref().is_some_and(|d| !d.is_empty())
    }

    /// True for a block of comments only (a keep-alive).
    pub fn is_comment_only(&self) -> bool {
        self.comments > 0 && self.data.is_none() && self.id.is_none() && self.retry.is_none()
    }

    /// The message, parsed (panics when the block has none).
    pub fn json(&self) -> Value {
        let d = self.data.as_deref().unwrap_or_default();
        serde_json::from_str(d).unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {d:?}"))
    }
}

/// Parses one block (the text between blank lines, LF line ends) by the WHATWG rules: `:`
/// lines are comments, one space after the colon is dropped, `data:` lines join with `\n`.
fn parse_block(text: &str) -> SseBlock {
    let mut b = SseBlock::default();
    for line in text.split('\n') {
        if line.starts_with(':') {
            b.comments += 1;
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut b.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => b.data = Some(value.to_owned()),
            },
            "id" => b.id = Some(value.to_owned()),
            "event" => b.event = Some(value.to_owned()),
            "retry" => b.retry = value.parse().ok(),
            _ => {}
        }
    }
    b
}

/// One event of an SSE stream (a block that carries data).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `retry:` field, if any.
    pub retry: Option<u64>,
}

/// Parses a whole SSE stream: its events, in order. Blocks without data (comments only, or a
/// priming event) are left out, and so is a block the stream ended before terminating, as
/// the spec says.
pub fn parse_sse(text: &str) -> Vec<SseEvent> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut blocks: Vec<&str> = text.split("\n\n").collect();
    // What follows the last blank line was never terminated.
    blocks.pop();
    blocks
        .into_iter()
        .map(parse_block)
        .filter(SseBlock::is_message)
        .map(|b| SseEvent {
            id: b.id,
            event: b.event,
            data: b.data.unwrap_or_default(),
            retry: b.retry,
        })
        .collect()
}

/// What a request expected to stream gave: a live SSE stream, or a complete other answer.
pub enum Streamed {
    /// An SSE body, being read.
    Stream(SseReader),
    /// Any other answer (a JSON body, an error, 202…), read whole.
    Whole(Answer),
}

impl Streamed {
    /// The stream, or a failure naming `what` and showing the answer.
    pub fn expect_stream(self, what: &str) -> SseReader {
        match self {
            Streamed::Stream(s) => s,
            Streamed::Whole(a) => panic!(
                "{what}: expected an SSE stream, got {} {:?}: {}",
                a.status,
                a.content_type(),
                a.text()
            ),
        }
    }

    /// The whole answer, or a failure naming `what` when it is a stream.
    pub fn expect_whole(self, what: &str) -> Answer {
        match self {
            Streamed::Whole(a) => a,
            Streamed::Stream(s) => panic!(
                "{what}: expected a complete non-SSE answer, got an SSE stream ({})",
                s.status
            ),
        }
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        match self {
            Streamed::Stream(s) => s.status,
            Streamed::Whole(a) => a.status,
        }
    }
}

/// An SSE body read block by block as it arrives. Dropping it drops the connection.
pub struct SseReader {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    /// Bytes received and not yet parsed (`\r` dropped: the server never sends one inside
    /// a field, and this turns CRLF line ends into LF).
    buf: Vec<u8>,
    ended: bool,
    broken: Option<String>,
}

impl SseReader {
    /// Sends `request`; an SSE answer is returned unread, any other answer is read whole.
    pub async fn open(request: reqwest::RequestBuilder) -> Streamed {
        let resp = within("the response headers", request.send())
            .await
            .expect("the HTTP request failed");
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_sse {
            return Streamed::Whole(within("an HTTP answer", answer_of(resp)).await);
        }
        Streamed::Stream(SseReader::new(resp))
    }

    /// Reads `resp`, an SSE answer, from its first byte.
    pub fn new(resp: reqwest::Response) -> Self {
        SseReader {
            status: resp.status(),
            headers: resp.headers().clone(),
            body: Box::pin(resp.bytes_stream()),
            buf: Vec::new(),
            ended: false,
            broken: None,
        }
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Why the body broke off, when it ended with a transport error rather than its end.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn take_block(&mut self) -> Option<SseBlock> {
        let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
        let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
        let text = String::from_utf8(raw).expect("SSE is UTF-8");
        Some(parse_block(text.trim_end_matches('\n')))
    }

    /// The next block, or `None` once the stream ended; fails after [`DEADLINE`].
    pub async fn next_block(&mut self) -> Option<SseBlock> {
        match self.next_block_within(DEADLINE).await {
            Ok(b) => b,
            Err(()) => panic!("no SSE block within {DEADLINE:?}"),
        }
    }

    /// The next block, `Ok(None)` once the stream ended, `Err` if nothing came in `wait`.
    pub async fn next_block_within(&mut self, wait: Duration) -> Result<Option<SseBlock>, ()> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(b) = self.take_block() {
                return Ok(Some(b));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Err(()),
                Ok(Some(Ok(chunk))) => self.buf.extend(chunk.iter().filter(|b| **b != b'\r')),
                // A broken-off body ends the stream too (the server went away).
                Ok(Some(Err(e))) => {
                    self.broken = Some(e.to_string());
                    self.ended = true;
                }
                Ok(None) => self.ended = true,
            }
        }
    }

    /// The next block carrying a message (skipping comments, priming and `retry`-only
    /// blocks), or `None` once the stream ended.
    pub async fn next_message(&mut self) -> Option<SseBlock> {
        loop {
            let b = self.next_block().await?;
            if b.is_message() {
                return Some(b);
            }
        }
    }

    /// [`SseReader::next_message`] waiting up to `wait` (instead of [`DEADLINE`]) for each block.
    pub async fn next_message_within(&mut self, wait: Duration) -> Option<SseBlock> {
        loop {
            match self.next_block_within(wait).await {
                Ok(Some(b)) if b.is_message() => return Some(b),
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(()) => panic!("no SSE block within {wait:?}"),
            }
        }
    }

    /// The next message, parsed, or `None` once the stream ended.
    pub async fn next_json(&mut self) -> Option<Value> {
        self.next_message().await.map(|b| b.json())
    }

    /// Every remaining block, until the stream ends.
    pub async fn rest(&mut self) -> Vec<SseBlock> {
        let mut out = Vec::new();
        while let Some(b) = self.next_block().await {
            out.push(b);
        }
        out
    }

    /// The messages of every remaining block, until the stream ends.
    pub async fn rest_messages(&mut self) -> Vec<Value> {
        self.rest()
            .await
            .iter()
            .filter(|b| b.is_message())
            .map(SseBlock::json)
            .collect()
    }
}

/// The event ids of `blocks` that carry a message.
pub fn message_ids(blocks: &[SseBlock]) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b.is_message())
        .map(|b| {
            b.id.clone()
                .unwrap_or_else(|| panic!("a message without an id: {b:?}"))
        })
        .collect()
}
