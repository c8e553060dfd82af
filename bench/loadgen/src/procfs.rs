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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() -> anyhow::Result<()> {
        let me = std::process::id();
        assert!(tree(me).contains(&me));
        assert!(tree_cpu(me)? >= 0.0);
        assert!(tree_memory(me)?.rss_kib > 0);
        Ok(())
    }
}
