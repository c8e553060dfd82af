//! Structured logging and spans of the handler, through `tracing`, scoped to the handler's
//! own dispatcher: with no logger configured the handler emits nothing, whatever the global
//! subscriber. Handler code (a tool's own events) runs under the application's default
//! dispatcher, inside the request's span, whatever the logger. Span fields follow the
//! OpenTelemetry semantic conventions for MCP
//! (`mcp.method.name`, `gen_ai.tool.name`, `mcp.session.id`, `jsonrpc.request.id`, …), and
//! `otel.name` carries the span name (`"{method} {target}"`) for the OpenTelemetry bridge.
//! A request that carries a W3C trace context (`traceparent`, `tracestate`: in `_meta`, else
//! in the HTTP headers) has it on its span: `trace_id` and `parent_span_id`, and both
//! values as sent, so a subscriber (an OpenTelemetry bridge) joins the caller's trace; with
//! the `otel` feature the caller's span is the OpenTelemetry parent itself (`crate::otel`).
//!
//! Not here: message observers and request middleware (the server core), which see every
//! transport.

use std::time::Instant;

use tracing::Dispatch;

use crate::protocol::RequestId;
use crate::server::redact_session_id;

use super::metrics::Operation;
use super::trace_context::TraceContext;

/// What one MCP request reports: its span (when the handler has a logger) and its metrics
/// ([`Operation`]; nothing without the `metrics` feature).
pub(crate) struct RequestTrace {
    span: Option<(Dispatch, tracing::Span)>,
    operation: Operation,
    started: Instant,
    /// The span's protocol version is known only at the end (an `initialize` negotiates it).
    version_pending: bool,
}

/// What a request span describes.
pub(crate) struct RequestInfo<'a> {
    pub(crate) method: &'a str,
    pub(crate) id: &'a RequestId,
    pub(crate) target: Option<&'a str>,
    pub(crate) session: Option<&'a str>,
    /// The request's protocol version; `None` while it is being negotiated (`initialize`),
    /// recorded when the request ends.
    pub(crate) version: Option<&'static str>,
    /// The caller's W3C trace context, when it sent a valid one.
    pub(crate) context: Option<&'a TraceContext>,
}

impl RequestTrace {
    /// Starts the report of a request: a span under `dispatch` when there is one.
    pub(crate) fn start(dispatch: Option<&Dispatch>, info: RequestInfo<'_>) -> Self {
        let span = dispatch.map(|d| (d.clone(), open_span(d, &info)));
        RequestTrace {
            span,
            operation: Operation::start(info.method, info.target),
            started: Instant::now(),
            version_pending: info.version.is_none(),
        }
    }

    /// Runs handler code (`f`: a poll of the request) inside the span, under the
    /// application's own default dispatcher: a tool's `tracing` events are the
    /// application's, whatever the handler's logger is (an OpenTelemetry-only logger would
    /// swallow them). When the logger is the application's dispatcher, the span is their
    /// parent.
    pub(crate) fn entered<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.span {
            Some((_, span)) => span.in_scope(f),
            None => f(),
        }
    }

    /// Runs `f` inside the span, with the handler's dispatcher as the default: for the
    /// handler's own events.
    fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.span {
            Some((d, span)) => tracing::dispatcher::with_default(d, || span.in_scope(f)),
            None => f(),
        }
    }

    /// Records the request's end, in protocol `version` (the one negotiated, for an
    /// `initialize`).
    pub(crate) fn finish(&mut self, error_code: Option<i64>, version: &'static str) {
        self.operation.finish(error_code, version);
        let Some((_, span)) = &self.span else {
            return;
        };
        if self.version_pending {
            span.record("mcp.protocol.version", version);
        }
        let elapsed = self.started.elapsed();
        self.in_scope(|| {
            if let Some(code) = error_code {
                span.record("error.type", code);
                span.record("rpc.jsonrpc.error_code", code);
                span.record("otel.status_code", "error");
                tracing::info!(
                    duration_us = elapsed.as_micros() as u64,
                    error_code = code,
                    "request failed"
                );
            } else {
                tracing::info!(duration_us = elapsed.as_micros() as u64, "request served");
            }
        });
    }
}

/// The span of a request, its parent the caller's trace when it sent one.
fn open_span(dispatch: &Dispatch, info: &RequestInfo<'_>) -> tracing::Span {
    tracing::dispatcher::with_default(dispatch, || {
        let name = match info.target {
            Some(t) => format!("{} {t}", info.method),
            None => info.method.to_owned(),
        };
        let context = info.context;
        let span = tracing::info_span!(
            "mcp.server.request",
            otel.name = %name,
            otel.kind = "server",
            "mcp.method.name" = %info.method,
            "jsonrpc.request.id" = %info.id,
            "mcp.protocol.version" = info.version,
            "mcp.session.id" = info.session.map(redact_session_id).as_deref(),
            "gen_ai.tool.name" = info.target.filter(|_| info.method == "tools/call"),
            "gen_ai.operation.name" = (info.method == "tools/call").then_some("execute_tool"),
            "network.transport" = "tcp",
            trace_id = context.map(|c| c.trace_id()),
            parent_span_id = context.map(|c| c.parent_id()),
            traceparent = context.map(|c| c.traceparent.as_str()),
            tracestate = context.and_then(|c| c.tracestate.as_deref()),
            "error.type" = tracing::field::Empty,
            "rpc.jsonrpc.error_code" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        // The OpenTelemetry bridge builds the span when it is first entered: its parent
        // must be set before (a no-op without the bridge in the logger).
        #[cfg(feature = "otel")]
        if let Some(parent) = context.filter(|_| !span.is_disabled()) {
            use tracing_opentelemetry::OpenTelemetrySpanExt as _;
            if let Some(cx) = parent.otel_context() {
                let _ = span.set_parent(cx);
            }
        }
        span
    })
}

/// Logs one event under the handler's dispatcher, if it has one.
macro_rules! log_event {
    ($logger:expr, $level:ident, $($arg:tt)+) => {
        if let Some(d) = $logger {
            tracing::dispatcher::with_default(d, || tracing::$level!($($arg)+));
        }
    };
}
pub(crate) use log_event;
