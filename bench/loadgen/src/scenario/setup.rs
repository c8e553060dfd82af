//! Setup scenario: the cost of a new client, one after another.
//!
//! Each of 10 unmeasured then `--setup-count` measured sessions uses a new TCP connection:
//! connect, initialize and initialized (together the "handshake"; for stateless eras, the
//! connect alone), then the first `tools/call`; then an untimed DELETE and close. Server CPU per
//! new session is read over the measured part.

use anyhow::Context as _;
use tokio::time::Instant;

use super::{fill_latency, histogram, micros, secs};
use crate::cli::RunArgs;
use crate::proto::Proto;
use crate::record::{Errors, Record};
use crate::{client, procfs, session};

/// Unmeasured sessions before the measured ones.
const WARMUP: usize = 10;

/// One new session on a new connection: connect, open, first call (timed), then an untimed
/// DELETE. Returns when the handshake and the call ended.
async fn one(
    args: &RunArgs,
    proto: &Proto,
    timeout: std::time::Duration,
) -> anyhow::Result<(Instant, Instant)> {
    let mut conn = client::connect(args.addr).await?;
    let s = session::open(&mut conn, proto, timeout).await?;
    let t1 = Instant::now();
    session::call(&mut conn, proto, &s, 1, timeout).await?;
    let t2 = Instant::now();
    session::close(&mut conn, proto, &s, timeout).await?;
    Ok((t1, t2))
}

/// What [`fresh_sessions`] measured.
pub(super) struct Fresh {
    pub(super) ok: u64,
    pub(super) errors: Errors,
    pub(super) p50_us: Option<f64>,
}

/// `n` new sessions one after another (as in `setup`, without warm-up): p50 of the whole.
pub(super) async fn fresh_sessions(
    args: &RunArgs,
    proto: &Proto,
    n: usize,
) -> anyhow::Result<Fresh> {
    let timeout = secs(args.request_timeout);
    let mut total = histogram()?;
    let mut errors = Errors::default();
    let mut ok = 0;
    for _ in 0..n {
        let t0 = Instant::now();
        match one(args, proto, timeout).await {
            Ok((_, t2)) => {
                ok += 1;
                total.saturating_record(micros(t2 - t0));
            }
            Err(e) => errors.add(e),
        }
    }
    Ok(Fresh {
        ok,
        errors,
        p50_us: (!total.is_empty()).then(|| total.value_at_quantile(0.5) as f64),
    })
}

/// Runs `setup` and fills `rec`.
pub(super) async fn run(args: &RunArgs, proto: &Proto, rec: &mut Record) -> anyhow::Result<()> {
    let timeout = secs(args.request_timeout);
    let mut total = histogram()?;
    let mut handshake = histogram()?;
    let mut errors = Errors::default();
    let mut ok = 0;
    let mut cpu0 = None;
    for i in 0..WARMUP + args.setup_count {
        if i == WARMUP {
            cpu0 = args.server_pid.map(procfs::tree_cpu).transpose()?;
        }
        let t0 = Instant::now();
        match one(args, proto, timeout).await {
            Ok((t1, t2)) if i >= WARMUP => {
                ok += 1;
                handshake.saturating_record(micros(t1 - t0));
                total.saturating_record(micros(t2 - t0));
            }
            Ok(_) => {}
            Err(e) => errors.add(e),
        }
    }
    let cpu1 = args
        .server_pid
        .map(procfs::tree_cpu)
        .transpose()
        .context("server CPU")?;
    rec.sessions = Some(args.setup_count);
    rec.ok = ok;
    rec.errors = errors.count;
    rec.error_samples = errors.samples;
    fill_latency(rec, &total);
    if !handshake.is_empty() {
        rec.handshake_p50_us = Some(handshake.value_at_quantile(0.5) as f64);
    }
    if let (Some(c0), Some(c1)) = (cpu0, cpu1)
        && ok > 0
    {
        rec.cpu_us_per_op = Some((c1 - c0) * 1e6 / ok as f64);
    }
    if let Some(pid) = args.server_pid {
        let m = procfs::tree_memory(pid)?;
        rec.rss_kib = Some(m.rss_kib);
        rec.hwm_kib = Some(m.hwm_kib);
    }
    Ok(())
}
