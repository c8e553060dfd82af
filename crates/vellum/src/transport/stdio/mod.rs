//! stdio: newline-delimited JSON-RPC over a byte stream, both sides.
//!
//! - Server side (`server_side.rs`): [`serve_stdio`] serves a
//!   [`Server`](crate::server::Server) on stdin/stdout (logs belong on stderr), or, with
//!   [`ServeLines::over`], on any reader/writer pair. One [`Connection`](crate::transport::Connection)
//!   per stream: a legacy session for clients that `initialize`, modern requests served from
//!   their own `_meta`. `process_stdio.rs`: this process's stdin and stdout, read and
//!   written by the runtime's reactor when they are pipes.
//! - Client side (`client_side.rs`): [`LineTransport`] talks to a server over any
//!   reader/writer pair; [`ChildProcessTransport`] spawns the server command, reports how it
//!   exited, and shuts it down cleanly (close stdin, wait, SIGTERM, wait, SIGKILL), as the
//!   spec asks.
//! - This file: the framing both sides share.
//!
//! Framing rules: one message per line (`\n`, a trailing `\r` is tolerated), empty lines are
//! skipped, and a line longer than the limit is answered with a parse error and skipped
//! instead of growing a buffer without bound.

#[cfg(feature = "client")]
mod client_side;
mod process_stdio;
mod server_side;

use std::io;

use bytes::Bytes;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

#[cfg(feature = "client")]
pub(crate) use client_side::split_command_line;
#[cfg(feature = "client")]
pub use client_side::{ChildProcessTransport, LineOptions, LineTransport};
pub use process_stdio::{ProcessStdin, ProcessStdout};
pub use server_side::{DEFAULT_DRAIN_TIMEOUT, ServeLines, serve_stdio};

/// The longest line either side accepts by default: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line read from a stream.
pub(super) enum Line {
    /// A complete message (without its line end).
    Message(Bytes),
    /// A line longer than the limit (skipped).
    TooLong,
}

/// Reads the next non-empty line, at most `max` bytes; `None` at the end of the stream.
pub(super) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<Line>> {
    loop {
        let mut buf = Vec::new();
        let n = (&mut *reader)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await?;
        if n == 0 {
            return Ok(None);
        }
        let ended = buf.last() == Some(&b'\n');
        if !ended && buf.len() > max {
            // Skip the rest of the oversized line.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let n = (&mut *reader)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut sink)
                    .await?;
                if n == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
            return Ok(Some(Line::TooLong));
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            if ended {
                continue;
            }
            return Ok(None);
        }
        return Ok(Some(Line::Message(Bytes::from(buf))));
    }
}

/// Writes one message and its line end, in one write for a message of ordinary size (a
/// pipe is unbuffered: two writes would be two system calls, and two wake-ups of the peer).
pub(super) async fn write_line<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &[u8],
) -> io::Result<()> {
    const ONE_WRITE: usize = 64 * 1024;
    if message.len() < ONE_WRITE {
        let mut line = Vec::with_capacity(message.len() + 1);
        line.extend_from_slice(message);
        line.push(b'\n');
        writer.write_all(&line).await?;
    } else {
        writer.write_all(message).await?;
        writer.write_all(b"\n").await?;
    }
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    #[tokio::test]
    async fn lines_are_split_trimmed_and_bounded() {
        let input: &[u8] = b"{\"a\":1}\r\n\n  \n{\"b\":2}\n0123456789ABCDEF\n{\"c\":3}";
        let mut r = BufReader::new(input);
        let mut got = Vec::new();
        while let Some(l) = next_line(&mut r, 10).await.unwrap() {
            got.push(match l {
                Line::Message(b) => String::from_utf8(b.to_vec()).unwrap(),
                Line::TooLong => "<too long>".into(),
            });
        }
        assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "<too long>", "{\"c\":3}"]);
    }
}
