//! In-memory transport: a [`Client`](crate::client::Client) wired straight to a server's
//! [`Connection`], for tests and for embedding a server in the same process.
//!
//! Messages are still encoded and decoded (so tests exercise the real wire format), but no
//! I/O or framing is involved. Not for crossing process boundaries: use stdio or HTTP.

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::client::transport::{Incoming, OutgoingMessage, Transport, decode_incoming};
use crate::error::TransportError;
use crate::server::Server;
use crate::transport::Connection;

/// A client transport whose other end is a [`Connection`] to a [`Server`] in this process.
#[derive(Debug)]
pub struct MemoryTransport {
    connection: Connection,
    from_server: Mutex<mpsc::Receiver<Bytes>>,
    pending: Mutex<std::collections::VecDeque<Incoming>>,
    closed: CancellationToken,
}

impl MemoryTransport {
    /// A transport connected to a fresh connection (one legacy session, plus modern requests)
    /// of `server`.
    pub fn new(server: Server) -> MemoryTransport {
        let (connection, from_server) = Connection::new(server);
        MemoryTransport {
            connection,
            from_server: Mutex::new(from_server),
            pending: Mutex::new(Default::default()),
            closed: CancellationToken::new(),
        }
    }

    /// The server side of the pair.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }
}

impl Transport for MemoryTransport {
    fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.connection.handle_bytes(message.bytes).await;
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Option<Incoming>> {
        Box::pin(async move {
            let mut pending = self.pending.lock().await;
            loop {
                if let Some(i) = pending.pop_front() {
                    return Some(i);
                }
                let mut rx = self.from_server.lock().await;
                let bytes = tokio::select! {
                    b = rx.recv() => b?,
                    () = self.closed.cancelled() => return None,
                };
                pending.extend(decode_incoming(&bytes));
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.connection.close();
            self.closed.cancel();
        })
    }
}
