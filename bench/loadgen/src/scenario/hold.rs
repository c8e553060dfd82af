//! Hold scenarios: how much server memory an idle session (and its GET stream) costs, and how
//! a new session fares while many are held.
//!
//! 10 warm-up sessions are opened and kept, then after the settle interval the server's RSS is
//! read; then sessions are opened up to each step N, `--hold-parallel` at a time on keep-alive
//! connections (each: initialize + initialized + one call, never closed), each with an open GET
//! SSE stream on a connection of its own for `streams`. After another settle interval RSS is
//! read again: per session = ΔRSS / N. Then a call on the first and on the last held session
//! must still be answered correctly, for `streams` every stream must still be open, and
//! `--fresh` new sessions are timed one after another (as in `setup`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::time::Instant;

use super::secs;
use super::streams::Streams;
use crate::cli::RunArgs;
use crate::client::{self, Conn};
use crate::proto::{Era, Proto, Session};
use crate::record::{Errors, Record};
use crate::{limits, procfs, session};

/// Sessions opened (and held) before the first RSS reading.
const WARMUP_SESSIONS: usize = 10;

/// Runs `hold` (or `streams` when `with_streams`): one record per step of `--points` (the
/// cumulative number of held sessions; `--hold` alone is one step). Each step after the
/// first is skipped, with the reason recorded, when the last step's rate or memory per
/// session project it past `--step-budget` or `--max-rss-mib`; every later step then too.
pub(super) async fn run(
    args: &RunArgs,
    proto: &Proto,
    base: &Record,
    with_streams: bool,
) -> anyhow::Result<Vec<Record>> {
    if proto.era != Era::Session {
        bail!(
            "holding sessions needs a server with sessions (not {})",
            proto.era.name()
        );
    }
    let pid = args
        .server_pid
        .context("--server-pid is needed to read the server's RSS")?;
    let steps: Vec<usize> = if args.points.is_empty() || with_streams {
        vec![args.hold]
    } else {
        args.points.iter().map(|&p| p as usize).collect()
    };
    let top = steps.iter().copied().max().unwrap_or(0);
    let nofile = limits::raise_nofile(limits::WANT_NOFILE);
    let needed = if with_streams {
        top + WARMUP_SESSIONS + 64
    } else {
        64
    };
    if (nofile as usize) < needed {
        bail!("RLIMIT_NOFILE is {nofile}, {needed} file descriptors needed");
    }
    let timeout = secs(args.request_timeout);
    let streams = with_streams.then(|| Streams::new(None));
    let proto = Arc::new(proto.clone());

    let (mut held, warm_errors) =
        open_many(args, &proto, WARMUP_SESSIONS, 1, streams.as_ref()).await?;
    // Documented settle interval before each RSS reading.
    tokio::time::sleep(secs(args.settle)).await;
    let before = procfs::tree_memory(pid)?;
    let mut errors = Some(warm_errors);

    let mut out = Vec::with_capacity(steps.len());
    let mut opened = 0usize;
    // Seconds per session opened and KiB per session of the last step, for projections.
    let mut rate: Option<(f64, f64)> = None;
    let mut stop: Option<String> = None;
    for &target in &steps {
        let meter = procfs::Meter::start();
        let t_run = Instant::now();
        let mut rec = base.clone();
        rec.point = Some(target as u64);
        let more = target.saturating_sub(opened);
        if stop.is_none()
            && let Some((s_per, kib_per)) = rate
        {
            let eta = s_per * more as f64;
            let rss = procfs::tree_memory(pid)?.rss_kib as f64 + kib_per * more as f64;
            if eta > args.step_budget {
                stop = Some(format!(
                    "projected {eta:.0} s to open {more} more sessions (budget {:.0} s)",
                    args.step_budget
                ));
            } else if rss / 1024.0 > args.max_rss_mib as f64 {
                stop = Some(format!(
                    "projected server RSS {:.0} MiB (cap {} MiB)",
                    rss / 1024.0,
                    args.max_rss_mib
                ));
            }
        }
        if let Some(why) = &stop {
            rec.skipped = Some(why.clone());
            out.push(rec);
            continue;
        }
        let mut step_errors = errors.take().unwrap_or_default();
        let t0 = Instant::now();
        let (new, e) = open_many(
            args,
            &proto,
            more,
            args.hold_parallel.max(1),
            streams.as_ref(),
        )
        .await?;
        let open_s = t0.elapsed().as_secs_f64();
        step_errors.merge(e);
        opened += new.len();
        held.extend(new);
        tokio::time::sleep(secs(args.settle)).await;
        let after = procfs::tree_memory(pid)?;
        let still_open = streams.as_ref().map_or(0, Streams::open_now);

        // The first and the last held sessions must still work; then new sessions are timed
        // while all of them are held.
        let mut conn = client::connect(args.addr).await?;
        let mut ok = 0;
        for (n, s) in [held.first(), held.last()]
            .into_iter()
            .flatten()
            .enumerate()
        {
            match session::call(&mut conn, &proto, &s.session, 1_000_000 + n as u64, timeout).await
            {
                Ok(()) => ok += 1,
                Err(e) => step_errors.add(format!("held session no longer answers: {e:#}")),
            }
        }
        let fresh = super::setup::fresh_sessions(args, &proto, args.fresh).await?;
        ok += fresh.ok;
        step_errors.merge(fresh.errors);
        if with_streams && still_open < held.len() {
            step_errors.add(format!(
                "{} of {} GET streams closed early",
                held.len() - still_open,
                held.len()
            ));
        }

        rec.held = Some(opened);
        rec.ok = ok;
        rec.errors = step_errors.count;
        rec.error_samples = step_errors.samples;
        rec.rss_before_kib = Some(before.rss_kib);
        rec.rss_after_kib = Some(after.rss_kib);
        rec.rss_kib = Some(after.rss_kib);
        rec.hwm_kib = Some(after.hwm_kib);
        rec.open_s = Some(open_s);
        rec.connections = Some(crate::client::dialled());
        rec.fresh_p50_us = fresh.p50_us;
        let kib = (after.rss_kib as f64 - before.rss_kib as f64) / opened.max(1) as f64;
        if opened > 0 {
            rec.kib_per_session = Some(kib);
        }
        if more > 0 {
            rate = Some((open_s / more as f64, kib.max(0.0)));
        }
        if with_streams {
            rec.open_streams = Some(still_open);
        }
        rec.set_load(meter.finish(Some(pid)), t_run.elapsed().as_secs_f64());
        out.push(rec);
    }
    Ok(out)
}

/// A session kept open, with its GET stream's task when there is one.
pub(super) struct Held {
    pub(super) session: Session,
    _stream: Option<tokio::task::JoinHandle<()>>,
}

/// Opens `n` sessions, `parallel` at a time, each with a GET stream when `streams` is given;
/// failures are counted, not fatal.
pub(super) async fn open_many(
    args: &RunArgs,
    proto: &Arc<Proto>,
    n: usize,
    parallel: usize,
    streams: Option<&Streams>,
) -> anyhow::Result<(Vec<Held>, Errors)> {
    let timeout = secs(args.request_timeout);
    let mut workers = Vec::with_capacity(parallel);
    for w in 0..parallel {
        let count = n / parallel + usize::from(w < n % parallel);
        let proto = Arc::clone(proto);
        let streams = streams.cloned();
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
                match hold_one(c, &proto, addr, streams.as_ref(), i as u64 + 1, timeout).await {
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
    streams: Option<&Streams>,
    id: u64,
    timeout: Duration,
) -> anyhow::Result<Held> {
    let session = session::open(conn, proto, timeout).await?;
    session::call(conn, proto, &session, id, timeout).await?;
    let stream = match streams {
        Some(s) => Some(s.get(proto, &session, addr).await?),
        None => None,
    };
    Ok(Held {
        session,
        _stream: stream,
    })
}
