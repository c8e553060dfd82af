//! Results grouped by server and scenario, reduced to medians over repetitions.
//!
//! A `Metric` names one figure of one scenario (at one point of a sweep) and how to read it
//! from a record; the summary answers "median of this metric for this server", "each
//! repetition's value" and, for sweeps, "the curve of this figure over the points".

use std::collections::BTreeMap;

use crate::record::Record;
use crate::stats::spread;

/// Which records of a scenario a metric reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pt {
    /// Every record (scenarios with one record per run).
    Any,
    /// The records of this sweep point.
    At(u64),
    /// The records of the largest point measured for the server.
    Largest,
}

/// One figure of one scenario.
#[derive(Clone, Copy)]
pub(crate) struct Metric {
    pub(crate) scenario: &'static str,
    pub(crate) point: Pt,
    pub(crate) read: fn(&Record) -> Option<f64>,
}

impl Metric {
    /// The same figure at another point.
    pub(crate) const fn at(self, point: Pt) -> Metric {
        Metric { point, ..self }
    }
}

macro_rules! metric {
    ($name:ident, $scenario:literal, |$r:ident| $e:expr) => {
        metric!($name, $scenario, Pt::Any, |$r| $e);
    };
    ($name:ident, $scenario:literal, $pt:expr, |$r:ident| $e:expr) => {
        pub(crate) const $name: Metric = Metric {
            scenario: $scenario,
            point: $pt,
            read: |$r: &Record| $e,
        };
    };
}

metric!(LAT_P50, "latency", |r| r.p50_us);
metric!(LAT_P99, "latency", |r| r.p99_us);
metric!(TPUT_RPS, "throughput", |r| r.rps);
metric!(TPUT_P50, "throughput", |r| r.p50_us);
metric!(TPUT_P99, "throughput", |r| r.p99_us);
metric!(TPUT_CPU, "throughput", |r| r.cpu_us_per_op);
metric!(TPUT_LOADGEN, "throughput", |r| r.loadgen_cpu_pct);
metric!(TPUT_OTHER, "throughput", |r| r.other_cpu_pct);
metric!(TPUT_CONNS, "throughput", |r| r
    .connections
    .map(|n| n as f64));
metric!(SESS_RPS, "sessions", |r| r.rps);
metric!(WAIT_RPS, "wait", |r| r.rps);
metric!(WAIT_P50, "wait", |r| r.p50_us);
metric!(WAIT_P99, "wait", |r| r.p99_us);
metric!(WAIT_CPU, "wait", |r| r.cpu_us_per_op);
metric!(WAIT_LOADGEN, "wait", |r| r.loadgen_cpu_pct);
metric!(WAIT_OTHER, "wait", |r| r.other_cpu_pct);
metric!(SESS_P99, "sessions", |r| r.p99_us);
metric!(HOLD_KIB, "hold", Pt::Largest, |r| r.kib_per_session);
metric!(HOLD_BEFORE_MIB, "hold", Pt::Largest, |r| r
    .rss_before_kib
    .map(mib));
metric!(HOLD_AFTER_MIB, "hold", Pt::Largest, |r| r
    .rss_after_kib
    .map(mib));
metric!(HOLD_N, "hold", Pt::Largest, |r| r.held.map(|n| n as f64));
metric!(HOLD_FRESH, "hold", Pt::Largest, |r| r.fresh_p50_us);
metric!(STREAMS_KIB, "streams", |r| r.kib_per_session);
metric!(STREAMS_AFTER_MIB, "streams", |r| r.rss_after_kib.map(mib));
metric!(STREAMS_N, "streams", |r| r.held.map(|n| n as f64));
metric!(SETUP_P50, "setup", |r| r.p50_us);
metric!(SETUP_P99, "setup", |r| r.p99_us);
metric!(SETUP_HANDSHAKE, "setup", |r| r.handshake_p50_us);
metric!(COLD_MS, "cold", |r| r.cold_ms);
metric!(COLD_RSS_MIB, "cold", |r| r.rss_kib.map(mib));
metric!(STREAM_EPS, "stream", |r| r.events_per_s);
metric!(STREAM_CPU, "stream", |r| r.cpu_us_per_event);
metric!(STREAM_P50, "stream", |r| r.p50_us);
metric!(STREAM_LOADGEN, "stream", |r| r.loadgen_cpu_pct);
metric!(CHUNKS_PER_EVENT, "chunks", |r| r.chunks_per_event);
metric!(CHUNKS_PER_HELLO, "chunks", |r| r.chunks_per_hello);
metric!(WRITES_PER_EVENT, "chunks", |r| r.writes_per_event);
metric!(CONC_RPS, "conc", Pt::Largest, |r| r.rps);
metric!(CONC_CPU, "conc", Pt::Largest, |r| r.cpu_us_per_op);
metric!(SIZE_MBPS, "size", Pt::Largest, |r| r.mb_per_s);
metric!(SIZE_CPU_MB, "size", Pt::Largest, |r| r.cpu_us_per_mb);
metric!(SIZE_PEAK, "size", Pt::Largest, |r| r.peak_kib_per_inflight);
metric!(TOOLS_P50, "tools", Pt::Largest, |r| r.p50_us);
metric!(TOOLS_CPU, "tools", Pt::Largest, |r| r.cpu_us_per_op);
metric!(FANOUT_LAST, "fanout", Pt::Largest, |r| r.fanout_last_ms);

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// All records, by server (in the order servers first appear) and scenario.
pub(crate) struct Summary {
    pub(crate) servers: Vec<String>,
    runs: BTreeMap<(String, String), Vec<Record>>,
    pub(crate) records: Vec<Record>,
}

impl Summary {
    /// Groups `records`; repetitions of one server and scenario are kept in `rep` order.
    pub(crate) fn new(records: Vec<Record>) -> Self {
        let mut servers: Vec<String> = Vec::new();
        let mut runs: BTreeMap<(String, String), Vec<Record>> = BTreeMap::new();
        for r in &records {
            if !servers.contains(&r.server) {
                servers.push(r.server.clone());
            }
            runs.entry((r.server.clone(), r.scenario.clone()))
                .or_default()
                .push(r.clone());
        }
        for list in runs.values_mut() {
            list.sort_by_key(|r| r.rep);
        }
        Summary {
            servers,
            runs,
            records,
        }
    }

    fn runs(&self, server: &str, scenario: &str) -> &[Record] {
        self.runs
            .get(&(server.to_owned(), scenario.to_owned()))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The points measured (not skipped) for `server` in `scenario`, ascending.
    pub(crate) fn points(&self, server: &str, scenario: &str) -> Vec<u64> {
        let mut p: Vec<u64> = self
            .runs(server, scenario)
            .iter()
            .filter(|r| r.skipped.is_none())
            .filter_map(|r| r.point)
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// The points of `scenario` measured for any server, ascending.
    pub(crate) fn all_points(&self, scenario: &str) -> Vec<u64> {
        let mut p: Vec<u64> = self
            .servers
            .iter()
            .flat_map(|s| self.points(s, scenario))
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// Why a point was not measured for `server`, if it was skipped.
    pub(crate) fn skipped(&self, server: &str, scenario: &str, point: u64) -> Option<&str> {
        self.runs(server, scenario)
            .iter()
            .find(|r| r.point == Some(point) && r.skipped.is_some())
            .and_then(|r| r.skipped.as_deref())
    }

    /// Each repetition's value of `m` for `server` (runs without the figure left out).
    pub(crate) fn values(&self, server: &str, m: Metric) -> Vec<f64> {
        let want = match m.point {
            Pt::Any => None,
            Pt::At(p) => Some(p),
            Pt::Largest => match self.points(server, m.scenario).last() {
                Some(&p) => Some(p),
                None => return Vec::new(),
            },
        };
        self.runs(server, m.scenario)
            .iter()
            .filter(|r| want.is_none() || r.point == want)
            .filter_map(m.read)
            .collect()
    }

    /// (max − min) / median of `m` over the repetitions, when there are several.
    pub(crate) fn spread(&self, server: &str, m: Metric) -> Option<f64> {
        spread(&self.values(server, m))
    }

    /// Median over repetitions (the mean of the middle two for an even count).
    pub(crate) fn median(&self, server: &str, m: Metric) -> Option<f64> {
        median(self.values(server, m))
    }

    /// `median(a) / median(b)` for two servers.
    pub(crate) fn ratio(&self, server: &str, reference: &str, m: Metric) -> Option<f64> {
        let (a, b) = (self.median(server, m)?, self.median(reference, m)?);
        (b != 0.0).then_some(a / b)
    }

    /// Largest VmHWM of all of a server's runs, MiB.
    pub(crate) fn peak_rss_mib(&self, server: &str) -> Option<f64> {
        self.records
            .iter()
            .filter(|r| r.server == server)
            .filter_map(|r| r.hwm_kib)
            .max()
            .map(mib)
    }

    /// Whether `server` was measured at all.
    pub(crate) fn has(&self, server: &str) -> bool {
        self.servers.iter().any(|s| s == server)
    }
}

pub(crate) use crate::stats::median;

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
    fn medians_and_ratios() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        let s = Summary::new(vec![
            rec("a", 2, 30.0),
            rec("a", 1, 10.0),
            rec("b", 1, 10.0),
        ]);
        assert_eq!(s.servers, vec!["a", "b"]);
        assert_eq!(s.values("a", TPUT_RPS), vec![10.0, 30.0]);
        assert_eq!(s.ratio("a", "b", TPUT_RPS), Some(2.0));
        assert_eq!(s.ratio("a", "c", TPUT_RPS), None);
    }
}
