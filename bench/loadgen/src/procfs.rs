//! Server cost from `/proc`: CPU time and memory of a process and all its descendants.
//!
//! CPU is the on-CPU time of every thread, from `/proc/PID/task/TID/schedstat` (nanoseconds;
//! `/proc/PID/stat` counts in 10 ms ticks, too coarse for a 200-session setup run). A thread
//! that exits between the two readings of a window drops out of the sum, so servers whose
//! threads come and go under load would be under-counted; the runtimes measured here keep
//! theirs. Memory is VmRSS and VmHWM from `/proc/PID/status`. Both are summed over the tree
//! rooted at the server's PID, so a server started through a wrapper or with worker processes
//! is counted whole.

use std::collections::HashMap;
use std::fs;

use anyhow::Context as _;

/// Memory of a process tree, KiB.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Memory {
    pub(crate) rss_kib: u64,
    pub(crate) hwm_kib: u64,
}

/// Fields of `/proc/PID/stat` after the `(comm)` field, split on whitespace.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// `pid` and all its descendants (those alive now).
pub(crate) fn tree(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // Field 4 (ppid) is the second after `(comm)`.
            if let Some(ppid) = stat_fields(child).and_then(|f| f.get(1)?.parse::<u32>().ok()) {
                children.entry(ppid).or_default().push(child);
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while let Some(&p) = out.get(i) {
        if let Some(kids) = children.get(&p) {
            out.extend(kids);
        }
        i += 1;
    }
    out
}

/// CPU seconds used so far by the live threads of one process.
fn cpu_of(pid: u32) -> Option<f64> {
    let mut ns: u64 = 0;
    for task in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let mut path = task.path();
        path.push("schedstat");
        // First field: time spent on the CPU, ns. A thread may exit while we read.
        if let Some(t) = fs::read_to_string(path)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        {
            ns += t;
        }
    }
    Some(ns as f64 / 1e9)
}

/// CPU seconds used so far by the tree rooted at `pid`.
pub(crate) fn tree_cpu(pid: u32) -> anyhow::Result<f64> {
    let root = cpu_of(pid).with_context(|| format!("reading /proc/{pid}/stat (server gone?)"))?;
    Ok(root
        + tree(pid)
            .iter()
            .skip(1)
            .filter_map(|&p| cpu_of(p))
            .sum::<f64>())
}

/// Busy and stolen CPU seconds of the whole machine so far, from the `cpu` line of
/// `/proc/stat` (busy = user + nice + system + irq + softirq; steal = time the hypervisor ran
/// something else).
pub(crate) fn machine_cpu() -> Option<(f64, f64)> {
    let text = fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let tick = |i: usize| f.get(i).copied().unwrap_or(0) as f64 / USER_HZ;
    Some((tick(0) + tick(1) + tick(2) + tick(5) + tick(6), tick(7)))
}

/// CPUs of the machine (the `cpuN` lines of `/proc/stat`; this process's own affinity, which
/// the runner pins to one CPU, does not matter).
fn cores() -> f64 {
    let n = fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    n.max(1) as f64
}

/// Unit of `/proc/stat` (fixed at 100 by the kernel's ABI, whatever CONFIG_HZ is).
const USER_HZ: f64 = 100.0;

/// CPU seconds used so far by this process.
pub(crate) fn self_cpu() -> f64 {
    cpu_of(std::process::id()).unwrap_or(0.0)
}

fn memory_of(pid: u32) -> Option<Memory> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    Some(Memory {
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
    })
}

/// Memory of the tree rooted at `pid`.
pub(crate) fn tree_memory(pid: u32) -> anyhow::Result<Memory> {
    let mut total = memory_of(pid).with_context(|| format!("reading /proc/{pid}/status"))?;
    for p in tree(pid).into_iter().skip(1) {
        if let Some(m) = memory_of(p) {
            total.rss_kib += m.rss_kib;
            total.hwm_kib += m.hwm_kib;
        }
    }
    Ok(total)
}

/// The 1-minute load average (`/proc/loadavg`).
pub(crate) fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU seconds used so far by every process on the machine, by PID, with its name
/// (`utime + stime` of `/proc/PID/stat`, in clock ticks: coarse, but it covers processes
/// that come and go, which schedstat of live threads would miss).
fn all_processes() -> HashMap<u32, (String, f64)> {
    let mut out = HashMap::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) else {
            continue;
        };
        let name = text[open + 1..close].to_owned();
        let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
        // Fields 14 and 15 (utime, stime) are the 12th and 13th after `(comm)`.
        let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / USER_HZ;
        out.insert(pid, (name, tick(11) + tick(12)));
    }
    out
}

/// The machine's state at the start of a measured run, to tell afterwards how busy the rest
/// of the machine was meanwhile.
pub(crate) struct Meter {
    start: std::time::Instant,
    loadavg: Option<f64>,
    machine: Option<(f64, f64)>,
    processes: HashMap<u32, (String, f64)>,
}

/// What the rest of the machine did during a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Load {
    pub(crate) loadavg_before: Option<f64>,
    pub(crate) loadavg_after: Option<f64>,
    /// Busy CPU of the machine minus the server's and the load generator's trees, % of one
    /// core, over the run.
    pub(crate) other_cpu_pct: Option<f64>,
    /// The busiest other processes, as `name N%`.
    pub(crate) top: Vec<String>,
}

impl Meter {
    /// Takes the readings at the start of a run.
    pub(crate) fn start() -> Meter {
        Meter {
            start: std::time::Instant::now(),
            loadavg: loadavg(),
            machine: machine_cpu(),
            processes: all_processes(),
        }
    }

    /// The readings since `start`; `server` (and its descendants) and this process (and its
    /// children) are not "other".
    pub(crate) fn finish(&self, server: Option<u32>) -> Load {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let now = all_processes();
        let mut ours: Vec<u32> = tree(std::process::id());
        if let Some(pid) = server {
            ours.extend(tree(pid));
        }
        let mut others: Vec<(String, f64)> = Vec::new();
        let mut ours_used = 0.0;
        for (pid, (name, cpu)) in &now {
            let before = self.processes.get(pid).map_or(0.0, |p| p.1);
            let used = (cpu - before).max(0.0);
            if ours.contains(pid) {
                ours_used += used;
            } else if used > 0.0 {
                others.push((name.clone(), used));
            }
        }
        // Group by name: a build is many short-lived rustc processes.
        let mut by_name: HashMap<String, f64> = HashMap::new();
        for (name, used) in others {
            *by_name.entry(name).or_default() += used;
        }
        let mut top: Vec<(String, f64)> = by_name.into_iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        let other = match (self.machine, machine_cpu()) {
            // Busy time of the whole machine includes processes that exited meanwhile,
            // which the per-process sums cannot see.
            // Clock-tick rounding can overshoot on short runs: no more than every core.
            (Some((b0, _)), Some((b1, _))) => {
                Some((100.0 * ((b1 - b0) - ours_used) / secs).clamp(0.0, 100.0 * cores()))
            }
            _ => None,
        };
        Load {
            loadavg_before: self.loadavg,
            loadavg_after: loadavg(),
            other_cpu_pct: other,
            top: top
                .into_iter()
                .take(3)
                .filter(|(_, used)| 100.0 * used / secs >= 1.0)
                .map(|(name, used)| format!("{name} {:.0}%", 100.0 * used / secs))
                .collect(),
        }
    }
}

/// Resets the peak RSS (VmHWM) of the tree rooted at `pid` to its current RSS
/// (`/proc/PID/clear_refs`); false where the kernel refuses.
pub(crate) fn reset_peak(pid: u32) -> bool {
    tree(pid)
        .into_iter()
        .all(|p| fs::write(format!("/proc/{p}/clear_refs"), "5").is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() -> anyhow::Result<()> {
        let me = std::process::id();
        assert!(tree(me).contains(&me));
        assert!(tree_cpu(me)? >= 0.0);
        assert!(tree_memory(me)?.rss_kib > 0);
        let meter = Meter::start();
        let load = meter.finish(None);
        assert!(load.loadavg_before.is_some() && load.other_cpu_pct.is_some());
        Ok(())
    }
}
