//! The client side of stdio: [`LineTransport`] over any reader/writer pair, and
//! [`ChildProcessTransport`], which runs the server as a child process, tells the client how
//! it exited, and shuts it down the way the spec asks.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::{DEFAULT_MAX_LINE_BYTES, Line, next_line, write_line};
use crate::client::transport::{Incoming, OutgoingMessage, Transport, decode_incoming};
use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::error::TransportError;
use crate::protocol::{Payload, decode};

type Writer = Pin<Box<dyn AsyncWrite + Send>>;
type Reader = BufReader<Pin<Box<dyn AsyncRead + Send>>>;

/// A client transport over any reader/writer pair carrying newline-delimited JSON-RPC
/// (a socket, a pipe, `tokio::io::duplex` in tests).
///
/// The server's lines are read by [`recv`](Transport::recv) itself (the client's one reading
/// task): no task of its own, so an answer wakes the client once.
pub struct LineTransport {
    writer: Mutex<Option<Writer>>,
    reader: Mutex<Lines>,
    closed: CancellationToken,
}

/// The reading side: the stream, and what a line decoded into that is not handed out yet
/// (a batch gives several).
struct Lines {
    reader: Reader,
    ready: VecDeque<Incoming>,
    options: LineOptions,
    /// The stream ended (or, strict, a bad line ended it): nothing more comes.
    done: bool,
}

impl std::fmt::Debug for LineTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineTransport").finish_non_exhaustive()
    }
}

/// How a client transport reads the server's lines.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LineOptions {
    /// The longest line accepted. Default [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// What a line that is not JSON-RPC, or too long, does: skipped with a warning (`false`,
    /// the default: the client stays up), or ends the transport with
    /// [`TransportError::Protocol`] naming it (`true`: for a gateway, where a server that
    /// writes anything else on its output is broken and its calls must fail rather than
    /// wait).
    pub strict: bool,
}

impl Default for LineOptions {
    fn default() -> Self {
        LineOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            strict: false,
        }
    }
}

impl LineTransport {
    /// A transport reading the server's messages from `reader` and writing to `writer`.
    pub fn new<R, W>(reader: R, writer: W) -> LineTransport
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        Self::with_options(reader, writer, LineOptions::default())
    }

    /// [`new`](Self::new) with these reading options.
    pub fn with_options<R, W>(reader: R, writer: W, options: LineOptions) -> LineTransport
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let reader: Pin<Box<dyn AsyncRead + Send>> = Box::pin(reader);
        LineTransport {
            writer: Mutex::new(Some(Box::pin(writer))),
            reader: Mutex::new(Lines {
                reader: BufReader::new(reader),
                ready: VecDeque::new(),
                options,
                done: false,
            }),
            closed: CancellationToken::new(),
        }
    }

    /// Closes the writing side (the server sees the end of its input).
    pub async fn close_writer(&self) {
        if let Some(mut w) = self.writer.lock().await.take() {
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut w).await;
        }
    }
}

/// Ends a stream of lines, with the reason the client is told (none: it just ended).
fn end_with(ready: &mut VecDeque<Incoming>, error: Option<TransportError>) -> bool {
    ready.extend(error.map(Incoming::Ended));
    true
}

impl Lines {
    /// The next event from the server; `None` once the stream ended.
    async fn next(&mut self) -> Option<Incoming> {
        loop {
            if let Some(i) = self.ready.pop_front() {
                return Some(i);
            }
            if self.done {
                return None;
            }
            self.read_line().await;
        }
    }

    /// Reads one line into `ready` (or ends the stream).
    async fn read_line(&mut self) {
        let max = self.options.max_line_bytes;
        let strict = self.options.strict;
        self.done = match next_line(&mut self.reader, max).await {
            Ok(Some(Line::Message(bytes))) if strict => match decode(&bytes) {
                Ok(Payload::Single(m)) => {
                    self.ready.push_back(Incoming::Message(m));
                    false
                }
                Ok(Payload::Batch(v)) => {
                    self.ready.extend(v.into_iter().map(Incoming::Message));
                    false
                }
                Err(e) => {
                    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
                    let why =
                        format!("the server wrote a line that is not JSON-RPC ({e}): {text:?}");
                    end_with(
                        &mut self.ready,
                        Some(TransportError::Protocol { detail: why }),
                    )
                }
            },
            Ok(Some(Line::Message(bytes))) => {
                self.ready.extend(decode_incoming(&bytes));
                false
            }
            Ok(Some(Line::TooLong)) if strict => {
                let why = format!("the server wrote a line longer than {max} bytes");
                end_with(
                    &mut self.ready,
                    Some(TransportError::Protocol { detail: why }),
                )
            }
            Ok(Some(Line::TooLong)) => {
                tracing::warn!("the server sent a line longer than {max} bytes; skipped");
                false
            }
            Ok(None) => end_with(&mut self.ready, None),
            // The calls waiting learn why.
            Err(e) => end_with(&mut self.ready, Some(e.into())),
        };
    }
}

impl Transport for LineTransport {
    fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let mut guard = self.writer.lock().await;
            let Some(w) = guard.as_mut() else {
                return Err(TransportError::Closed);
            };
            Ok(write_line(w, &message.bytes).await?)
        })
    }

    fn recv(&self) -> BoxFuture<'_, Option<Incoming>> {
        Box::pin(async move {
            if self.closed.is_cancelled() {
                return None;
            }
            let mut lines = self.reader.lock().await;
            tokio::select! {
                i = lines.next() => i,
                () = self.closed.cancelled() => None,
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.close_writer().await;
            self.closed.cancel();
        })
    }
}

/// A command line split shell-style into its program and arguments (no shell runs it).
pub(crate) fn split_command_line(line: &str) -> Result<(String, Vec<String>), ConfigError> {
    let mut words = shell_words::split(line).map_err(|e| {
        ConfigError::from(ConfigKind::CommandLine {
            line: line.to_owned(),
            reason: e.to_string(),
        })
    })?;
    if words.is_empty() {
        return Err(ConfigKind::EmptyCommand.into());
    }
    let program = words.remove(0);
    Ok((program, words))
}

/// A client transport that runs a stdio server as a child process.
///
/// The child's stderr is passed through (servers log there). When the child exits (or
/// closes its stdout) on its own, the calls waiting, and every later one, fail with
/// [`TransportError::ProcessExited`] and its exit status. [`close`](Transport::close) shuts
/// it down the way the spec asks: close its stdin, wait, SIGTERM, wait, SIGKILL.
pub struct ChildProcessTransport {
    lines: LineTransport,
    child: Mutex<Option<Child>>,
    grace: Duration,
    /// Set when the client closes the transport: the child's exit is then no news.
    closing: AtomicBool,
    /// Set once the child's exit was reported.
    reported: AtomicBool,
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
    pub fn spawn(command: Command) -> Result<ChildProcessTransport, ConfigError> {
        Self::spawn_with(command, LineOptions::default())
    }

    /// [`spawn`](Self::spawn), reading the child's output with these options. With
    /// `command.stderr(Stdio::piped())`, [`take_stderr`](Self::take_stderr) hands out the
    /// child's stderr (to log it, say).
    pub fn spawn_with(
        mut command: Command,
        options: LineOptions,
    ) -> Result<ChildProcessTransport, ConfigError> {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| {
            ConfigError::with_source(
                ConfigKind::Spawn {
                    program: program.clone(),
                },
                source,
            )
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ConfigError::with_source(
                ConfigKind::Spawn { program },
                io::Error::other("the child has no stdin/stdout pipes"),
            ));
        };
        Ok(ChildProcessTransport {
            lines: LineTransport::with_options(stdout, stdin, options),
            child: Mutex::new(Some(child)),
            grace: Self::DEFAULT_GRACE,
            closing: AtomicBool::new(false),
            reported: AtomicBool::new(false),
        })
    }

    /// Spawns a command line split shell-style (`"npx -y server --flag 'a b'"`), without
    /// running a shell: no variables, globs or pipes.
    pub fn from_command_line(line: &str) -> Result<ChildProcessTransport, ConfigError> {
        let (program, args) = split_command_line(line)?;
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

    /// The child's stderr, once, when the command piped it.
    pub async fn take_stderr(&self) -> Option<tokio::process::ChildStderr> {
        self.child.lock().await.as_mut()?.stderr.take()
    }

    /// The child's process id, while it runs.
    pub async fn pid(&self) -> Option<u32> {
        self.child.lock().await.as_ref().and_then(Child::id)
    }

    /// Shuts the child down: close stdin, wait; SIGTERM, wait; SIGKILL. Returns its exit
    /// status when it could be read.
    pub async fn shutdown(&self) -> Option<std::process::ExitStatus> {
        self.closing.store(true, Ordering::Release);
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

    /// How the child exited, waiting at most the grace period for it (its stdout closed).
    async fn exit_status(&self) -> Option<std::process::ExitStatus> {
        let mut guard = self.child.lock().await;
        let child = guard.as_mut()?;
        tokio::time::timeout(self.grace, child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Whether the child has already exited, and how.
    async fn state(&self) -> ChildState {
        let mut guard = self.child.lock().await;
        match guard.as_mut() {
            Some(child) => match child.try_wait() {
                Ok(Some(status)) => ChildState::Exited {
                    status: Some(status),
                },
                Ok(None) | Err(_) => ChildState::Running,
            },
            // Already shut down: its status went to whoever waited for it.
            None => ChildState::Exited { status: None },
        }
    }
}

/// What is known of the child process.
enum ChildState {
    /// Still running (or its state cannot be read).
    Running,
    /// It exited, with this status when it is known.
    Exited {
        status: Option<std::process::ExitStatus>,
    },
}

impl Transport for ChildProcessTransport {
    fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            match self.lines.send(message).await {
                // A write to a child that is gone: say so rather than "broken pipe".
                Err(TransportError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
                    match self.state().await {
                        ChildState::Exited { status } => {
                            Err(TransportError::ProcessExited { status })
                        }
                        ChildState::Running => Err(TransportError::Io(e)),
                    }
                }
                other => other,
            }
        })
    }

    fn recv(&self) -> BoxFuture<'_, Option<Incoming>> {
        Box::pin(async move {
            if let Some(i) = self.lines.recv().await {
                return Some(i);
            }
            // The child's stdout ended: tell the client how the child went, once, unless the
            // client is closing it.
            if self.closing.load(Ordering::Acquire) || self.reported.swap(true, Ordering::AcqRel) {
                return None;
            }
            let status = self.exit_status().await;
            if self.closing.load(Ordering::Acquire) {
                return None;
            }
            Some(Incoming::Ended(TransportError::ProcessExited { status }))
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.shutdown().await;
            self.lines.close().await;
        })
    }
}
