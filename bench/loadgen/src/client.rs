//! Client connections: one keep-alive HTTP/1.1 connection per in-flight request slot.
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
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::check::Answer;

/// hyper's smallest allowed read buffer limit: the default of every connection.
pub(crate) const MIN_BUF: usize = 8 * 1024;

type Driver = Pin<Box<Connection<TokioIo<TcpStream>, Full<Bytes>>>>;

/// One HTTP/1.1 client connection.
pub(crate) struct Conn {
    sender: SendRequest<Full<Bytes>>,
    driver: Driver,
}

/// Opens a connection to `addr` (TCP_NODELAY on) with the smallest read buffer.
pub(crate) async fn connect(addr: SocketAddr) -> anyhow::Result<Conn> {
    connect_with(addr, MIN_BUF).await
}

/// Opens a connection to `addr` (TCP_NODELAY on) whose read buffer grows to `max_buf` bytes
/// (large answers are read in fewer, larger reads).
pub(crate) async fn connect_with(addr: SocketAddr, max_buf: usize) -> anyhow::Result<Conn> {
    let tcp = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    tcp.set_nodelay(true).context("TCP_NODELAY")?;
    let (sender, driver) = http1::Builder::new()
        .max_buf_size(max_buf.max(MIN_BUF))
        .handshake(TokioIo::new(tcp))
        .await
        .context("HTTP/1.1 handshake")?;
    Ok(Conn {
        sender,
        driver: Box::pin(driver),
    })
}

impl Conn {
    /// Sends `req` and reads the whole answer, within `timeout`.
    pub(crate) async fn send(
        &mut self,
        req: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> anyhow::Result<Answer> {
        let Conn { sender, driver } = self;
        let exchange = async {
            sender.ready().await.context("connection closed")?;
            let resp = sender
                .send_request(req)
                .await
                .context("sending the request")?;
            let (parts, body) = resp.into_parts();
            let body = body
                .collect()
                .await
                .context("reading the answer body")?
                .to_bytes();
            anyhow::Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
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
    ) -> anyhow::Result<(http::Response<Incoming>, SendRequest<Full<Bytes>>)> {
        let Conn { mut sender, driver } = self;
        tokio::spawn(async move {
            // Errors surface as the end of the body.
            let _ = driver.await;
        });
        sender.ready().await.context("connection closed")?;
        let resp = sender
            .send_request(req)
            .await
            .context("sending the request")?;
        Ok((resp, sender))
    }
}
