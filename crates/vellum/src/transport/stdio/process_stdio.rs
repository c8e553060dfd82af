//! [`ProcessStdin`] and [`ProcessStdout`]: this process's stdin and stdout as the stream
//! [`serve_stdio`](super::serve_stdio) serves. When they are pipes (a host, or a gateway, ran
//! this server as its child), the pipe itself is read and written by the runtime's reactor;
//! otherwise (a terminal, a file) tokio's stdin and stdout do it, a blocking thread per read
//! and per write. A message then costs no hand-off between threads each way.
//!
//! The pipe is opened on first use, inside the runtime (the reactor needs one).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// This process's stdin, as [`serve_stdio`](super::serve_stdio) reads it (opened on first
/// use).
#[derive(Debug, Default)]
pub struct ProcessStdin(Option<Reading>);

/// This process's stdout, as [`serve_stdio`](super::serve_stdio) writes it (opened on first
/// use). Nothing else may write to stdout meanwhile (a pipe is then non-blocking for every
/// writer).
#[derive(Debug, Default)]
pub struct ProcessStdout(Option<Writing>);

#[derive(Debug)]
enum Reading {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    Thread(tokio::io::Stdin),
}

#[derive(Debug)]
enum Writing {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    Thread(tokio::io::Stdout),
}

impl Reading {
    fn open() -> Reading {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd as _;
            // A copy of the descriptor: the pipe it names is read by the reactor (an error:
            // stdin is no pipe).
            let pipe = io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
            if let Ok(p) = pipe {
                return Reading::Pipe(p);
            }
        }
        Reading::Thread(tokio::io::stdin())
    }
}

impl Writing {
    fn open() -> Writing {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd as _;
            let pipe = io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
            if let Ok(p) = pipe {
                return Writing::Pipe(p);
            }
        }
        Writing::Thread(tokio::io::stdout())
    }
}

impl AsyncRead for ProcessStdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut().0.get_or_insert_with(Reading::open) {
            #[cfg(unix)]
            Reading::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            Reading::Thread(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ProcessStdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().0.get_or_insert_with(Writing::open) {
            #[cfg(unix)]
            Writing::Pipe(p) => Pin::new(p).poll_write(cx, buf),
            Writing::Thread(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().0.get_or_insert_with(Writing::open) {
            #[cfg(unix)]
            Writing::Pipe(p) => Pin::new(p).poll_flush(cx),
            Writing::Thread(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().0.get_or_insert_with(Writing::open) {
            #[cfg(unix)]
            Writing::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            Writing::Thread(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
