//! How far to trust the figures: the spread of every headline figure over the repetitions
//! (min / median / max, noisy rows marked), and what the rest of the machine did during the
//! runs (load average before and after, CPU of other processes, the busiest of them).

use std::fmt::Write as _;

use super::markdown::{DASH, MARK, NOISY, cell_text, dec, table};
use super::summary::{self as m, Metric, Summary};
use crate::record::Record;
use crate::stats::median;

/// Other CPU over a run above which the run is listed by name, % of one core.
const BUSY_RUN: f64 = 25.0;

/// The figures whose spread is shown, with their decimals.
const FIGURES: [(&str, Metric, usize); 12] = [
    ("latency p50 µs", m::LAT_P50, 0),
    ("throughput req/s", m::TPUT_RPS, 0),
    ("server CPU µs/req", m::TPUT_CPU, 1),
    ("sessions req/s", m::SESS_RPS, 0),
    ("wait req/s", m::WAIT_RPS, 0),
    ("wait p99 µs", m::WAIT_P99, 0),
    ("stream events/s", m::STREAM_EPS, 0),
    ("stream CPU µs/event", m::STREAM_CPU, 1),
    ("KiB per held session", m::HOLD_KIB, 1),
    ("KiB per session + stream", m::STREAMS_KIB, 1),
    ("new session p50 µs", m::SETUP_P50, 0),
    ("cold start ms", m::COLD_MS, 1),
];

/// min / median / max of `m` for `sv`, with the spread when noisy.
fn min_med_max(s: &Summary, sv: &str, metric: Metric, digits: usize) -> String {
    let v = s.values(sv, metric);
    if v.is_empty() {
        return DASH.to_owned();
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mid = median(v.clone());
    let text = format!(
        "{} / {} / {}",
        dec(Some(lo), digits),
        dec(mid, digits),
        dec(Some(hi), digits)
    );
    match s.spread(sv, metric) {
        Some(x) if x > NOISY => format!("{text} **noisy {:.0}%**", x * 100.0),
        _ => text,
    }
}

/// The spread table.
pub(crate) fn write_spread(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## Spread\n");
    let _ = writeln!(
        out,
        "min / median / max over the repetitions (the scaling curves' points are in their own \
         sections). **noisy N%**: max − min is more than {:.0}% of the median; such a median is \
         marked{MARK} in the tables above. A row with a noisy figure says the run should be \
         repeated before that figure is quoted.\n",
        NOISY * 100.0
    );
    let head: Vec<&str> = FIGURES.iter().map(|f| f.0).collect();
    table(out, s, &head, |sv| {
        FIGURES
            .iter()
            .map(|(_, metric, d)| min_med_max(s, sv, *metric, *d))
            .collect()
    });
    let noisy: Vec<String> = s
        .servers
        .iter()
        .flat_map(|sv| {
            FIGURES.iter().filter_map(move |(name, metric, _)| {
                s.spread(sv, *metric)
                    .filter(|x| *x > NOISY)
                    .map(|x| format!("`{sv}` {name} ({:.0}%)", x * 100.0))
            })
        })
        .collect();
    if noisy.is_empty() {
        let _ = writeln!(out, "No noisy figure.\n");
    } else {
        let _ = writeln!(out, "Noisy: {}.\n", noisy.join(", "));
    }
}

fn fold(rs: &[&Record], f: fn(&Record) -> Option<f64>, pick: fn(f64, f64) -> f64) -> Option<f64> {
    rs.iter().filter_map(|r| f(r)).reduce(pick)
}

/// Two sentences on the machine's load, near the top of the report.
pub(crate) fn write_load_summary(out: &mut String, s: &Summary) {
    let all: Vec<f64> = s
        .records
        .iter()
        .filter_map(|r| r.run_other_cpu_pct)
        .collect();
    if all.is_empty() {
        return;
    }
    let busy = all.iter().filter(|x| **x > BUSY_RUN).count();
    let refs: Vec<&Record> = s.records.iter().collect();
    let _ = writeln!(
        out,
        "Machine load during the runs: other processes used a median {:.0}% and at most {:.0}% \
         of one core; load average {}–{}; {busy} of {} runs had other work above {BUSY_RUN:.0}% \
         (see [Machine load](#machine-load)).\n",
        median(all.clone()).unwrap_or(0.0),
        all.iter().copied().fold(0.0, f64::max),
        dec(fold(&refs, |r| r.loadavg_before, f64::min), 1),
        dec(fold(&refs, |r| r.loadavg_after, f64::max), 1),
        all.len()
    );
}

/// Load per server, and the busiest runs by name.
pub(crate) fn write_load(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## Machine load\n");
    let _ = writeln!(
        out,
        "Read before and after every run (a run = one scenario on one fresh server, or one \
         point of a sweep): the 1-minute load average, and the CPU that processes other than \
         the server and the load generator used meanwhile, % of one core (busy time of the \
         whole machine from `/proc/stat` minus the two measured process trees). On this \
         2-core machine the measured pair needs both cores: other work above a few % slows \
         the figures.\n"
    );
    table(
        out,
        s,
        &[
            "runs",
            "load average before → after (min → max)",
            "other CPU % median",
            "other CPU % max",
            "runs above 25%",
        ],
        |sv| {
            let rs: Vec<&Record> = s.records.iter().filter(|r| r.server == sv).collect();
            let other: Vec<f64> = rs.iter().filter_map(|r| r.run_other_cpu_pct).collect();
            if other.is_empty() {
                return vec![DASH.to_owned(); 5];
            }
            vec![
                rs.len().to_string(),
                format!(
                    "{} → {}",
                    dec(fold(&rs, |r| r.loadavg_before, f64::min), 1),
                    dec(fold(&rs, |r| r.loadavg_after, f64::max), 1)
                ),
                dec(median(other.clone()), 0),
                dec(other.iter().copied().reduce(f64::max), 0),
                other.iter().filter(|x| **x > BUSY_RUN).count().to_string(),
            ]
        },
    );
    let mut busy: Vec<&Record> = s
        .records
        .iter()
        .filter(|r| r.run_other_cpu_pct.is_some_and(|x| x > BUSY_RUN))
        .collect();
    busy.sort_by(|a, b| {
        b.run_other_cpu_pct
            .unwrap_or(0.0)
            .total_cmp(&a.run_other_cpu_pct.unwrap_or(0.0))
    });
    if busy.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "The busiest runs (other CPU over {BUSY_RUN:.0}%, at most 20 listed):\n\n\
         | server | scenario | point | rep | other CPU % | load average | busiest other processes |\n\
         |---|---|---|---|---|---|---|"
    );
    for r in busy.iter().take(20) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} → {} | {} |",
            r.server,
            r.scenario,
            r.point.map_or_else(|| DASH.to_owned(), |p| p.to_string()),
            r.rep,
            dec(r.run_other_cpu_pct, 0),
            dec(r.loadavg_before, 1),
            dec(r.loadavg_after, 1),
            cell_text(&r.others_top.join(", "))
        );
    }
    out.push('\n');
}
