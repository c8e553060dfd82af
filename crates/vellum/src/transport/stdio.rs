//! stdio: newline-delimited JSON-RPC over a byte stream, both sides.
//!
//! - Server: [`serve_stdio`] serves a [`Server`] on stdin/stdout (logs belong on stderr),
//!   [`serve_lines`] on any reader/writer pair. One [`Connection`] per stream: a legacy
//!   session for clients that `initialize`, modern requests served from their own `_meta`.
//! - Client: [`LineTransport`] talks to a server over any reader/writer pair;
//!   [`ChildProcessTransport`] spawns the server command and shuts it down cleanly (close
//!   stdin, wait, SIGTERM, wait, SIGKILL), as the spec asks.
//!
//! Framing rules: one message per line (`\n`, a trailing `\r` is tolerated), empty lines are
//! skipped, and a line longer than the limit is answered with a parse error and skipped
//! instead of growing a buffer without bound.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};

use crate::protocol::ErrorObject;
use crate::protocol::encode_error;
use crate::server::{Connection, Server};

/// The longest line either side accepts by default: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How long [`serve_lines`] lets running requests finish after its input ends: 5 s.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// One line read from a stream.
enum Line {
    /// A complete message (without its line end).
    Message(Bytes),
    /// A line longer than the limit (skipped).
    TooLong,
}

/// Reads the next non-empty line, at most `max` bytes; `None` at the end of the stream.
async fn next_line<R: AsyncBufRead + Unpin>(
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

async fn write_line<W: AsyncWrite + Unpin>(writer: &mut W, message: &[u8]) -> io::Result<()> {
    writer.write_all(message).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

/// Serves `server` on this process's stdin and stdout until stdin closes. Nothing else may
/// write to stdout: send logs to stderr.
pub async fn serve_stdio(server: Server) -> io::Result<()> {
    serve_lines(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves `server` over newline-delimited JSON-RPC on a reader/writer pair until the reader
/// ends; running requests then get [`DEFAULT_DRAIN_TIMEOUT`] to finish.
pub async fn serve_lines<R, W>(server: Server, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (connection, mut out) = Connection::new(server);
    let mut writer = writer;
    let write_task = tokio::spawn(async move {
        while let Some(message) = out.recv().await {
            write_line(&mut writer, &message).await?;
        }
        Ok::<_, io::Error>(())
    });
    let mut reader = BufReader::new(reader);
    let read_result = loop {
        match next_line(&mut reader, DEFAULT_MAX_LINE_BYTES).await {
            Ok(Some(Line::Message(bytes))) => connection.handle_bytes(bytes).await,
            Ok(Some(Line::TooLong)) => {
                let e = ErrorObject::parse_error(format!(
                    "Parse error: a message longer than {DEFAULT_MAX_LINE_BYTES} bytes"
                ));
                connection.handle_bytes(encode_error(None, &e)).await;
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    // Input is over: let running requests finish, then end the session.
    let _ = tokio::time::timeout(DEFAULT_DRAIN_TIMEOUT, connection.idle()).await;
    connection.close();
    drop(connection);
    match tokio::time::timeout(Duration::from_secs(1), write_task).await {
        Ok(Ok(Err(e))) if e.kind() != io::ErrorKind::BrokenPipe => return Err(e),
        _ => {}
    }
    read_result
}

#[cfg(feature = "client")]
pub use client_side::{ChildProcessTransport, LineTransport, StdioCommandError};

#[cfg(feature = "client")]
mod client_side {
    use std::io;
    use std::pin::Pin;
    use std::process::Stdio;
    use std::time::Duration;

    use futures_util::future::BoxFuture;
    use tokio::io::{AsyncRead, AsyncWrite, BufReader};
    use tokio::process::{Child, Command};
    use tokio::sync::{Mutex, mpsc};
    use tokio::task::JoinHandle;

    use super::{DEFAULT_MAX_LINE_BYTES, Line, next_line, write_line};
    use crate::client::{Incoming, OutgoingMessage, Transport, TransportError, transport_decode};

    type Writer = Pin<Box<dyn AsyncWrite + Send>>;

    /// A client transport over any reader/writer pair carrying newline-delimited JSON-RPC
    /// (a socket, a pipe, `tokio::io::duplex` in tests).
    pub struct LineTransport {
        writer: Mutex<Option<Writer>>,
        incoming: Mutex<mpsc::Receiver<Incoming>>,
        reader: JoinHandle<()>,
    }

    impl std::fmt::Debug for LineTransport {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("LineTransport").finish_non_exhaustive()
        }
    }

    impl LineTransport {
        /// A transport reading the server's messages from `reader` and writing to `writer`.
        pub fn new<R, W>(reader: R, writer: W) -> LineTransport
        where
            R: AsyncRead + Unpin + Send + 'static,
            W: AsyncWrite + Send + 'static,
        {
            let (tx, rx) = mpsc::channel(256);
            let reader = tokio::spawn(async move {
                let mut reader = BufReader::new(reader);
                loop {
                    match next_line(&mut reader, DEFAULT_MAX_LINE_BYTES).await {
                        Ok(Some(Line::Message(bytes))) => {
                            for i in transport_decode(&bytes) {
                                if tx.send(i).await.is_err() {
                                    return;
                                }
                            }
                        }
                        Ok(Some(Line::TooLong)) => {
                            tracing::warn!(
                                "the server sent a line longer than {DEFAULT_MAX_LINE_BYTES} bytes; skipped"
                            );
                        }
                        Ok(None) => return,
                        Err(e) => {
                            tracing::debug!("reading from the server failed: {e}");
                            return;
                        }
                    }
                }
            });
            LineTransport {
                writer: Mutex::new(Some(Box::pin(writer))),
                incoming: Mutex::new(rx),
                reader,
            }
        }

        /// Closes the writing side (the server sees the end of its input).
        pub async fn close_writer(&self) {
            if let Some(mut w) = self.writer.lock().await.take() {
                let _ = tokio::io::AsyncWriteExt::shutdown(&mut w).await;
            }
        }
    }

    impl Drop for LineTransport {
        fn drop(&mut self) {
            self.reader.abort();
        }
    }

    impl Transport for LineTransport {
        fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
            Box::pin(async move {
                let mut guard = self.writer.lock().await;
                let Some(w) = guard.as_mut() else {
                    return Err(TransportError::Closed);
                };
                write_line(w, &message.bytes)
                    .await
                    .map_err(|e| TransportError::Connection(e.to_string()))
            })
        }

        fn recv(&self) -> BoxFuture<'_, Option<Incoming>> {
            Box::pin(async move { self.incoming.lock().await.recv().await })
        }

        fn close(&self) -> BoxFuture<'_, ()> {
            Box::pin(async move {
                self.close_writer().await;
                self.reader.abort();
            })
        }
    }

    /// Why a stdio server command could not be started.
    #[derive(Debug, thiserror::Error)]
    #[non_exhaustive]
    pub enum StdioCommandError {
        /// The command line could not be split (an unclosed quote, say).
        #[error("cannot parse the command line {line:?}: {reason}")]
        Parse {
            /// The command line.
            line: String,
            /// What is wrong with it.
            reason: String,
        },
        /// The command line is empty.
        #[error("the command line is empty")]
        Empty,
        /// The process could not be started.
        #[error("cannot start {program:?}: {source}")]
        Spawn {
            /// The program.
            program: String,
            /// The OS error.
            source: io::Error,
        },
    }

    /// A client transport that runs a stdio server as a child process.
    ///
    /// The child's stderr is passed through (servers log there). [`close`](Transport::close)
    /// shuts it down the way the spec asks: close its stdin, wait, SIGTERM, wait, SIGKILL.
    pub struct ChildProcessTransport {
        lines: LineTransport,
        child: Mutex<Option<Child>>,
        grace: Duration,
    }

    impl std::fmt::Debug for ChildProcessTransport {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("ChildProcessTransport")
                .field("grace", &self.grace)
                .finish_non_exhaustive()
        }
    }

    impl ChildProcessTransport {
        /// How long each shutdown step waits for the child to exit: 2 s.
        pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

        /// Spawns `command` with piped stdin and stdout. The command's own stderr setting is
        /// kept (inherited by default).
        pub fn spawn(mut command: Command) -> Result<ChildProcessTransport, StdioCommandError> {
            let program = command
                .as_std()
                .get_program()
                .to_string_lossy()
                .into_owned();
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true);
            let mut child = command
                .spawn()
                .map_err(|source| StdioCommandError::Spawn { program, source })?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(StdioCommandError::Spawn {
                    program: String::new(),
                    source: io::Error::other("the child has no stdin/stdout pipes"),
                });
            };
            Ok(ChildProcessTransport {
                lines: LineTransport::new(stdout, stdin),
                child: Mutex::new(Some(child)),
                grace: Self::DEFAULT_GRACE,
            })
        }

        /// Spawns a command line split shell-style (`"npx -y server --flag 'a b'"`), without
        /// running a shell: no variables, globs or pipes.
        pub fn from_command_line(line: &str) -> Result<ChildProcessTransport, StdioCommandError> {
            let words = shell_words::split(line).map_err(|e| StdioCommandError::Parse {
                line: line.to_owned(),
                reason: e.to_string(),
            })?;
            let (program, args) = words.split_first().ok_or(StdioCommandError::Empty)?;
            let mut command = Command::new(program);
            command.args(args);
            Self::spawn(command)
        }

        /// Sets how long each shutdown step waits. Default [`Self::DEFAULT_GRACE`].
        #[must_use]
        pub fn with_grace(mut self, grace: Duration) -> Self {
            self.grace = grace;
            self
        }

        /// The child's process id, while it runs.
        pub async fn pid(&self) -> Option<u32> {
            self.child.lock().await.as_ref().and_then(Child::id)
        }

        /// Shuts the child down: close stdin, wait; SIGTERM, wait; SIGKILL. Returns its exit
        /// status when it could be read.
        pub async fn shutdown(&self) -> Option<std::process::ExitStatus> {
            self.lines.close_writer().await;
            let mut guard = self.child.lock().await;
            let child = guard.as_mut()?;
            if let Ok(Ok(status)) = tokio::time::timeout(self.grace, child.wait()).await {
                guard.take();
                return Some(status);
            }
            #[cfg(unix)]
            if let Some(pid) = child
                .id()
                .and_then(|p| i32::try_from(p).ok())
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                if let Ok(Ok(status)) = tokio::time::timeout(self.grace, child.wait()).await {
                    guard.take();
                    return Some(status);
                }
            }
            let _ = child.start_kill();
            let status = tokio::time::timeout(self.grace, child.wait())
                .await
                .ok()
                .and_then(Result::ok);
            guard.take();
            status
        }
    }

    impl Transport for ChildProcessTransport {
        fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
            self.lines.send(message)
        }

        fn recv(&self) -> BoxFuture<'_, Option<Incoming>> {
            self.lines.recv()
        }

        fn close(&self) -> BoxFuture<'_, ()> {
            Box::pin(async move {
                self.shutdown().await;
                self.lines.close().await;
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
