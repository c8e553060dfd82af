//! The server side of stdio: a [`Server`] served over newline-delimited JSON-RPC, one
//! [`Connection`] per stream.

use std::future::{Future, IntoFuture};
use std::io;
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};

use super::process_stdio::{ProcessStdin, ProcessStdout};
use super::{DEFAULT_MAX_LINE_BYTES, Line, next_line, write_line};
use crate::protocol::{ErrorObject, encode_error};
use crate::server::Server;
use crate::transport::Connection;

/// How long serving lines lets running requests finish after its input ends: 5 s.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `server` over newline-delimited JSON-RPC on this process's stdin and stdout, or,
/// with [`ServeLines::over`], on another reader/writer pair (a socket, a pipe,
/// `tokio::io::duplex` in tests): await the returned [`ServeLines`]. It serves until the
/// input ends; running requests then get [`DEFAULT_DRAIN_TIMEOUT`] to finish. On stdout
/// nothing else may write: send logs to stderr.
///
/// ```no_run
/// # async fn f(server: vellum::server::Server) -> std::io::Result<()> {
/// vellum::transport::stdio::serve_stdio(server).await
/// # }
/// ```
pub fn serve_stdio(server: Server) -> ServeLines<ProcessStdin, ProcessStdout> {
    ServeLines {
        server,
        reader: ProcessStdin::default(),
        writer: ProcessStdout::default(),
    }
}

/// Serving a server over newline-delimited JSON-RPC, as [`serve_stdio`] starts it: a future
/// (`.await` it, or spawn `.into_future()`).
#[must_use = "a ServeLines does nothing until it is awaited"]
#[derive(Debug)]
pub struct ServeLines<R, W> {
    server: Server,
    reader: R,
    writer: W,
}

impl<R, W> ServeLines<R, W> {
    /// Serves on `reader` and `writer` instead.
    pub fn over<R2, W2>(self, reader: R2, writer: W2) -> ServeLines<R2, W2>
    where
        R2: AsyncRead + Unpin + Send + 'static,
        W2: AsyncWrite + Unpin + Send + 'static,
    {
        ServeLines {
            server: self.server,
            reader,
            writer,
        }
    }
}

impl<R, W> IntoFuture for ServeLines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(serve_lines(self.server, self.reader, self.writer))
    }
}

/// Serves `server` on a reader/writer pair until the reader ends (see [`serve_stdio`]).
async fn serve_lines<R, W>(server: Server, reader: R, writer: W) -> io::Result<()>
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
