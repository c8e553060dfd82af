//! Interop: the Vellum client (library and `vellum` CLI) against the official TypeScript SDK
//! servers, pinned in `tests/interop/ts-servers/package-lock.json`: a server of ours built on
//! `@modelcontextprotocol/sdk` (`server.mjs fixture`) and `@modelcontextprotocol/server-everything`,
//! each over stdio and over Streamable HTTP (127.0.0.1, ephemeral port), and the SDK's
//! deprecated HTTP+SSE server transport for the client's fallback. These servers speak
//! only the legacy era, so every connection also checks the era fallback (`server/discover`
//! refused, then `initialize`).
//!
//! Needs Node 20+ and `npm ci` in `tests/interop/ts-servers` (`bash scripts/test.sh` does
//! both); without them the tests fail with a message saying so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;
use vellum::client::{ClientBuilder, ProtocolChoice, Transport};
use vellum::protocol::ResourceContents;
use vellum::transport::http_client::StreamableHttpClientTransport;
use vellum::transport::stdio::ChildProcessTransport;
use vellum_testkit::client::Seen;
use vellum_testkit::process::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_vellum");

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/ts-servers")
}

/// `node server.mjs …`, failing loudly when node or the pinned packages are missing.
fn node_command(args: &[&str]) -> Command {
    let dir = dir();
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "\n\nNODE IS MISSING: these interop tests need Node 20+ on PATH (then run `bash scripts/test.sh`).\n\n"
        ),
    }
    if !dir
        .join("node_modules/@modelcontextprotocol/server-everything/package.json")
        .is_file()
    {
        panic!(
            "\n\nTHE TYPESCRIPT SERVERS ARE NOT INSTALLED: run `npm ci` in {} (bash scripts/test.sh does it).\n\n",
            dir.display()
        );
    }
    let mut c = Command::new("node");
    c.arg(dir.join("server.mjs")).args(args).current_dir(&dir);
    c
}

fn stdio_line(which: &str) -> String {
    format!("node {} {which} stdio", dir().join("server.mjs").display())
}

fn http_server(which: &str) -> ServerProcess {
    server_on(which, "http")
}

/// A TypeScript server over HTTP (`http`) or HTTP+SSE (`sse`); killed on drop.
fn server_on(which: &str, transport: &str) -> ServerProcess {
    ServerProcess::spawn(node_command(&[which, transport]))
}

/// The test kit's client: it answers sampling (`four`) and elicitation (`Alice`) like a
/// model and a user would.
fn builder() -> ClientBuilder {
    vellum_testkit::client::builder(ProtocolChoice::Auto, &Seen::default())
}

fn text_of(r: &vellum::protocol::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn fixture_checks(transport: impl Transport) {
    let client = builder().connect(transport).await.unwrap();
    assert!(
        !client.is_modern(),
        "the TypeScript SDK 1.x speaks the legacy era"
    );
    assert_eq!(client.server_info().unwrap().name, "ts-fixture");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "hello_world"));
    let r = client
        .call_tool("hello_world", json!({"user_name": "Alice"}))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Hello World, Alice");
    let r = client.call_tool("ask_name", json!({})).await.unwrap();
    assert_eq!(text_of(&r), "Hello, Alice", "elicitation answered");
    let r = client.call_tool("sample", json!({})).await.unwrap();
    assert_eq!(
        text_of(&r),
        "model vellum-test-model said four",
        "sampling answered"
    );
    let r = client.read_resource("test://static-text").await.unwrap();
    match &r.contents[0] {
        ResourceContents::Text(t) => assert_eq!(t.text, "static text"),
        other => panic!("{other:?}"),
    }
    let r = client.read_resource("test://item/7").await.unwrap();
    assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text == "item 7"));
    let p = client
        .get_prompt("greet", [("who".into(), "Bob".into())])
        .await
        .unwrap();
    assert_eq!(p.messages[0].content.as_text(), Some("Say hi to Bob"));
    client.ping().await.unwrap();
    client.close().await;
}

async fn everything_checks(transport: impl Transport) {
    let client = builder().connect(transport).await.unwrap();
    assert_eq!(client.server_info().unwrap().name, "mcp-servers/everything");
    let tools = client.list_all_tools().await.unwrap();
    for name in [
        "echo",
        "get-sum",
        "trigger-sampling-request",
        "trigger-elicitation-request",
    ] {
        assert!(tools.iter().any(|t| t.name == name), "{name} missing");
    }
    let r = client
        .call_tool("echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Echo: hi");
    let r = client
        .call_tool("get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(text_of(&r).contains('5'), "{}", text_of(&r));
    let r = client
        .call_tool(
            "trigger-sampling-request",
            json!({"prompt": "2+2?", "maxTokens": 5}),
        )
        .await
        .unwrap();
    assert!(
        text_of(&r).contains("four"),
        "sampling answered: {}",
        text_of(&r)
    );
    let r = client
        .call_tool("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(
        text_of(&r).contains("Alice"),
        "elicitation answered: {}",
        text_of(&r)
    );
    let resources = client.list_all_resources().await.unwrap();
    let first = resources
        .first()
        .expect("the everything server lists resources");
    let read = client.read_resource(&first.uri).await.unwrap();
    assert!(!read.contents.is_empty());
    let prompts = client.list_all_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "simple-prompt"));
    let p = client.get_prompt("simple-prompt", []).await.unwrap();
    assert!(!p.messages.is_empty());
    client.close().await;
}

#[tokio::test]
async fn client_against_the_sdk_server_over_http() {
    let s = http_server("fixture");
    fixture_checks(StreamableHttpClientTransport::new(&s.url).unwrap()).await;
}

#[tokio::test]
async fn client_against_the_sdk_server_over_stdio() {
    let _ = node_command(&[]); // fail loudly when node is missing
    fixture_checks(ChildProcessTransport::from_command_line(&stdio_line("fixture")).unwrap()).await;
}

/// The deprecated 2024-11-05 HTTP+SSE transport: `initialize` POSTed to the URL gets 405,
/// so the client GETs it, finds the `endpoint` event and speaks HTTP+SSE from then on.
#[tokio::test]
async fn client_falls_back_to_the_deprecated_http_sse_transport() {
    let s = server_on("fixture", "sse");
    fixture_checks(StreamableHttpClientTransport::new(&s.url).unwrap()).await;
}

#[tokio::test]
async fn client_against_server_everything_over_http() {
    let s = http_server("everything");
    everything_checks(StreamableHttpClientTransport::new(&s.url).unwrap()).await;
}

#[tokio::test]
async fn client_against_server_everything_over_stdio() {
    let _ = node_command(&[]);
    everything_checks(ChildProcessTransport::from_command_line(&stdio_line("everything")).unwrap())
        .await;
}

#[test]
fn cli_tools_call_against_the_typescript_servers() {
    let s = http_server("fixture");
    let cases = [
        vec!["tools", "call", &s.url, "hello_world", "user_name=Alice"],
        vec![
            "tools",
            "call",
            "--stdio",
            "",
            "hello_world",
            "user_name=Alice",
        ],
    ];
    let stdio = stdio_line("fixture");
    for mut args in cases {
        if args[3].is_empty() {
            args[3] = &stdio;
        }
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "Hello World, Alice\n",
            "{args:?}"
        );
    }
    let o = Command::new(BIN)
        .args([
            "tools",
            "call",
            "--stdio",
            &stdio_line("everything"),
            "echo",
            "message=hi",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Echo: hi\n");
}
