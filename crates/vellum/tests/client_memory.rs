//! The client against a server in the same process (memory transport), in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use client_support::{Seen, builder, exercise, fixture_server};
use serde_json::json;
use vellum::client::{CallOptions, ProtocolChoice};
use vellum::transport::memory::MemoryTransport;

#[tokio::test]
async fn legacy_session_every_call() {
    let (server, _) = fixture_server();
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
    let (server, _) = fixture_server();
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
    let (server, _) = fixture_server();
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
        let (server, flags) = fixture_server();
        let seen = Seen::default();
        let client = builder(choice, &seen)
            .connect(MemoryTransport::new(server))
            .await
            .unwrap();
        let started = flags.hang_started.notified();
        let call = client.call_tool_with(
            vellum::protocol::CallToolParams {
                name: "hang".into(),
                arguments: json!({}).as_object().cloned(),
                ..Default::default()
            },
            CallOptions::default().timeout(Duration::from_millis(300)),
        );
        let (r, ()) = tokio::join!(call, started);
        assert!(matches!(r, Err(vellum::Error::Timeout(_))), "{r:?}");
        // The cancellation reaches the server, which drops the handler.
        tokio::time::timeout(Duration::from_secs(5), flags.hang_dropped_event.notified())
            .await
            .expect("the server never dropped the cancelled handler");
        assert!(flags.hang_dropped.load(Ordering::SeqCst));
        // The client still works afterwards.
        client.ping().await.unwrap();
    }
}
