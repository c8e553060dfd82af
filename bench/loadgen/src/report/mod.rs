//! `mcpbench report`: JSON-lines results → `docs/benchmarks.md` and `docs/bench/*.svg`.
//!
//! `summary` groups runs and takes medians, `markdown` writes the tables, `chart` draws the
//! SVG. Machine facts are read here from `/proc`; versions come from the runner's file.

mod chart;
pub(crate) mod compare;
mod curves;
mod markdown;
mod noise;
mod summary;
mod targets;

use std::path::{Component, Path, PathBuf};

use anyhow::Context as _;

use crate::cli::ReportArgs;
use crate::record::Record;

/// File name of the chart inside `--svg-dir`.
const CHART: &str = "overview.svg";

/// Runs `report`.
pub(crate) fn write(args: &ReportArgs) -> anyhow::Result<()> {
    let mut records = Vec::new();
    for path in &args.results {
        records.extend(Record::read_all(path)?);
    }
    anyhow::ensure!(!records.is_empty(), "no results in {:?}", args.results);
    let summary = summary::Summary::new(records);

    std::fs::create_dir_all(&args.svg_dir)
        .with_context(|| format!("creating {}", args.svg_dir.display()))?;
    let chart_path = args.svg_dir.join(CHART);
    chart::draw_all(&summary, &args.svg_dir, CHART)?;

    let read = |p: &Option<PathBuf>| -> anyhow::Result<String> {
        match p {
            Some(p) => {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            }
            None => Ok(String::new()),
        }
    };
    let versions = read(&args.versions)?;
    let skipped = read(&args.skipped)?;
    let meta = read(&args.meta)?;
    let md_dir = args.markdown.parent().unwrap_or(Path::new("."));
    // Links between files given relative to here and files given absolutely.
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let chart_link = relative(&abs(md_dir), &abs(&chart_path));
    let chart_dir = relative(&abs(md_dir), &abs(&args.svg_dir));
    let chart_dir = if chart_dir.is_empty() {
        ".".to_owned()
    } else {
        chart_dir
    };
    let readme = relative(&abs(md_dir), &abs(&args.readme));
    let machine = machine();
    let cx = markdown::Context {
        machine: &machine,
        versions: &versions,
        command: &args.command,
        chart: &chart_link,
        chart_dir: &chart_dir,
        readme: &readme,
        skipped: &skipped,
        meta: &meta,
    };
    let mut text = markdown::render(&summary, &cx);
    // Hand-written notes at the end of the report (measurements of SDK changes, say) outlive
    // a new run: everything from the marker on is kept.
    if let Ok(old) = std::fs::read_to_string(&args.markdown)
        && let Some(at) = old.find(KEPT_MARKER)
    {
        text.truncate(text.trim_end().len());
        text.push_str("\n\n");
        text.push_str(&old[at..]);
    }
    if !md_dir.as_os_str().is_empty() {
        std::fs::create_dir_all(md_dir)
            .with_context(|| format!("creating {}", md_dir.display()))?;
    }
    std::fs::write(&args.markdown, text)
        .with_context(|| format!("writing {}", args.markdown.display()))?;
    eprintln!(
        "wrote {} and {}",
        args.markdown.display(),
        chart_path.display()
    );
    Ok(())
}

/// Where the hand-written part of a report begins (kept by every new report).
const KEPT_MARKER: &str = "<!-- kept by mcpbench report: hand-written notes below -->";

/// `target` relative to the folder `from` (both relative to the same working directory).
fn relative(from: &Path, target: &Path) -> String {
    let norm = |p: &Path| -> Vec<String> {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let (f, t) = (norm(from), norm(target));
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for part in &t[common..] {
        out.push(part);
    }
    out.to_string_lossy().into_owned()
}

/// CPU model and count, memory and kernel, from `/proc`.
fn machine() -> Vec<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim())
        })
        .unwrap_or("unknown CPU")
        .to_owned();
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    vec![
        format!("CPU: {model}, {cpus} logical CPUs"),
        format!("memory: {:.0} GiB", mem_kib as f64 / (1024.0 * 1024.0)),
        format!("kernel: Linux {}", kernel.trim()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links() {
        assert_eq!(
            relative(Path::new("docs"), Path::new("docs/bench/x.svg")),
            "bench/x.svg"
        );
        assert_eq!(
            relative(Path::new("a/b"), Path::new("c/x.svg")),
            "../../c/x.svg"
        );
        assert_eq!(relative(Path::new(""), Path::new("x.svg")), "x.svg");
    }
}
