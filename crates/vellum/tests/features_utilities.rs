//! Utilities in both eras: logging levels, progress, cancellation, ping. Over loopback HTTP,
//! and over a message-stream [`Connection`] for the stdio rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Notify;
use vellum::prelude::*;
use vellum::protocol::LoggingLevel;
use vellum::server::NoArgs;
use vellum::transport::Connection;
use vellum_testkit::DEADLINE;
use vellum_testkit::http::{Legacy, Modern, SseReader, TestHttpServer};

/// Signals when dropped: proves a handler's future was dropped (cancelled).
struct DropSignal(Arc<Notify>);
impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

fn server(dropped: Arc<Notify>, started: Arc<Notify>) -> Server {
    let s = Server::new(Implementation::new("utils", "1"), ServerOptions::default());
    s.add_tool(
        Tool::new("chatty", "Logs at every level, reports progress"),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            for level in LoggingLevel::ALL {
                ctx.log(level, Some("chatty"), json!({"level": level.as_str()}))
                    .await?;
            }
            ctx.notify_progress(1.0, Some(2.0), None).await?;
            let backwards = ctx.notify_progress(0.5, Some(2.0), None).await;
            ctx.notify_progress(2.0, Some(2.0), Some("done".into()))
                .await?;
            Ok::<_, HandlerError>(format!(
                "backwards refused: {}",
                backwards.is_err() || ctx.progress_token().is_none()
            ))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("forever", "Never finishes"),
        move |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| {
            let guard = DropSignal(dropped.clone());
            let started = started.clone();
            async move {
                let _guard = guard;
                started.notify_one();
                std::future::pending::<()>().await;
                Ok::<_, HandlerError>("unreachable")
            }
        },
    )
    .unwrap();
    s
}

fn levels(a: &vellum_testkit::http::Reply) -> Vec<String> {
    a.notifications("notifications/message")
        .iter()
        .map(|m| m["params"]["level"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn logging_follows_the_level_of_each_era() {
    let srv = TestHttpServer::serve(server(Arc::default(), Arc::default())).await;
    let legacy = Legacy::connect(&srv.url).await;
    let call = json!({"name": "chatty", "arguments": {}});
    // No level set: nothing is logged.
    assert!(levels(&legacy.request(1, "tools/call", call.clone()).await).is_empty());
    let set = legacy
        .request(2, "logging/setLevel", json!({"level": "error"}))
        .await;
    assert_eq!(set.result(), &json!({}), "setLevel answers exactly {{}}");
    assert_eq!(
        levels(&legacy.request(3, "tools/call", call.clone()).await),
        ["error", "critical", "alert", "emergency"]
    );

    let mut modern = Modern::new(&srv.url);
    assert!(levels(&modern.request(1, "tools/call", call.clone()).await).is_empty());
    modern.log_level = Some("warning");
    assert_eq!(
        levels(&modern.request(2, "tools/call", call).await),
        ["warning", "error", "critical", "alert", "emergency"]
    );
    // logging/setLevel does not exist in 2026-07-28.
    let a = modern
        .request(3, "logging/setLevel", json!({"level": "info"}))
        .await;
    assert_eq!(a.error_code(), -32601);
}

#[tokio::test]
async fn progress_needs_a_token_and_must_increase() {
    let srv = TestHttpServer::serve(server(Arc::default(), Arc::default())).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);
    let plain = json!({"name": "chatty", "arguments": {}});
    let mut tokened = plain.clone();
    tokened["_meta"] = json!({"progressToken": 42});
    for a in [
        legacy.request(1, "tools/call", plain.clone()).await,
        modern.request(1, "tools/call", plain).await,
    ] {
        assert!(a.notifications("notifications/progress").is_empty());
    }
    for a in [
        legacy.request(2, "tools/call", tokened.clone()).await,
        modern.request(2, "tools/call", tokened).await,
    ] {
        let p: Vec<f64> = a
            .notifications("notifications/progress")
            .iter()
            .map(|n| {
                assert_eq!(n["params"]["progressToken"], 42);
                n["params"]["progress"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(p, [1.0, 2.0], "the backwards step was not sent");
        assert_eq!(a.result()["content"][0]["text"], "backwards refused: true");
    }
}

#[tokio::test]
async fn legacy_cancellation_drops_the_handler_and_sends_nothing() {
    let dropped = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let srv = TestHttpServer::serve(server(dropped.clone(), started.clone())).await;
    let c = Legacy::connect(&srv.url).await;
    let resp = c
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "forever", "arguments": {}}}))
        .await;
    tokio::time::timeout(DEADLINE, started.notified())
        .await
        .unwrap();
    let r = c
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 9, "reason": "changed my mind"}}),
        )
        .await;
    assert_eq!(r.status(), 202);
    tokio::time::timeout(DEADLINE, dropped.notified())
        .await
        .unwrap();
    // The stream ends without a response for the cancelled request.
    let mut reader = SseReader::new(resp);
    assert!(
        reader.next_json().await.is_none(),
        "a cancelled request gets no answer"
    );
    // The session goes on.
    let ping = c.request(10, "ping", json!({})).await;
    assert_eq!(ping.result(), &json!({}));
}

#[tokio::test]
async fn modern_cancellation_is_closing_the_stream() {
    let dropped = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let srv = TestHttpServer::serve(server(dropped.clone(), started.clone())).await;
    let c = Modern::new(&srv.url);
    let resp = c
        .post(&c.body(1, "tools/call", json!({"name": "forever", "arguments": {}})))
        .await;
    tokio::time::timeout(DEADLINE, started.notified())
        .await
        .unwrap();
    drop(resp);
    tokio::time::timeout(DEADLINE, dropped.notified())
        .await
        .unwrap();
}

#[tokio::test]
async fn ping_is_exactly_empty() {
    let srv = TestHttpServer::serve(server(Arc::default(), Arc::default())).await;
    let c = Legacy::connect(&srv.url).await;
    let raw = c
        .post(&json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        .await
        .text()
        .await
        .unwrap();
    let data = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| !d.is_empty())
        .unwrap_or(&raw);
    let v: Value = serde_json::from_str(data).unwrap();
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
}

/// Reads the connection's next message.
async fn next(rx: &mut tokio::sync::mpsc::Receiver<Bytes>) -> Value {
    let b = tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .unwrap()
        .unwrap();
    serde_json::from_slice(&b).unwrap()
}

#[tokio::test]
async fn stdio_cancellation_in_both_eras() {
    let dropped = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let (conn, mut rx) = Connection::new(server(dropped.clone(), started.clone()));
    let send = |v: Value| {
        let conn = conn.clone();
        async move { conn.handle_bytes(Bytes::from(v.to_string())).await }
    };
    // A modern request on stdio is cancelled with notifications/cancelled.
    let meta = vellum_testkit::http::modern_meta(&json!({}));
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "forever", "arguments": {}, "_meta": meta}}))
    .await;
    tokio::time::timeout(DEADLINE, started.notified())
        .await
        .unwrap();
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    )
    .await;
    tokio::time::timeout(DEADLINE, dropped.notified())
        .await
        .unwrap();
    tokio::time::timeout(DEADLINE, conn.idle()).await.unwrap();
    // Nothing was sent for it; the next answer is the discover below.
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
        "params": {"_meta": meta}}),
    )
    .await;
    let d = next(&mut rx).await;
    assert_eq!(d["id"], 2);
    assert_eq!(d["result"]["resultType"], "complete");
}
