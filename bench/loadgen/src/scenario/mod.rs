//! The scenarios of `mcpbench run`, and what they share: the target server, latency histograms
//! and the common fields of a result.
//!
//! * `load`: fixed in-flight operations over a window: latency, throughput, many sessions,
//!   streaming, and the concurrency, result-size and tools/list sweeps;
//! * `hold`: RSS per held session, with or without an open GET stream each, in steps;
//! * `setup`: new connection + session + first call, one after another;
//! * `cold`: spawn the server and time its first correct answer;
//! * `fanout`: one list change delivered to many open streams (`streams`: the held streams);
//! * `chunks`: how SSE answers are framed on the wire;
//! * `stdio`: a stdio server called directly (the baseline of a gateway's added latency);
//! * `wait` (in `load`): a tool that waits on Redis and a slow HTTP service, 50 in flight.
//!
//! Every record carries the machine's load around its run (`procfs::Meter`).

mod chunks;
mod cold;
mod fanout;
mod hold;
mod load;
mod setup;
mod stdio;
mod streams;

use std::time::Duration;

use anyhow::Context as _;
use hdrhistogram::Histogram;

use crate::check::Expect;
use crate::cli::{RunArgs, Scenario};
use crate::procfs;
use crate::proto::Proto;
use crate::record::Record;
use load::{Shape, Work};

/// Default points of the sweeps.
const CONC_POINTS: [u64; 5] = [1, 4, 16, 64, 256];
const SIZE_POINTS: [u64; 3] = [100, 10 * 1024, 1024 * 1024];

/// Requests in flight of `wait`: the 50 users of the TM Dev Lab benchmark (issue 29).
const WAIT_IN_FLIGHT: usize = 50;

/// Read buffer of the `size` sweep's connections unless `--read-buf` is given.
const SIZE_READ_BUF: usize = 256 * 1024;

/// Highest latency a histogram records, µs (longer ones saturate here).
const MAX_LATENCY_US: u64 = 120_000_000;

/// A new latency histogram in µs with 3 significant digits.
pub(crate) fn histogram() -> anyhow::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).context("latency histogram")
}

/// Writes p50/p90/p99/max of `h` into `rec` (left out when `h` is empty).
pub(crate) fn fill_latency(rec: &mut Record, h: &Histogram<u64>) {
    if h.is_empty() {
        return;
    }
    let q = |x: f64| Some(h.value_at_quantile(x) as f64);
    rec.p50_us = q(0.50);
    rec.p90_us = q(0.90);
    rec.p99_us = q(0.99);
    rec.max_us = Some(h.max() as f64);
}

/// Elapsed time in whole µs (at least 1).
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// Runs the scenario named in `args` and writes its result lines (one per sweep point).
pub(crate) async fn run(args: RunArgs) -> anyhow::Result<()> {
    let mut proto = Proto::new(
        args.addr,
        &args.path,
        &args.protocol_version,
        args.stateless,
    )
    .context("building the request templates")?;
    if args.http2 {
        crate::client::use_http2(args.h2_streams);
        proto = proto.absolute(args.addr)?;
    }
    if let Some(token) = &args.bearer {
        proto = proto.bearer(token).context("--bearer")?;
    }
    let base = Record {
        server: args.label.clone(),
        scenario: args.scenario.name().to_owned(),
        rep: args.rep,
        protocol: proto.version.clone(),
        era: proto.era.name().to_owned(),
        http: args.http2.then(|| "h2".to_owned()),
        ..Record::default()
    };
    let records = match args.scenario {
        Scenario::Hold => hold::run(&args, &proto, &base, false).await?,
        Scenario::Streams => hold::run(&args, &proto, &base, true).await?,
        Scenario::Fanout => fanout::run(&args, &proto, &base).await?,
        Scenario::Conc | Scenario::Size => sweep(&args, &proto, &base).await?,
        _ => {
            let meter = procfs::Meter::start();
            let t0 = std::time::Instant::now();
            let mut rec = base.clone();
            single(&args, &proto, &mut rec).await?;
            rec.set_load(meter.finish(args.server_pid), t0.elapsed().as_secs_f64());
            vec![rec]
        }
    };
    for rec in &records {
        rec.write(args.out.as_deref())?;
        if rec.errors > 0 {
            eprintln!(
                "mcpbench: {} {} {}: {} errors, e.g. {:?}",
                rec.server,
                rec.scenario,
                rec.point.map(|p| p.to_string()).unwrap_or_default(),
                rec.errors,
                rec.error_samples
            );
        }
    }
    Ok(())
}

/// The scenarios with one record.
async fn single(args: &RunArgs, proto: &Proto, rec: &mut Record) -> anyhow::Result<()> {
    let hello = Work::hello(proto)?;
    match args.scenario {
        Scenario::Latency => {
            load::run(args, proto, rec, Shape::from_args(args, 1, 1), &hello).await
        }
        Scenario::Throughput => {
            load::run(args, proto, rec, Shape::from_args(args, 1, 32), &hello).await
        }
        Scenario::Sessions => {
            load::run(args, proto, rec, Shape::from_args(args, 32, 64), &hello).await
        }
        Scenario::Stream => {
            let count = args.stream_count;
            let work = Work::Call {
                template: proto.tool("stream", &format!(r#"{{"count":{count}}}"#), true)?,
                expect: Expect::Stream(count),
            };
            load::run(args, proto, rec, Shape::from_args(args, 1, 32), &work).await
        }
        Scenario::Tools => {
            let n = args.points.first().copied().unwrap_or(0);
            rec.point = Some(n);
            let work = Work::ListAll {
                min_tools: n as usize,
            };
            load::run(args, proto, rec, Shape::from_args(args, 1, 4), &work).await
        }
        Scenario::Wait => {
            let work = Work::Call {
                template: proto.tool("hello_wait", r#"{"user_name":"bench"}"#, false)?,
                // The greeting comes from Redis: `Hello World`, seeded by run.sh.
                expect: Expect::Hello,
            };
            load::run(
                args,
                proto,
                rec,
                Shape::from_args(args, 1, WAIT_IN_FLIGHT),
                &work,
            )
            .await
        }
        Scenario::Setup => setup::run(args, proto, rec).await,
        Scenario::Cold => cold::run(args, proto, rec).await,
        Scenario::Chunks => chunks::run(args, proto, rec).await,
        Scenario::Stdio => stdio::run(args, rec).await,
        Scenario::Hold | Scenario::Streams | Scenario::Fanout | Scenario::Conc | Scenario::Size => {
            anyhow::bail!("{} has a record per point", args.scenario.name())
        }
    }
}

/// The concurrency and result-size sweeps: one load run per point on the same server, each
/// with its own connections, session, warm-up and window.
async fn sweep(args: &RunArgs, proto: &Proto, base: &Record) -> anyhow::Result<Vec<Record>> {
    let size = args.scenario == Scenario::Size;
    let defaults: &[u64] = if size { &SIZE_POINTS } else { &CONC_POINTS };
    let points = if args.points.is_empty() {
        defaults.to_vec()
    } else {
        args.points.clone()
    };
    let mut args = args.clone();
    if size && args.read_buf.is_none() {
        args.read_buf = Some(SIZE_READ_BUF);
    }
    let mut out = Vec::with_capacity(points.len());
    for p in points {
        let meter = procfs::Meter::start();
        let t0 = std::time::Instant::now();
        let mut rec = base.clone();
        rec.point = Some(p);
        let (work, shape) = if size {
            let work = Work::Call {
                template: proto.tool("blob", &format!(r#"{{"bytes":{p}}}"#), false)?,
                expect: Expect::Blob(p as usize),
            };
            (work, Shape::from_args(&args, 1, 16))
        } else {
            let shape = Shape {
                sessions: args.sessions.unwrap_or(1).max(1),
                concurrency: p.max(1) as usize,
            };
            (Work::hello(proto)?, shape)
        };
        load::run(&args, proto, &mut rec, shape, &work).await?;
        rec.set_load(meter.finish(args.server_pid), t0.elapsed().as_secs_f64());
        out.push(rec);
    }
    Ok(out)
}

/// Duration from seconds given on the command line (negative or NaN become zero).
pub(crate) fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}
