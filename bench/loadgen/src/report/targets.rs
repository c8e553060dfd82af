//! The target table: every performance target of the issues, computed from the data, for
//! `vellum` (and its store and 2026-07-28 variants).
//!
//! A target is met, not met, or not measured (a figure it needs is absent). Curves are judged
//! point by point against every peer that has the same point; "no worse than linearly" means
//! that the cost per unit grows by at most [`LINEAR_SLACK`] from any point to the next.

use std::fmt::Write as _;

use super::markdown::{DASH, NOISY, NULL, RMCP};
use super::summary::{self as m, Metric, Pt, Summary};

/// How much the cost per unit may grow along a curve and still count as linear.
pub(crate) const LINEAR_SLACK: f64 = 1.25;

const V: &str = "vellum";

/// One row of the table.
struct Row {
    what: String,
    goal: &'static str,
    measured: Option<f64>,
    unit: &'static str,
    pass: fn(f64) -> bool,
    note: String,
}

/// Servers that are peers (neither Vellum nor a null server).
pub(crate) fn peers(s: &Summary) -> Vec<&str> {
    s.servers
        .iter()
        .map(String::as_str)
        .filter(|sv| !sv.starts_with("vellum") && !sv.starts_with("null"))
        .collect()
}

/// One curve: its scenario, its figure, whether higher is better, and its cost per unit
/// (for the linearity check) from the record and the point.
pub(crate) struct Curve {
    pub(crate) name: &'static str,
    pub(crate) metric: Metric,
    pub(crate) higher_better: bool,
    pub(crate) cost: Option<Cost>,
}

/// A curve's cost per unit: its name, the figure it comes from, and how the figure and the
/// point give the cost per unit.
pub(crate) type Cost = (&'static str, Metric, fn(f64, u64) -> f64);

/// The curves of issue 19.
pub(crate) fn curves() -> Vec<Curve> {
    vec![
        Curve {
            name: "throughput against requests in flight",
            metric: m::CONC_RPS,
            higher_better: true,
            cost: Some(("server CPU per request", m::CONC_CPU, |c, _| c)),
        },
        Curve {
            name: "MB/s against result size",
            metric: m::SIZE_MBPS,
            higher_better: true,
            cost: Some(("server CPU per MB", m::SIZE_CPU_MB, |c, _| c)),
        },
        Curve {
            name: "tools/list walk p50 against registered tools",
            metric: m::TOOLS_P50,
            higher_better: false,
            cost: Some(("server CPU per listed tool", m::TOOLS_CPU, |c, n| {
                c / n.max(1) as f64
            })),
        },
        Curve {
            name: "RSS per held idle session",
            metric: m::HOLD_KIB,
            higher_better: false,
            cost: Some(("KiB per session", m::HOLD_KIB, |c, _| c)),
        },
        Curve {
            name: "new session p50 while sessions are held",
            metric: m::HOLD_FRESH,
            higher_better: false,
            // Latency should not grow with the sessions held: its growth itself is judged.
            cost: Some(("new session p50", m::HOLD_FRESH, |c, _| c)),
        },
        Curve {
            name: "fan-out: time until the last stream has a list change",
            metric: m::FANOUT_LAST,
            higher_better: false,
            cost: Some(("ms per stream", m::FANOUT_LAST, |c, n| c / n.max(1) as f64)),
        },
    ]
}

/// The worst ratio of Vellum against any peer over every common point of `c` (≥ 1 means
/// ahead everywhere), with the peer and point where it happens.
pub(crate) fn worst_against_peers(s: &Summary, c: &Curve) -> Option<(f64, String, u64)> {
    let mut worst: Option<(f64, String, u64)> = None;
    for p in s.points(V, c.metric.scenario) {
        let Some(ours) = s.median(V, c.metric.at(Pt::At(p))) else {
            continue;
        };
        for peer in peers(s) {
            let Some(theirs) = s.median(peer, c.metric.at(Pt::At(p))) else {
                continue;
            };
            if ours <= 0.0 || theirs <= 0.0 {
                continue;
            }
            let r = if c.higher_better {
                ours / theirs
            } else {
                theirs / ours
            };
            if worst.as_ref().is_none_or(|w| r < w.0) {
                worst = Some((r, peer.to_owned(), p));
            }
        }
    }
    worst
}

/// The largest growth of the cost per unit from one of Vellum's points to the next, with
/// the two points (a fixed cost at a small point must not hide growth between large ones).
pub(crate) fn growth(s: &Summary, c: &Curve) -> Option<(f64, u64, u64)> {
    let (_, metric, per_unit) = c.cost?;
    let points = s.points(V, metric.scenario);
    let cost = |p: u64| Some(per_unit(s.median(V, metric.at(Pt::At(p)))?, p));
    points
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (cost(w[0])?, cost(w[1])?);
            (a > 0.0).then_some((b / a, w[0], w[1]))
        })
        .max_by(|x, y| x.0.total_cmp(&y.0))
}

fn best_peer(s: &Summary, metric: Metric) -> Option<(f64, String)> {
    peers(s)
        .into_iter()
        .filter_map(|p| Some((s.median(p, metric)?, p.to_owned())))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

fn noisy(s: &Summary, pairs: &[(&str, Metric)]) -> String {
    let n: Vec<String> = pairs
        .iter()
        .filter(|(sv, m)| s.spread(sv, *m).is_some_and(|x| x > NOISY))
        .map(|(sv, _)| format!("`{sv}`"))
        .collect();
    if n.is_empty() {
        String::new()
    } else {
        format!("noisy: {}", n.join(", "))
    }
}

/// The Go SDK's default server, the second reference of `wait`.
const GO: &str = "go";

/// The HTTP/2 row and the library's default build (`vellum-h2`, `vellum-default`).
const H2: &str = "vellum-h2";
const DEFAULT_BUILD: &str = "vellum-default";

/// Issue 29, targets 6 (tools that wait), 7 (HTTP/2) and 9 (the default build).
fn issue_29_rows(rows: &mut Vec<Row>, s: &Summary) {
    rows.push(Row {
        what: "tools that wait (`wait`): throughput against rmcp (issue 29)".into(),
        goal: "≥ 1.5×",
        measured: s.ratio(V, RMCP, m::WAIT_RPS),
        unit: "×",
        pass: |x| x >= 1.5,
        note: noisy(s, &[(V, m::WAIT_RPS), (RMCP, m::WAIT_RPS)]),
    });
    rows.push(Row {
        what: "tools that wait: throughput against the Go SDK (`go`)".into(),
        goal: "≥ 5.0×",
        measured: s.ratio(V, GO, m::WAIT_RPS),
        unit: "×",
        pass: |x| x >= 5.0,
        note: noisy(s, &[(V, m::WAIT_RPS), (GO, m::WAIT_RPS)]),
    });
    // "A lower p99 than both": against the better of the two.
    let best = [RMCP, GO]
        .into_iter()
        .filter_map(|p| Some((s.median(p, m::WAIT_P99)?, p)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    rows.push(Row {
        what: "tools that wait: p99 against the lower of rmcp's and Go's".into(),
        goal: "< 1.0×",
        measured: best
            .and_then(|(theirs, _)| Some(s.median(V, m::WAIT_P99)? / theirs))
            .filter(|x| x.is_finite()),
        unit: "×",
        pass: |x| x < 1.0,
        note: best
            .map(|(_, p)| format!("lower of the two: `{p}`"))
            .unwrap_or_default(),
    });
    let conns = s.median(H2, m::TPUT_CONNS);
    let cpu = s.ratio(H2, V, m::TPUT_CPU);
    rows.push(Row {
        what: "HTTP/2: 32 streams on one connection (`vellum-h2`) against 32 HTTP/1.1 \
               connections, throughput"
            .into(),
        goal: "≥ 1.0×",
        measured: s.ratio(H2, V, m::TPUT_RPS),
        unit: "×",
        pass: |x| x >= 1.0,
        note: [
            conns.map(|c| format!("{c:.0} connection(s)")),
            cpu.map(|c| format!("CPU per request {c:.2}×")),
            Some(noisy(s, &[(H2, m::TPUT_RPS), (V, m::TPUT_RPS)])).filter(|n| !n.is_empty()),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; "),
    });
    rows.push(Row {
        what: "default build (`vellum-default`: HTTP/1.1 only) against `vellum serve`, \
               throughput"
            .into(),
        goal: "≥ 1.0×",
        measured: s.ratio(DEFAULT_BUILD, V, m::TPUT_RPS),
        unit: "×",
        pass: |x| x >= 1.0,
        note: noisy(s, &[(DEFAULT_BUILD, m::TPUT_RPS), (V, m::TPUT_RPS)]),
    });
    rows.push(Row {
        what: "default build: KiB per session + GET stream (target 2 counts the stream alone)"
            .into(),
        goal: "≤ 8 KiB",
        measured: s.median(DEFAULT_BUILD, m::STREAMS_KIB),
        unit: " KiB",
        pass: |x| x <= 8.0,
        note: s
            .median(DEFAULT_BUILD, m::STREAMS_N)
            .map(|n| format!("{n:.0} sessions with streams"))
            .unwrap_or_default(),
    });
}

/// Writes the table (nothing when Vellum was not measured).
pub(crate) fn write(out: &mut String, s: &Summary) {
    if !s.has(V) {
        return;
    }
    let mut rows = Vec::new();
    let best = best_peer(s, m::STREAM_EPS);
    rows.push(Row {
        what: "streaming (10 progress + result): events/s against the best peer".into(),
        goal: "≥ 2.0×",
        measured: best
            .as_ref()
            .and_then(|(b, _)| Some(s.median(V, m::STREAM_EPS)? / b)),
        unit: "×",
        pass: |x| x >= 2.0,
        note: best
            .as_ref()
            .map(|(_, p)| format!("best peer: `{p}`"))
            .unwrap_or_default(),
    });
    rows.push(Row {
        what: "streaming with the memory event store (`vellum-store`) against none".into(),
        goal: "≥ 0.9×",
        measured: s.ratio("vellum-store", V, m::STREAM_EPS),
        unit: "×",
        pass: |x| x >= 0.9,
        note: noisy(s, &[("vellum-store", m::STREAM_EPS), (V, m::STREAM_EPS)]),
    });
    rows.push(Row {
        what: "streaming with Redis (`vellum-redis`) against the memory store".into(),
        goal: "≥ 0.5×",
        measured: s.ratio("vellum-redis", "vellum-store", m::STREAM_EPS),
        unit: "×",
        pass: |x| x >= 0.5,
        note: noisy(
            s,
            &[
                ("vellum-redis", m::STREAM_EPS),
                ("vellum-store", m::STREAM_EPS),
            ],
        ),
    });
    rows.push(Row {
        what: "HTTP chunks per SSE event (`stream` answers)".into(),
        goal: "≤ 1.0",
        measured: s.median(V, m::CHUNKS_PER_EVENT),
        unit: "",
        pass: |x| x <= 1.0 + 1e-9,
        note: s
            .median(V, m::WRITES_PER_EVENT)
            .map(|w| format!("{w:.2} write syscalls per event"))
            .unwrap_or_default(),
    });
    for c in curves() {
        let worst = worst_against_peers(s, &c);
        rows.push(Row {
            what: format!("{}: ahead of every peer at every point", c.name),
            goal: "≥ 1.0× everywhere",
            measured: worst.as_ref().map(|w| w.0),
            unit: "× (worst)",
            pass: |x| x >= 1.0,
            note: worst
                .map(|(_, p, at)| format!("worst against `{p}` at {at}"))
                .unwrap_or_default(),
        });
        if let Some((what, _, _)) = c.cost {
            let g = growth(s, &c);
            rows.push(Row {
                what: format!("{}: {what} no worse than linear", c.name),
                goal: "≤ 1.25× (worst step from a point to the next)",
                measured: g.map(|g| g.0),
                unit: "×",
                pass: |x| x <= LINEAR_SLACK,
                note: g
                    .map(|(_, lo, hi)| format!("{hi} against {lo}"))
                    .unwrap_or_default(),
            });
        }
    }
    rows.push(Row {
        what: "2026-07-28 (`vellum@2026`) against a legacy session, throughput, same run".into(),
        goal: "≥ 1.0×",
        measured: s.ratio("vellum@2026", V, m::TPUT_RPS),
        unit: "×",
        pass: |x| x >= 1.0,
        note: noisy(s, &[("vellum@2026", m::TPUT_RPS), (V, m::TPUT_RPS)]),
    });
    rows.push(Row {
        what: "2026-07-28 against rmcp's 2026-07-28 (`rmcp@2026`), throughput".into(),
        goal: "≥ 2.5×",
        measured: s.ratio("vellum@2026", "rmcp@2026", m::TPUT_RPS),
        unit: "×",
        pass: |x| x >= 2.5,
        note: noisy(s, &[("rmcp@2026", m::TPUT_RPS)]),
    });
    issue_29_rows(&mut rows, s);
    rows.push(Row {
        what: "p50 latency at 1 in flight against null".into(),
        goal: "≤ 1.2×",
        measured: s.ratio(V, NULL, m::LAT_P50),
        unit: "×",
        pass: |x| x <= 1.2,
        note: noisy(s, &[(V, m::LAT_P50), (NULL, m::LAT_P50)]),
    });
    rows.push(Row {
        what: "new session (setup) p50 against null".into(),
        goal: "≤ 1.2×",
        measured: s.ratio(V, NULL, m::SETUP_P50),
        unit: "×",
        pass: |x| x <= 1.2,
        note: noisy(s, &[(V, m::SETUP_P50), (NULL, m::SETUP_P50)]),
    });
    // Issues 6 and 7, still tracked.
    let streams = (s.median(V, m::STREAMS_N).unwrap_or(0.0) >= 10_000.0)
        .then(|| s.median(V, m::STREAMS_AFTER_MIB))
        .flatten();
    let older = [
        (
            "throughput (c=32) against rmcp (issue 7)",
            "≥ 2.0×",
            s.ratio(V, RMCP, m::TPUT_RPS),
            "×",
            (|x| x >= 2.0) as fn(f64) -> bool,
        ),
        (
            "server CPU per request against rmcp (issue 7)",
            "≤ 0.45×",
            s.ratio(V, RMCP, m::TPUT_CPU),
            "×",
            |x| x <= 0.45,
        ),
        (
            "RSS per idle held session (issue 7)",
            "≤ 4 KiB",
            s.median(V, m::HOLD_KIB),
            " KiB",
            |x| x <= 4.0,
        ),
        (
            "RSS with 10,000 sessions + 10,000 GET streams (issue 7)",
            "< 64 MiB",
            streams,
            " MiB",
            |x| x < 64.0,
        ),
        (
            "request throughput with the memory store against none (issue 7)",
            "≥ 0.8×",
            s.ratio("vellum-store", V, m::TPUT_RPS),
            "×",
            |x| x >= 0.8,
        ),
        (
            "request throughput with Redis against memory (issue 6)",
            "≥ 0.5×",
            s.ratio("vellum-redis", "vellum-store", m::TPUT_RPS),
            "×",
            |x| x >= 0.5,
        ),
    ];
    for (what, goal, measured, unit, pass) in older {
        rows.push(Row {
            what: what.into(),
            goal,
            measured,
            unit,
            pass,
            note: String::new(),
        });
    }

    let met = rows
        .iter()
        .filter(|r| r.measured.is_some_and(|x| (r.pass)(x)))
        .count();
    let measured = rows.iter().filter(|r| r.measured.is_some()).count();
    let _ = writeln!(out, "## Targets\n");
    let _ = writeln!(
        out,
        "Issue 19 first, then issue 29's new scenarios, then issues 6 and 7; for `{V}` unless \
         named. {met} of {measured} \
         measured targets met ({} not measured in this run). A curve's \"worst\" ratio is \
         Vellum's figure over the peer's (higher is better) or the peer's over Vellum's (lower \
         is better) at the point where Vellum does worst.\n",
        rows.len() - measured
    );
    let _ = writeln!(
        out,
        "| target | goal | measured | met | note |\n|---|---|---|---|---|"
    );
    for r in rows {
        let (measured, met) = match r.measured {
            Some(x) => (
                format!("{x:.2}{}", r.unit),
                if (r.pass)(x) { "yes" } else { "**no**" },
            ),
            None => ("not measured".to_owned(), DASH),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {measured} | {met} | {} |",
            r.what, r.goal, r.note
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    fn rec(server: &str, scenario: &str, rps: f64, p99: f64) -> Record {
        Record {
            server: server.into(),
            scenario: scenario.into(),
            rep: 1,
            rps: Some(rps),
            p99_us: Some(p99),
            ..Record::default()
        }
    }

    /// The issue-29 rows read `wait`, `vellum-h2` and `vellum-default` records.
    #[test]
    fn issue_29_rows_are_measured() {
        let mut h2 = rec(H2, "throughput", 1200.0, 100.0);
        h2.connections = Some(1);
        let s = Summary::new(vec![
            rec(V, "throughput", 1000.0, 100.0),
            rec(V, "wait", 9000.0, 8000.0),
            rec(RMCP, "wait", 4500.0, 16000.0),
            rec(GO, "wait", 1000.0, 10000.0),
            h2,
            rec(DEFAULT_BUILD, "throughput", 900.0, 100.0),
        ]);
        let mut out = String::new();
        write(&mut out, &s);
        let row = |what: &str| {
            out.lines()
                .find(|l| l.starts_with(&format!("| {what}")))
                .unwrap_or_else(|| panic!("no row {what} in\n{out}"))
                .to_owned()
        };
        assert!(row("tools that wait (`wait`): throughput against rmcp").contains("| 2.00× | yes"));
        assert!(row("tools that wait: throughput against the Go SDK").contains("| 9.00× | yes"));
        let p99 = row("tools that wait: p99");
        assert!(
            p99.contains("| 0.80× | yes") && p99.contains("`go`"),
            "{p99}"
        );
        let h2 = row("HTTP/2");
        assert!(
            h2.contains("| 1.20× | yes") && h2.contains("1 connection(s)"),
            "{h2}"
        );
        assert!(row("default build (`vellum-default`").contains("| 0.90× | **no**"));
        assert!(row("default build: KiB").contains("not measured"));
    }
}
