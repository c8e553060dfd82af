//! The caller's W3C trace context (`traceparent`, `tracestate`; W3C Trace Context level 1)
//! as a request carries it: in its `_meta` (the 2026-07-28 era reserves both keys there,
//! unprefixed) or in the HTTP headers. `_meta` wins, being the request's own (one POST of a
//! legacy batch holds several requests, each may name its own parent). A malformed
//! `traceparent` is ignored, as the W3C rules say, and its `tracestate` with it.
//!
//! Not here: the span that records it (`trace.rs`), and that with the `otel` feature takes
//! [`TraceContext::otel_context`] as its OpenTelemetry parent.

use http::HeaderMap;

use crate::protocol::RawJson;

/// The most bytes of `tracestate` kept (the W3C limit is 32 members; 512 bytes is what a
/// propagator must at least pass on).
const MAX_TRACESTATE: usize = 512;

/// A valid `traceparent`, and the `tracestate` that came with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TraceContext {
    /// `version-traceid-parentid-flags`, lowercase hex, as sent.
    pub(crate) traceparent: String,
    /// As sent, when visible ASCII within [`MAX_TRACESTATE`] bytes.
    pub(crate) tracestate: Option<String>,
}

impl TraceContext {
    /// From `traceparent` and `tracestate` values; `None` unless `traceparent` is valid.
    pub(crate) fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let tp = traceparent.trim();
        if !valid_traceparent(tp) {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE)
            .filter(|s| s.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .map(str::to_owned);
        Some(TraceContext {
            traceparent: tp[..55].to_owned(),
            tracestate,
        })
    }

    /// From the HTTP headers (the first `traceparent`; every `tracestate` joined, as the
    /// rules allow it to be split).
    pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let tp = headers.get("traceparent")?.to_str().ok()?;
        let states: Vec<&str> = headers
            .get_all("tracestate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let joined = (!states.is_empty()).then(|| states.join(","));
        Self::parse(tp, joined.as_deref())
    }

    /// From a request's `params._meta`, when it names a `traceparent`.
    pub(crate) fn from_params(params: Option<&RawJson>) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            traceparent: Option<String>,
            tracestate: Option<String>,
        }
        let params = params?;
        // Most requests carry none: spare them a second parse.
        if !params.as_str().contains("\"traceparent\"") {
            return None;
        }
        let meta = params.parse::<Params>().ok()?.meta?;
        Self::parse(meta.traceparent.as_deref()?, meta.tracestate.as_deref())
    }

    /// The trace id (32 hex digits).
    pub(crate) fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The caller's span id, the parent of the request's span (16 hex digits).
    pub(crate) fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// The caller's span as an OpenTelemetry context (remote), to parent the request span
    /// on. `None` only if the tracestate's members do not parse (then the ids alone would
    /// still do, but a propagator must not pass on a state it could not read).
    #[cfg(feature = "otel")]
    pub(crate) fn otel_context(&self) -> Option<opentelemetry::Context> {
        use opentelemetry::trace::{
            SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
        };
        // `parse` checked the shape: lowercase hex where the ids and flags are.
        let trace_id = TraceId::from_hex(self.trace_id()).ok()?;
        let span_id = SpanId::from_hex(self.parent_id()).ok()?;
        let flags = u8::from_str_radix(&self.traceparent[53..55], 16).ok()?;
        let state = match &self.tracestate {
            Some(s) => s.parse::<TraceState>().ok()?,
            None => TraceState::NONE,
        };
        let remote = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
        Some(opentelemetry::Context::new().with_remote_span_context(remote))
    }
}

/// `version-traceid-parentid-flags`: version `00` is exactly 55 characters; a later
/// version may add fields after a `-`; version `ff` is invalid; neither id may be all
/// zeros; hex is lowercase.
fn valid_traceparent(tp: &str) -> bool {
    let b = tp.as_bytes();
    if b.len() < 55 {
        return false;
    }
    let hex = |r: std::ops::Range<usize>| {
        b[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    let zeros = |r: std::ops::Range<usize>| b[r].iter().all(|c| *c == b'0');
    let shape = hex(0..2)
        && b[2] == b'-'
        && hex(3..35)
        && b[35] == b'-'
        && hex(36..52)
        && b[52] == b'-'
        && hex(53..55);
    if !shape || &b[0..2] == b"ff" || zeros(3..35) || zeros(36..52) {
        return false;
    }
    match &b[0..2] {
        b"00" => b.len() == 55,
        _ => b.len() == 55 || b[55] == b'-',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_gives_its_ids() {
        let c = TraceContext::parse(TP, Some("rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(c.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(c.parent_id(), "00f067aa0ba902b7");
        assert_eq!(c.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
        // A later version may carry more.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(TraceContext::parse(later, None).is_some());
    }

    #[test]
    fn meta_is_read_only_when_it_names_a_traceparent() {
        let raw = |v: serde_json::Value| RawJson::from_value(&v).unwrap();
        let p = raw(serde_json::json!({"_meta": {"traceparent": TP, "tracestate": "a=b"}}));
        let c = TraceContext::from_params(Some(&p)).unwrap();
        assert_eq!(c.traceparent, TP);
        assert_eq!(c.tracestate.as_deref(), Some("a=b"));
        let none = raw(serde_json::json!({"name": "x"}));
        assert_eq!(TraceContext::from_params(Some(&none)), None);
    }

    #[cfg(feature = "otel")]
    #[test]
    fn the_otel_context_is_the_callers_remote_span() {
        use opentelemetry::trace::TraceContextExt as _;
        let c = TraceContext::parse(TP, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        let cx = c.otel_context().unwrap();
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let cx = TraceContext::parse(unsampled, None)
            .unwrap()
            .otel_context()
            .unwrap();
        assert!(!cx.span().span_context().is_sampled());
    }
}
