//! One result line: what `mcpbench run` writes and `mcpbench report` reads.
//!
//! Every scenario fills the common fields and its own; absent figures are left out of the JSON.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// Results of one scenario run against one fresh server.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
#[serde(default)]
pub(crate) struct Record {
    /// Server name (`--label`).
    pub(crate) server: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// Repetition number.
    pub(crate) rep: u32,
    /// Protocol version offered.
    pub(crate) protocol: String,
    /// `session`, `stateless` or `modern`.
    pub(crate) era: String,
    /// `h2` when spoken as h2c (`--http2`); absent for HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) http: Option<String>,
    /// Sessions used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sessions: Option<usize>,
    /// Requests in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) concurrency: Option<usize>,
    /// Measured window, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) window_s: Option<f64>,
    /// Correct answers counted (in the window, for load scenarios).
    pub(crate) ok: u64,
    /// Wrong answers and failed requests counted.
    pub(crate) errors: u64,
    /// Up to a few distinct error messages.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) error_samples: Vec<String>,
    /// Correct answers per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rps: Option<f64>,
    /// Latency percentiles, µs (load: one request; setup: one whole new session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p50_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p90_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p99_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_us: Option<f64>,
    /// Server CPU (process tree, user + system) per correct request (setup: per new session), µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_us_per_op: Option<f64>,
    /// Server CPU over the window, % of one core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) server_cpu_pct: Option<f64>,
    /// Load generator CPU over the window, % of one core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) loadgen_cpu_pct: Option<f64>,
    /// CPU used on the machine by neither the server nor the load generator over the window,
    /// % of one core: noise from other work on the machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) other_cpu_pct: Option<f64>,
    /// CPU time stolen by the hypervisor over the window, % of one core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) steal_pct: Option<f64>,
    /// Server VmRSS at the end, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rss_kib: Option<u64>,
    /// Server VmHWM (peak RSS) at the end, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hwm_kib: Option<u64>,
    /// Sessions held (`hold`, `streams`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) held: Option<usize>,
    /// Server RSS before and after opening the held sessions, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rss_before_kib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rss_after_kib: Option<u64>,
    /// (after − before) / held, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kib_per_session: Option<f64>,
    /// GET streams still open when RSS was read (`streams`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) open_streams: Option<usize>,
    /// TCP connections the load generator had dialled by the end of a `hold`/`streams` step,
    /// or for the slots of a load run (HTTP/1.1: one per stream or slot; h2: one per
    /// `--h2-streams` slots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) connections: Option<u64>,
    /// Seconds taken to open the held sessions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) open_s: Option<f64>,
    /// `setup`: median of connect + initialize + initialized (stateless: connect), µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) handshake_p50_us: Option<f64>,
    /// `cold`: spawn to first correct answer, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cold_ms: Option<f64>,
    /// The x value of a sweep's point (in flight, bytes, tools, held sessions, streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) point: Option<u64>,
    /// Why a sweep's point was not measured (its other figures are then absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<String>,
    /// 1-minute load average before and after the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) loadavg_before: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) loadavg_after: Option<f64>,
    /// CPU used by other processes over the whole run (not just a window), % of one core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run_other_cpu_pct: Option<f64>,
    /// The busiest other processes over the run (`name N%`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) others_top: Vec<String>,
    /// Wall time of the run, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run_s: Option<f64>,
    /// JSON-RPC messages received per second (`stream`: progress notifications + results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) events_per_s: Option<f64>,
    /// Server CPU per message received, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_us_per_event: Option<f64>,
    /// Answer body bytes per second, MB/s (10^6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mb_per_s: Option<f64>,
    /// Server CPU per MB of answer bodies, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_us_per_mb: Option<f64>,
    /// Mean answer body bytes per operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes_per_op: Option<f64>,
    /// Server RSS before the load started, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rss_idle_kib: Option<u64>,
    /// (peak RSS in the window − RSS before the load) / requests in flight, KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peak_kib_per_inflight: Option<f64>,
    /// Whether the peak was reset at the start of the window (else it covers the whole life).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peak_reset: Option<bool>,
    /// `hold` sweep: p50 of a new session (connect + initialize + initialized + first call)
    /// while the others are held, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fresh_p50_us: Option<f64>,
    /// `fanout`: median over rounds of the time from sending the change until the last
    /// stream had the notification, ms; and until the first had it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fanout_last_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fanout_last_max_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fanout_first_ms: Option<f64>,
    /// `fanout`: rounds whose notification reached every stream / rounds run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fanout_rounds: Option<(u32, u32)>,
    /// `chunks`: HTTP/1.1 chunks and SSE events (with data) per answer of `stream`, and
    /// chunks per event; write-family syscalls of the server per event where traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) chunks_per_answer: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) events_per_answer: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) chunks_per_event: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) writes_per_event: Option<f64>,
    /// `chunks`: the same for one `hello_world` answer (one event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) chunks_per_hello: Option<f64>,
    /// `chunks`: how the first traced answer was framed (chunk sizes, event boundaries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) framing: Option<String>,
}

impl Record {
    /// Copies what the rest of the machine did during the run into the record.
    pub(crate) fn set_load(&mut self, load: crate::procfs::Load, run_s: f64) {
        self.loadavg_before = load.loadavg_before;
        self.loadavg_after = load.loadavg_after;
        self.run_other_cpu_pct = load.other_cpu_pct;
        self.others_top = load.top;
        self.run_s = Some(run_s);
    }

    /// Appends this record as one JSON line to `path`, or prints it when `path` is `None`.
    pub(crate) fn write(&self, path: Option<&Path>) -> anyhow::Result<()> {
        let line = serde_json::to_string(self)?;
        match path {
            Some(p) => {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening {}", p.display()))?;
                writeln!(f, "{line}").with_context(|| format!("writing {}", p.display()))?;
            }
            None => println!("{line}"),
        }
        Ok(())
    }

    /// Reads every record of a JSON-lines file (blank lines skipped).
    pub(crate) fn read_all(path: &Path) -> anyhow::Result<Vec<Record>> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1))
            })
            .collect()
    }
}

/// Collects distinct error messages, keeping the first few.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    pub(crate) count: u64,
    pub(crate) samples: Vec<String>,
}

impl Errors {
    const KEEP: usize = 5;

    /// Counts one error and keeps its message if it is new and there is room.
    pub(crate) fn add(&mut self, msg: impl std::fmt::Display) {
        self.count += 1;
        if self.samples.len() < Self::KEEP {
            let m = format!("{msg:#}");
            if !self.samples.contains(&m) {
                self.samples.push(m);
            }
        }
    }

    /// Merges another collector into this one.
    pub(crate) fn merge(&mut self, other: Errors) {
        self.count += other.count;
        for m in other.samples {
            if self.samples.len() < Self::KEEP && !self.samples.contains(&m) {
                self.samples.push(m);
            }
        }
    }
}
