//! Load scenarios: S sessions, C requests in flight, a warm-up, then a measured window.
//!
//! Each in-flight slot owns one keep-alive HTTP/1.1 connection and uses session `slot % S`
//! (wrk-style closed loop: a slot sends its next request when the previous answer is complete).
//! Latency runs from just before the request is handed to hyper to the end of the response
//! body. A correct answer counts toward throughput and latency if it completes inside the
//! window (throughput = correct answers per second of window); a wrong answer or a failed
//! request counts as an error whenever it happens, warm-up included. Server CPU is read from `/proc` at both edges of the window.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use hdrhistogram::Histogram;
use tokio::time::Instant;

use super::{fill_latency, histogram, micros, secs};
use crate::cli::RunArgs;
use crate::client::{self, Conn};
use crate::proto::{Proto, Session};
use crate::record::{Errors, Record};
use crate::{procfs, session};

/// What one slot counted inside the window.
struct SlotStats {
    latency: Histogram<u64>,
    ok: u64,
    errors: Errors,
}

/// The JSON-RPC ids of one slot: an arithmetic sequence disjoint from the other slots'.
#[derive(Clone, Copy)]
struct Ids {
    next: u64,
    step: u64,
}

/// Window edges shared by the slots.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

/// Runs `concurrency` slots over `sessions` sessions and fills `rec`.
pub(super) async fn run(
    args: &RunArgs,
    proto: &Proto,
    rec: &mut Record,
    default_sessions: usize,
    default_concurrency: usize,
) -> anyhow::Result<()> {
    let sessions = args.sessions.unwrap_or(default_sessions).max(1);
    let concurrency = args.concurrency.unwrap_or(default_concurrency).max(1);
    if sessions > concurrency {
        bail!("{sessions} sessions need at least as many requests in flight");
    }
    let timeout = secs(args.request_timeout);
    let mut conns = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        conns.push(client::connect(args.addr).await?);
    }
    let mut opened: Vec<Session> = Vec::with_capacity(sessions);
    for (i, conn) in conns.iter_mut().take(sessions).enumerate() {
        opened.push(
            session::open(conn, proto, timeout)
                .await
                .with_context(|| format!("opening session {i}"))?,
        );
    }

    let proto = Arc::new(proto.clone());
    let warmup = secs(args.warmup);
    let window_len = secs(args.duration);
    let start = Instant::now() + warmup;
    let window = Window {
        start,
        end: start + window_len,
    };
    let mut slots = Vec::with_capacity(concurrency);
    for (i, conn) in conns.into_iter().enumerate() {
        let session = opened[i % sessions].clone();
        let proto = Arc::clone(&proto);
        let addr = args.addr;
        // JSON-RPC ids must be unique among a session's outstanding requests: slot i sends
        // i+1, i+1+C, i+1+2C, ...
        let ids = Ids {
            next: i as u64 + 1,
            step: concurrency as u64,
        };
        slots.push(tokio::spawn(slot(
            conn, proto, session, ids, window, timeout, addr,
        )));
    }

    // Documented warm-up: the slots run unmeasured until the window opens.
    tokio::time::sleep_until(window.start).await;
    let pid = args.server_pid;
    let cpu0 = pid.map(procfs::tree_cpu).transpose()?;
    let self0 = procfs::self_cpu();
    let machine0 = procfs::machine_cpu();
    tokio::time::sleep_until(window.end).await;
    let cpu1 = pid.map(procfs::tree_cpu).transpose()?;
    let self1 = procfs::self_cpu();
    let machine1 = procfs::machine_cpu();
    let mem = pid.map(procfs::tree_memory).transpose()?;

    let mut latency = histogram()?;
    let mut ok = 0;
    let mut errors = Errors::default();
    for s in slots {
        let s = s.await.context("load slot panicked")??;
        latency.add(&s.latency).context("merging histograms")?;
        ok += s.ok;
        errors.merge(s.errors);
    }

    let window_s = window_len.as_secs_f64();
    rec.sessions = Some(sessions);
    rec.concurrency = Some(concurrency);
    rec.window_s = Some(window_s);
    rec.ok = ok;
    rec.errors = errors.count;
    rec.error_samples = errors.samples;
    rec.rps = Some(ok as f64 / window_s);
    fill_latency(rec, &latency);
    if let (Some(c0), Some(c1)) = (cpu0, cpu1) {
        let used = c1 - c0;
        rec.server_cpu_pct = Some(100.0 * used / window_s);
        if ok > 0 {
            rec.cpu_us_per_op = Some(used * 1e6 / ok as f64);
        }
    }
    rec.loadgen_cpu_pct = Some(100.0 * (self1 - self0) / window_s);
    if let (Some((busy0, steal0)), Some((busy1, steal1)), Some(c0), Some(c1)) =
        (machine0, machine1, cpu0, cpu1)
    {
        let other = (busy1 - busy0) - (c1 - c0) - (self1 - self0);
        rec.other_cpu_pct = Some((100.0 * other / window_s).max(0.0));
        rec.steal_pct = Some(100.0 * (steal1 - steal0) / window_s);
    }
    if let Some(m) = mem {
        rec.rss_kib = Some(m.rss_kib);
        rec.hwm_kib = Some(m.hwm_kib);
    }
    Ok(())
}

/// One in-flight slot: request, wait for the whole answer, check it, repeat until the window
/// closes. A failed connection is replaced and the failure counted.
async fn slot(
    mut conn: Conn,
    proto: Arc<Proto>,
    session: Session,
    mut ids: Ids,
    window: Window,
    timeout: Duration,
    addr: std::net::SocketAddr,
) -> anyhow::Result<SlotStats> {
    let mut stats = SlotStats {
        latency: histogram()?,
        ok: 0,
        errors: Errors::default(),
    };
    loop {
        let id = ids.next;
        ids.next += ids.step;
        let sent = Instant::now();
        if sent >= window.end {
            break;
        }
        let outcome = conn.send(proto.call(id, &session), timeout).await;
        let done = Instant::now();
        let broken = outcome.is_err();
        let outcome = outcome.and_then(|answer| Ok(crate::check::tool_call(&answer, id)?));
        let counted = done >= window.start && done < window.end;
        match outcome {
            Ok(()) if counted => {
                stats.ok += 1;
                stats.latency.saturating_record(micros(done - sent));
            }
            Ok(()) => {}
            Err(e) => stats.errors.add(e),
        }
        if broken {
            // The connection is unusable: replace it, or stop this slot if the server is gone.
            match client::connect(addr).await {
                Ok(c) => conn = c,
                Err(e) => {
                    stats.errors.add(format!("reconnect: {e:#}"));
                    break;
                }
            }
        }
    }
    Ok(stats)
}
