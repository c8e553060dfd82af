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
