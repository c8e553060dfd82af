//! [`Connection`]: the server side of one message-stream connection (stdio, an in-memory
//! pipe, any byte stream with one JSON-RPC message per line).
//!
//! A connection is one legacy session for clients that `initialize`, and serves modern
//! (2026-07-28) requests statelessly from their own `_meta`, both at once. Each request runs
//! concurrently in its own task; everything the server sends leaves through one ordered
//! channel, so a transport only has to write what it receives.
//!
//! Not here: the byte streams themselves (`stdio/`, `memory.rs`), and serving the requests
//! (the server core's `Session::begin`, the same path HTTP takes).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::sync::{Notify, mpsc};

use crate::error::Error;
use crate::protocol::{Message, Payload, ProtocolVersions, Request};
use crate::protocol::{decode, encode_error};
use crate::server::{
    Outcome, Server, Session, SessionHooks, Step, WithoutHttp, handle_notification,
    handle_response, parse_meta, request_meta,
};

/// How many outgoing messages may wait for the writer.
const OUT_BUFFER: usize = 256;

/// The server side of one connection.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    session: Arc<Session>,
    out: mpsc::Sender<Bytes>,
    running: AtomicUsize,
    idle: Notify,
    /// What each request carries as its request extensions (a caller, a principal: what an
    /// authentication layer would have put there), for connections made with them.
    extensions: Option<http::Extensions>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("running", &self.inner.running.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

struct OutSink(mpsc::Sender<Bytes>);

impl SessionHooks for OutSink {
    fn send(&self, message: Bytes) -> BoxFuture<'static, Result<(), Error>> {
        let tx = self.0.clone();
        Box::pin(async move {
            tx.send(message)
                .await
                .map_err(|_| Error::from(crate::error::TransportError::Closed))
        })
    }
}

impl Connection {
    /// A connection to `server`, and the receiver of everything the server sends on it
    /// (encoded messages, in order).
    pub fn new(server: Server) -> (Connection, mpsc::Receiver<Bytes>) {
        Self::open(server, None)
    }

    /// A connection whose every request carries `extensions`, as if an authentication layer
    /// had put them there: a [`Caller`](crate::server::Caller), a
    /// `vellum::auth::Principal`, a value of your own for `Extension<T>`. Handlers see them
    /// through [`RequestContext::http`](crate::server::RequestContext::http), a request
    /// with no method, URI or headers of its own (an in-memory test's connection).
    pub fn with_extensions(
        server: Server,
        extensions: http::Extensions,
    ) -> (Connection, mpsc::Receiver<Bytes>) {
        Self::open(server, Some(extensions))
    }

    fn open(
        server: Server,
        extensions: Option<http::Extensions>,
    ) -> (Connection, mpsc::Receiver<Bytes>) {
        let (out, rx) = mpsc::channel(OUT_BUFFER);
        let session = Session::new(server.clone(), None, ProtocolVersions::ALL);
        session.set_hooks(Arc::new(OutSink(out.clone())));
        let conn = Connection {
            inner: Arc::new(Inner {
                session,
                out,
                running: AtomicUsize::new(0),
                idle: Notify::new(),
                extensions,
            }),
        };
        (conn, rx)
    }

    /// Handles the bytes of one incoming message (or batch). Requests start running and
    /// answer through the output channel; this returns at once.
    pub async fn handle_bytes(&self, bytes: Bytes) {
        match decode(&bytes) {
            Ok(Payload::Single(m)) => self.handle(m).await,
            Ok(Payload::Batch(v)) => {
                for m in v {
                    self.handle(m).await;
                }
            }
            Err(e) => {
                let _ = self
                    .inner
                    .out
                    .send(encode_error(e.id(), &e.to_error_object()))
                    .await;
            }
        }
    }

    /// Handles one decoded message.
    pub async fn handle(&self, message: Message) {
        match message {
            Message::Request(r) => self.start(r).await,
            Message::Notification(n) => handle_notification(Some(&self.inner.session), &n),
            Message::Response(r) => handle_response(&self.inner.session, r),
        }
    }

    async fn start(&self, r: Request) {
        let inner = &self.inner;
        // A request whose `_meta` names a protocol version is modern: it stands alone.
        let modern = match request_meta(r.params.as_ref()) {
            Ok(Some(meta)) if meta.version().is_some() => match parse_meta(Some(&meta)) {
                Ok(m) => Some(Box::new(m)),
                Err(e) => {
                    let _ = inner.out.send(encode_error(Some(&r.id), &e)).await;
                    return;
                }
            },
            _ => None,
        };
        let id = r.id.clone();
        let http = inner.extensions.as_ref().map(|extensions| {
            let (mut parts, ()) = http::Request::new(()).into_parts();
            parts.extensions = extensions.clone();
            parts.extensions.insert(WithoutHttp);
            parts
        });
        // A listen stream never finishes on its own: it is not work to wait for when the
        // input ends (closing the connection ends it).
        let counted = r.method != crate::protocol::methods::SUBSCRIPTIONS_LISTEN;
        let mut exchange = match inner.session.begin(r, modern, http) {
            Ok(exchange) => exchange,
            Err(e) => {
                let _ = inner.out.send(encode_error(Some(&id), &e)).await;
                return;
            }
        };
        if counted {
            inner.running.fetch_add(1, Ordering::AcqRel);
        }
        let this = self.inner.clone();
        tokio::spawn(async move {
            while let Some(step) = std::future::poll_fn(|cx| exchange.poll_step(cx)).await {
                let bytes = match step {
                    Step::Message(m) => m,
                    Step::Finished(Outcome::Reply(b)) => b,
                    Step::Finished(Outcome::Error(e)) => {
                        encode_error(Some(&exchange.shared().id), &e)
                    }
                    Step::Finished(Outcome::Silent) => break,
                };
                if this.out.send(bytes).await.is_err() {
                    break;
                }
            }
            drop(exchange);
            if counted && this.running.fetch_sub(1, Ordering::AcqRel) == 1 {
                this.idle.notify_waiters();
            }
        });
    }

    /// Waits until no request is running (for tests and orderly shutdown); open
    /// `subscriptions/listen` streams do not count.
    pub async fn idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if self.inner.running.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Ends the session: running requests are cancelled.
    pub fn close(&self) {
        self.inner.session.close();
    }
}
