//! `vellum serve --metrics-addr ADDR`: installs a Prometheus recorder behind the `metrics`
//! facade the handler reports through, and serves its text format at `GET /metrics` on a
//! listener of its own (scrapers reach it without passing the MCP endpoint's Host, Origin
//! or authorization checks; keep it off public addresses).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use vellum::transport::http::metric_names;

/// Histogram buckets of request durations, in seconds: 100 µs to 60 s.
const OPERATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// Histogram buckets of session lifetimes, in seconds: 1 s to a day.
const SESSION_BUCKETS: &[f64] = &[
    1.0, 10.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
];

/// How often histograms are compacted (the exporter leaves it to its user).
const UPKEEP: Duration = Duration::from_secs(5);

/// Installs the recorder, binds `addr` and serves `/metrics` from a task. Returns the bound
/// address (port 0 picks one).
pub(crate) async fn serve(addr: &str) -> anyhow::Result<SocketAddr> {
    let handle = PrometheusBuilder::new()
        // `mcp.server.operation.duration` (seconds) becomes
        // `mcp_server_operation_duration_seconds`, as Prometheus names units.
        .set_enable_unit_suffix(true)
        .set_buckets_for_metric(
            Matcher::Full(metric_names::OPERATION_DURATION.into()),
            OPERATION_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(metric_names::SESSION_DURATION.into()),
            SESSION_BUCKETS,
        )?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    vellum::transport::http::describe_metrics();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--metrics-addr: cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP);
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    tokio::spawn(accept(listener, handle));
    Ok(bound)
}

async fn accept(listener: tokio::net::TcpListener, handle: PrometheusHandle) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors and the like: wait instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let r = answer(&req, &handle);
                async move { Ok::<_, Infallible>(r) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

fn answer<B>(req: &Request<B>, handle: &PrometheusHandle) -> Response<Full<Bytes>> {
    let (status, kind, body) = match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            handle.render(),
        ),
        (_, "/metrics") => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "GET only\n".into(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: metrics are at /metrics\n".into(),
        ),
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = header::HeaderValue::from_str(kind) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}
