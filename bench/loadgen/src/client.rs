//! Client connections: one keep-alive HTTP/1.1 connection per in-flight request slot, or,
//! with `--http2`, h2c with prior knowledge where the slots share connections.
//!
//! Under `--http2` a [`connect`] does not always dial: it hands out another stream slot on the
//! newest h2 connection until that connection carries `--h2-streams` slots (default 100, under
//! the servers' usual limit of concurrent streams), then dials the next. So 32 requests in
//! flight are 32 concurrent streams on one connection, and 10,000 held GET streams are 100
//! connections, as a browser or a proxy in front of the server would multiplex them.
//!
//! TCP_NODELAY is set on every socket. The connection is driven inside the task that sends on
//! it (no connection task and no channel hop per request), except for a held GET stream, whose
//! connection is handed to a task of its own. hyper's read buffer is capped at its minimum
//! (8 KiB): answers here are a few hundred bytes, and the hold scenarios keep thousands of
//! connections open, so a growing buffer per connection would only cost the load generator
//! memory.

use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use crate::check::Answer;

/// hyper's smallest allowed read buffer limit: the default of every connection.
pub(crate) const MIN_BUF: usize = 8 * 1024;

type Driver = Pin<Box<Connection<TokioIo<TcpStream>, Full<Bytes>>>>;

type H2Sender = http2::SendRequest<Full<Bytes>>;

/// One client connection: an HTTP/1.1 connection of its own, or one stream slot of a shared
/// h2 connection.
pub(crate) enum Conn {
    /// HTTP/1.1, driven by the task that sends on it.
    H1 {
        /// Sends requests.
        sender: SendRequest<Full<Bytes>>,
        /// Drives the connection.
        driver: Driver,
    },
    /// A handle on a shared h2 connection, driven by a task of its own.
    H2(H2Sender),
}

/// What keeps a held stream's connection open while its body is read.
pub(crate) enum Keep {
    /// The HTTP/1.1 connection's sender.
    H1(#[allow(dead_code)] SendRequest<Full<Bytes>>),
    /// The h2 connection's sender handle.
    H2(#[allow(dead_code)] H2Sender),
}

/// The h2 setting of this process: `None` is HTTP/1.1.
static H2: std::sync::OnceLock<H2Pool> = std::sync::OnceLock::new();

/// The h2 connection handed out to new slots, and how many slots it has.
struct H2Pool {
    per_conn: usize,
    current: Mutex<Option<(H2Sender, usize)>>,
}

/// Makes every later [`connect`] an h2c (prior knowledge) stream slot, `per_conn` slots to a
/// connection. Called once, before any connection, from the command line.
pub(crate) fn use_http2(per_conn: usize) {
    let _ = H2.set(H2Pool {
        per_conn: per_conn.max(1),
        current: Mutex::new(None),
    });
}

/// TCP connections dialled so far by this process (both protocols).
static DIALLED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many TCP connections this process has dialled.
pub(crate) fn dialled() -> u64 {
    DIALLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Opens a connection to `addr` (TCP_NODELAY on) with the smallest read buffer.
pub(crate) async fn connect(addr: SocketAddr) -> anyhow::Result<Conn> {
    connect_with(addr, MIN_BUF).await
}

/// Opens a connection to `addr` (TCP_NODELAY on) whose read buffer grows to `max_buf` bytes
/// (large answers are read in fewer, larger reads); under `--http2`, a slot of a shared h2
/// connection instead (h2 sizes its own buffers by flow control).
pub(crate) async fn connect_with(addr: SocketAddr, max_buf: usize) -> anyhow::Result<Conn> {
    if let Some(pool) = H2.get() {
        return h2_slot(pool, addr).await;
    }
    let tcp = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    tcp.set_nodelay(true).context("TCP_NODELAY")?;
    DIALLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (sender, driver) = http1::Builder::new()
        .max_buf_size(max_buf.max(MIN_BUF))
        .handshake(TokioIo::new(tcp))
        .await
        .context("HTTP/1.1 handshake")?;
    Ok(Conn::H1 {
        sender,
        driver: Box::pin(driver),
    })
}

/// A slot on the pool's current h2 connection, dialling a new one when it is full or closed.
async fn h2_slot(pool: &H2Pool, addr: SocketAddr) -> anyhow::Result<Conn> {
    let mut current = pool.current.lock().await;
    if let Some((sender, used)) = current.as_mut()
        && *used < pool.per_conn
        && !sender.is_closed()
    {
        *used += 1;
        return Ok(Conn::H2(sender.clone()));
    }
    let tcp = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    tcp.set_nodelay(true).context("TCP_NODELAY")?;
    DIALLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (sender, conn) = http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tcp))
        .await
        .context("h2c handshake")?;
    tokio::spawn(async move {
        // Errors surface to the streams as failed requests.
        let _ = conn.await;
    });
    *current = Some((sender.clone(), 1));
    Ok(Conn::H2(sender))
}

/// Reads the whole body of `resp` into an [`Answer`].
async fn collect(resp: http::Response<Incoming>) -> anyhow::Result<Answer> {
    let (parts, body) = resp.into_parts();
    let body = body
        .collect()
        .await
        .context("reading the answer body")?
        .to_bytes();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

impl Conn {
    /// Sends `req` and reads the whole answer, within `timeout`.
    pub(crate) async fn send(
        &mut self,
        req: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> anyhow::Result<Answer> {
        let (sender, driver) = match self {
            Conn::H1 { sender, driver } => (sender, driver),
            Conn::H2(sender) => {
                let exchange = async {
                    sender.ready().await.context("h2 connection closed")?;
                    let resp = sender
                        .send_request(req)
                        .await
                        .context("sending the request")?;
                    collect(resp).await
                };
                return tokio::time::timeout(timeout, exchange)
                    .await
                    .map_err(|_| anyhow::anyhow!("no complete answer within {timeout:?}"))?;
            }
        };
        let exchange = async {
            sender.ready().await.context("connection closed")?;
            let resp = sender
                .send_request(req)
                .await
                .context("sending the request")?;
            collect(resp).await
        };
        let driven = async {
            tokio::select! {
                biased;
                answer = exchange => answer,
                end = driver.as_mut() => match end {
                    Ok(()) => bail!("connection closed by the server"),
                    Err(e) => Err(anyhow::Error::new(e).context("connection failed")),
                },
            }
        };
        tokio::time::timeout(timeout, driven)
            .await
            .map_err(|_| anyhow::anyhow!("no complete answer within {timeout:?}"))?
    }

    /// Sends `req` and returns once the answer's head has arrived, with a task that drives the
    /// connection for as long as the body streams (a held GET stream).
    pub(crate) async fn stream(
        self,
        req: Request<Full<Bytes>>,
    ) -> anyhow::Result<(http::Response<Incoming>, Keep)> {
        match self {
            Conn::H1 { mut sender, driver } => {
                tokio::spawn(async move {
                    // Errors surface as the end of the body.
                    let _ = driver.await;
                });
                sender.ready().await.context("connection closed")?;
                let resp = sender
                    .send_request(req)
                    .await
                    .context("sending the request")?;
                Ok((resp, Keep::H1(sender)))
            }
            Conn::H2(mut sender) => {
                sender.ready().await.context("h2 connection closed")?;
                let resp = sender
                    .send_request(req)
                    .await
                    .context("sending the request")?;
                Ok((resp, Keep::H2(sender)))
            }
        }
    }
}
