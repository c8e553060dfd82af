//! The client against a server in the same process (memory transport), in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::json;
use vellum::client::{CallOptions, ProtocolChoice};
use vellum::server::ServerOptions;
use vellum::transport::memory::MemoryTransport;
use vellum_testkit::client::{Seen, builder, exercise};
use vellum_testkit::fixture::{test_server, test_server_with};

#[tokio::test]
async fn legacy_session_every_call() {
    let server =
        test_server_with(ServerOptions::default().with_instructions("Use the fixtures.")).server;
    let seen = Seen::default();
    let client = builder(ProtocolChoice::Legacy, &seen)
        .connect(MemoryTransport::new(server))
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(client.instructions().as_deref(), Some("Use the fixtures."));
    exercise(&client, &seen, false).await;
    client.close().await;
}

#[tokio::test]
async fn modern_every_call() {
    let server = test_server().server;
    let seen = Seen::default();
    let client = builder(ProtocolChoice::Modern, &seen)
        .connect(MemoryTransport::new(server))
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    exercise(&client, &seen, true).await;
    client.close().await;
}

#[tokio::test]
async fn auto_picks_the_modern_era_of_a_dual_era_server() {
    let server = test_server().server;
    let seen = Seen::default();
    let client = builder(ProtocolChoice::Auto, &seen)
        .connect(MemoryTransport::new(server))
        .await
        .unwrap();
    assert!(client.is_modern());
    assert!(
        client
            .supported_versions()
            .iter()
            .any(|v| v == "2025-11-25")
    );
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_on_the_server() {
    for choice in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let fixture = test_server();
        let server = fixture.server.clone();
        let seen = Seen::default();
        let client = builder(choice, &seen)
            .connect(MemoryTransport::new(server))
            .await
            .unwrap();
        let started = fixture.slow.entered();
        let call = client.call_tool_with(
            vellum::protocol::CallToolParams {
                name: "slow".into(),
                arguments: json!({}).as_object().cloned(),
                ..Default::default()
            },
            CallOptions::default().timeout(Duration::from_millis(300)),
        );
        let (r, ()) = tokio::join!(call, started);
        assert!(r.as_ref().is_err_and(vellum::Error::is_timeout), "{r:?}");
        // The cancellation reaches the server, which drops the handler.
        tokio::time::timeout(Duration::from_secs(5), fixture.slow.dropped())
            .await
            .expect("the server never dropped the cancelled handler");
        // The client still works afterwards.
        client.ping().await.unwrap();
    }
}

/// Registers a tool named `name` that answers "late" (what the list-change tests add).
fn add_late_tool(server: &vellum::server::Server, name: &str) {
    use vellum::prelude::*;
    server
        .add_raw_tool(
            Tool::new(name, "added late"),
            |_c: RequestContext, _r| async move { Ok::<_, HandlerError>("late") },
        )
        .unwrap();
}

/// The first list change reaches the client with no timer in between (the clock is paused:
/// any sleep on the way would move it), and a burst of changes made while one announcement
/// is on its way costs at most one more.
#[tokio::test(start_paused = true)]
async fn a_list_change_goes_out_at_once_and_a_burst_is_coalesced() {
    use vellum::client::{Client, ServerNotification};
    let server = test_server().server;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder()
        .protocol(ProtocolChoice::Legacy)
        .on_notification(move |n| {
            if matches!(n, ServerNotification::ToolsListChanged) {
                let _ = tx.send(tokio::time::Instant::now());
            }
        })
        .connect(MemoryTransport::new(server.clone()))
        .await
        .unwrap();

    let changed_at = tokio::time::Instant::now();
    add_late_tool(&server, "late0");
    let heard_at = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the change is announced")
        .unwrap();
    assert_eq!(
        heard_at, changed_at,
        "no timer between a change and its announcement"
    );

    for i in 1..=100 {
        add_late_tool(&server, &format!("late{i}"));
    }
    // The clock only moves once every task is idle: by then each announcement has arrived.
    let mut heard = 0;
    while tokio::time::timeout(Duration::from_secs(1), rx.recv())
        .await
        .is_ok()
    {
        heard += 1;
    }
    assert!(
        (1..=2).contains(&heard),
        "100 changes in a burst are announced once or twice, not {heard} times"
    );
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        tools.iter().any(|t| t.name == "late100"),
        "the last change is listed"
    );
    client.close().await;
}
