//! What the handler measures, through the `metrics` facade (feature `metrics`): named as the
//! OpenTelemetry semantic conventions for MCP name them where they do (`mcp.server.*`), in
//! their units (durations in seconds). Without the feature every function here is empty
//! and compiles away. With it, nothing is recorded until [`describe_metrics`] turns recording
//! on (call it once the recorder is installed): until then each function is one relaxed load,
//! where building the keys and labels for the facade's no-op recorder cost about 3k
//! instructions per answer (measured on `vellum serve`, docs/benchmarks.md). An exporter is
//! the application's choice (`vellum serve --metrics-addr` installs a Prometheus one).
//!
//! Label values come from bounded sets only, so a client cannot grow the number of series:
//! a method this server does not know is `_other`, and a tool name is a label only when the
//! call did not fail with -32602 (which an unknown tool gets).
//!
//! Not here: spans and logs (`trace.rs`).

#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(feature = "metrics")]
use std::time::Instant;

/// Set by [`describe_metrics`]: a recorder is there to take what the handler records.
#[cfg(feature = "metrics")]
static RECORDING: AtomicBool = AtomicBool::new(false);

/// True once [`describe_metrics`] was called: the handler records metrics (and reads what
/// only they need, such as a call's tool name).
#[inline]
pub(crate) fn recording() -> bool {
    #[cfg(feature = "metrics")]
    return RECORDING.load(Ordering::Relaxed);
    #[cfg(not(feature = "metrics"))]
    false
}

/// The metric names (OpenTelemetry's, dots and all; a Prometheus exporter writes them with
/// underscores).
#[cfg(feature = "metrics")]
pub mod names {
    /// Histogram, seconds: one MCP request, from its start to its answer. Labels
    /// `mcp.method.name`, `gen_ai.tool.name` (tools/call), `mcp.protocol.version`,
    /// `error.type` (the JSON-RPC error code, when it failed).
    pub const OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// Up-down counter: MCP requests running now.
    pub const OPERATIONS_ACTIVE: &str = "mcp.server.operation.active";
    /// Histogram, seconds: how long a session lived here, once it ended here.
    pub const SESSION_DURATION: &str = "mcp.server.session.duration";
    /// Up-down counter: sessions held by this instance.
    pub const SESSIONS_ACTIVE: &str = "mcp.server.session.active";
    /// Up-down counter: GET streams being read.
    pub const STREAMS_ACTIVE: &str = "mcp.server.stream.active";
    /// Counter: requests refused before being served. Labels `http.response.status_code`,
    /// `reason` (the refusal, e.g. `too_many_sessions`, `draining`).
    pub const REFUSALS: &str = "mcp.server.refusals";
    /// Counter: SSE events appended to the event store.
    pub const EVENTS_STORED: &str = "mcp.server.event_store.appends";
    /// Counter, bytes: the size of the events appended to the event store.
    pub const EVENT_BYTES_STORED: &str = "mcp.server.event_store.appended_bytes";

    /// Every name, its kind (`'h'`istogram, `'c'`ounter, `'g'`auge), help text and unit,
    /// for [`describe_metrics`](crate::transport::http::describe_metrics).
    pub(crate) const ALL: &[(&str, char, &str, Option<metrics::Unit>)] = &[
        (
            OPERATION_DURATION,
            'h',
            "Duration of MCP requests",
            Some(metrics::Unit::Seconds),
        ),
        (OPERATIONS_ACTIVE, 'g', "MCP requests running", None),
        (
            SESSION_DURATION,
            'h',
            "Duration of MCP sessions",
            Some(metrics::Unit::Seconds),
        ),
        (
            SESSIONS_ACTIVE,
            'g',
            "MCP sessions held by this instance",
            None,
        ),
        (STREAMS_ACTIVE, 'g', "SSE GET streams being read", None),
        (REFUSALS, 'c', "Requests refused before being served", None),
        (
            EVENTS_STORED,
            'c',
            "SSE events appended to the event store",
            None,
        ),
        (
            EVENT_BYTES_STORED,
            'c',
            "Bytes of SSE events appended to the event store",
            Some(metrics::Unit::Bytes),
        ),
    ];
}

/// Describes every metric to the installed recorder (units and help texts) and turns
/// recording on. Call once after installing it: until then the handler records nothing, so
/// that a build with the feature but no recorder pays nothing per request.
#[cfg(feature = "metrics")]
pub fn describe_metrics() {
    RECORDING.store(true, Ordering::Relaxed);
    for (name, kind, help, unit) in names::ALL {
        let unit = unit.unwrap_or(metrics::Unit::Count);
        match kind {
            'h' => metrics::describe_histogram!(*name, unit, *help),
            'g' => metrics::describe_gauge!(*name, unit, *help),
            _ => metrics::describe_counter!(*name, unit, *help),
        }
    }
}

/// The request methods a label may name; any other is `_other`.
#[cfg(feature = "metrics")]
fn known_method(method: &str) -> &'static str {
    use crate::protocol::methods as m;
    const KNOWN: &[&str] = &[
        m::INITIALIZE,
        m::PING,
        m::DISCOVER,
        m::TOOLS_LIST,
        m::TOOLS_CALL,
        m::RESOURCES_LIST,
        m::RESOURCES_TEMPLATES_LIST,
        m::RESOURCES_READ,
        m::RESOURCES_SUBSCRIBE,
        m::RESOURCES_UNSUBSCRIBE,
        m::PROMPTS_LIST,
        m::PROMPTS_GET,
        m::COMPLETION_COMPLETE,
        m::LOGGING_SET_LEVEL,
        m::SUBSCRIPTIONS_LISTEN,
        m::TASKS_GET,
        m::TASKS_RESULT,
        m::TASKS_LIST,
        m::TASKS_CANCEL,
        m::TASKS_UPDATE,
        m::SKILLS_LIST,
        m::SKILLS_GET,
        m::RESOURCES_DIRECTORY_READ,
    ];
    KNOWN
        .iter()
        .find(|k| **k == method)
        .copied()
        .unwrap_or("_other")
}

/// One MCP request being measured: counted as active until finished or dropped.
pub(crate) struct Operation {
    #[cfg(feature = "metrics")]
    started: Instant,
    #[cfg(feature = "metrics")]
    method: &'static str,
    #[cfg(feature = "metrics")]
    tool: Option<String>,
    #[cfg(feature = "metrics")]
    finished: bool,
}

impl Operation {
    /// A request of `method` (on `tool` for tools/call) starts.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn start(method: &str, tool: Option<&str>) -> Self {
        #[cfg(feature = "metrics")]
        {
            let on = recording();
            if on {
                metrics::gauge!(names::OPERATIONS_ACTIVE).increment(1.0);
            }
            let method = known_method(method);
            Operation {
                started: Instant::now(),
                method,
                tool: tool
                    .filter(|_| on && method == crate::protocol::methods::TOOLS_CALL)
                    .map(str::to_owned),
                // Not recording: nothing to finish.
                finished: !on,
            }
        }
        #[cfg(not(feature = "metrics"))]
        Operation {}
    }

    /// The request was answered (`error_code`: with that JSON-RPC error) in protocol
    /// `version` (known only now for an `initialize`, which negotiates it).
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn finish(&mut self, error_code: Option<i64>, version: &'static str) {
        #[cfg(feature = "metrics")]
        {
            if self.finished {
                return;
            }
            self.finished = true;
            metrics::gauge!(names::OPERATIONS_ACTIVE).decrement(1.0);
            let seconds = self.started.elapsed().as_secs_f64();
            // Static method and version names go in as borrowed labels: the only strings
            // allocated per answer are the tool's name (moved in) and an error code.
            let mut labels = Vec::with_capacity(4);
            labels.push(metrics::Label::new("mcp.method.name", self.method));
            labels.push(metrics::Label::new("mcp.protocol.version", version));
            // An unknown tool is -32602: its name is the client's to choose.
            if let Some(t) = self.tool.take()
                && error_code != Some(crate::protocol::code::INVALID_PARAMS)
            {
                labels.push(metrics::Label::new("gen_ai.tool.name", t));
            }
            if let Some(c) = error_code {
                labels.push(metrics::Label::new("error.type", c.to_string()));
            }
            metrics::histogram!(names::OPERATION_DURATION, labels).record(seconds);
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for Operation {
    fn drop(&mut self) {
        if !self.finished {
            // Dropped unanswered (the client went, the session closed).
            metrics::gauge!(names::OPERATIONS_ACTIVE).decrement(1.0);
        }
    }
}

/// A session entered this instance's table.
#[inline]
pub(crate) fn session_opened() {
    #[cfg(feature = "metrics")]
    if recording() {
        metrics::gauge!(names::SESSIONS_ACTIVE).increment(1.0);
    }
}

/// A session left this instance's table after `lived` milliseconds.
#[inline]
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn session_closed(lived_ms: u64) {
    #[cfg(feature = "metrics")]
    if recording() {
        metrics::gauge!(names::SESSIONS_ACTIVE).decrement(1.0);
        metrics::histogram!(names::SESSION_DURATION).record(lived_ms as f64 / 1000.0);
    }
}

/// A GET stream got a reader (`+1`) or lost it (`-1`).
#[inline]
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn stream_readers(delta: f64) {
    #[cfg(feature = "metrics")]
    if recording() {
        metrics::gauge!(names::STREAMS_ACTIVE).increment(delta);
    }
}

/// A request was refused with `status` for `reason`.
#[inline]
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn refused(status: u16, reason: &'static str) {
    #[cfg(feature = "metrics")]
    if recording() {
        metrics::counter!(
            names::REFUSALS,
            "http.response.status_code" => status.to_string(),
            "reason" => reason
        )
        .increment(1);
    }
}

/// An SSE event of `bytes` went to the event store.
#[inline]
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn event_stored(bytes: usize) {
    #[cfg(feature = "metrics")]
    if recording() {
        metrics::counter!(names::EVENTS_STORED).increment(1);
        metrics::counter!(names::EVENT_BYTES_STORED).increment(bytes as u64);
    }
}
