//! `vellum serve --otlp-endpoint`: request spans exported over OTLP/HTTP (protobuf) to a
//! collector on a loopback port, decoded here. Each span carries the MCP attributes and has
//! the caller's W3C trace context as its parent: from the `traceparent` header in the
//! 2025-11-25 era, from `_meta` (which wins over the header) in the 2026-07-28 era. Spans
//! still queued are posted when SIGTERM stops the server; with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! and a short `OTEL_BSP_SCHEDULE_DELAY` they arrive while it serves.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::time::Duration;

use http_body_util::BodyExt as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::json;
use tokio::sync::mpsc;
use vellum_testkit::http::{McpHttp, Modern};
use vellum_testkit::process::{vellum_serve, vellum_serve_with_env};

/// How long a span may take to reach the collector (the export is a loopback POST).
const ARRIVAL: Duration = Duration::from_secs(20);

/// One exported span, as much of it as the tests look at.
#[derive(Debug)]
struct Exported {
    service: Option<String>,
    name: String,
    kind: i32,
    trace_id: String,
    parent_span_id: String,
    attributes: HashMap<String, String>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(v: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// A collector on 127.0.0.1: its base URL, and every span it is posted, in order.
async fn collector() -> (String, mpsc::UnboundedReceiver<Exported>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let ok = req.method() == http::Method::POST
                            && req.uri().path() == "/v1/traces"
                            && req.headers()["content-type"] == "application/x-protobuf";
                        let body = req.into_body().collect().await?.to_bytes();
                        if !ok {
                            let r = http::Response::builder().status(404);
                            return Ok::<_, hyper::Error>(
                                r.body(http_body_util::Full::<bytes::Bytes>::default())
                                    .unwrap(),
                            );
                        }
                        let export = ExportTraceServiceRequest::decode(body).unwrap();
                        for rs in export.resource_spans {
                            let service = rs.resource.as_ref().and_then(|r| {
                                r.attributes
                                    .iter()
                                    .find(|kv| kv.key == "service.name")
                                    .map(|kv| text(kv.value.as_ref()))
                            });
                            for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                                let _ = tx.send(Exported {
                                    service: service.clone(),
                                    name: span.name,
                                    kind: span.kind,
                                    trace_id: hex(&span.trace_id),
                                    parent_span_id: hex(&span.parent_span_id),
                                    attributes: span
                                        .attributes
                                        .iter()
                                        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
                                        .collect(),
                                });
                            }
                        }
                        // An empty ExportTraceServiceResponse: everything accepted.
                        let r = http::Response::builder()
                            .header("content-type", "application/x-protobuf");
                        Ok(r.body(http_body_util::Full::<bytes::Bytes>::default())
                            .unwrap())
                    }
                });
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    (url, rx)
}

/// The first span of `trace_id` to arrive (others are skipped), within [`ARRIVAL`].
async fn span_of(rx: &mut mpsc::UnboundedReceiver<Exported>, trace_id: &str) -> Exported {
    let found = tokio::time::timeout(ARRIVAL, async {
        while let Some(s) = rx.recv().await {
            if s.trace_id == trace_id {
                return Some(s);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(s)) => s,
        Ok(None) => panic!("the collector stopped before a span of trace {trace_id}"),
        Err(_) => panic!("no span of trace {trace_id} arrived within {ARRIVAL:?}"),
    }
}

/// The request span of a tools/call of `hello_world` whose caller is `parent`.
fn assert_tool_call_span(span: &Exported, parent: &str, service: &str, version: &str) {
    assert_eq!(span.name, "tools/call hello_world", "{span:?}");
    assert_eq!(span.kind, SpanKind::Server as i32, "{span:?}");
    assert_eq!(span.parent_span_id, parent, "{span:?}");
    assert_eq!(span.service.as_deref(), Some(service), "{span:?}");
    let attr = |k: &str| span.attributes.get(k).map(String::as_str);
    assert_eq!(attr("mcp.method.name"), Some("tools/call"), "{span:?}");
    assert_eq!(attr("gen_ai.tool.name"), Some("hello_world"), "{span:?}");
    assert_eq!(
        attr("gen_ai.operation.name"),
        Some("execute_tool"),
        "{span:?}"
    );
    assert_eq!(attr("mcp.protocol.version"), Some(version), "{span:?}");
    assert!(attr("jsonrpc.request.id").is_some(), "{span:?}");
}

/// A session's tools/call of `hello_world`, the trace context in the HTTP headers.
async fn call_with_traceparent(c: &McpHttp, traceparent: &str, tracestate: Option<&str>) {
    let id = json!(c.next_id());
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "hello_world", "arguments": {"user_name": "Alice"}}});
    let mut request = c
        .builder(http::Method::POST)
        .header("traceparent", traceparent);
    if let Some(state) = tracestate {
        request = request.header("tracestate", state);
    }
    let answer = c.send(request.body(call.to_string())).await;
    assert!(
        answer.response(&id).get("result").is_some(),
        "{}",
        answer.text()
    );
}

const LEGACY_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const LEGACY_PARENT: &str = "00f067aa0ba902b7";
const MODERN_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const MODERN_PARENT: &str = "b7ad6b7169203331";
/// Sent as a header beside the 2026 request's `_meta`: `_meta` must win.
const HEADER_TRACE: &str = "11111111111111111111111111111111";

// Two threads: the collector answers while the test blocks waiting for the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_export_with_the_callers_trace_as_parent_and_flush_on_sigterm() {
    let (url, mut spans) = collector().await;
    // The default batch delay (5 s) holds the spans: only the shutdown posts them in time.
    let s = vellum_serve(&[
        "--otlp-endpoint",
        &url,
        "--otlp-service-name",
        "mcp-otel-test",
    ]);
    assert!(
        s.before.iter().any(|l| l.starts_with("otlp: ")),
        "{:?}",
        s.before
    );

    // 2025-11-25: the trace context in the HTTP headers.
    let mut legacy = McpHttp::new(&s.mcp_url());
    legacy.connect("2025-11-25").await;
    let traceparent = format!("00-{LEGACY_TRACE}-{LEGACY_PARENT}-01");
    call_with_traceparent(&legacy, &traceparent, Some("rojo=00f067aa0ba902b7")).await;

    // 2026-07-28: the trace context in `_meta`, a different one in the header.
    let modern = Modern::new(&s.mcp_url());
    let body = modern.body(
        7,
        "tools/call",
        json!({"name": "hello_world", "arguments": {"user_name": "Bob"},
            "_meta": {"traceparent": format!("00-{MODERN_TRACE}-{MODERN_PARENT}-01")}}),
    );
    let resp = modern
        .mcp
        .modern_builder(&body)
        .header(
            "traceparent",
            format!("00-{HEADER_TRACE}-{LEGACY_PARENT}-01"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert!(text.contains("Hello World, Bob"), "{text}");

    // SIGTERM: the server drains, then posts what its exporter still holds.
    let (status, _) = tokio::task::block_in_place(|| s.finish("-TERM"));
    assert!(status.success(), "{status:?}");

    let span = span_of(&mut spans, LEGACY_TRACE).await;
    assert_tool_call_span(&span, LEGACY_PARENT, "mcp-otel-test", "2025-11-25");
    assert!(span.attributes.contains_key("mcp.session.id"), "{span:?}");
    let span = span_of(&mut spans, MODERN_TRACE).await;
    assert_tool_call_span(&span, MODERN_PARENT, "mcp-otel-test", "2026-07-28");
}

// Two threads: the collector answers while the test blocks waiting for the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_environment_turns_export_on_and_spans_arrive_while_serving() {
    let (url, mut spans) = collector().await;
    let s = vellum_serve_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &url),
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    );
    let mut c = McpHttp::new(&s.mcp_url());
    c.connect("2025-11-25").await;
    call_with_traceparent(&c, &format!("00-{MODERN_TRACE}-{MODERN_PARENT}-01"), None).await;
    // Still serving: the batch delay, not the shutdown, posts it.
    let span = span_of(&mut spans, MODERN_TRACE).await;
    assert_tool_call_span(&span, MODERN_PARENT, "from-env", "2025-11-25");
    drop(s);
}
