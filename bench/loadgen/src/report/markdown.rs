//! The Markdown report: tables of medians, ratios against rmcp and the null server, the
//! issue's targets for Vellum, every repetition, and how the figures were made.

use std::fmt::Write as _;

use super::summary::{self as m, Metric, Summary};

/// The reference peer of the ratio columns.
pub(crate) const RMCP: &str = "rmcp";
/// The calibration endpoint of the ratio columns.
pub(crate) const NULL: &str = "null";

/// What goes around the tables.
pub(crate) struct Context<'a> {
    pub(crate) machine: &'a [String],
    pub(crate) versions: &'a str,
    pub(crate) command: &'a str,
    pub(crate) chart: &'a str,
}

/// Renders the whole report.
pub(crate) fn render(s: &Summary, cx: &Context<'_>) -> String {
    let mut out = String::new();
    let runs = s.records.len();
    let answers: u64 = s.records.iter().map(|r| r.ok).sum();
    let errors: u64 = s.records.iter().map(|r| r.errors).sum();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Streamable HTTP, `tools/call hello_world {{\"user_name\":\"bench\"}}`, one server core \
         (server pinned to CPU 0, load generator to CPU 1), each scenario on a fresh server. \
         Figures are medians over repetitions; every answer was checked. Method and meaning of \
         each figure: [`bench/README.md`](../bench/README.md).\n"
    );
    let _ = writeln!(out, "Command: `{}`\n", cx.command);
    let _ = writeln!(
        out,
        "{runs} runs, {} checked answers, **{errors} errors**.\n",
        thousands(answers as f64)
    );
    if errors > 0 {
        write_errors(&mut out, s);
    }
    let _ = writeln!(
        out,
        "![throughput, CPU per request and memory per session]({})\n",
        cx.chart
    );

    write_request_table(&mut out, s);
    write_session_table(&mut out, s);
    write_ratio_table(&mut out, s);
    write_targets(&mut out, s);
    write_repetitions(&mut out, s);

    let _ = writeln!(out, "## Machine\n");
    for line in cx.machine {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out, "\n## Versions\n");
    for line in cx.versions.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(out, "- {}", line.trim());
    }
    out
}

fn write_errors(out: &mut String, s: &Summary) {
    let _ = writeln!(
        out,
        "| server | scenario | rep | errors | examples |\n|---|---|---|---|---|"
    );
    for r in s.records.iter().filter(|r| r.errors > 0) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            r.server,
            r.scenario,
            r.rep,
            r.errors,
            cell_text(&r.error_samples.join("; "))
        );
    }
    out.push('\n');
}

/// A table row per server: the server name, then one cell per column.
fn table(out: &mut String, s: &Summary, head: &[&str], cells: impl Fn(&str) -> Vec<String>) {
    let _ = writeln!(out, "| server | {} |", head.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(head.len()));
    for server in &s.servers {
        let row = cells(server);
        if row.iter().all(|c| c == DASH) {
            continue;
        }
        let _ = writeln!(out, "| {server} | {} |", row.join(" | "));
    }
    out.push('\n');
}

const DASH: &str = "–";

fn write_request_table(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## Request/response\n");
    let _ = writeln!(
        out,
        "`latency`: 1 session, 1 request in flight. `throughput`: 1 session, 32 in flight. \
         `sessions`: 32 sessions, 64 in flight. CPU = server user + system time per correct \
         answer (`throughput`). Load generator CPU shows how close the harness itself came to \
         its limit (100% = one core); other CPU is what the rest of the machine used meanwhile \
         (noise: figures taken with more than a few % are suspect).\n"
    );
    table(
        out,
        s,
        &[
            "latency p50 µs",
            "latency p99 µs",
            "throughput req/s",
            "throughput p50 µs",
            "throughput p99 µs",
            "server CPU µs/req",
            "sessions req/s",
            "sessions p99 µs",
            "load generator CPU %",
            "other CPU %",
        ],
        |sv| {
            vec![
                int(s.median(sv, m::LAT_P50)),
                int(s.median(sv, m::LAT_P99)),
                int(s.median(sv, m::TPUT_RPS)),
                int(s.median(sv, m::TPUT_P50)),
                int(s.median(sv, m::TPUT_P99)),
                dec(s.median(sv, m::TPUT_CPU), 1),
                int(s.median(sv, m::SESS_RPS)),
                int(s.median(sv, m::SESS_P99)),
                int(s.median(sv, m::TPUT_LOADGEN)),
                int(s.median(sv, m::TPUT_OTHER)),
            ]
        },
    );
}

fn write_session_table(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## Sessions, setup, start-up, memory\n");
    let _ = writeln!(
        out,
        "`hold`: RSS per idle held session = ΔRSS / N after N sessions (initialize + initialized \
         + one call each). `streams`: the same with an open GET SSE stream per session. `setup`: \
         new connection + initialize + initialized + first call, one session after another \
         (handshake = up to the end of initialized; for stateless servers the TCP connect \
         alone). `cold`: spawn to first correct answer. Peak RSS = largest VmHWM of all runs.\n"
    );
    table(
        out,
        s,
        &[
            "KiB per held session",
            "RSS idle → N sessions MiB (N)",
            "KiB per session + GET stream",
            "RSS with N sessions + streams MiB (N)",
            "new session p50 µs",
            "new session p99 µs",
            "handshake p50 µs",
            "cold start ms",
            "RSS after start MiB",
            "peak RSS MiB",
        ],
        |sv| {
            let hold = match (
                s.median(sv, m::HOLD_BEFORE_MIB),
                s.median(sv, m::HOLD_AFTER_MIB),
            ) {
                (Some(a), Some(b)) => {
                    format!("{a:.0} → {b:.0} ({})", int(s.median(sv, m::HOLD_N)))
                }
                _ => DASH.to_owned(),
            };
            let streams = match s.median(sv, m::STREAMS_AFTER_MIB) {
                Some(b) => format!("{b:.0} ({})", int(s.median(sv, m::STREAMS_N))),
                None => DASH.to_owned(),
            };
            vec![
                dec(s.median(sv, m::HOLD_KIB), 1),
                hold,
                dec(s.median(sv, m::STREAMS_KIB), 1),
                streams,
                int(s.median(sv, m::SETUP_P50)),
                int(s.median(sv, m::SETUP_P99)),
                int(s.median(sv, m::SETUP_HANDSHAKE)),
                dec(s.median(sv, m::COLD_MS), 1),
                dec(s.median(sv, m::COLD_RSS_MIB), 0),
                dec(s.peak_rss_mib(sv), 0),
            ]
        },
    );
}

fn write_ratio_table(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## Ratios against rmcp and against the null server\n");
    let _ = writeln!(
        out,
        "Median of the server ÷ median of `{RMCP}` (stateful SSE, the reference peer) or of \
         `{NULL}` (canned answers: the floor of this machine and load generator). Throughput: \
         higher is better; everything else: lower is better.\n"
    );
    let pair = |sv: &str, metric: Metric| -> [String; 2] {
        [
            times(s.ratio(sv, RMCP, metric)),
            times(s.ratio(sv, NULL, metric)),
        ]
    };
    table(
        out,
        s,
        &[
            "throughput ×rmcp",
            "×null",
            "CPU/req ×rmcp",
            "×null",
            "latency p50 ×rmcp",
            "×null",
            "new session p50 ×rmcp",
            "×null",
            "KiB/session ×rmcp",
            "cold start ×rmcp",
            "×null",
        ],
        |sv| {
            let mut row = Vec::new();
            row.extend(pair(sv, m::TPUT_RPS));
            row.extend(pair(sv, m::TPUT_CPU));
            row.extend(pair(sv, m::LAT_P50));
            row.extend(pair(sv, m::SETUP_P50));
            row.push(times(s.ratio(sv, RMCP, m::HOLD_KIB)));
            row.extend(pair(sv, m::COLD_MS));
            row
        },
    );
}

/// One performance target of the issue.
struct Target {
    what: &'static str,
    goal: &'static str,
    measured: Option<f64>,
    unit: &'static str,
    pass: fn(f64) -> bool,
}

fn write_targets(out: &mut String, s: &Summary) {
    const V: &str = "vellum";
    if !s.has(V) {
        return;
    }
    let _ = writeln!(out, "## Targets (issues 6 and 7), for `{V}`\n");
    let streams_n = s.median(V, m::STREAMS_N).unwrap_or(0.0);
    let streams = if streams_n >= 10_000.0 {
        s.median(V, m::STREAMS_AFTER_MIB)
    } else {
        None
    };
    let targets = [
        Target {
            what: "throughput (c=32) against rmcp",
            goal: "≥ 2.0×",
            measured: s.ratio(V, RMCP, m::TPUT_RPS),
            unit: "×",
            pass: |x| x >= 2.0,
        },
        Target {
            what: "server CPU per request against rmcp",
            goal: "≤ 0.45×",
            measured: s.ratio(V, RMCP, m::TPUT_CPU),
            unit: "×",
            pass: |x| x <= 0.45,
        },
        Target {
            what: "p50 latency at c=1 against null",
            goal: "≤ 1.2×",
            measured: s.ratio(V, NULL, m::LAT_P50),
            unit: "×",
            pass: |x| x <= 1.2,
        },
        Target {
            what: "RSS per idle held session",
            goal: "≤ 4 KiB",
            measured: s.median(V, m::HOLD_KIB),
            unit: " KiB",
            pass: |x| x <= 4.0,
        },
        Target {
            what: "RSS with 10,000 sessions + 10,000 GET streams",
            goal: "< 64 MiB",
            measured: streams,
            unit: " MiB",
            pass: |x| x < 64.0,
        },
        Target {
            what: "new session (setup) p50 against null",
            goal: "≤ 1.2×",
            measured: s.ratio(V, NULL, m::SETUP_P50),
            unit: "×",
            pass: |x| x <= 1.2,
        },
        Target {
            what: "throughput with the event store on (`vellum-store`) against off",
            goal: "≥ 0.8×",
            measured: s.ratio("vellum-store", V, m::TPUT_RPS),
            unit: "×",
            pass: |x| x >= 0.8,
        },
        Target {
            what: "throughput with the Redis stores (`vellum-redis`, issue 6) against memory (`vellum-store`)",
            goal: "≥ 0.5×",
            measured: s.ratio("vellum-redis", "vellum-store", m::TPUT_RPS),
            unit: "×",
            pass: |x| x >= 0.5,
        },
    ];
    let _ = writeln!(out, "| target | goal | measured | met |\n|---|---|---|---|");
    for t in targets {
        let (measured, met) = match t.measured {
            Some(x) => (
                format!("{x:.2}{}", t.unit),
                if (t.pass)(x) { "yes" } else { "**no**" },
            ),
            None => ("not measured".to_owned(), DASH),
        };
        let _ = writeln!(out, "| {} | {} | {measured} | {met} |", t.what, t.goal);
    }
    out.push('\n');
}

fn write_repetitions(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## Every repetition\n");
    let _ = writeln!(
        out,
        "Each cell lists the runs in order (rep 1 / rep 2 / …).\n"
    );
    let reps = |sv: &str, metric: Metric, digits: usize| -> String {
        let v = s.values(sv, metric);
        if v.is_empty() {
            return DASH.to_owned();
        }
        v.iter()
            .map(|x| dec(Some(*x), digits))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    table(
        out,
        s,
        &[
            "latency p50 µs",
            "throughput req/s",
            "server CPU µs/req",
            "sessions req/s",
            "KiB per held session",
            "KiB per session + stream",
            "new session p50 µs",
            "cold start ms",
        ],
        |sv| {
            vec![
                reps(sv, m::LAT_P50, 0),
                reps(sv, m::TPUT_RPS, 0),
                reps(sv, m::TPUT_CPU, 1),
                reps(sv, m::SESS_RPS, 0),
                reps(sv, m::HOLD_KIB, 1),
                reps(sv, m::STREAMS_KIB, 1),
                reps(sv, m::SETUP_P50, 0),
                reps(sv, m::COLD_MS, 1),
            ]
        },
    );
}

/// A whole number with thousands separators, or a dash.
fn int(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), thousands)
}

fn thousands(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A number with `digits` decimals, or a dash.
fn dec(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| DASH.to_owned(), |x| format!("{x:.digits$}"))
}

/// A ratio as `1.23×`, or a dash.
fn times(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), |x| format!("{x:.2}×"))
}

/// Text safe inside a table cell.
fn cell_text(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(27420.4), "27,420");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(int(None), DASH);
        assert_eq!(times(Some(2.004)), "2.00×");
        assert_eq!(cell_text("a|b\nc"), "a\\|b c");
    }
}
