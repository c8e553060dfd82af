//! SSE framing round trip: an arbitrary string goes out through a tool result on the
//! server's one SSE writer, and comes back through an SSE parser (`sse-stream`, the parser
//! the client uses): every event parses, the last `data` is the JSON-RPC response, and the
//! text in it is exactly the input.
//!
//! When the client's own SSE parser is public, add a target that feeds it raw bytes.
#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::{Method, Request};
use http_body_util::Full;
use libfuzzer_sys::fuzz_target;
use vellum::prelude::*;

#[path = "support.rs"]
mod support;

struct World {
    rt: tokio::runtime::Runtime,
    handler: StreamableHttpHandler,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let rt = support::runtime();
        let server = support::echo_server();
        let handler = rt.block_on(async {
            StreamableHttpHandler::for_server(
                server,
                StreamableHttpOptions::default().stateless(true),
            )
        });
        World { rt, handler }
    })
}

fuzz_target!(|text: &str| {
    let w = world();
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": {"progressToken": 1}},
    });
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", "127.0.0.1:8000")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request");
    w.rt.block_on(async {
        let resp = w.handler.handle(req).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let mut events = sse_stream::SseStream::new(resp.into_body());
        let mut last = None;
        let mut progress = None;
        while let Some(ev) = events.next().await {
            let ev = ev.expect("every SSE event parses");
            if let Some(data) = ev.data.filter(|d| !d.is_empty()) {
                let v: serde_json::Value =
                    serde_json::from_str(&data).expect("every data field is one JSON message");
                if v["method"] == "notifications/progress" {
                    progress = Some(v["params"]["message"].clone());
                }
                last = Some(v);
            }
        }
        let last = last.expect("the stream carries the response");
        assert_eq!(last["id"], 7);
        assert_eq!(
            last["result"]["content"][0]["text"], text,
            "the text round-trips"
        );
        assert_eq!(
            progress,
            Some(serde_json::Value::from(text)),
            "the notification came first"
        );
    });
});
