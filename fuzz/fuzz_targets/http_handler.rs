//! The HTTP handler's request path: arbitrary method, path, headers and body through
//! `StreamableHttpHandler::handle` on a current-thread runtime, optionally inside a live
//! session (a valid `initialize` first), against a stateful and a stateless handler. The
//! response must be a valid HTTP response whose body can be drained without panicking.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use bytes::Bytes;
use futures_util::FutureExt as _;
use http::{HeaderName, HeaderValue, Method, Request};
use http_body_util::{BodyExt as _, Full};
use libfuzzer_sys::fuzz_target;
use vellum::prelude::*;
use vellum::store::MemoryEventStore;
use vellum::transport::http::ResponseBody;

#[path = "support.rs"]
mod support;

const HEADERS: &[&str] = &[
    "host",
    "origin",
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "sec-fetch-site",
    "mcp-method",
    "mcp-name",
    "authorization",
    "content-length",
    "access-control-request-method",
];

const BODIES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    r#"[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
];

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    method: u8,
    path: &'a str,
    headers: Vec<(u8, &'a [u8])>,
    /// Index into BODIES to start from (mutated below), or raw bytes.
    body_seed: Option<u8>,
    body: &'a [u8],
    in_session: bool,
    stateless: bool,
}

struct World {
    rt: tokio::runtime::Runtime,
    stateful: StreamableHttpHandler,
    stateless: StreamableHttpHandler,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let rt = support::runtime();
        let mut o = StreamableHttpOptions::default();
        o.event_store = Some(std::sync::Arc::new(MemoryEventStore::new(1 << 20)));
        // Bounded state across iterations.
        o.max_sessions = Some(64);
        let stateful =
            rt.block_on(async { StreamableHttpHandler::for_server(support::echo_server(), o) });
        let stateless = rt.block_on(async {
            StreamableHttpHandler::for_server(
                support::echo_server(),
                StreamableHttpOptions::default()
                    .stateless(true)
                    .json_response(true),
            )
        });
        World {
            rt,
            stateful,
            stateless,
        }
    })
}

/// Reads what the body has ready (a live stream is dropped when it would wait).
async fn drain(body: ResponseBody) {
    let mut body = body;
    for _ in 0..10_000 {
        match body.frame().now_or_never() {
            Some(Some(Ok(_))) => {}
            _ => return,
        }
    }
}

fn request(input: &Input<'_>, session: Option<&HeaderValue>) -> Option<Request<Full<Bytes>>> {
    let method = match input.method % 8 {
        0 | 1 | 2 => Method::POST,
        3 => Method::GET,
        4 => Method::DELETE,
        5 => Method::OPTIONS,
        6 => Method::PUT,
        _ => Method::HEAD,
    };
    let path = if input.path.starts_with('/') {
        input.path
    } else {
        "/mcp"
    };
    let mut b = Request::builder().method(method).uri(path);
    let mut has_host = false;
    for (name, value) in &input.headers {
        let name = HEADERS[*name as usize % HEADERS.len()];
        has_host |= name == "host";
        let value = HeaderValue::from_bytes(value).ok()?;
        b = b.header(HeaderName::from_static(name), value);
    }
    if !has_host {
        b = b.header("host", "127.0.0.1:8000");
    }
    if let Some(s) = session {
        b = b.header("mcp-session-id", s.clone());
    }
    let body = match input.body_seed {
        Some(i) => {
            let mut v = BODIES[i as usize % BODIES.len()].as_bytes().to_vec();
            // Splice the fuzzer's bytes in at a position it chooses.
            let at = input
                .body
                .first()
                .map_or(0, |b| *b as usize % (v.len() + 1));
            v.splice(at..at, input.body.iter().copied().skip(1));
            v
        }
        None => input.body.to_vec(),
    };
    b.body(Full::new(Bytes::from(body))).ok()
}

fuzz_target!(|input: Input<'_>| {
    let w = world();
    let handler = if input.stateless {
        &w.stateless
    } else {
        &w.stateful
    };
    w.rt.block_on(async {
        let session = if input.in_session && !input.stateless {
            let init = Request::builder()
                .method(Method::POST)
                .uri("/mcp")
                .header("host", "127.0.0.1:8000")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(Full::new(Bytes::from_static(BODIES[0].as_bytes())))
                .expect("a valid request");
            let resp = handler.handle(init).await;
            let id = resp.headers().get("mcp-session-id").cloned();
            drain(resp.into_body()).await;
            id
        } else {
            None
        };
        let Some(req) = request(&input, session.as_ref()) else {
            return;
        };
        let resp = handler.handle(req).await;
        let status = resp.status();
        assert!(status.as_u16() >= 200 && status.as_u16() < 600);
        if status.is_server_error() {
            assert!(
                status == 503 || status == 500,
                "unexpected server error status {status}"
            );
        }
        drain(resp.into_body()).await;
        if let Some(id) = session {
            let del = Request::builder()
                .method(Method::DELETE)
                .uri("/mcp")
                .header("host", "127.0.0.1:8000")
                .header("mcp-session-id", id)
                .body(Full::new(Bytes::new()))
                .expect("a valid request");
            drain(handler.handle(del).await.into_body()).await;
        }
    });
});
