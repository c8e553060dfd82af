//! The `vellum` binary as a user runs it: `vellum serve` (HTTP and stdio) and the client
//! commands against it, as real processes on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};
use std::time::Duration;

use vellum_testkit::process::{ServerProcess, vellum_serve};

use vellum::client::{Client, ProtocolChoice, Transport};
use vellum::transport::stdio::ChildProcessTransport;

const BIN: &str = env!("CARGO_BIN_EXE_vellum");

fn serve(extra: &[&str]) -> ServerProcess {
    vellum_serve(extra)
}

fn vellum(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("vellum runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn tools_call_prints_the_greeting_in_both_eras() {
    let s = serve(&[]);
    for protocol in ["auto", "legacy", "modern"] {
        let o = vellum(&[
            "tools",
            "call",
            &s.url,
            "hello_world",
            "user_name=Alice",
            "--protocol",
            protocol,
        ]);
        assert!(
            o.status.success(),
            "{protocol}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(stdout(&o), "Hello World, Alice\n", "{protocol}");
    }
    // JSON arguments and exact JSON output.
    let o = vellum(&[
        "tools",
        "call",
        &s.url,
        "hello_world",
        "--json-args",
        r#"{"user_name":"Bob"}"#,
        "--json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON output");
    assert_eq!(v["content"][0]["text"], "Hello World, Bob");
}

#[test]
fn tools_list_is_a_table_or_json() {
    let s = serve(&[]);
    let o = vellum(&["tools", "list", &s.url]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(text.contains("hello_world  user_name"), "{text}");
    let o = vellum(&["tools", "list", &s.url, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON output");
    assert_eq!(v["tools"][0]["name"], "hello_world");
    let o = vellum(&["ping", &s.url]);
    assert!(o.status.success());
    assert!(
        stdout(&o).starts_with("hello-world 0.1.0 answered in"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn errors_say_what_went_wrong_and_exit_non_zero() {
    let s = serve(&[]);
    let o = vellum(&["tools", "call", &s.url, "no_such_tool"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Unknown tool: no_such_tool"), "{err}");
    // Nothing listens on port 1.
    let o = vellum(&["ping", "http://127.0.0.1:1/mcp", "--timeout", "5s"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot connect to http://127.0.0.1:1/mcp")
    );
    let o = vellum(&["tools", "call", &s.url, "hello_world", "oops"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected key=value"));
}

#[test]
fn stdio_server_and_client() {
    let cmd = format!("{BIN} serve --stdio");
    for protocol in ["auto", "legacy"] {
        let o = vellum(&[
            "tools",
            "call",
            "--stdio",
            &cmd,
            "hello_world",
            "user_name=Alice",
            "--protocol",
            protocol,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(stdout(&o), "Hello World, Alice\n");
    }
    let o = vellum(&["tools", "list", "--stdio", &cmd]);
    assert!(stdout(&o).contains("hello_world"));
}

#[tokio::test]
async fn a_stdio_child_exits_when_its_stdin_closes() {
    let t = ChildProcessTransport::from_command_line(&format!("{BIN} serve --stdio")).unwrap();
    let client = Client::builder()
        .protocol(ProtocolChoice::Legacy)
        .connect(t)
        .await
        .unwrap();
    let r = client
        .call_tool("hello_world", serde_json::json!({"user_name": "Eve"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("Hello World, Eve"));
    client.close().await;

    let t = ChildProcessTransport::from_command_line(&format!("{BIN} serve --stdio")).unwrap();
    let status = t.shutdown().await.expect("an exit status");
    assert!(status.success(), "closing stdin is enough: {status:?}");
}

#[tokio::test]
async fn a_stdio_child_that_ignores_eof_and_sigterm_is_killed() {
    use std::os::unix::process::ExitStatusExt as _;
    // Ignores stdin EOF and SIGTERM: only SIGKILL ends it.
    let t = ChildProcessTransport::from_command_line("sh -c 'trap \"\" TERM; sleep 30'")
        .unwrap()
        .with_grace(Duration::from_millis(200));
    let status = t.shutdown().await.expect("an exit status");
    assert_eq!(status.signal(), Some(9), "{status:?}");
    // A child that stops on SIGTERM stops there.
    let t = ChildProcessTransport::from_command_line("sleep 30")
        .unwrap()
        .with_grace(Duration::from_millis(200));
    let status = t.shutdown().await.expect("an exit status");
    assert_eq!(status.signal(), Some(15), "{status:?}");
    let _ = t.close().await;
}
