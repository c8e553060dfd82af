//! `vellum serve --tls-cert PEM --tls-key PEM` as a child process, with a CA made in the
//! test: the official TypeScript clients (SDK v1 and v2) over HTTPS trusting that CA through
//! `NODE_EXTRA_CA_CERTS`, the Python SDK's client through `SSL_CERT_FILE`, and `SIGHUP` reloading the certificate (the next handshake sees
//! it, an open SSE stream stays up; a broken file is refused and the current one kept).
//! Bad flags fail at start with the file named.
//!
//! Needs Node 20+, `npm ci` in `tests/interop/clients` and `tests/interop/ts`, and the
//! Python venv of `tests/interop/python` (`bash scripts/test.sh` does all three).

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

use reqwest::StatusCode;
use vellum_testkit::http::{McpHttp, SseReader};
use vellum_testkit::process::{ServerProcess, vellum_serve, vellum_serve_fails};
use vellum_testkit::tls::{Leaf, TestCa, peer_certificate};
use vellum_testkit::within;

fn interop(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop")
        .join(sub)
}

fn serve_tls(leaf: &Leaf, more: &[&str]) -> ServerProcess {
    let mut args = vec![
        "--tls-cert",
        leaf.cert.to_str().unwrap(),
        "--tls-key",
        leaf.key.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    let s = vellum_serve(&args);
    assert!(s.url.starts_with("https://"), "start line: {}", s.url);
    s
}

/// Runs a node client with the CA in `NODE_EXTRA_CA_CERTS`; returns its stderr.
fn node_client(what: &str, script: PathBuf, args: &[&str], ca: &TestCa) -> String {
    assert!(
        script.exists(),
        "\n\n{} IS MISSING: run `npm ci` in tests/interop (bash scripts/test.sh does it).\n\n",
        script.display()
    );
    let o = Command::new("node")
        .arg(&script)
        .args(args)
        .env("NODE_EXTRA_CA_CERTS", ca.ca_file())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run node: {e}"));
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{out}\n{err}",
        o.status
    );
    assert!(out.contains("Hello World, Alice"), "{what}:\n{out}\n{err}");
    err
}

#[test]
fn the_official_typescript_clients_work_over_tls() {
    let ca = TestCa::new();
    let s = serve_tls(&ca.issue("server"), &[]);
    let url = s.mcp_url();
    for (mode, era) in [
        ("legacy", "protocol 2025-11-25"),
        ("auto", "protocol 2026-07-28"),
    ] {
        let script = interop("clients/client-ts-v2.mjs");
        let err = node_client(&format!("TS v2 ({mode})"), script, &[&url, mode], &ca);
        assert!(err.contains(era), "TS v2 ({mode}): {err}");
    }
    node_client("TS v1", interop("ts/client.mjs"), &[&url], &ca);

    // Without the CA the same client refuses the server.
    let o = Command::new("node")
        .arg(interop("clients/client-ts-v2.mjs"))
        .args([&url, "legacy"])
        .env_remove("NODE_EXTRA_CA_CERTS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success(), "an untrusted server was accepted");
}

#[test]
fn the_official_python_client_works_over_tls() {
    let python = interop("python/.venv/bin/python");
    assert!(
        python.exists(),
        "\n\nTHE PYTHON VENV IS MISSING: python3 -m venv tests/interop/python/.venv && \
         tests/interop/python/.venv/bin/pip install -r tests/interop/python/requirements.txt\n\n"
    );
    let ca = TestCa::new();
    let s = serve_tls(&ca.issue("server"), &[]);
    for (mode, era) in [
        ("legacy", "protocol 2025-11-25"),
        ("auto", "protocol 2026-07-28"),
    ] {
        let o = Command::new(&python)
            .arg(interop("python/client.py"))
            .args([&s.mcp_url(), mode])
            .env("SSL_CERT_FILE", ca.ca_file())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "python ({mode}):\n{out}\n{err}");
        assert!(
            out.contains("Hello World, Alice"),
            "python ({mode}):\n{out}\n{err}"
        );
        assert!(err.contains(era), "python ({mode}): {err}");
    }
}

fn sighup(s: &ServerProcess) {
    let ok = Command::new("kill")
        .args(["-HUP", &s.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -HUP failed");
}

/// The certificate a fresh connection is shown.
async fn presented(ca: &TestCa, s: &ServerProcess) -> Vec<u8> {
    let mut c = McpHttp::with_client(&s.mcp_url(), ca.client());
    let a = c.initialize("2025-11-25").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    let r = c.get(None).send().await.unwrap();
    peer_certificate(&r).expect("a TLS response")
}

#[tokio::test]
async fn sighup_reloads_the_certificate_and_open_streams_stay_up() {
    let ca = TestCa::new();
    let first = ca.issue("first");
    let s = serve_tls(&first, &["--sse-keep-alive", "100ms"]);
    assert_eq!(presented(&ca, &s).await, first.der);

    // A standalone stream open on a connection set up with the first certificate.
    let mut c = McpHttp::with_client(&s.mcp_url(), ca.client());
    c.connect("2025-11-25").await;
    let resp = c.get(None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut stream = SseReader::new(resp);

    let second = ca.issue_to("second", &first.cert, &first.key);
    sighup(&s);
    s.line_with("TLS certificate reloaded");
    assert_eq!(presented(&ca, &s).await, second.der);

    // The old stream is still served: keep-alive comments keep coming.
    for _ in 0..3 {
        let b = within("a keep-alive on the old stream", stream.next_block())
            .await
            .expect("the stream stays open");
        assert!(b.is_comment_only() || b.is_message(), "{b:?}");
    }

    // A broken file is refused; the second certificate stays.
    std::fs::write(&first.key, "not a key").unwrap();
    sighup(&s);
    let l = s.line_with("TLS certificate reload failed");
    assert!(l.contains(first.key.to_str().unwrap()), "{l}");
    assert_eq!(presented(&ca, &s).await, second.der);
    let more = within("the old stream after a failed reload", stream.next_block()).await;
    assert!(more.is_some());
}

#[test]
fn bad_tls_flags_fail_at_start() {
    let ca = TestCa::new();
    let leaf = ca.issue("server");
    let err = vellum_serve_fails(&["--tls-cert", leaf.cert.to_str().unwrap()]);
    assert!(err.contains("--tls-key"), "{err}");
    let missing = leaf.cert.with_file_name("missing.pem");
    let err = vellum_serve_fails(&[
        "--tls-cert",
        missing.to_str().unwrap(),
        "--tls-key",
        leaf.key.to_str().unwrap(),
    ]);
    assert!(err.contains("missing.pem"), "{err}");
    let other = ca.issue("other");
    let err = vellum_serve_fails(&[
        "--tls-cert",
        leaf.cert.to_str().unwrap(),
        "--tls-key",
        other.key.to_str().unwrap(),
    ]);
    assert!(err.contains("--tls-cert/--tls-key"), "{err}");
}
