//! Held server→client streams: a session's GET stream (legacy) or a `subscriptions/listen`
//! stream (2026-07-28), each on a connection of its own and read on a task of its own.
//!
//! Every stream counts itself in [`Streams::open`] while its body lasts. When a [`Hub`] is
//! attached, each stream parses its events as they arrive and reports every
//! `notifications/tools/list_changed` to it, which is how `fanout` learns when the last
//! stream has a change.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::bail;
use http::StatusCode;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::check::method_of;
use crate::client;
use crate::proto::{Proto, Session};
use crate::sse::Incremental;

/// How long a stream may take to send its response head (and, for listen, its
/// acknowledgement).
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

const LIST_CHANGED: &str = "notifications/tools/list_changed";
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// Where list changes seen by the streams of one round are counted.
pub(crate) struct Hub {
    seen: AtomicU64,
    want: AtomicU64,
    first: Mutex<Option<Instant>>,
    last: Mutex<Option<Instant>>,
    all: Notify,
}

impl Hub {
    pub(crate) fn new() -> Arc<Hub> {
        Arc::new(Hub {
            seen: AtomicU64::new(0),
            want: AtomicU64::new(u64::MAX),
            first: Mutex::new(None),
            last: Mutex::new(None),
            all: Notify::new(),
        })
    }

    /// Starts a round in which `want` streams should each see one change.
    pub(crate) fn round(&self, want: u64) {
        *lock(&self.first) = None;
        *lock(&self.last) = None;
        self.seen.store(0, Ordering::SeqCst);
        self.want.store(want, Ordering::SeqCst);
    }

    fn arrived(&self) {
        let now = Instant::now();
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            *lock(&self.first) = Some(now);
        }
        if n == self.want.load(Ordering::SeqCst) {
            *lock(&self.last) = Some(now);
            // A stored permit: the waiter may not be waiting yet.
            self.all.notify_one();
        }
    }

    /// Waits until every stream of the round had its change, up to `timeout`; returns when
    /// the first and the last had it, or how many did.
    pub(crate) async fn wait(&self, timeout: Duration) -> Result<(Instant, Instant), u64> {
        match tokio::time::timeout(timeout, self.all.notified()).await {
            Ok(()) => match (*lock(&self.first), *lock(&self.last)) {
                (Some(f), Some(l)) => Ok((f, l)),
                _ => Err(self.seen.load(Ordering::SeqCst)),
            },
            Err(_) => Err(self.seen.load(Ordering::SeqCst)),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the held streams of one scenario share.
#[derive(Clone)]
pub(crate) struct Streams {
    pub(crate) open: Arc<AtomicUsize>,
    pub(crate) hub: Option<Arc<Hub>>,
}

impl Streams {
    pub(crate) fn new(hub: Option<Arc<Hub>>) -> Streams {
        Streams {
            open: Arc::new(AtomicUsize::new(0)),
            hub,
        }
    }

    /// Streams whose body has not ended.
    pub(crate) fn open_now(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Opens the session's GET SSE stream on a new connection and reads it on a task.
    pub(crate) async fn get(
        &self,
        proto: &Proto,
        session: &Session,
        addr: std::net::SocketAddr,
    ) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        self.hold(addr, proto.get_stream(session), "GET stream", None)
            .await
    }

    /// Opens a `subscriptions/listen` stream for tool list changes on a new connection,
    /// waits for its acknowledgement, and reads it on a task.
    pub(crate) async fn listen(
        &self,
        proto: &Proto,
        addr: std::net::SocketAddr,
        id: u64,
    ) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        self.hold(
            addr,
            proto.listen_tools(id),
            "listen stream",
            Some(ACKNOWLEDGED),
        )
        .await
    }

    async fn hold(
        &self,
        addr: std::net::SocketAddr,
        req: http::Request<http_body_util::Full<bytes::Bytes>>,
        what: &'static str,
        first: Option<&'static str>,
    ) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        let conn = client::connect(addr).await?;
        let (resp, sender) = tokio::time::timeout(HEAD_TIMEOUT, conn.stream(req))
            .await
            .map_err(|_| anyhow::anyhow!("{what}: no response head within {HEAD_TIMEOUT:?}"))??;
        if resp.status() != StatusCode::OK {
            bail!("{what}: HTTP {}", resp.status().as_u16());
        }
        let ct = resp
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if !ct.starts_with(b"text/event-stream") {
            bail!("{what}: Content-Type {:?}", String::from_utf8_lossy(ct));
        }
        let mut body = resp.into_body();
        let mut events = Incremental::default();
        if let Some(method) = first {
            tokio::time::timeout(HEAD_TIMEOUT, first_event(&mut body, &mut events, method))
                .await
                .map_err(|_| anyhow::anyhow!("{what}: no {method} within {HEAD_TIMEOUT:?}"))??;
        }
        self.open.fetch_add(1, Ordering::Relaxed);
        let open = Arc::clone(&self.open);
        let hub = self.hub.clone();
        Ok(tokio::spawn(async move {
            // Keep the connection's sender alive while the stream is read.
            let _sender = sender;
            while let Some(Ok(frame)) = body.frame().await {
                let (Some(hub), Ok(data)) = (&hub, frame.into_data()) else {
                    continue;
                };
                for event in events.push(&data) {
                    if method_of(&event).as_deref() == Some(LIST_CHANGED) {
                        hub.arrived();
                    }
                }
            }
            open.fetch_sub(1, Ordering::Relaxed);
        }))
    }
}

/// Reads until the first event, which must be a `method` notification.
async fn first_event(
    body: &mut Incoming,
    events: &mut Incremental,
    method: &str,
) -> anyhow::Result<()> {
    loop {
        let Some(frame) = body.frame().await else {
            bail!("stream ended before {method}");
        };
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        if let Some(event) = events.push(&data).first() {
            let got = method_of(event);
            if got.as_deref() != Some(method) {
                bail!(
                    "first event is {}, {method} expected",
                    got.as_deref().unwrap_or("a response")
                );
            }
            return Ok(());
        }
    }
}
