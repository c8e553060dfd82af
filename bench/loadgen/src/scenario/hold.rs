//! Hold scenarios: how much server memory an idle session (and its GET stream) costs.
//!
//! 10 warm-up sessions are opened and kept, then after the settle interval the server's RSS is
//! read; then N more sessions are opened, `--hold-parallel` at a time on keep-alive connections
//! (each: initialize + initialized + one call, never closed), each with an open GET SSE stream
//! on a connection of its own for `streams`. After another settle interval RSS is read again:
//! per session = ΔRSS / N. Finally a call on the first and on the last held session must still
//! be answered correctly, and, for `streams`, every stream must still be open.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use http::StatusCode;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use tokio::time::Instant;

use super::secs;
use crate::cli::RunArgs;
use crate::client::{self, Conn};
use crate::proto::{Era, Proto, Session};
use crate::record::{Errors, Record};
use crate::{limits, procfs, session};

/// Sessions opened (and held) before the first RSS reading.
const WARMUP_SESSIONS: usize = 10;

/// How long a GET stream may take to send its response head.
const STREAM_HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `hold` (or `streams` when `with_streams`) and fills `rec`.
pub(super) async fn run(
    args: &RunArgs,
    proto: &Proto,
    rec: &mut Record,
    with_streams: bool,
) -> anyhow::Result<()> {
    if proto.era != Era::Session {
        bail!(
            "holding sessions needs a server with sessions (not {})",
            proto.era.name()
        );
    }
    let pid = args
        .server_pid
        .context("--server-pid is needed to read the server's RSS")?;
    let nofile = limits::raise_nofile(limits::WANT_NOFILE);
    let needed = if with_streams {
        args.hold + WARMUP_SESSIONS + 64
    } else {
        64
    };
    if (nofile as usize) < needed {
        bail!("RLIMIT_NOFILE is {nofile}, {needed} file descriptors needed");
    }
    let timeout = secs(args.request_timeout);
    let open_streams = Arc::new(AtomicUsize::new(0));
    let proto = Arc::new(proto.clone());

    let mut errors = Errors::default();
    let (mut held, e) = open_many(
        args,
        &proto,
        WARMUP_SESSIONS,
        1,
        with_streams,
        &open_streams,
    )
    .await?;
    errors.merge(e);
    // Documented settle interval before each RSS reading.
    tokio::time::sleep(secs(args.settle)).await;
    let before = procfs::tree_memory(pid)?;

    let t0 = Instant::now();
    let parallel = args.hold_parallel.max(1);
    let (more, e) = open_many(
        args,
        &proto,
        args.hold,
        parallel,
        with_streams,
        &open_streams,
    )
    .await?;
    let open_s = t0.elapsed().as_secs_f64();
    errors.merge(e);
    let opened = more.len();
    held.extend(more);
    tokio::time::sleep(secs(args.settle)).await;
    let after = procfs::tree_memory(pid)?;
    let still_open = open_streams.load(Ordering::Relaxed);

    // The first and the last held sessions must still work.
    let mut conn = client::connect(args.addr).await?;
    let mut ok = 0;
    for (n, s) in [held.first(), held.last()]
        .into_iter()
        .flatten()
        .enumerate()
    {
        match session::call(&mut conn, &proto, &s.session, 1_000_000 + n as u64, timeout).await {
            Ok(()) => ok += 1,
            Err(e) => errors.add(format!("held session no longer answers: {e:#}")),
        }
    }
    if with_streams && still_open < held.len() {
        errors.add(format!(
            "{} of {} GET streams closed early",
            held.len() - still_open,
            held.len()
        ));
    }

    rec.held = Some(opened);
    rec.ok = ok;
    rec.errors = errors.count;
    rec.error_samples = errors.samples;
    rec.rss_before_kib = Some(before.rss_kib);
    rec.rss_after_kib = Some(after.rss_kib);
    rec.rss_kib = Some(after.rss_kib);
    rec.hwm_kib = Some(after.hwm_kib);
    rec.open_s = Some(open_s);
    if opened > 0 {
        rec.kib_per_session = Some((after.rss_kib as f64 - before.rss_kib as f64) / opened as f64);
    }
    if with_streams {
        rec.open_streams = Some(still_open);
    }
    Ok(())
}

/// A session kept open, with its GET stream's task when there is one.
struct Held {
    session: Session,
    _stream: Option<tokio::task::JoinHandle<()>>,
}

/// Opens `n` sessions, `parallel` at a time; failures are counted, not fatal.
async fn open_many(
    args: &RunArgs,
    proto: &Arc<Proto>,
    n: usize,
    parallel: usize,
    with_streams: bool,
    open_streams: &Arc<AtomicUsize>,
) -> anyhow::Result<(Vec<Held>, Errors)> {
    let timeout = secs(args.request_timeout);
    let mut workers = Vec::with_capacity(parallel);
    for w in 0..parallel {
        let count = n / parallel + usize::from(w < n % parallel);
        let proto = Arc::clone(proto);
        let open_streams = Arc::clone(open_streams);
        let addr = args.addr;
        workers.push(tokio::spawn(async move {
            let mut held = Vec::with_capacity(count);
            let mut errors = Errors::default();
            let mut conn: Option<Conn> = None;
            for i in 0..count {
                let c = match conn.as_mut() {
                    Some(c) => c,
                    None => match client::connect(addr).await {
                        Ok(c) => conn.insert(c),
                        Err(e) => {
                            errors.add(e);
                            continue;
                        }
                    },
                };
                match hold_one(
                    c,
                    &proto,
                    addr,
                    with_streams,
                    &open_streams,
                    i as u64 + 1,
                    timeout,
                )
                .await
                {
                    Ok(h) => held.push(h),
                    Err(e) => {
                        errors.add(e);
                        conn = None;
                    }
                }
            }
            (held, errors)
        }));
    }
    let mut all = Vec::with_capacity(n);
    let mut errors = Errors::default();
    for w in workers {
        let (held, e) = w.await.context("hold worker panicked")?;
        all.extend(held);
        errors.merge(e);
    }
    Ok((all, errors))
}

/// Opens one session with one call and, when asked, its GET stream.
async fn hold_one(
    conn: &mut Conn,
    proto: &Proto,
    addr: std::net::SocketAddr,
    with_stream: bool,
    open_streams: &Arc<AtomicUsize>,
    id: u64,
    timeout: Duration,
) -> anyhow::Result<Held> {
    let session = session::open(conn, proto, timeout).await?;
    session::call(conn, proto, &session, id, timeout).await?;
    let stream = if with_stream {
        Some(open_stream(proto, &session, addr, Arc::clone(open_streams)).await?)
    } else {
        None
    };
    Ok(Held {
        session,
        _stream: stream,
    })
}

/// Opens the session's GET SSE stream on a new connection and keeps reading it on a task;
/// `open_streams` counts streams whose body has not ended.
async fn open_stream(
    proto: &Proto,
    session: &Session,
    addr: std::net::SocketAddr,
    open_streams: Arc<AtomicUsize>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let conn = client::connect(addr).await?;
    let (resp, sender) =
        tokio::time::timeout(STREAM_HEAD_TIMEOUT, conn.stream(proto.get_stream(session)))
            .await
            .map_err(|_| {
                anyhow::anyhow!("GET stream: no response head within {STREAM_HEAD_TIMEOUT:?}")
            })??;
    if resp.status() != StatusCode::OK {
        bail!("GET stream: HTTP {}", resp.status().as_u16());
    }
    let ct = resp
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !ct.starts_with(b"text/event-stream") {
        bail!("GET stream: Content-Type {:?}", String::from_utf8_lossy(ct));
    }
    open_streams.fetch_add(1, Ordering::Relaxed);
    let mut body = resp.into_body();
    Ok(tokio::spawn(async move {
        // Keep the connection's sender alive while the stream is read and discarded.
        let _sender = sender;
        while let Some(Ok(_)) = body.frame().await {}
        open_streams.fetch_sub(1, Ordering::Relaxed);
    }))
}
