//! Request middleware and message observers: their order, rejection before the handler, and
//! what observers see, on HTTP (both eras) and on a message-stream connection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Value, json};
use vellum::prelude::*;
use vellum::protocol::{ErrorObject, LoggingLevel};
use vellum::server::{MessageEvent, Outcome};
use vellum::transport::Connection;
use vellum_testkit::DEADLINE;
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

type Log = Arc<Mutex<Vec<String>>>;

fn server(log: &Log) -> Server {
    let s = Server::new(Implementation::new("mw", "1"), ServerOptions::default());
    let l = log.clone();
    s.add_tool(
        Tool::new("work", "Logs and answers"),
        move |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| {
            let l = l.clone();
            async move {
                l.lock().unwrap().push("handler".into());
                ctx.log(LoggingLevel::Info, None, "working").await?;
                Ok::<_, HandlerError>("done")
            }
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("secret", "Refused by the auth hook"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>("leaked")
        },
    )
    .unwrap();
    for name in ["outer", "inner"] {
        let l = log.clone();
        s.add_request_middleware(move |req, next| {
            let l = l.clone();
            async move {
                l.lock()
                    .unwrap()
                    .push(format!("{name} before {}", req.method()));
                let out = next.run(req).await;
                l.lock().unwrap().push(format!("{name} after"));
                out
            }
        });
    }
    // An auth hook: refuse one tool before its handler runs.
    s.add_request_middleware(|req, next| async move {
        let params: Value = req
            .params()
            .map(|p| p.parse().unwrap_or_default())
            .unwrap_or_default();
        if req.method() == "tools/call" && params["name"] == "secret" {
            return Outcome::Error(ErrorObject::new(-31001, "Forbidden"));
        }
        next.run(req).await
    });
    let l = log.clone();
    s.add_message_observer(move |e| {
        let what = match e {
            MessageEvent::Sending(_) => {
                format!("out {}", e.method().as_deref().unwrap_or("response"))
            }
            MessageEvent::NotificationReceived(n) => format!("in {}", n.method),
            MessageEvent::ResponseReceived(_) => "in response".into(),
            _ => "other".into(),
        };
        l.lock().unwrap().push(what);
    });
    s
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[tokio::test]
async fn order_and_rejection_in_both_eras() {
    let log: Log = Arc::default();
    let srv = TestHttpServer::serve(server(&log)).await;
    let mut modern = Modern::new(&srv.url);
    modern.log_level = Some("info");
    let a = modern
        .request(1, "tools/call", json!({"name": "work", "arguments": {}}))
        .await;
    assert_eq!(a.result()["content"][0]["text"], "done");
    let seen = take(&log);
    let (chain, observed): (Vec<_>, Vec<_>) = seen.iter().partition(|s| !s.starts_with("out "));
    assert_eq!(
        chain,
        [
            "outer before tools/call",
            "inner before tools/call",
            "handler",
            "inner after",
            "outer after",
        ]
    );
    // Observers see messages as they leave, in order: the log before the response.
    assert_eq!(observed, ["out notifications/message", "out response"]);
    let refused = modern
        .request(2, "tools/call", json!({"name": "secret", "arguments": {}}))
        .await;
    assert_eq!(refused.error_code(), -31001);
    let seen = take(&log);
    assert!(!seen.contains(&"handler".to_owned()));

    let legacy = Legacy::connect(&srv.url).await;
    let seen = take(&log);
    assert!(
        seen.contains(&"outer before initialize".to_owned()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"in notifications/initialized".to_owned()),
        "{seen:?}"
    );
    let refused = legacy
        .request(3, "tools/call", json!({"name": "secret", "arguments": {}}))
        .await;
    assert_eq!(refused.error_code(), -31001);
}

#[tokio::test]
async fn middleware_applies_to_connections_too() {
    let log: Log = Arc::default();
    let (conn, mut rx) = Connection::new(server(&log));
    let meta = vellum_testkit::http::modern_meta(&json!({}));
    conn.handle_bytes(Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "secret", "arguments": {}, "_meta": meta}})
        .to_string(),
    ))
    .await;
    let out = tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .unwrap()
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["error"]["code"], -31001);
    assert_eq!(take(&log)[0], "outer before tools/call");
}
