//! Structured logging and spans of the handler, through `tracing`, scoped to the handler's
//! own dispatcher: with no logger configured the handler emits nothing, whatever the global
//! subscriber. Span fields follow the OpenTelemetry semantic conventions for MCP
//! (`mcp.method.name`, `gen_ai.tool.name`, `mcp.session.id`, `jsonrpc.request.id`, …), and
//! `otel.name` carries the span name (`"{method} {target}"`) for the OpenTelemetry bridge.
//!
//! Not here: message observers and request middleware (the server core), which see every
//! transport.

use std::time::Instant;

use tracing::Dispatch;

use crate::protocol::RequestId;
use crate::server::redact_session_id;

/// The span of one MCP request and the dispatcher it reports to.
pub(crate) struct RequestTrace {
    dispatch: Dispatch,
    span: tracing::Span,
    started: Instant,
}

/// What a request span describes.
pub(crate) struct RequestInfo<'a> {
    pub(crate) method: &'a str,
    pub(crate) id: &'a RequestId,
    pub(crate) target: Option<&'a str>,
    pub(crate) session: Option<&'a str>,
    pub(crate) version: &'a str,
}

impl RequestTrace {
    /// Opens the span of a request under `dispatch`.
    pub(crate) fn start(dispatch: &Dispatch, info: RequestInfo<'_>) -> Self {
        let span = tracing::dispatcher::with_default(dispatch, || {
            let name = match info.target {
                Some(t) => format!("{} {t}", info.method),
                None => info.method.to_owned(),
            };
            tracing::info_span!(
                "mcp.server.request",
                otel.name = %name,
                otel.kind = "server",
                "mcp.method.name" = %info.method,
                "jsonrpc.request.id" = %info.id,
                "mcp.protocol.version" = %info.version,
                "mcp.session.id" = info.session.map(redact_session_id).as_deref(),
                "gen_ai.tool.name" = info.target.filter(|_| info.method == "tools/call"),
                "gen_ai.operation.name" = (info.method == "tools/call").then_some("execute_tool"),
                "network.transport" = "tcp",
                "error.type" = tracing::field::Empty,
                "rpc.jsonrpc.error_code" = tracing::field::Empty,
            )
        });
        RequestTrace {
            dispatch: dispatch.clone(),
            span,
            started: Instant::now(),
        }
    }

    /// Runs `f` inside the span, with the handler's dispatcher as the default (so handler
    /// code's own `tracing` events go to the same place).
    pub(crate) fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        tracing::dispatcher::with_default(&self.dispatch, || self.span.in_scope(f))
    }

    /// Records the request's end.
    pub(crate) fn finish(&self, error_code: Option<i64>) {
        let elapsed = self.started.elapsed();
        self.in_scope(|| {
            if let Some(code) = error_code {
                self.span.record("error.type", code);
                self.span.record("rpc.jsonrpc.error_code", code);
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

/// Logs one event under the handler's dispatcher, if it has one.
macro_rules! log_event {
    ($logger:expr, $level:ident, $($arg:tt)+) => {
        if let Some(d) = $logger {
            tracing::dispatcher::with_default(d, || tracing::$level!($($arg)+));
        }
    };
}
pub(crate) use log_event;
