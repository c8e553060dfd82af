//! `mcpbench check`: pass/fail over result lines, for the CI smoke.
//!
//! Fails when any run counted an error, when a run measured nothing it should have (no
//! throughput in a load scenario, no session held, no setup, no cold start), or when an
//! expected server has no results at all. Prints one line per run either way.

use anyhow::bail;

use crate::cli::CheckArgs;
use crate::record::Record;

/// What is wrong with one run, if anything.
fn problem(r: &Record) -> Option<String> {
    if r.errors > 0 {
        return Some(format!(
            "{} errors: {}",
            r.errors,
            r.error_samples.join("; ")
        ));
    }
    if r.skipped.is_some() {
        return None;
    }
    let measured = match r.scenario.as_str() {
        "latency" | "throughput" | "sessions" | "stream" | "conc" | "size" | "tools" | "stdio"
        | "wait" => r.rps.is_some_and(|x| x > 0.0),
        "fanout" => r.fanout_last_ms.is_some(),
        "chunks" => r.chunks_per_event.is_some(),
        "hold" | "streams" => r.held.is_some_and(|n| n > 0),
        "setup" => r.ok > 0 && r.p50_us.is_some(),
        "cold" => r.cold_ms.is_some(),
        _ => false,
    };
    (!measured).then(|| "nothing measured".to_owned())
}

/// Runs `check`.
pub(crate) fn run(args: &CheckArgs) -> anyhow::Result<()> {
    let mut records = Vec::new();
    for p in &args.results {
        records.extend(Record::read_all(p)?);
    }
    let mut failures = 0;
    for r in &records {
        let figure = r
            .rps
            .map(|x| format!("{x:.0} req/s"))
            .or(r.kib_per_session.map(|k| format!("{k:.1} KiB/session")))
            .or(r
                .fanout_last_ms
                .map(|ms| format!("last stream after {ms:.1} ms")))
            .or(r
                .chunks_per_event
                .map(|c| format!("{c:.2} chunks per event")))
            .or(r.cold_ms.map(|ms| format!("{ms:.1} ms")))
            .or(r.p50_us.map(|us| format!("p50 {us:.0} µs")))
            .unwrap_or_default();
        match problem(r) {
            None => println!(
                "ok    {:<20} {:<10} {:>8} {figure}",
                r.server,
                r.scenario,
                r.point.map(|p| p.to_string()).unwrap_or_default()
            ),
            Some(why) => {
                failures += 1;
                println!("FAIL  {:<20} {:<10} {why}", r.server, r.scenario);
            }
        }
    }
    for server in &args.expect {
        if !records.iter().any(|r| &r.server == server) {
            failures += 1;
            println!("FAIL  {server:<20} no results");
        }
    }
    if failures > 0 {
        bail!(
            "{failures} of {} checks failed",
            records.len() + args.expect.len()
        );
    }
    println!("{} passed, 0 failed", records.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_errors_and_empty_runs() {
        let ok = Record {
            scenario: "throughput".into(),
            rps: Some(10.0),
            ok: 10,
            ..Record::default()
        };
        assert_eq!(problem(&ok), None);
        let err = Record {
            errors: 1,
            ..ok.clone()
        };
        assert!(problem(&err).is_some());
        let zero = Record {
            rps: Some(0.0),
            ..ok
        };
        assert!(problem(&zero).is_some());
        let cold = Record {
            scenario: "cold".into(),
            ..Record::default()
        };
        assert!(problem(&cold).is_some());
    }
}
