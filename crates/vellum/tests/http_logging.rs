//! The handler's `logger` option over real HTTP: with a logger, every request gets a span
//! with the MCP OpenTelemetry fields (`mcp.method.name`, `gen_ai.tool.name`,
//! `jsonrpc.request.id`, a redacted `mcp.session.id`) and an event when it ends; without
//! one, the handler emits nothing, even with a global subscriber installed in the process.
//!
//! Its own test binary: one test installs a global subscriber.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{TestHttpServer, modern_body};

type Fields = BTreeMap<String, String>;

struct FieldVisitor<'a>(&'a mut Fields);

impl Visit for FieldVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// A span as recorded.
#[derive(Debug, Clone)]
struct SpanRecord {
    name: String,
    fields: Fields,
}

/// An event as recorded, with the fields of the span it happened in.
#[derive(Debug, Clone)]
struct EventRecord {
    target: String,
    fields: Fields,
    span: Option<String>,
}

/// Records every span and event it sees.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<SpanRecord>>>,
    events: Arc<Mutex<Vec<EventRecord>>>,
}

/// Where a span's record lives in [`Capture::spans`].
struct SpanIndex(usize);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut FieldVisitor(&mut fields));
        let mut spans = self.spans.lock().unwrap();
        spans.push(SpanRecord {
            name: attrs.metadata().name().to_owned(),
            fields,
        });
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanIndex(spans.len() - 1));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let ext = span.extensions();
        let Some(SpanIndex(i)) = ext.get::<SpanIndex>() else {
            return;
        };
        let mut spans = self.spans.lock().unwrap();
        values.record(&mut FieldVisitor(&mut spans[*i].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        event.record(&mut FieldVisitor(&mut fields));
        let span = ctx.event_span(event).map(|s| s.name().to_owned());
        self.events.lock().unwrap().push(EventRecord {
            target: event.metadata().target().to_owned(),
            fields,
            span,
        });
    }
}

impl Capture {
    fn spans(&self) -> Vec<SpanRecord> {
        self.spans.lock().unwrap().clone()
    }
    fn events(&self) -> Vec<EventRecord> {
        self.events.lock().unwrap().clone()
    }
    fn dispatch(&self) -> tracing::Dispatch {
        tracing::Dispatch::new(Registry::default().with(self.clone()))
    }
}

#[tokio::test]
async fn with_a_logger_each_request_gets_a_span_with_the_mcp_fields() {
    let capture = Capture::default();
    let f = test_server();
    let srv = TestHttpServer::start(
        f.server,
        StreamableHttpOptions::default().logger(capture.dispatch()),
    )
    .await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let session = c.session.clone().expect("a session id");
    let call = c.call_tool("hello_world", json!({"user_name": "Log"}), None);
    assert_eq!(c.post(&call).await.status, StatusCode::OK);
    let list_id = c.next_id();
    c.post(&json!({"jsonrpc": "2.0", "id": list_id, "method": "tools/list"}))
        .await;
    let bad = c.call_tool("nope", json!({}), None);
    c.post(&bad).await;
    // A refused request is logged too.
    let mut stranger = srv.client();
    stranger.session = Some("unknown".into());
    assert_eq!(stranger.post(&call).await.status, StatusCode::NOT_FOUND);

    let spans: Vec<SpanRecord> = capture
        .spans()
        .into_iter()
        .filter(|s| s.name == "mcp.server.request")
        .collect();
    let find = |id: &serde_json::Value| {
        spans
            .iter()
            .find(|s| s.fields.get("jsonrpc.request.id") == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no span for request {id}: {spans:#?}"))
    };
    // The initialize span carries the version it negotiated, not the one assumed before.
    let init = spans
        .iter()
        .find(|s| s.fields.get("mcp.method.name").map(String::as_str) == Some("initialize"))
        .unwrap_or_else(|| panic!("no initialize span: {spans:#?}"));
    assert_eq!(
        init.fields["mcp.protocol.version"], "2025-11-25",
        "{init:?}"
    );
    let s = find(&call["id"]);
    assert_eq!(s.fields["mcp.method.name"], "tools/call");
    assert_eq!(s.fields["gen_ai.tool.name"], "hello_world");
    assert_eq!(s.fields["mcp.protocol.version"], "2025-11-25");
    let sid = &s.fields["mcp.session.id"];
    assert!(
        !sid.is_empty() && *sid != session,
        "the session id must be redacted: {sid}"
    );
    let s = find(&json!(list_id));
    assert_eq!(s.fields["mcp.method.name"], "tools/list");
    assert!(!s.fields.contains_key("gen_ai.tool.name"), "{s:?}");
    let s = find(&bad["id"]);
    assert_eq!(s.fields["gen_ai.tool.name"], "nope");
    assert_eq!(
        s.fields.get("rpc.jsonrpc.error_code").map(String::as_str),
        Some("-32602")
    );

    let events = capture.events();
    let served = events
        .iter()
        .filter(|e| {
            e.fields.get("message").map(String::as_str) == Some("request served")
                && e.span.as_deref() == Some("mcp.server.request")
        })
        .count();
    assert!(
        served >= 3,
        "initialize, hello_world, tools/list: {events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.fields.get("message").map(String::as_str) == Some("request failed")),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|e| e.fields.contains_key("rejection")),
        "the 404 was not logged: {events:#?}"
    );
    let all = format!("{spans:?}{events:?}");
    assert!(!all.contains(&session), "the full session id was logged");
}

/// A tool's own `tracing` events go to the application's subscriber, not to the
/// handler's logger (an OpenTelemetry-only logger would swallow them), while the logger
/// still gets the request's span. (A current-thread runtime: the application's default,
/// set on this thread, is every task's.)
#[tokio::test(flavor = "current_thread")]
async fn a_tools_own_events_reach_the_application_whatever_the_logger() {
    use vellum::prelude::*;
    let app = Capture::default();
    let _app_default = tracing::subscriber::set_default(Registry::default().with(app.clone()));
    let logger = Capture::default();
    let server = Server::new(Implementation::new("app", "1"), ServerOptions::default());
    server
        .add_raw_tool(
            Tool::new("work", "Logs as tools do"),
            |_ctx: RequestContext, _req: CallToolRequest| async move {
                tracing::info!(target: "app_tool", "working");
                Ok::<_, HandlerError>(CallToolResult::text("done"))
            },
        )
        .unwrap();
    let srv = TestHttpServer::start(
        server,
        StreamableHttpOptions::default().logger(logger.dispatch()),
    )
    .await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let r = c
        .request("tools/call", json!({"name": "work", "arguments": {}}))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "done");
    assert!(
        app.events().iter().any(|e| e.target == "app_tool"),
        "the tool's event did not reach the application: {:#?}",
        app.events()
    );
    assert!(
        logger.events().iter().all(|e| e.target != "app_tool"),
        "the tool's event went to the handler's logger"
    );
    assert!(
        logger
            .spans()
            .iter()
            .any(|s| s.name == "mcp.server.request"),
        "the logger lost the request span"
    );
}

#[tokio::test]
async fn without_a_logger_the_handler_logs_nothing_under_a_global_subscriber() {
    let global = Capture::default();
    tracing::subscriber::set_global_default(Registry::default().with(global.clone()))
        .expect("no other global subscriber in this test binary");
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let r = c
        .request(
            "tools/call",
            json!({"name": "hello_world", "arguments": {"user_name": "Quiet"}}),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello World, Quiet");
    c.post(&c.call_tool("nope", json!({}), None)).await;
    let mut stranger = srv.client();
    stranger.session = Some("unknown".into());
    stranger
        .post(&c.call_tool("hello_world", json!({}), None))
        .await;
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);

    // The global subscriber does see what is logged in the process (a positive control).
    tracing::info!(target: "control", "seen");
    assert!(global.events().iter().any(|e| e.target == "control"));
    let ours = |target: &str| target.starts_with("vellum");
    let spans = global.spans();
    let events: Vec<_> = global
        .events()
        .into_iter()
        .filter(|e| ours(&e.target))
        .collect();
    assert!(
        spans.iter().all(|s| s.name != "mcp.server.request"),
        "spans reached the global subscriber: {spans:#?}"
    );
    assert!(
        events.is_empty(),
        "events reached the global subscriber: {events:#?}"
    );
}

#[tokio::test]
async fn a_callers_trace_context_is_on_the_request_span() {
    const HEADER_TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const META_TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let capture = Capture::default();
    let f = test_server();
    let srv = TestHttpServer::start(
        f.server,
        StreamableHttpOptions::default().logger(capture.dispatch()),
    )
    .await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    // In the HTTP headers (legacy era).
    let from_header = c.call_tool("hello_world", json!({"user_name": "Tp"}), None);
    let a = c
        .send(
            c.builder(reqwest::Method::POST)
                .header("traceparent", HEADER_TP)
                .header("tracestate", "congo=t61rcWkgMzE")
                .body(from_header.to_string()),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    // A malformed one is ignored.
    let malformed = c.call_tool("hello_world", json!({"user_name": "Bad"}), None);
    let a = c
        .send(
            c.builder(reqwest::Method::POST)
                .header("traceparent", "00-not-a-trace-01")
                .body(malformed.to_string()),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    // In `_meta` (2026-07-28), which wins over the header.
    let mut modern = modern_body(
        json!(900),
        "tools/call",
        json!({"name": "hello_world", "arguments": {"user_name": "M"}}),
    );
    modern["params"]["_meta"]["traceparent"] = json!(META_TP);
    modern["params"]["_meta"]["tracestate"] = json!("rojo=00f067aa0ba902b7");
    let a = c
        .send(c.modern_builder(&modern).header("traceparent", HEADER_TP))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());

    let spans = capture.spans();
    let span_of = |id: &serde_json::Value| {
        spans
            .iter()
            .filter(|s| s.name == "mcp.server.request")
            .find(|s| s.fields.get("jsonrpc.request.id") == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no span for request {id}: {spans:#?}"))
            .fields
            .clone()
    };
    let s = span_of(&from_header["id"]);
    assert_eq!(s["traceparent"], HEADER_TP, "{s:?}");
    assert_eq!(s["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(s["parent_span_id"], "00f067aa0ba902b7");
    assert_eq!(s["tracestate"], "congo=t61rcWkgMzE");
    let s = span_of(&malformed["id"]);
    assert!(
        !s.contains_key("trace_id") && !s.contains_key("traceparent"),
        "{s:?}"
    );
    let s = span_of(&json!(900));
    assert_eq!(s["traceparent"], META_TP, "{s:?}");
    assert_eq!(s["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(s["parent_span_id"], "b7ad6b7169203331");
    assert_eq!(s["tracestate"], "rojo=00f067aa0ba902b7");
}
