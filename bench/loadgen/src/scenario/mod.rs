//! The scenarios of `mcpbench run`, and what they share: the target server, latency histograms
//! and the common fields of a result.
//!
//! * `load`: latency, throughput and many-sessions (fixed in-flight requests over a window);
//! * `hold`: RSS per held session, with or without an open GET stream each;
//! * `setup`: new connection + session + first call, one after another;
//! * `cold`: spawn the server and time its first correct answer.

mod cold;
mod hold;
mod load;
mod setup;

use std::time::Duration;

use anyhow::Context as _;
use hdrhistogram::Histogram;

use crate::cli::{RunArgs, Scenario};
use crate::proto::Proto;
use crate::record::Record;

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

/// Runs the scenario named in `args` and writes its result line.
pub(crate) async fn run(args: RunArgs) -> anyhow::Result<()> {
    let proto = Proto::new(
        args.addr,
        &args.path,
        &args.protocol_version,
        args.stateless,
    )
    .context("building the request templates")?;
    let mut rec = Record {
        server: args.label.clone(),
        scenario: args.scenario.name().to_owned(),
        rep: args.rep,
        protocol: proto.version.clone(),
        era: proto.era.name().to_owned(),
        ..Record::default()
    };
    match args.scenario {
        Scenario::Latency => load::run(&args, &proto, &mut rec, 1, 1).await?,
        Scenario::Throughput => load::run(&args, &proto, &mut rec, 1, 32).await?,
        Scenario::Sessions => load::run(&args, &proto, &mut rec, 32, 64).await?,
        Scenario::Hold => hold::run(&args, &proto, &mut rec, false).await?,
        Scenario::Streams => hold::run(&args, &proto, &mut rec, true).await?,
        Scenario::Setup => setup::run(&args, &proto, &mut rec).await?,
        Scenario::Cold => cold::run(&args, &proto, &mut rec).await?,
    }
    rec.write(args.out.as_deref())?;
    if rec.errors > 0 {
        eprintln!(
            "mcpbench: {} {}: {} errors, e.g. {:?}",
            rec.server, rec.scenario, rec.errors, rec.error_samples
        );
    }
    Ok(())
}

/// Duration from seconds given on the command line (negative or NaN become zero).
pub(crate) fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}
