//! `mcpbench compare`: a before/after table from one interleaved run (`run.sh --compare REV`).
//!
//! The runner measures every Vellum server twice per repetition, once as built from the
//! working tree and once as built from REV (its label prefixed with `base:`), one right after
//! the other. Machine speed drifts between repetitions far more than between two neighbouring
//! runs, so the figure to trust is the ratio within each repetition: this table gives the
//! median of both sides, the ratio of the medians, and the range of the per-repetition ratios.
//! A range that holds 1.00 is "within noise".

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Context as _;

use crate::cli::CompareArgs;
use crate::record::Record;
use crate::stats::median;

/// One figure compared: its column name, how to read it, which way is better, and the
/// scenarios it means something in (empty: any that records it; the load scenarios also fill
/// the per-message figures, which there only repeat the per-request ones).
struct Figure {
    name: &'static str,
    read: fn(&Record) -> Option<f64>,
    higher_is_better: bool,
    only: &'static [&'static str],
}

/// The figures worth comparing; a scenario shows those its records carry.
const FIGURES: &[Figure] = &[
    fig("req/s", |r| r.rps, HIGHER, &[]),
    fig("p50 µs", |r| r.p50_us, LOWER, &[]),
    fig("p99 µs", |r| r.p99_us, LOWER, &[]),
    fig("CPU µs/req", |r| r.cpu_us_per_op, LOWER, &[]),
    fig("msg/s", |r| r.events_per_s, HIGHER, &["stream"]),
    fig("CPU µs/msg", |r| r.cpu_us_per_event, LOWER, &["stream"]),
    fig("MB/s", |r| r.mb_per_s, HIGHER, &["size"]),
    fig("KiB/session", |r| r.kib_per_session, LOWER, &[]),
    fig("new session p50 µs", |r| r.fresh_p50_us, LOWER, &[]),
    fig("handshake p50 µs", |r| r.handshake_p50_us, LOWER, &[]),
    fig("fan-out last ms", |r| r.fanout_last_ms, LOWER, &[]),
    fig("cold start ms", |r| r.cold_ms, LOWER, &[]),
    fig("RSS KiB", |r| r.rss_kib.map(|v| v as f64), LOWER, &[]),
];

const HIGHER: bool = true;
const LOWER: bool = false;

const fn fig(
    name: &'static str,
    read: fn(&Record) -> Option<f64>,
    higher_is_better: bool,
    only: &'static [&'static str],
) -> Figure {
    Figure {
        name,
        read,
        higher_is_better,
        only,
    }
}

/// Records of one (server, scenario, point) on one side, by repetition.
type Reps<'a> = BTreeMap<u32, Vec<&'a Record>>;

/// Runs `compare`: prints the table and writes it to `--markdown` when given.
pub(crate) fn write(args: &CompareArgs) -> anyhow::Result<()> {
    let mut records = Vec::new();
    for path in &args.results {
        records.extend(Record::read_all(path)?);
    }
    anyhow::ensure!(!records.is_empty(), "no results in {:?}", args.results);
    let text = table(
        &records,
        &args.base_prefix,
        &args.base_label,
        &args.new_label,
    );
    print!("{text}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Key of a row: server (without the base prefix), scenario, sweep point.
type Key = (String, String, Option<u64>);

fn table(records: &[Record], prefix: &str, base_label: &str, new_label: &str) -> String {
    let mut new: BTreeMap<Key, Reps<'_>> = BTreeMap::new();
    let mut base: BTreeMap<Key, Reps<'_>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.skipped.is_none()) {
        let (side, server) = match r.server.strip_prefix(prefix) {
            Some(s) => (&mut base, s),
            None => (&mut new, r.server.as_str()),
        };
        let key = (server.to_owned(), r.scenario.clone(), r.point);
        side.entry(key)
            .or_default()
            .entry(r.rep)
            .or_default()
            .push(r);
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "| server | scenario | figure | {base_label} | {new_label} | ratio | per-rep ratios | reps | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    let mut rows = 0;
    for (key, new_reps) in &new {
        let Some(base_reps) = base.get(key) else {
            continue;
        };
        for figure in FIGURES {
            if !figure.only.is_empty() && !figure.only.contains(&key.1.as_str()) {
                continue;
            }
            if let Some(row) = compare(figure, base_reps, new_reps) {
                let (server, scenario, point) = key;
                let scenario = match point {
                    Some(p) => format!("{scenario} @ {p}"),
                    None => scenario.clone(),
                };
                let _ = writeln!(out, "| {server} | {scenario} | {} | {row} |", figure.name);
                rows += 1;
            }
        }
    }
    if rows == 0 {
        let _ = writeln!(
            out,
            "| (no server was measured on both sides: was the run made with --compare?) |||||||||"
        );
    }
    let failed: Vec<&str> = records
        .iter()
        .filter(|r| r.errors > 0)
        .map(|r| r.server.as_str())
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\nruns with errors: {}", failed.join(", "));
    }
    out
}

/// The row's cells after the figure's name, or `None` when a side lacks the figure.
fn compare(figure: &Figure, base: &Reps<'_>, new: &Reps<'_>) -> Option<String> {
    let side = |reps: &Reps<'_>| -> BTreeMap<u32, f64> {
        reps.iter()
            .filter_map(|(rep, rs)| {
                Some((
                    *rep,
                    median(rs.iter().filter_map(|r| (figure.read)(r)).collect())?,
                ))
            })
            .collect()
    };
    let (b, n) = (side(base), side(new));
    let bm = median(b.values().copied().collect())?;
    let nm = median(n.values().copied().collect())?;
    if bm == 0.0 {
        return None;
    }
    let ratio = nm / bm;
    let pairs: Vec<f64> = n
        .iter()
        .filter_map(|(rep, v)| b.get(rep).filter(|bv| **bv != 0.0).map(|bv| v / bv))
        .collect();
    let lo = pairs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pairs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let range = if pairs.is_empty() {
        "–".to_owned()
    } else {
        format!("{lo:.2}–{hi:.2}")
    };
    let verdict = if pairs.len() < 2 || (lo <= 1.0 && hi >= 1.0) {
        "within noise"
    } else if (lo > 1.0) == figure.higher_is_better {
        "better"
    } else {
        "worse"
    };
    Some(format!(
        "{} | {} | {ratio:.2}x | {range} | {} | {verdict}",
        cell(bm),
        cell(nm),
        pairs.len()
    ))
}

fn cell(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(server: &str, rep: u32, rps: f64) -> Record {
        Record {
            server: server.into(),
            scenario: "throughput".into(),
            rep,
            rps: Some(rps),
            ..Record::default()
        }
    }

    #[test]
    fn pairs_by_repetition_and_judges_the_range() {
        let records = vec![
            rec("base:vellum", 1, 100.0),
            rec("vellum", 1, 110.0),
            rec("base:vellum", 2, 50.0),
            rec("vellum", 2, 56.0),
            rec("base:vellum", 3, 80.0),
            rec("vellum", 3, 84.0),
            rec("rmcp", 1, 70.0),
        ];
        let t = table(&records, "base:", "main", "tree");
        assert!(
            t.contains(
                "| vellum | throughput | req/s | 80.00 | 84.00 | 1.05x | 1.05–1.12 | 3 | better |"
            ),
            "{t}"
        );
        assert!(!t.contains("rmcp"), "{t}");
    }

    #[test]
    fn a_range_across_one_is_noise() {
        let records = vec![
            rec("base:vellum", 1, 100.0),
            rec("vellum", 1, 90.0),
            rec("base:vellum", 2, 100.0),
            rec("vellum", 2, 120.0),
        ];
        assert!(table(&records, "base:", "a", "b").contains("within noise"));
    }
}
