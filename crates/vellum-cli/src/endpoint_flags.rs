//! `vellum serve`'s flags of the endpoint itself (where it answers, which protocol versions
//! it accepts), and the start-up line that lists the effective handler options.

use std::time::Duration;

use clap::Args;
use vellum::protocol::ProtocolVersions;
use vellum::transport::http::StreamableHttpOptions;

/// Where the endpoint answers and what it speaks.
#[derive(Debug, Args)]
pub(crate) struct EndpointArgs {
    /// Serve MCP on this path alone (`/mcp`): any other path gets 404 with a JSON-RPC error
    /// naming it (the health probes and `--metrics-addr` stay where they are). Default: every
    /// path, as the Go SDK. Either way `/.well-known/…` gets 404 unless it is the OAuth
    /// resource metadata (with `--auth-*`).
    #[arg(long, value_name = "PATH", value_parser = parse_path)]
    path: Option<String>,
    /// The protocol versions to accept, comma-separated, e.g. `2026-07-28,2025-11-25`: a
    /// 2026-07-28 request outside them gets 400 with -32022, a legacy `initialize`
    /// negotiates within them (refused when none is a legacy version). Default: every
    /// version (2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26).
    #[arg(
        long,
        value_name = "VERSION[,VERSION...]",
        value_parser = parse_versions
    )]
    protocol_versions: Option<ProtocolVersions>,
}

/// A mount path: absolute, and not a well-known URI (those are never MCP).
fn parse_path(s: &str) -> Result<String, String> {
    if !s.starts_with('/') {
        return Err(format!("{s:?}: the path must start with `/` (`/mcp`)"));
    }
    if s.starts_with("/.well-known/") {
        return Err(format!(
            "{s:?}: `/.well-known/` is for metadata documents, not MCP"
        ));
    }
    Ok(s.to_owned())
}

fn parse_versions(s: &str) -> Result<ProtocolVersions, String> {
    s.parse().map_err(|e| format!("{s:?}: {e}"))
}

impl EndpointArgs {
    /// Sets the handler options these flags name.
    pub(crate) fn apply(&self, o: &mut StreamableHttpOptions) {
        o.path.clone_from(&self.path);
        if let Some(v) = self.protocol_versions {
            o.protocol_versions = v;
        }
    }
}

/// One line with the effective handler options (after the network defaults), as
/// `key=value` pairs named like the flags, for an operator to check at a glance.
pub(crate) fn options_line(o: &StreamableHttpOptions) -> String {
    let d = |d: Option<Duration>| {
        d.map_or("off".to_owned(), |d| {
            humantime::format_duration(d).to_string()
        })
    };
    let n = |n: Option<usize>| n.map_or("none".to_owned(), |n| n.to_string());
    let on = |b: bool| if b { "on" } else { "off" };
    let pairs = [
        ("path", o.path.clone().unwrap_or_else(|| "every".into())),
        ("protocol-versions", o.protocol_versions.to_string()),
        ("stateless", o.stateless.to_string()),
        ("json-response", o.json_response.to_string()),
        ("event-store", on(o.event_store.is_some()).into()),
        (
            "session-store",
            (if o.session_store.is_some() {
                "shared"
            } else {
                "memory"
            })
            .into(),
        ),
        ("max-sessions", n(o.max_sessions)),
        ("session-timeout", d(o.session_timeout)),
        ("initialize-timeout", d(o.initialize_timeout)),
        ("max-in-flight", n(o.max_in_flight_per_session)),
        (
            "max-sessions-per-principal",
            n(o.max_sessions_per_principal),
        ),
        ("max-sessions-per-address", n(o.max_sessions_per_address)),
        (
            "trusted-proxies",
            o.client_addresses.trusted_proxies.len().to_string(),
        ),
        ("ipv6-prefix", o.client_addresses.ipv6_prefix.to_string()),
        (
            "forwarded-header",
            format!("{:?}", o.client_addresses.forwarded_header),
        ),
        ("max-body-bytes", o.max_body_bytes.to_string()),
        ("max-batch-entries", o.max_batch_entries.to_string()),
        ("body-timeout", d(o.body_timeout)),
        (
            "min-body-rate",
            o.min_body_rate.map_or("off".into(), |r| r.to_string()),
        ),
        ("max-buffered-body-bytes", n(o.max_buffered_body_bytes)),
        ("sse-keep-alive", d(o.sse_keep_alive)),
        (
            "localhost-protection",
            on(!o.disable_localhost_protection).into(),
        ),
        ("cors", o.cors.to_string()),
        (
            "rate-limit",
            on(o.rate_limit.is_some() || !o.rate_limits.is_empty()).into(),
        ),
        ("request-grace", d(Some(o.request_grace))),
        ("stream-grace", d(Some(o.stream_grace))),
    ];
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("options: {}", body.join(" "))
}
