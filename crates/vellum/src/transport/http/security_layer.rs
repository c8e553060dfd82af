//! [`SecurityLayer`]: the Host (DNS-rebinding) and Origin checks and CORS of the Streamable
//! HTTP endpoint, as a tower layer. The handler runs it around itself; the authorization
//! layer runs it before it looks at a token (so a hostile page gets the same 403 with or
//! without one); you may put it in front of anything else served beside the endpoint.
//!
//! A request admitted by a layer carries a mark of the settings it was judged by; a layer
//! inside with the same settings (the handler behind the auth layer) does not judge it
//! again. A layer with other settings judges it by its own, so stacking layers can only
//! make the checks stricter.
//!
//! Not here: the checks themselves (`security.rs`) and the CORS headers (`cors.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Extensions, HeaderMap, HeaderValue, Method, Request, Response, Uri, header};
use http_body_util::Either;

use super::body::ResponseBody;
use super::cors;
use super::options::StreamableHttpOptions;
use super::rejection::Rejection;
use super::security::{ConnectionInfo, CrossOriginProtection, check_localhost};

/// The checks and the CORS rule, as configured from a handler's options.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Policy {
    /// The DNS-rebinding defence is on.
    localhost: bool,
    origin: CrossOriginProtection,
    cors: bool,
}

/// The mark of an admitted request: the settings it was judged by.
#[derive(Clone)]
struct Admitted(Arc<Policy>);

/// Host and Origin checks and CORS as a tower [`Layer`](tower_layer::Layer), with the
/// settings of a [`StreamableHttpOptions`].
///
/// Its service refuses a request the checks fail with 403 (a JSON-RPC error body, as the
/// handler answers), answers a CORS preflight from a trusted origin with 204 (when
/// [`cors`](StreamableHttpOptions::cors) is on), and adds the CORS headers to the inner
/// service's responses for trusted origins. [`StreamableHttpHandler`](super::StreamableHttpHandler)
/// already runs it; wrap it around other services served on the same origin.
#[derive(Debug, Clone)]
pub struct SecurityLayer {
    policy: Arc<Policy>,
}

impl SecurityLayer {
    /// The layer with the Host, Origin and CORS settings of `options`.
    pub fn new(options: &StreamableHttpOptions) -> Self {
        SecurityLayer {
            policy: Arc::new(Policy {
                localhost: !options.disable_localhost_protection,
                origin: options.cross_origin_protection.clone().unwrap_or_default(),
                cors: options.cors,
            }),
        }
    }

    /// The refusal of a request (403), if the checks fail it. A request already admitted by
    /// a layer with the same settings passes at once.
    pub(crate) fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        extensions: &Extensions,
        connection: Option<&ConnectionInfo>,
    ) -> Result<(), Rejection> {
        if let Some(Admitted(by)) = extensions.get::<Admitted>()
            && (Arc::ptr_eq(by, &self.policy) || **by == *self.policy)
        {
            return Ok(());
        }
        if self.policy.localhost {
            check_localhost(headers, uri, connection)?;
        }
        self.policy.origin.check(method, uri, headers)
    }

    /// Checks a request (its connection read from its extensions) and marks it admitted for
    /// the layers inside; `Err` is the refusal to send (boxed: it is the rare path).
    pub(crate) fn admit<B>(&self, req: &mut Request<B>) -> Result<(), Box<Response<ResponseBody>>> {
        let connection = req.extensions().get::<ConnectionInfo>().copied();
        self.check(
            req.method(),
            req.uri(),
            req.headers(),
            req.extensions(),
            connection.as_ref(),
        )
        .map_err(|r| Box::new(r.into_response()))?;
        req.extensions_mut().insert(Admitted(self.policy.clone()));
        Ok(())
    }

    /// The request's `Origin` when CORS headers answer it: CORS is on and the origin is
    /// trusted (a foreign origin is refused by the checks anyway).
    pub(crate) fn cors_origin(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        if !self.policy.cors {
            return None;
        }
        headers
            .get(header::ORIGIN)
            .filter(|o| o.to_str().is_ok_and(|o| self.policy.origin.is_trusted(o)))
            .cloned()
    }
}

impl SecurityLayer {
    /// Adds the CORS headers to a response the layer's user answered itself, when the
    /// request's origin is trusted.
    pub(crate) fn decorate(&self, request: &HeaderMap, response: &mut HeaderMap) {
        if let Some(origin) = self.cors_origin(request) {
            cors::decorate(response, &origin);
        }
    }
}

impl<S> tower_layer::Layer<S> for SecurityLayer {
    type Service = SecurityService<S>;

    fn layer(&self, inner: S) -> SecurityService<S> {
        SecurityService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`SecurityLayer`] wraps around another.
#[derive(Debug, Clone)]
pub struct SecurityService<S> {
    inner: S,
    layer: SecurityLayer,
}

/// The body of a [`SecurityService`] response: the inner service's, or the layer's own
/// (a refusal, a preflight answer).
pub type SecurityBody<B> = Either<B, ResponseBody>;

impl<S, ReqB, ResB> tower_service::Service<Request<ReqB>> for SecurityService<S>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    ReqB: Send + 'static,
    ResB: Send + 'static,
{
    type Response = Response<SecurityBody<ResB>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ReqB>) -> Self::Future {
        // The clone that was made ready is the one that serves this request.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let cors_origin = self.layer.cors_origin(req.headers());
        let admitted = self.layer.admit(&mut req);
        Box::pin(async move {
            let mut resp = match admitted {
                Err(refusal) => (*refusal).map(Either::Right),
                Ok(()) => match (&cors_origin, req.method()) {
                    (Some(origin), &Method::OPTIONS) => {
                        cors::preflight(req.headers(), origin).map(Either::Right)
                    }
                    _ => inner.call(req).await?.map(Either::Left),
                },
            };
            if let Some(origin) = &cors_origin
                && !resp
                    .headers()
                    .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            {
                cors::decorate(resp.headers_mut(), origin);
            }
            Ok(resp)
        })
    }
}
