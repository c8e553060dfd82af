//! The server side of stdio: a [`Server`] served over newline-delimited JSON-RPC, one
//! [`Connection`] per stream.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};

use super::{DEFAULT_MAX_LINE_BYTES, Line, next_line, write_line};
use crate::protocol::{ErrorObject, encode_error};
use crate::server::Server;
use crate::transport::Connection;

/// How long [`serve_lines`] lets running requests finish after its input ends: 5 s.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

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
