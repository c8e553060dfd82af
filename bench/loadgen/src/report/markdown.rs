//! The Markdown report: tables of medians, ratios against rmcp and the null server, the
//! streaming and scaling sections (`curves`), the targets (`targets`), the spread of every
//! figure and the machine's load (`noise`), and how the figures were made.
//!
//! A median whose repetitions spread over [`NOISY`] of it is marked with [`MARK`].

use std::fmt::Write as _;

use super::summary::{self as m, Metric, Summary};
use super::{curves, noise, targets};

/// Spread ((max − min) / median) above which a figure is marked noisy.
pub(crate) const NOISY: f64 = 0.10;
/// The mark of a noisy figure.
pub(crate) const MARK: &str = " †";

/// The reference peer of the ratio columns.
pub(crate) const RMCP: &str = "rmcp";
/// The calibration endpoint of the ratio columns.
pub(crate) const NULL: &str = "null";

/// What goes around the tables.
pub(crate) struct Context<'a> {
    pub(crate) machine: &'a [String],
    pub(crate) versions: &'a str,
    pub(crate) command: &'a str,
    /// The overview chart's link; the other charts are beside it (`chart_dir`).
    pub(crate) chart: &'a str,
    pub(crate) chart_dir: &'a str,
    /// The link to bench/README.md.
    pub(crate) readme: &'a str,
    /// `server: why` lines of servers that could not run.
    pub(crate) skipped: &'a str,
    /// `key: value` lines of the run (mode, repetitions, duration_s).
    pub(crate) meta: &'a str,
}

impl Context<'_> {
    /// A value of the run's meta lines.
    pub(crate) fn meta(&self, key: &str) -> Option<&str> {
        self.meta.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim())
        })
    }
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
        "Streamable HTTP, one server core (server pinned to CPU 0, load generator to CPU 1), \
         each scenario on a fresh server. Request/response figures are `tools/call hello_world \
         {{\"user_name\":\"bench\"}}`; the streaming, result-size, tools/list, held-session and \
         fan-out scenarios use the benchmark's other tools, the same on every server. Every \
         answer was checked. Method and meaning of each figure: \
         [`bench/README.md`]({}).\n",
        cx.readme
    );
    let _ = writeln!(out, "Command: `{}`\n", cx.command);
    let reps = s.records.iter().map(|r| r.rep).max().unwrap_or(0);
    let took = cx
        .meta("duration_s")
        .and_then(|d| d.parse::<f64>().ok())
        .map(|d| format!(" in {:.0} min {:.0} s", (d / 60.0).floor(), d % 60.0))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{runs} result lines from {reps} interleaved repetition(s){took}, {} checked answers, \
         **{errors} errors**.\n",
        thousands(answers as f64)
    );
    if reps < 3 {
        let _ = writeln!(
            out,
            "**{reps} repetition(s) only: not a run to quote.** The spread of a figure needs at \
             least 3 repetitions (`bench/run.sh` without `--quick`); until then every figure is \
             a single short window on a shared machine.\n"
        );
    } else {
        let _ = writeln!(
            out,
            "Figures are medians of {reps} repetitions;{MARK} marks a median whose repetitions \
             spread over {:.0}% (max − min over the median): noisy, see [Spread](#spread).\n",
            NOISY * 100.0
        );
    }
    if !cx.skipped.trim().is_empty() {
        let _ = writeln!(out, "Not measured (the server could not run here):\n");
        for l in cx.skipped.lines().filter(|l| !l.trim().is_empty()) {
            let _ = writeln!(out, "- {}", l.trim());
        }
        out.push('\n');
    }
    if errors > 0 {
        write_errors(&mut out, s);
    }
    noise::write_load_summary(&mut out, s);
    let _ = writeln!(
        out,
        "![throughput, CPU per request and memory per session]({})\n",
        cx.chart
    );

    targets::write(&mut out, s);
    write_request_table(&mut out, s);
    write_wait_table(&mut out, s);
    write_session_table(&mut out, s);
    write_ratio_table(&mut out, s);
    curves::write(&mut out, s, cx.chart_dir);
    noise::write_spread(&mut out, s);
    noise::write_load(&mut out, s);

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
pub(crate) fn table(
    out: &mut String,
    s: &Summary,
    head: &[&str],
    cells: impl Fn(&str) -> Vec<String>,
) {
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

pub(crate) const DASH: &str = "–";

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
                med(s, sv, m::LAT_P50, 0),
                med(s, sv, m::LAT_P99, 0),
                med(s, sv, m::TPUT_RPS, 0),
                med(s, sv, m::TPUT_P50, 0),
                med(s, sv, m::TPUT_P99, 0),
                med(s, sv, m::TPUT_CPU, 1),
                med(s, sv, m::SESS_RPS, 0),
                med(s, sv, m::SESS_P99, 0),
                med(s, sv, m::TPUT_LOADGEN, 0),
                med(s, sv, m::TPUT_OTHER, 0),
            ]
        },
    );
}

/// `wait`: tools that wait on Redis and a slow HTTP service (issue 29, target 6).
fn write_wait_table(out: &mut String, s: &Summary) {
    if !s
        .servers
        .iter()
        .any(|sv| s.median(sv, m::WAIT_RPS).is_some())
    {
        return;
    }
    let _ = writeln!(
        out,
        "## Tools that wait
"
    );
    let _ = writeln!(
        out,
        "`wait`: 1 session, 50 in flight of `hello_wait`, whose handler awaits a Redis `GET` \
         (a real `redis-server`) and then an HTTP `GET` of a local stub that answers after \
         1 ms, with each SDK's usual clients; the server alone on CPU 0, Redis, the stub and \
         the load generator on CPU 1 (the shape of the TM Dev Lab v2 benchmark). Other CPU \
         includes Redis and the stub.\n"
    );
    table(
        out,
        s,
        &[
            "req/s",
            "p50 µs",
            "p99 µs",
            "server CPU µs/req",
            "load generator CPU %",
            "other CPU %",
        ],
        |sv| {
            vec![
                med(s, sv, m::WAIT_RPS, 0),
                med(s, sv, m::WAIT_P50, 0),
                med(s, sv, m::WAIT_P99, 0),
                med(s, sv, m::WAIT_CPU, 1),
                med(s, sv, m::WAIT_LOADGEN, 0),
                med(s, sv, m::WAIT_OTHER, 0),
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
                    format!("{a:.0} → {b:.0} ({})", med(s, sv, m::HOLD_N, 0))
                }
                _ => DASH.to_owned(),
            };
            let streams = match s.median(sv, m::STREAMS_AFTER_MIB) {
                Some(b) => format!("{b:.0} ({})", med(s, sv, m::STREAMS_N, 0)),
                None => DASH.to_owned(),
            };
            vec![
                med(s, sv, m::HOLD_KIB, 1),
                hold,
                med(s, sv, m::STREAMS_KIB, 1),
                streams,
                med(s, sv, m::SETUP_P50, 0),
                med(s, sv, m::SETUP_P99, 0),
                med(s, sv, m::SETUP_HANDSHAKE, 0),
                med(s, sv, m::COLD_MS, 1),
                med(s, sv, m::COLD_RSS_MIB, 0),
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

/// The median of `m` for `sv` with `digits` decimals (thousands separators when 0), marked
/// when noisy.
pub(crate) fn med(s: &Summary, sv: &str, m: Metric, digits: usize) -> String {
    let v = s.median(sv, m);
    let text = if digits == 0 { int(v) } else { dec(v, digits) };
    if v.is_some() && s.spread(sv, m).is_some_and(|x| x > NOISY) {
        format!("{text}{MARK}")
    } else {
        text
    }
}

/// A whole number with thousands separators, or a dash.
pub(crate) fn int(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), thousands)
}

pub(crate) fn thousands(v: f64) -> String {
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
pub(crate) fn dec(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| DASH.to_owned(), |x| format!("{x:.digits$}"))
}

/// A ratio as `1.23×`, or a dash.
pub(crate) fn times(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), |x| format!("{x:.2}×"))
}

/// Text safe inside a table cell.
pub(crate) fn cell_text(s: &str) -> String {
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
