//! The subscriber `vellum serve` gives the handler as its logger: a line per request on
//! stderr (`--log LEVEL`), each request's span exported over OTLP/HTTP (`--otlp-endpoint`),
//! both, or neither (then no span is even opened).

use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;

/// What stops the OTLP export (nothing without the `otel` feature).
#[cfg(feature = "otel")]
pub(crate) type Guard = vellum::otel::OtelGuard;
/// What stops the OTLP export (nothing without the `otel` feature).
#[cfg(not(feature = "otel"))]
pub(crate) type Guard = std::convert::Infallible;

/// The handler's logger, and the guard of the OTLP export when there is one (shut it down
/// last: it posts the spans still queued).
pub(crate) fn logger(
    level: &str,
    otlp_endpoint: Option<&str>,
    service_name: &str,
) -> anyhow::Result<(Option<tracing::Dispatch>, Option<Guard>)> {
    let level = parse_level(level)?;
    let fmt = level.map(|level| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(LevelFilter::from_level(level))
    });
    #[cfg(not(feature = "otel"))]
    let (otel, guard): (Option<LevelFilter>, _) = match otlp_endpoint {
        Some(_) => anyhow::bail!("--otlp-endpoint: this vellum was built without `otel`"),
        None => (None, None),
    };
    #[cfg(not(feature = "otel"))]
    let _ = service_name;
    #[cfg(feature = "otel")]
    let (otel, guard) = match otlp_endpoint {
        Some(url) => {
            let (layer, guard) = vellum::otel::layer(url, service_name)
                .map_err(|e| anyhow::anyhow!("--otlp-endpoint: {e}"))?;
            // The request spans and their events are at info; handler code's debug and
            // trace events would only swell every exported span.
            (Some(layer.with_filter(LevelFilter::INFO)), Some(guard))
        }
        None => (None, None),
    };
    if fmt.is_none() && otel.is_none() {
        return Ok((None, None));
    }
    let subscriber = tracing_subscriber::registry().with(otel).with(fmt);
    Ok((Some(tracing::Dispatch::new(subscriber)), guard))
}

/// `--log`: a level, or `off` (`None`).
fn parse_level(level: &str) -> anyhow::Result<Option<tracing::Level>> {
    if level.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    level.parse().map(Some).map_err(|_| {
        anyhow::anyhow!("--log: expected error, warn, info, debug, trace or off, got {level:?}")
    })
}

/// Posts the spans still queued and stops the exporter; a collector that does not answer
/// costs the export timeout at most, and is reported, not fatal.
pub(crate) async fn shutdown(guard: Option<Guard>) {
    #[cfg(feature = "otel")]
    if let Some(guard) = guard
        && let Err(e) = guard.shutdown().await
    {
        eprintln!("OpenTelemetry: the last spans may not have been exported: {e}");
    }
    #[cfg(not(feature = "otel"))]
    let _ = guard;
}

/// The process-wide log of `vellum proxy` and `vellum connect`, on stderr (never stdout,
/// which `connect` keeps for protocol messages): what the gateway says about its backends
/// (each child's stderr line, prefixed with the child; starts, ends) from `level` up, and
/// anything else from `warn`. `RUST_LOG` replaces the filter.
pub(crate) fn gateway_log(level: &str) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = match parse_level(level)? {
        Some(l) => format!("warn,vellum::gateway={}", l.as_str().to_ascii_lowercase()),
        None => "off".to_owned(),
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .finish();
    // A second call (tests run commands in one process) keeps the first.
    let _ = tracing::subscriber::set_global_default(subscriber);
    Ok(())
}
