//! Interop through the gateway: the official everything server (npm
//! `@modelcontextprotocol/server-everything`, a 2025-era stdio server, pinned in
//! `tests/interop/gateway/package-lock.json`) behind `vellum proxy --stdio`, its tools called
//! by the official Python SDK client and the official TypeScript SDK v2 client in both eras
//! (a 2026-07-28 client reaching a server that has never heard of that era). The conformance
//! suite's server scenarios run through the proxy in `scripts/test.sh`.
//! Needs what `bash scripts/test.sh` installs (`npm ci` in tests/interop/gateway and
//! tests/interop/clients, the Python venv).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

use vellum_testkit::process::{ServerProcess, vellum_bin};

fn interop(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop")
        .join(sub)
}

fn require(path: PathBuf, install: &str) -> PathBuf {
    assert!(
        path.exists(),
        "\n\n{} IS MISSING: {install} (bash scripts/test.sh does it).\n\n",
        path.display()
    );
    path
}

/// The official everything server behind `vellum proxy --stdio`.
fn everything_behind_the_proxy() -> ServerProcess {
    let server = require(
        interop("gateway/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "run `npm ci` in tests/interop/gateway",
    );
    let child = format!("node {} stdio", server.display());
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["proxy", "--addr", "127.0.0.1:0", "--stdio", &child])
        .env_remove("RUST_LOG");
    ServerProcess::spawn(cmd)
}

/// Runs an official client calling `echo` through the proxy; returns its stderr.
fn echo(what: &str, mut command: Command) -> String {
    let o = command
        .args(["echo", r#"{"message": "Alice"}"#, "Echo: Alice"])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e}"));
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{out}\n{err}",
        o.status
    );
    assert!(out.contains("Echo: Alice"), "{what}:\n{out}\n{err}");
    err
}

#[test]
fn official_clients_call_the_official_everything_server_in_both_eras() {
    let python = require(
        interop("python/.venv/bin/python"),
        "create the venv: python3 -m venv tests/interop/python/.venv && tests/interop/python/.venv/bin/pip install -r tests/interop/python/requirements.txt",
    );
    require(
        interop("clients/node_modules/@modelcontextprotocol/client/package.json"),
        "run `npm ci` in tests/interop/clients",
    );
    let proxy = everything_behind_the_proxy();
    let url = proxy.mcp_url();
    for (mode, era) in [
        ("legacy", "protocol 2025-11-25"),
        ("auto", "protocol 2026-07-28"),
    ] {
        let mut py = Command::new(&python);
        py.arg(interop("python/client.py")).args([&url, mode]);
        let err = echo(&format!("python client ({mode})"), py);
        assert!(err.contains(era), "python client ({mode}): {err}");
        let mut ts = Command::new("node");
        ts.arg(interop("clients/client-ts-v2.mjs"))
            .args([&url, mode]);
        let err = echo(&format!("TypeScript v2 client ({mode})"), ts);
        assert!(err.contains(era), "TypeScript v2 client ({mode}): {err}");
    }
}
