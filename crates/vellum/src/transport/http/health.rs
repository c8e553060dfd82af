//! Liveness and readiness for load balancers and orchestrators: [`Health`] and the tower
//! layer that answers its two paths in front of any service ([`Health::layer`]).
//!
//! - `GET /healthz`: 200 while the process serves at all (liveness).
//! - `GET /readyz`: 200 when the server should get new traffic; 503 while it drains (after
//!   [`Health::start_draining`]) or while a readiness check fails (a configured Redis that
//!   does not answer).
//!
//! Both answer `text/plain` with `Cache-Control: no-store`, before any authorization or
//! Host check: probes carry neither credentials nor a public host name.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{Either, Full};

/// A readiness check: `Err(reason)` while the dependency is not usable.
type Check =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync>;

/// How long one readiness check may take before it counts as failed.
pub const READINESS_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The process's health: whether it drains, and what readiness depends on. Cheap to clone
/// (shared).
#[derive(Clone, Default)]
pub struct Health {
    draining: Arc<AtomicBool>,
    checks: Arc<[(String, Check)]>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("draining", &self.is_draining())
            .field(
                "checks",
                &self.checks.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Health {
    /// Ready, not draining, no checks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a readiness check named `name` (the name appears in the 503 body). Each runs
    /// on every `/readyz`, within [`READINESS_CHECK_TIMEOUT`].
    pub fn with_check<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let check: Check = Arc::new(move || Box::pin(check()));
        let mut checks: Vec<_> = self.checks.iter().cloned().collect();
        checks.push((name.into(), check));
        Health {
            draining: self.draining,
            checks: checks.into(),
        }
    }

    /// From now on `/readyz` answers 503: the load balancer stops sending new traffic.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Whether [`Health::start_draining`] was called.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// `Ok` when ready, else why not.
    pub async fn ready(&self) -> Result<(), String> {
        if self.is_draining() {
            return Err("draining".into());
        }
        for (name, check) in self.checks.iter() {
            match tokio::time::timeout(READINESS_CHECK_TIMEOUT, check()).await {
                Ok(Ok(())) => {}
                Ok(Err(reason)) => return Err(format!("{name}: {reason}")),
                Err(_) => {
                    return Err(format!(
                        "{name}: no answer within {READINESS_CHECK_TIMEOUT:?}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The layer answering `/healthz` and `/readyz`.
    pub fn layer(&self) -> HealthLayer {
        self.layer_at("")
    }

    /// The layer answering `PREFIX/healthz` and `PREFIX/readyz` (`prefix` like `/ops`).
    pub fn layer_at(&self, prefix: &str) -> HealthLayer {
        let prefix = prefix.trim_end_matches('/');
        HealthLayer {
            health: self.clone(),
            live: format!("{prefix}/healthz").into(),
            ready: format!("{prefix}/readyz").into(),
        }
    }
}

/// Answers the health paths in front of a service (see [`Health::layer`]).
#[derive(Clone, Debug)]
pub struct HealthLayer {
    health: Health,
    live: Arc<str>,
    ready: Arc<str>,
}

impl<S> tower_layer::Layer<S> for HealthLayer {
    type Service = HealthService<S>;

    fn layer(&self, inner: S) -> HealthService<S> {
        HealthService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`HealthLayer`].
#[derive(Clone, Debug)]
pub struct HealthService<S> {
    inner: S,
    layer: HealthLayer,
}

/// A health answer or the inner service's body.
pub type HealthBody<B> = Either<Full<Bytes>, B>;

fn plain(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    r
}

impl<S, ReqB, ResB> tower_service::Service<Request<ReqB>> for HealthService<S>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>>,
{
    type Response = Response<HealthBody<ResB>>;
    type Error = S::Error;
    type Future = HealthFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let probe = matches!(*req.method(), Method::GET | Method::HEAD);
        let path = req.uri().path();
        if probe && path == &*self.layer.live {
            let r = plain(StatusCode::OK, "ok\n".into());
            return HealthFuture::probe(Box::pin(std::future::ready(r)));
        }
        if probe && path == &*self.layer.ready {
            let health = self.layer.health.clone();
            return HealthFuture::probe(Box::pin(async move {
                match health.ready().await {
                    Ok(()) => plain(StatusCode::OK, "ready\n".into()),
                    Err(why) => plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("not ready: {why}\n"),
                    ),
                }
            }));
        }
        HealthFuture {
            state: HealthState::Inner {
                future: self.inner.call(req),
            },
        }
    }
}

/// A probe's answer being made.
type ProbeAnswer = Pin<Box<dyn Future<Output = Response<Full<Bytes>>> + Send>>;

pin_project_lite::pin_project! {
    /// The future of a [`HealthService`] call: a probe's answer, or the inner service's
    /// (not boxed again: every request that is not a probe goes through it).
    pub struct HealthFuture<F> {
        #[pin]
        state: HealthState<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = HealthStateProj]
    enum HealthState<F> {
        // A request for the inner service.
        Inner { #[pin] future: F },
        // A liveness or readiness probe.
        Probe { answer: ProbeAnswer },
    }
}

impl<F> HealthFuture<F> {
    fn probe(answer: ProbeAnswer) -> Self {
        HealthFuture {
            state: HealthState::Probe { answer },
        }
    }
}

impl<F, ResB, E> Future for HealthFuture<F>
where
    F: Future<Output = Result<Response<ResB>, E>>,
{
    type Output = Result<Response<HealthBody<ResB>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            HealthStateProj::Inner { future } => future
                .poll(cx)
                .map(|r| r.map(|resp| resp.map(Either::Right))),
            HealthStateProj::Probe { answer } => {
                answer.as_mut().poll(cx).map(|r| Ok(r.map(Either::Left)))
            }
        }
    }
}
