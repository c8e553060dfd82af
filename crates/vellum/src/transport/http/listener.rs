//! What [`serve`](super::serve) accepts connections from ([`Listener`]: TCP or a Unix socket),
//! the handshake each connection still has to make (TLS, in the connection's own task), and
//! the connection HTTP is then spoken over, whichever kind it is.
//!
//! Not here: the accept loop and the HTTP settings (`serve.rs`), the TLS configuration
//! (`tls.rs`).

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::security::ConnectionInfo;

/// What [`serve`](super::serve) accepts connections from: a bound tokio [`TcpListener`] or,
/// on Unix, a bound [`UnixListener`](tokio::net::UnixListener); both convert into it. Bind
/// first, so the socket is announced only once clients can connect.
#[derive(Debug)]
pub struct Listener(Socket);

#[derive(Debug)]
enum Socket {
    Tcp(TcpListener),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Listener(Socket::Tcp(listener))
    }
}

#[cfg(unix)]
impl From<tokio::net::UnixListener> for Listener {
    fn from(listener: tokio::net::UnixListener) -> Self {
        Listener(Socket::Unix(listener))
    }
}

/// A listener as the accept loop uses it: the socket, and the TLS acceptor when connections
/// speak TLS (it shares the configuration, so a certificate reload reaches the next
/// handshake).
pub(super) struct Accepting {
    socket: Socket,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Listener {
    /// The listener the accept loop takes connections from, with TLS when configured.
    pub(super) fn accepting(
        self,
        #[cfg(feature = "tls")] tls: Option<&super::TlsConfig>,
    ) -> Accepting {
        Accepting {
            socket: self.0,
            #[cfg(feature = "tls")]
            tls: tls.map(super::TlsConfig::acceptor),
        }
    }
}

impl Accepting {
    /// The next connection, with its handshake still to run, and how it looks.
    pub(super) async fn next(&self) -> std::io::Result<(Handshake, ConnectionInfo)> {
        let (stream, info) = match &self.socket {
            Socket::Tcp(tcp) => {
                let (stream, remote) = tcp.accept().await?;
                // Small SSE frames must not wait for Nagle and delayed ACKs (~40 ms each).
                let _ = stream.set_nodelay(true);
                let info = ConnectionInfo {
                    local: stream.local_addr().ok(),
                    remote: Some(remote),
                };
                (Stream::Tcp(stream), info)
            }
            #[cfg(unix)]
            Socket::Unix(unix) => {
                let (stream, _) = unix.accept().await?;
                // A Unix socket has no addresses to tell.
                let info = ConnectionInfo {
                    local: None,
                    remote: None,
                };
                (Stream::Unix(stream), info)
            }
        };
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            return Ok((Handshake::Tls(Box::new(tls.accept(stream))), info));
        }
        Ok((Handshake::Ready(Conn::Plain(stream)), info))
    }
}

/// An accepted connection before HTTP: what is left to do is run in the connection's own
/// task, so a slow handshake does not hold up the accept loop.
pub(super) enum Handshake {
    /// Nothing to do.
    Ready(Conn),
    /// The TLS handshake. Boxed (it is over a kilobyte): a plain connection's task should
    /// not carry its size.
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::Accept<Stream>>),
}

impl Handshake {
    /// The connection HTTP is spoken over, once the handshake is done (with the feature
    /// `http2`, and whether its client's first bytes already say HTTP/1.1).
    pub(super) async fn finish(self) -> std::io::Result<Connected> {
        let conn = self.conn().await?;
        Ok(Connected {
            #[cfg(feature = "http2")]
            http1: conn.speaks_http1().await,
            conn,
        })
    }

    /// The connection, once the handshake is done.
    async fn conn(self) -> std::io::Result<Conn> {
        match self {
            Handshake::Ready(conn) => Ok(conn),
            #[cfg(feature = "tls")]
            Handshake::Tls(accept) => Ok(Conn::Tls(Box::new((*accept).await?))),
        }
    }
}

/// A connection after its handshake.
pub(super) struct Connected {
    /// The connection.
    pub(super) conn: Conn,
    /// Its client speaks HTTP/1.1: its first bytes on a TCP socket are not the HTTP/2
    /// preface, or it chose `http/1.1` by ALPN. When this is false, hyper-util tells the
    /// versions apart (Unix sockets, TLS without that choice, the preface or a part of it).
    /// Without the feature `http2` every connection speaks HTTP/1.1.
    #[cfg(feature = "http2")]
    pub(super) http1: bool,
}

/// The HTTP/2 connection preface (RFC 9113, section 3.4).
#[cfg(feature = "http2")]
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[cfg(feature = "http2")]
impl Conn {
    /// Whether the client's first bytes, peeked at and left on the socket, cannot be the
    /// HTTP/2 preface. Peeking, rather than reading them as hyper-util's version detection
    /// does, lets hyper's HTTP/1.1 connection read the request from the socket itself: fed the
    /// detection's first 24 bytes alone, its read buffer grows from 8 to 16 KiB on the next
    /// read and keeps that size for the connection's life (24.1 against 17.1 KiB of RSS per
    /// session and open GET stream, `tests/http_stream_memory.rs`). One `recv(MSG_PEEK)` on a socket with data waiting; no wait for more bytes:
    /// what a prefix of the preface cannot yet tell is left to hyper-util.
    /// Over TLS, a client that chose `http/1.1` by ALPN has said so (RFC 7301).
    async fn speaks_http1(&self) -> bool {
        let tcp = match self {
            Conn::Plain(Stream::Tcp(tcp)) => tcp,
            #[cfg(feature = "tls")]
            Conn::Tls(tls) => return tls.get_ref().1.alpn_protocol() == Some(&b"http/1.1"[..]),
            _ => return false,
        };
        let mut first = [0u8; H2_PREFACE.len()];
        match tcp.peek(&mut first).await {
            Ok(n) if n > 0 => first[..n] != H2_PREFACE[..n],
            // Closed or failed: hyper-util's detection sees the same and ends the connection.
            _ => false,
        }
    }
}

/// An accepted socket.
pub(super) enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

/// A connection ready for HTTP: a socket, or TLS over one.
pub(super) enum Conn {
    Plain(Stream),
    // Boxed: a TLS stream is large, and a plain connection should not carry its size.
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::server::TlsStream<Stream>>),
}

/// Runs `$e` with `$s` bound to the pinned socket inside `$stream`.
macro_rules! each_stream {
    ($stream:expr, $s:ident => $e:expr) => {
        match $stream.get_mut() {
            Stream::Tcp(s) => {
                let $s = Pin::new(s);
                $e
            }
            #[cfg(unix)]
            Stream::Unix(s) => {
                let $s = Pin::new(s);
                $e
            }
        }
    };
}

/// Runs `$e` with `$s` bound to the pinned stream inside `$conn`.
macro_rules! each_conn {
    ($conn:expr, $s:ident => $e:expr) => {
        match $conn.get_mut() {
            Conn::Plain(s) => {
                let $s = Pin::new(s);
                $e
            }
            #[cfg(feature = "tls")]
            Conn::Tls(s) => {
                let $s = Pin::new(&mut **s);
                $e
            }
        }
    };
}

/// `AsyncRead` and `AsyncWrite` for a type whose every variant holds one, through `$each`
/// (and `$vectored`, whether the variant in `$this` writes vectors).
macro_rules! io_by_variant {
    ($ty:ty, $each:ident, |$this:ident| $vectored:expr) => {
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<std::io::Result<()>> {
                $each!(self, s => s.poll_read(cx, buf))
            }
        }

        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                $each!(self, s => s.poll_write(cx, buf))
            }

            // Vectored: hyper writes a response head and body chunk in one call when the
            // stream takes vectors, as all of them do.
            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> Poll<std::io::Result<usize>> {
                $each!(self, s => s.poll_write_vectored(cx, bufs))
            }

            fn is_write_vectored(&self) -> bool {
                let $this = self;
                $vectored
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                $each!(self, s => s.poll_flush(cx))
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                $each!(self, s => s.poll_shutdown(cx))
            }
        }
    };
}

io_by_variant!(Stream, each_stream, |this| match this {
    Stream::Tcp(s) => s.is_write_vectored(),
    #[cfg(unix)]
    Stream::Unix(s) => s.is_write_vectored(),
});
io_by_variant!(Conn, each_conn, |this| match this {
    Conn::Plain(s) => s.is_write_vectored(),
    #[cfg(feature = "tls")]
    Conn::Tls(s) => s.is_write_vectored(),
});
