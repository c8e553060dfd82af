//! Fan-out: one change of the tool list delivered to many open streams.
//!
//! For each step N of `--points` (cumulative), streams are opened up to N: a session with its
//! GET stream each (legacy), or one `subscriptions/listen` stream for tool list changes each
//! (2026-07-28, acknowledged before it counts). Then `--rounds` times, a `touch` call (which
//! adds or removes a tool) is sent on a connection of its own, and the time is taken from
//! just before it is sent until the first and until the last stream has its
//! `notifications/tools/list_changed`. A round in which some stream has no notification
//! within `--fanout-timeout` is an error. Server CPU over the rounds is divided by the
//! notifications delivered.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::time::Instant;

use super::hold::{Held, open_many};
use super::secs;
use super::streams::{Hub, Streams};
use crate::check::{self, Expect};
use crate::cli::RunArgs;
use crate::client;
use crate::proto::{Era, Proto};
use crate::record::{Errors, Record};
use crate::stats::median;
use crate::{limits, procfs, session};

/// Default steps.
const POINTS: [u64; 2] = [1_000, 10_000];

/// Runs `fanout`: one record per step.
pub(super) async fn run(
    args: &RunArgs,
    proto: &Proto,
    base: &Record,
) -> anyhow::Result<Vec<Record>> {
    let points: Vec<u64> = if args.points.is_empty() {
        POINTS.to_vec()
    } else {
        args.points.clone()
    };
    let top = points.iter().copied().max().unwrap_or(0) as usize;
    let nofile = limits::raise_nofile(limits::WANT_NOFILE);
    if (nofile as usize) < top + 64 {
        anyhow::bail!(
            "RLIMIT_NOFILE is {nofile}, {} file descriptors needed",
            top + 64
        );
    }
    let timeout = secs(args.request_timeout);
    let pid = args.server_pid;
    let hub = Hub::new();
    let streams = Streams::new(Some(Arc::clone(&hub)));
    let proto = Arc::new(proto.clone());
    let touch = proto.tool("touch", "{}", false)?;
    let mut control = client::connect(args.addr).await?;
    let control_session = session::open(&mut control, &proto, timeout)
        .await
        .context("opening the session that sends the changes")?;

    let mut held: Vec<Held> = Vec::new();
    let mut listens: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut out = Vec::with_capacity(points.len());
    let mut next_id = 10_000_000u64;
    for &n in &points {
        let meter = procfs::Meter::start();
        let t_run = Instant::now();
        let mut rec = base.clone();
        rec.point = Some(n);
        let mut errors = Errors::default();
        let have = streams.open_now();
        let more = (n as usize).saturating_sub(have);
        let t0 = Instant::now();
        if proto.era == Era::Session {
            let (new, e) = open_many(
                args,
                &proto,
                more,
                args.hold_parallel.max(1),
                Some(&streams),
            )
            .await?;
            held.extend(new);
            errors.merge(e);
        } else {
            let (new, e) = open_listens(args, &proto, &streams, more, next_id).await;
            next_id += more as u64;
            listens.extend(new);
            errors.merge(e);
        }
        rec.open_s = Some(t0.elapsed().as_secs_f64());
        let open = streams.open_now();
        rec.open_streams = Some(open);
        if open < n as usize {
            errors.add(format!("{open} of {n} streams open"));
        }

        let cpu0 = pid.map(procfs::tree_cpu).transpose()?;
        let (mut last, mut first) = (Vec::new(), Vec::new());
        let mut delivered = 0u64;
        for round in 0..args.rounds {
            hub.round(open as u64);
            next_id += 1;
            let sent = Instant::now();
            let req = proto.request(&touch, next_id, &control_session);
            // A server that tells each session in turn answers `touch` only when all are
            // told: give it the fan-out's time, not one request's.
            match control.send(req, secs(args.fanout_timeout)).await {
                Ok(answer) => {
                    if let Err(e) = check::tool_answer(&answer, next_id, Expect::Any) {
                        errors.add(format!("touch: {e}"));
                        continue;
                    }
                }
                Err(e) => {
                    errors.add(format!("touch: {e:#}"));
                    control = client::connect(args.addr).await?;
                    continue;
                }
            }
            match hub.wait(secs(args.fanout_timeout)).await {
                Ok((f, l)) => {
                    delivered += open as u64;
                    first.push(ms(f - sent));
                    last.push(ms(l - sent));
                }
                Err(seen) => {
                    delivered += seen;
                    errors.add(format!(
                        "round {}: {seen} of {open} streams had the change within {:?}",
                        round + 1,
                        secs(args.fanout_timeout)
                    ));
                }
            }
        }
        let cpu1 = pid.map(procfs::tree_cpu).transpose()?;
        if let (Some(c0), Some(c1)) = (cpu0, cpu1)
            && delivered > 0
        {
            rec.cpu_us_per_event = Some((c1 - c0) * 1e6 / delivered as f64);
        }
        rec.held = Some(open);
        rec.ok = last.len() as u64;
        rec.fanout_rounds = Some((last.len() as u32, args.rounds));
        rec.fanout_last_max_ms = last.iter().copied().reduce(f64::max);
        rec.fanout_last_ms = median(last);
        rec.fanout_first_ms = median(first);
        rec.errors = errors.count;
        rec.error_samples = errors.samples;
        if let Some(m) = pid.map(procfs::tree_memory).transpose()? {
            rec.rss_kib = Some(m.rss_kib);
            rec.hwm_kib = Some(m.hwm_kib);
        }
        rec.set_load(meter.finish(pid), t_run.elapsed().as_secs_f64());
        out.push(rec);
    }
    drop(held);
    for l in listens {
        l.abort();
    }
    Ok(out)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Opens `n` listen streams, `--hold-parallel` at a time; ids from `first_id` on.
async fn open_listens(
    args: &RunArgs,
    proto: &Arc<Proto>,
    streams: &Streams,
    n: usize,
    first_id: u64,
) -> (Vec<tokio::task::JoinHandle<()>>, Errors) {
    let parallel = args.hold_parallel.max(1);
    let mut workers = Vec::with_capacity(parallel);
    for w in 0..parallel {
        let count = n / parallel + usize::from(w < n % parallel);
        let proto = Arc::clone(proto);
        let streams = streams.clone();
        let addr = args.addr;
        workers.push(tokio::spawn(async move {
            let mut tasks = Vec::with_capacity(count);
            let mut errors = Errors::default();
            for i in 0..count {
                let id = first_id + (i * parallel + w) as u64;
                match streams.listen(&proto, addr, id).await {
                    Ok(t) => tasks.push(t),
                    Err(e) => errors.add(e),
                }
            }
            (tasks, errors)
        }));
    }
    let mut all = Vec::with_capacity(n);
    let mut errors = Errors::default();
    for w in workers {
        match w.await {
            Ok((tasks, e)) => {
                all.extend(tasks);
                errors.merge(e);
            }
            Err(e) => errors.add(format!("listen worker: {e}")),
        }
    }
    (all, errors)
}
