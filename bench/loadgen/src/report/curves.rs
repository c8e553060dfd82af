//! The streaming section (events/s, CPU per event, and how each server frames SSE on the
//! wire), the scaling curves (a chart and a table per curve, with where each curve flattens
//! and why, from what was measured at that point), and the 2026-07-28 comparison.

use std::fmt::Write as _;

use super::markdown::{DASH, MARK, NOISY, cell_text, dec, med, table, thousands, times};
use super::summary::{self as m, Metric, Pt, Summary};
use crate::record::Record;

/// A chart file of docs/bench and the curve it draws.
pub(crate) struct Section {
    pub(crate) file: &'static str,
    pub(crate) title: &'static str,
    pub(crate) intro: &'static str,
    pub(crate) x: &'static str,
    pub(crate) y: &'static str,
    pub(crate) metric: Metric,
    pub(crate) log_y: bool,
    pub(crate) digits: usize,
    /// Further figures tabled per point: name, metric, decimals.
    pub(crate) more: &'static [(&'static str, Metric, usize)],
    /// Whether flattening (a next point less than 10% better) is explained.
    pub(crate) flattening: bool,
}

const CONC_SRV: Metric = m::CONC_RPS;

/// The scaling sections, in report order.
pub(crate) const SECTIONS: [Section; 5] = [
    Section {
        file: "conc.svg",
        title: "Throughput against requests in flight",
        intro: "`conc`: `hello_world`, 1 session, C requests in flight (one connection each), \
                each point with its own warm-up and window on the same server.",
        x: "requests in flight",
        y: "req/s",
        metric: CONC_SRV,
        log_y: false,
        digits: 0,
        more: &[
            ("server CPU µs/req", m::CONC_CPU, 1),
            (
                "p99 µs",
                Metric {
                    read: |r| r.p99_us,
                    ..CONC_SRV
                },
                0,
            ),
        ],
        flattening: true,
    },
    Section {
        file: "size.svg",
        title: "Result size",
        intro: "`size`: `blob` answers of 100 B, 10 KiB and 1 MiB, 16 in flight. MB/s counts \
                answer bodies (10^6 bytes). Peak RSS per in-flight answer = (VmHWM in the \
                window, reset at its start, − RSS before the load) / 16: about the answer's \
                size means one copy of it per request in flight.",
        x: "result bytes",
        y: "MB/s",
        metric: m::SIZE_MBPS,
        log_y: true,
        digits: 1,
        more: &[
            ("server CPU µs per MB", m::SIZE_CPU_MB, 0),
            ("peak KiB per in-flight answer", m::SIZE_PEAK, 0),
        ],
        flattening: true,
    },
    Section {
        file: "tools.svg",
        title: "tools/list against registered tools",
        intro: "`tools`: a server started with N extra tools (one start per point); a walk is \
                `tools/list` from the first page to the last, following `nextCursor`, 4 walks \
                in flight. Vellum and Go page by 1,000; rmcp, TypeScript and Python answer in \
                one page.",
        x: "registered tools",
        y: "walk p50 µs",
        metric: m::TOOLS_P50,
        log_y: true,
        digits: 0,
        more: &[("server CPU µs per walk", m::TOOLS_CPU, 0)],
        flattening: false,
    },
    Section {
        file: "hold.svg",
        title: "Held idle sessions",
        intro: "`hold`: sessions opened in steps (cumulative) and kept: RSS per session = ΔRSS \
                / N after a settle interval; then new sessions (connect + initialize + \
                initialized + first call) are timed one after another while all are held. A \
                step is skipped when the previous step's rate or memory projects it past the \
                run's budget.",
        x: "held sessions",
        y: "server RSS MiB",
        metric: Metric {
            read: |r| r.rss_after_kib.map(|k| k as f64 / 1024.0),
            ..m::HOLD_KIB
        },
        log_y: true,
        digits: 0,
        more: &[
            ("KiB per session", m::HOLD_KIB, 1),
            ("new session p50 µs", m::HOLD_FRESH, 0),
        ],
        flattening: false,
    },
    Section {
        file: "fanout.svg",
        title: "Fan-out of one list change",
        intro: "`fanout`: N open GET streams (legacy sessions) or `subscriptions/listen` streams \
                (2026-07-28); `touch` changes the tool list; the time from sending it until the \
                last stream has `notifications/tools/list_changed` (median of the rounds). The \
                Go SDK waits 10 ms before it sends a list change (it batches changes).",
        x: "open streams",
        y: "ms until the last stream",
        metric: m::FANOUT_LAST,
        log_y: true,
        digits: 1,
        more: &[
            (
                "ms until the first",
                Metric {
                    read: |r| r.fanout_first_ms,
                    ..m::FANOUT_LAST
                },
                1,
            ),
            (
                "server CPU µs per delivery",
                Metric {
                    read: |r| r.cpu_us_per_event,
                    ..m::FANOUT_LAST
                },
                1,
            ),
        ],
        flattening: false,
    },
];

/// Writes the streaming, scaling and 2026-07-28 sections.
pub(crate) fn write(out: &mut String, s: &Summary, chart_dir: &str) {
    write_streaming(out, s, chart_dir);
    for sec in &SECTIONS {
        write_section(out, s, sec, chart_dir);
    }
    write_modern(out, s);
}

fn write_streaming(out: &mut String, s: &Summary, chart_dir: &str) {
    let has = s
        .servers
        .iter()
        .any(|sv| s.median(sv, m::STREAM_EPS).is_some());
    if !has {
        return;
    }
    let _ = writeln!(out, "## Streaming\n");
    let _ = writeln!(
        out,
        "`stream`: a tool call that sends 10 `notifications/progress` and then its result, 1 \
         session, 32 in flight; events = JSON-RPC messages received (11 per call). `chunks`: \
         the same call written by hand on a raw socket and its answer read byte for byte: \
         HTTP/1.1 chunks per event (a priming event without data counts as a chunk, not an \
         event), and the server's write-family syscalls (write, writev, sendto, sendmsg) per \
         event under `strace -f -c`.\n\n![events per second]({chart_dir}/stream.svg)\n"
    );
    table(
        out,
        s,
        &[
            "events/s",
            "server CPU µs/event",
            "call p50 µs",
            "load generator CPU %",
            "HTTP chunks per event",
            "write syscalls per event",
            "chunks per hello_world answer",
        ],
        |sv| {
            vec![
                med(s, sv, m::STREAM_EPS, 0),
                med(s, sv, m::STREAM_CPU, 1),
                med(s, sv, m::STREAM_P50, 0),
                med(s, sv, m::STREAM_LOADGEN, 0),
                dec(s.median(sv, m::CHUNKS_PER_EVENT), 2),
                dec(s.median(sv, m::WRITES_PER_EVENT), 2),
                dec(s.median(sv, m::CHUNKS_PER_HELLO), 0),
            ]
        },
    );
    let framings: Vec<&Record> = s
        .records
        .iter()
        .filter(|r| r.scenario == "chunks" && r.rep == 1 && r.framing.is_some())
        .collect();
    if !framings.is_empty() {
        let _ = writeln!(
            out,
            "How the first traced `stream` answer was framed, chunk by chunk (sizes in bytes; \
             `|` after a chunk in which an SSE event ends):\n"
        );
        for r in framings {
            let _ = writeln!(
                out,
                "- `{}`: {}",
                r.server,
                cell_text(r.framing.as_deref().unwrap_or_default())
            );
        }
        out.push('\n');
    }
}

fn write_section(out: &mut String, s: &Summary, sec: &Section, chart_dir: &str) {
    let points = s.all_points(sec.metric.scenario);
    if points.is_empty() {
        return;
    }
    let _ = writeln!(out, "## {}\n", sec.title);
    let _ = writeln!(out, "{}\n", sec.intro);
    let _ = writeln!(out, "![{}]({chart_dir}/{})\n", sec.title, sec.file);
    let mut figures = vec![(sec.y, sec.metric, sec.digits)];
    figures.extend(sec.more.iter().copied());
    for (name, metric, digits) in figures {
        let head: Vec<String> = points
            .iter()
            .map(|p| format!("{name} @ {}", thousands(*p as f64)))
            .collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        table(out, s, &head, |sv| {
            points
                .iter()
                .map(|&p| {
                    if let Some(why) = s.skipped(sv, metric.scenario, p) {
                        return format!("skipped ({})", cell_text(why));
                    }
                    med(s, sv, metric.at(Pt::At(p)), digits)
                })
                .collect()
        });
    }
    if sec.flattening {
        write_flattening(out, s, sec);
    }
}

/// Where a curve's next point is less than 10% better, what the measurements say limited it.
fn write_flattening(out: &mut String, s: &Summary, sec: &Section) {
    let mut notes = Vec::new();
    for sv in &s.servers {
        let points = s.points(sv, sec.metric.scenario);
        for w in points.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (Some(ya), Some(yb)) = (
                s.median(sv, sec.metric.at(Pt::At(a))),
                s.median(sv, sec.metric.at(Pt::At(b))),
            ) else {
                continue;
            };
            if yb >= ya * 1.10 {
                continue;
            }
            let at = |read: fn(&Record) -> Option<f64>| {
                s.median(
                    sv,
                    Metric {
                        read,
                        ..sec.metric.at(Pt::At(b))
                    },
                )
            };
            let server = at(|r| r.server_cpu_pct);
            let loadgen = at(|r| r.loadgen_cpu_pct);
            let other = at(|r| r.other_cpu_pct);
            notes.push(format!(
                "`{sv}` from {} to {}: {} → {} {}; limit: {}",
                thousands(a as f64),
                thousands(b as f64),
                dec(Some(ya), sec.digits),
                dec(Some(yb), sec.digits),
                sec.y,
                limit(server, loadgen, other)
            ));
            break;
        }
    }
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Where a curve flattens (the next point less than 10% better), and what was at its \
         limit there (CPU % of one core over the window):\n"
    );
    for n in notes {
        let _ = writeln!(out, "- {n}");
    }
    out.push('\n');
}

/// Names the resource that limited a point, from the CPU of the server, the load generator
/// and the rest of the machine over its window.
pub(crate) fn limit(server: Option<f64>, loadgen: Option<f64>, other: Option<f64>) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| DASH.to_owned(), |x| format!("{x:.0}%"));
    let (sv, lg, ot) = (
        server.unwrap_or(0.0),
        loadgen.unwrap_or(0.0),
        other.unwrap_or(0.0),
    );
    let what = if sv >= 85.0 {
        "the server's CPU (its one core is busy)"
    } else if lg >= 85.0 {
        "the load generator's CPU"
    } else if ot >= 50.0 {
        "other work on the machine"
    } else {
        "neither process at its core's limit: waiting (loopback, wake-ups, locks or memory)"
    };
    format!(
        "{what} (server {}, load generator {}, other {})",
        f(server),
        f(loadgen),
        f(other)
    )
}

fn write_modern(out: &mut String, s: &Summary) {
    let rows = [
        "vellum",
        "vellum@2026",
        "rmcp",
        "rmcp@2026",
        "go-stateless",
        "go@2026",
    ];
    if !s.has("vellum@2026") {
        return;
    }
    let _ = writeln!(out, "## 2026-07-28 against legacy sessions\n");
    let _ = writeln!(
        out,
        "The same servers spoken to in protocol 2026-07-28 (no initialize, `_meta` on every \
         request) and as legacy sessions, measured in the same run: each scenario runs on \
         every server one after another, so the rows below were measured minutes apart, not \
         hours. The Go SDK serves 2026-07-28 only from its stateless handler.\n"
    );
    let _ = writeln!(
        out,
        "| server | throughput req/s | ×legacy | server CPU µs/req | latency p50 µs | new session p50 µs | stream events/s |\n|---|---|---|---|---|---|---|"
    );
    for sv in rows.iter().filter(|sv| s.has(sv)) {
        let legacy = sv
            .strip_suffix("@2026")
            .map(|base| if base == "go" { "go-stateless" } else { base });
        let vs = legacy.map_or_else(|| DASH.to_owned(), |l| times(s.ratio(sv, l, m::TPUT_RPS)));
        let _ = writeln!(
            out,
            "| {sv} | {} | {vs} | {} | {} | {} | {} |",
            med(s, sv, m::TPUT_RPS, 0),
            med(s, sv, m::TPUT_CPU, 1),
            med(s, sv, m::LAT_P50, 0),
            med(s, sv, m::SETUP_P50, 0),
            med(s, sv, m::STREAM_EPS, 0),
        );
    }
    let noisy = rows
        .iter()
        .any(|sv| s.spread(sv, m::TPUT_RPS).is_some_and(|x| x > NOISY));
    if noisy {
        let _ = writeln!(
            out,
            "\n{MARK} noisy (see Spread): compare these rows with care."
        );
    }
    out.push('\n');
}
