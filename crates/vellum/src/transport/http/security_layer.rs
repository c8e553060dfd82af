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

use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use http::{Extensions, HeaderMap, HeaderValue, Method, Request, Response, Uri, header};
use http_body_util::Either;

use super::body::ResponseBody;
use super::client_address::ClientAddresses;
use super::cors;
use super::options::StreamableHttpOptions;
use super::rejection::Rejection;
use super::security::{
    ConnectionInfo, CrossOriginProtection, LocalhostPolicy, check_host_present, check_localhost,
};

/// The checks and the CORS rule, as configured from a handler's options.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Policy {
    /// The DNS-rebinding defence is on, with these settings.
    localhost: Option<LocalhostPolicy>,
    origin: CrossOriginProtection,
    cors: bool,
    /// How clients are told apart by address (kept here so that the authorization layer,
    /// which takes its checks from the handler's options, counts clients the same way).
    clients: ClientAddresses,
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
                localhost: (!options.disable_localhost_protection)
                    .then(|| LocalhostPolicy::new(options.local_address, &options.allowed_hosts)),
                origin: options.cross_origin_protection.clone().unwrap_or_default(),
                cors: options.cors,
                clients: options.client_addresses.clone(),
            }),
        }
    }

    /// How the handler's options tell clients apart by address (for the authorization
    /// layer).
    #[cfg(feature = "auth")]
    pub(crate) fn client_addresses(&self) -> &ClientAddresses {
        &self.policy.clients
    }

    /// Runs one request through the layer: refused (the answer `refuse` makes of the
    /// rejection) when the checks fail it, a CORS preflight answered, or handed to `next`,
    /// whose answer gets the CORS headers. The one implementation of the layer: its service
    /// and the handler (which logs and counts its refusals) both run requests through it.
    pub(crate) fn serve<B, F>(
        &self,
        req: Request<B>,
        connection: Option<&ConnectionInfo>,
        refuse: impl FnOnce(&Method, Rejection) -> Response<ResponseBody>,
        next: impl FnOnce(Request<B>) -> F,
    ) -> SecurityFuture<F> {
        let cors_origin = self.cors_origin(req.headers());
        let checked = self.check(
            req.version(),
            req.method(),
            req.uri(),
            req.headers(),
            req.extensions(),
            connection,
        );
        let state = match (checked, &cors_origin) {
            (Err(rejection), _) => State::Answered {
                answer: std::future::ready(Box::new(refuse(req.method(), rejection))),
            },
            (Ok(()), Some(origin)) if req.method() == Method::OPTIONS => State::Answered {
                answer: std::future::ready(Box::new(cors::preflight(req.headers(), origin))),
            },
            (Ok(()), _) => State::Next { future: next(req) },
        };
        SecurityFuture { state, cors_origin }
    }

    /// The refusal of a request (400, 403 or 431), if the checks fail it. A request already admitted by
    /// a layer with the same settings passes at once.
    pub(crate) fn check(
        &self,
        version: http::Version,
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
        super::headers::check_head_size(uri, headers)?;
        super::headers::check_singletons(headers)?;
        check_host_present(version, headers, uri)?;
        if let Some(localhost) = &self.policy.localhost {
            check_localhost(headers, uri, connection, localhost)?;
        }
        self.policy.origin.check(method, uri, headers)
    }

    /// Checks a request (its connection read from its extensions) and marks it admitted for
    /// the layers inside; `Err` is the refusal to send (boxed: it is the rare path). For the
    /// auth layer, which answers some requests itself before the handler sees them.
    #[cfg(any(feature = "auth", test))]
    pub(crate) fn admit<B>(&self, req: &mut Request<B>) -> Result<(), Box<Response<ResponseBody>>> {
        let connection = req.extensions().get::<ConnectionInfo>().copied();
        self.check(
            req.version(),
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
    /// request's origin is trusted. (The auth layer's answers are the only such responses.)
    #[cfg(feature = "auth")]
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
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>> + Clone,
{
    type Response = Response<SecurityBody<ResB>>;
    type Error = S::Error;
    type Future = SecurityFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        // The clone that was made ready is the one that serves this request.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let connection = req.extensions().get::<ConnectionInfo>().copied();
        let mark = Admitted(self.layer.policy.clone());
        let refuse = |_: &Method, rejection: Rejection| rejection.into_response();
        self.layer
            .serve(req, connection.as_ref(), refuse, move |mut req| {
                // Admitted: the layers inside with the same settings need not judge it again.
                req.extensions_mut().insert(mark);
                inner.call(req)
            })
    }
}

pin_project_lite::pin_project! {
    /// The future of a [`SecurityService`] call: the layer's own answer (a refusal, a
    /// preflight), or the inner service's, to which it adds the CORS headers.
    pub struct SecurityFuture<F> {
        #[pin]
        state: State<F>,
        cors_origin: Option<HeaderValue>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        // Answered by the layer (boxed: the rare path, and hyper keeps a connection's
        // response future for the connection's life, so the future stays small).
        Answered { answer: Ready<Box<Response<ResponseBody>>> },
        // Passed on.
        Next { #[pin] future: F },
    }
}

impl<F, ResB, E> Future for SecurityFuture<F>
where
    F: Future<Output = Result<Response<ResB>, E>>,
{
    type Output = Result<Response<SecurityBody<ResB>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut resp = match this.state.project() {
            StateProj::Answered { answer } => {
                (*ready!(Pin::new(answer).poll(cx))).map(Either::Right)
            }
            StateProj::Next { future } => match ready!(future.poll(cx)) {
                Ok(resp) => resp.map(Either::Left),
                Err(e) => return Poll::Ready(Err(e)),
            },
        };
        if let Some(origin) = this.cors_origin.take()
            && !resp
                .headers()
                .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        {
            cors::decorate(resp.headers_mut(), &origin);
        }
        Poll::Ready(Ok(resp))
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tower::{Layer as _, ServiceExt as _};

    use super::*;

    fn loopback() -> ConnectionInfo {
        ConnectionInfo {
            local: Some(([127, 0, 0, 1], 8000).into()),
            remote: Some(([127, 0, 0, 1], 50000).into()),
        }
    }

    fn request(method: Method, host: &str, origin: Option<&str>) -> Request<()> {
        let mut b = Request::builder()
            .method(method)
            .uri("/mcp")
            .header(header::HOST, host);
        if let Some(o) = origin {
            b = b.header(header::ORIGIN, o);
        }
        let mut req = b.body(()).unwrap();
        req.extensions_mut().insert(loopback());
        req
    }

    /// An inner service counting its calls and saying whether the request came marked.
    fn inner(
        calls: Arc<AtomicUsize>,
    ) -> impl tower_service::Service<
        Request<()>,
        Response = Response<ResponseBody>,
        Error = Infallible,
        Future = impl Send,
    > + Clone
    + Send
    + 'static {
        tower::service_fn(move |req: Request<()>| {
            calls.fetch_add(1, Ordering::SeqCst);
            let marked = req.extensions().get::<Admitted>().is_some();
            async move {
                let mut r = Response::new(ResponseBody::empty());
                r.headers_mut().insert(
                    "x-marked",
                    HeaderValue::from_static(if marked { "1" } else { "0" }),
                );
                Ok::<_, Infallible>(r)
            }
        })
    }

    #[tokio::test]
    async fn refuses_a_rebinding_host_and_marks_what_it_admits() {
        let calls = Arc::new(AtomicUsize::new(0));
        let svc = SecurityLayer::new(&StreamableHttpOptions::default()).layer(inner(calls.clone()));
        let refused = svc
            .clone()
            .oneshot(request(Method::POST, "evil.example:8000", None))
            .await
            .unwrap();
        assert_eq!(refused.status(), http::StatusCode::FORBIDDEN);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let passed = svc
            .oneshot(request(Method::POST, "localhost:8000", None))
            .await
            .unwrap();
        assert_eq!(passed.status(), http::StatusCode::OK);
        assert_eq!(passed.headers()["x-marked"], "1");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_layer_with_other_settings_judges_again() {
        // Outside: no DNS-rebinding defence; inside: the default. The inner layer does not
        // trust the outer one's mark, so the request is refused: stacking is only stricter.
        let lax = StreamableHttpOptions {
            disable_localhost_protection: true,
            ..Default::default()
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let strict =
            SecurityLayer::new(&StreamableHttpOptions::default()).layer(inner(calls.clone()));
        let svc = SecurityLayer::new(&lax).layer(strict);
        let resp = svc
            .oneshot(request(Method::POST, "evil.example:8000", None))
            .await
            .unwrap();
        assert_eq!(resp.status(), http::StatusCode::FORBIDDEN);
        assert_eq!(calls.load(Ordering::SeqCst), 0);

        // The same settings (built separately: compared by value) trust the mark, even for
        // a Host they would refuse; other settings do not.
        let mut req = request(Method::POST, "localhost:8000", None);
        assert!(
            SecurityLayer::new(&StreamableHttpOptions::default())
                .admit(&mut req)
                .is_ok()
        );
        *req.headers_mut().get_mut(header::HOST).unwrap() =
            HeaderValue::from_static("evil.example");
        let same = StreamableHttpOptions {
            cross_origin_protection: Some(CrossOriginProtection::new()),
            ..Default::default()
        };
        let info = loopback();
        let judge = |options: &StreamableHttpOptions| {
            SecurityLayer::new(options)
                .check(
                    req.version(),
                    req.method(),
                    req.uri(),
                    req.headers(),
                    req.extensions(),
                    Some(&info),
                )
                .is_ok()
        };
        assert!(judge(&same));
        let cors = StreamableHttpOptions {
            cors: true,
            ..Default::default()
        };
        assert!(!judge(&cors));
    }

    #[tokio::test]
    async fn cors_for_trusted_origins() {
        let mut protection = CrossOriginProtection::new();
        protection
            .add_trusted_origin("https://app.example")
            .unwrap();
        let options = StreamableHttpOptions {
            cors: true,
            cross_origin_protection: Some(protection),
            ..Default::default()
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let svc = SecurityLayer::new(&options).layer(inner(calls.clone()));
        let preflight = svc
            .clone()
            .oneshot(request(
                Method::OPTIONS,
                "localhost:8000",
                Some("https://app.example"),
            ))
            .await
            .unwrap();
        assert_eq!(preflight.status(), http::StatusCode::NO_CONTENT);
        assert_eq!(
            preflight.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://app.example"
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "the layer answers the preflight"
        );
        let get = svc
            .clone()
            .oneshot(request(
                Method::GET,
                "localhost:8000",
                Some("https://app.example"),
            ))
            .await
            .unwrap();
        assert_eq!(
            get.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://app.example"
        );
        assert_eq!(get.headers().get_all(header::VARY).iter().count(), 1);
        let foreign = svc
            .oneshot(request(
                Method::GET,
                "localhost:8000",
                Some("https://evil.example"),
            ))
            .await
            .unwrap();
        assert_eq!(foreign.status(), http::StatusCode::FORBIDDEN);
        assert!(
            !foreign
                .headers()
                .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        );
    }
}
