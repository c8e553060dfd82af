//! OpenTelemetry export of the handler's request spans over OTLP/HTTP (feature `otel`).
//!
//! [`layer`] (or [`OtlpTraces`] for more settings) gives a `tracing` layer that turns spans
//! into OpenTelemetry spans and a batch exporter that posts them, protobuf-encoded, to
//! `{endpoint}/v1/traces`, plus an [`OtelGuard`] that flushes what is queued when the
//! program stops. Put the layer in the subscriber you hand the handler as its
//! [`logger`](crate::transport::http::StreamableHttpOptions::logger()): the handler's request
//! span (`mcp.server.request`, named `"{method} {target}"`) carries the attributes of the
//! OpenTelemetry semantic conventions for MCP (`mcp.method.name`, `gen_ai.tool.name`,
//! `mcp.session.id`, `jsonrpc.request.id`, `mcp.protocol.version`, `error.type`), and a
//! request that carries a W3C trace context (the `traceparent`/`tracestate` headers, or
//! `_meta` in the 2026-07-28 era) has the caller's span as its OpenTelemetry parent: the
//! exported span is in the caller's trace, its parent span id the caller's. The caller's
//! sampled flag decides (parent-based sampling); a request without a trace context starts a
//! trace of its own, sampled.
//!
//! The exporter runs as one task on the application's tokio runtime (no thread or runtime
//! of its own) and posts with reqwest over rustls with `ring`; the standard environment
//! variables of the OTLP exporter still apply where no setting here overrides them
//! (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_SCHEDULE_DELAY`,
//! `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_RESOURCE_ATTRIBUTES`, …).
//!
//! Cost: without the feature nothing of this is compiled. With it, a handler without a
//! logger opens no span at all; with a logger, a request that carries a trace context costs
//! one small allocation more (the parent's OpenTelemetry context).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use vellum::transport::http::StreamableHttpOptions;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let (otel, guard) = vellum::otel::layer("http://127.0.0.1:4318", "my-mcp-server")?;
//! let subscriber = tracing_subscriber::registry().with(otel);
//! let options = StreamableHttpOptions::default().logger(tracing::Dispatch::new(subscriber));
//! // ... serve with `options` ...
//! # drop(options);
//! guard.shutdown().await?; // posts what is still queued
//! # Ok(())
//! # }
//! ```
//!
//! Not here: reading the trace context (the HTTP transport does, for every request) and
//! metrics (feature `metrics`, through the `metrics` facade).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{BatchConfigBuilder, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config_error::{ConfigError, Kind as ConfigKind};

/// How long the exporter's client waits for the collector (the OTLP default).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long dropping an [`OtelGuard`] waits for the last export.
const DROP_WAIT: Duration = Duration::from_secs(5);

/// Why spans could not be exported at a [flush](OtelGuard::flush) or the
/// [shutdown](OtelGuard::shutdown): the collector did not answer, or refused. The
/// OpenTelemetry SDK's error is the source. (Setting the export up fails with a
/// [`ConfigError`] instead.)
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry export: {source}")]
pub struct OtelError {
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl OtelError {
    fn new(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        OtelError {
            source: Box::new(source),
        }
    }
}

/// The settings of the OTLP/HTTP span export; [`layer`] is the short form.
#[derive(Clone, Debug)]
pub struct OtlpTraces {
    endpoint: String,
    service_name: String,
    batch_delay: Option<Duration>,
}

impl OtlpTraces {
    /// Export to the collector at `endpoint`, its OTLP/HTTP base URL
    /// (`http://collector:4318`): spans go to `{endpoint}/v1/traces`, as with
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`. A URL that already ends in `/v1/traces` is used as is.
    pub fn new(endpoint: impl Into<String>) -> Self {
        OtlpTraces {
            endpoint: endpoint.into(),
            service_name: "vellum".to_owned(),
            batch_delay: None,
        }
    }

    /// The `service.name` resource attribute. Default: `vellum`.
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// How long finished spans wait to be posted together. Default: `OTEL_BSP_SCHEDULE_DELAY`
    /// (milliseconds), else 5 s.
    #[must_use]
    pub fn batch_delay(mut self, delay: Duration) -> Self {
        self.batch_delay = Some(delay);
        self
    }

    /// The traces URL spans are posted to.
    fn traces_url(&self) -> Result<String, ConfigError> {
        let bad = |reason| {
            ConfigError::from(ConfigKind::OtlpEndpoint {
                endpoint: self.endpoint.clone(),
                reason,
            })
        };
        let uri: http::Uri = self.endpoint.parse().map_err(|_| bad("not a valid URL"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(bad("expected http://HOST[:PORT][/PATH] or https://…"));
        }
        if uri.query().is_some() {
            return Err(bad("a query has no place in an OTLP endpoint"));
        }
        let base = self.endpoint.trim_end_matches('/');
        Ok(if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        })
    }

    /// Builds the exporter (on the current tokio runtime) and the layer that feeds it.
    pub fn layer<S>(&self) -> Result<(impl Layer<S> + use<S>, OtelGuard), ConfigError>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let url = self.traces_url()?;
        // The batch processor spawns its task here: fail plainly rather than panic in tokio.
        tokio::runtime::Handle::try_current()
            .map_err(|_| ConfigError::from(ConfigKind::NoRuntime))?;
        crate::transport::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| ConfigError::with_source(ConfigKind::OtlpExporter, e))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(url)
            .build()
            .map_err(|e| ConfigError::with_source(ConfigKind::OtlpExporter, e))?;
        let mut batch = BatchConfigBuilder::default();
        if let Some(delay) = self.batch_delay {
            batch = batch.with_scheduled_delay(delay);
        }
        let processor =
            opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
                exporter,
                opentelemetry_sdk::runtime::Tokio,
            )
            .with_batch_config(batch.build())
            .build();
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(self.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let scope = opentelemetry::InstrumentationScope::builder("vellum")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer_with_scope(scope));
        Ok((
            layer,
            OtelGuard {
                provider: Some(provider),
            },
        ))
    }
}

/// A layer that exports spans to the OTLP/HTTP collector at `endpoint` (its base URL, e.g.
/// `http://127.0.0.1:4318`) as `service_name`, and the guard that flushes it. Call it from
/// within a tokio runtime: the exporter is a task on it. See the [module docs](self).
pub fn layer<S>(
    endpoint: &str,
    service_name: &str,
) -> Result<(impl Layer<S> + use<S>, OtelGuard), ConfigError>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    OtlpTraces::new(endpoint).service_name(service_name).layer()
}

/// Owns the exporter: [`flush`](Self::flush) posts what is queued,
/// [`shutdown`](Self::shutdown) does so and stops it. Dropping the guard shuts the exporter
/// down too, waiting a few seconds at most (and not at all on a current-thread runtime,
/// whose one thread the export would need): prefer `shutdown().await`.
#[derive(Debug)]
pub struct OtelGuard {
    provider: Option<SdkTracerProvider>,
}

impl OtelGuard {
    /// Posts every finished span still queued, and waits for the collector's answer.
    pub async fn flush(&self) -> Result<(), OtelError> {
        let Some(provider) = self.provider.clone() else {
            return Ok(());
        };
        blocking(move || provider.force_flush()).await
    }

    /// Posts what is queued, then stops the exporter; spans that end later are dropped.
    pub async fn shutdown(mut self) -> Result<(), OtelError> {
        let Some(provider) = self.provider.take() else {
            return Ok(());
        };
        blocking(move || provider.shutdown()).await
    }
}

/// Runs one of the provider's calls that block until the exporter task answers, on a
/// blocking thread: the task needs the runtime's threads free.
async fn blocking(
    f: impl FnOnce() -> opentelemetry_sdk::error::OTelSdkResult + Send + 'static,
) -> Result<(), OtelError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(OtelError::new)?
        .map_err(OtelError::new)
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        let Some(provider) = self.provider.take() else {
            return;
        };
        let (done, wait) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("vellum-otel-shutdown".to_owned())
            .spawn(move || {
                let _ = done.send(provider.shutdown());
            });
        if spawned.is_err() {
            return;
        }
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            // Waiting here would hold the thread the export runs on.
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread) => {}
            Ok(_) => {
                tokio::task::block_in_place(|| {
                    let _ = wait.recv_timeout(DROP_WAIT);
                });
            }
            Err(_) => {
                let _ = wait.recv_timeout(DROP_WAIT);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_url_is_the_base_and_v1_traces() {
        let url = |e: &str| OtlpTraces::new(e).traces_url();
        assert_eq!(
            url("http://127.0.0.1:4318").ok().as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            url("https://otel.example/collector/").ok().as_deref(),
            Some("https://otel.example/collector/v1/traces")
        );
        assert_eq!(
            url("http://c:4318/v1/traces").ok().as_deref(),
            Some("http://c:4318/v1/traces")
        );
        for bad in [
            "",
            "127.0.0.1:4318",
            "ftp://c/",
            "http://c:4318/?a=b",
            "not a url",
        ] {
            assert!(url(bad).is_err_and(|e| e.is_url()), "{bad:?}");
        }
    }

    #[test]
    fn without_a_runtime_setting_up_fails_plainly() {
        let r = layer::<tracing_subscriber::Registry>("http://127.0.0.1:4318", "t");
        let e = r.err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("OpenTelemetry export needs a tokio runtime: set it up from within one")
        );
    }
}
