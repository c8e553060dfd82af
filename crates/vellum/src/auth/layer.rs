//! [`AuthLayer`]: the MCP server as an OAuth 2.1 resource server, as a tower layer.
//!
//! Order of a request through [`AuthService`]:
//! 1. `GET`/`HEAD` of the metadata paths answer the Protected Resource Metadata (public).
//!    Under a router that strips a prefix those paths never arrive here: the application
//!    mounts [`AuthLayer::metadata_service`] at [`AuthLayer::metadata_path`] itself.
//! 2. The handler's [`SecurityLayer`] (Host and Origin checks, with the handler's settings),
//!    so a hostile page is refused with the same 403 whether or not it sends a token: a 401
//!    never tells a rebinding page more than the 403 would. The request is marked admitted,
//!    so the handler behind does not check it again.
//! 3. `OPTIONS` (CORS preflight, which never carries credentials) passes through.
//! 4. The bearer token: missing → 401 with a challenge; in the query string or twice → 400;
//!    from a client address past its budget of failed authentications → 429 with
//!    `Retry-After`, unverified; invalid (or failed lately: `failures.rs`) → 401
//!    `invalid_token`; verifier unreachable → 503 with `Retry-After`.
//! 5. Required scopes: missing → 403 `insufficient_scope` naming all of them.
//! 6. The [`Principal`] goes into the request's extensions (for handlers), with the neutral
//!    [`Caller`](crate::server::Caller) (with its scopes) the server core binds sessions and
//!    state to, and the per-tool and per-method [`ScopeRules`]; the inner service runs.
//! 7. A 403 of the core for a scope a tool or method needs gets this layer's challenge
//!    (`resource_metadata`, and every scope the call needs).
//!
//! The body is never read here: the layer's own 401 and 403 never depend on it; per-tool
//! scopes are checked by the core, which reads the body anyway.
//!
//! Not here: verifying tokens (`TokenVerifier` and its implementations).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::Either;

use super::Principal;
use super::challenge::{Challenge, oauth_error, unavailable};
use super::credentials::{Scheme, credentials};
use super::dpop::{DpopMode, DpopSettings, ProofRefusal};
use super::failures::{FailureGuard, Precheck};
use super::verifier::{TokenVerifier, VerifyError};
use crate::server::{InsufficientScope, ScopeRules};
use crate::transport::http::{
    ConnectionInfo, ResponseBody, SecurityLayer, too_many_auth_failures, well_known_not_found,
};

/// The body of an [`AuthService`] response: the inner service's, or the layer's own
/// (metadata, challenges).
pub type AuthBody<B> = Either<B, ResponseBody>;

/// The header a server nonce travels in (RFC 9449 §8).
const DPOP_NONCE: http::HeaderName = http::HeaderName::from_static("dpop-nonce");

pub(super) struct Config {
    pub(super) verifier: Arc<dyn TokenVerifier>,
    pub(super) metadata_json: Bytes,
    /// The absolute, path-aware metadata URL named in challenges.
    pub(super) metadata_url: String,
    /// The path-aware and root metadata paths.
    pub(super) metadata_paths: [String; 2],
    pub(super) required_scopes: Vec<String>,
    /// Scopes per tool and per method, handed to the core with every request (`None`
    /// without rules: nothing to insert).
    pub(super) rules: Option<Arc<ScopeRules>>,
    /// The handler's Host/Origin checks and CORS rule, run before any token is looked at.
    pub(super) security: SecurityLayer,
    /// DPoP: mode, algorithms, window, nonces, replay cache.
    pub(super) dpop: DpopSettings,
    /// `algs` of DPoP challenges.
    pub(super) dpop_algs: String,
    /// `scheme://authority` of the resource: a proof's `htu` is this and the request path
    /// (see [`Config::htu`]).
    pub(super) origin: String,
    /// Failed authentications per client address, tokens that failed lately.
    pub(super) failures: FailureGuard,
    /// The resource identifier's path (`/mcp` for `https://mcp.example.com/mcp`).
    pub(super) resource_path: String,
}

/// Adds OAuth 2.1 resource-server authorization to a service (usually a
/// [`StreamableHttpHandler`](crate::transport::http::StreamableHttpHandler)).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use vellum::auth::{AuthLayer, JwksCache, JwtVerifier};
/// # fn f() -> Result<(), vellum::error::ConfigError> {
/// let jwks = Arc::new(JwksCache::new("https://as.example.com/jwks.json")?);
/// let verifier = JwtVerifier::new(jwks, "https://as.example.com", "https://mcp.example.com/mcp")?;
/// let layer = AuthLayer::builder("https://mcp.example.com/mcp", verifier)
///     .authorization_server("https://as.example.com")
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AuthLayer {
    pub(super) config: Arc<Config>,
}

impl std::fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayer")
            .field("metadata_url", &self.config.metadata_url)
            .field("required_scopes", &self.config.required_scopes)
            .finish_non_exhaustive()
    }
}

impl AuthLayer {
    /// The absolute URL of the Protected Resource Metadata (path-aware form), the one every
    /// challenge names: made from the configured resource identifier, never from a request.
    pub fn metadata_url(&self) -> &str {
        &self.config.metadata_url
    }

    /// The path of the Protected Resource Metadata (path-aware form, RFC 9728 §3.1):
    /// `/.well-known/oauth-protected-resource/mcp` for the resource
    /// `https://mcp.example.com/mcp`. Where to mount [`metadata_service`](Self::metadata_service)
    /// when the layer is not at the root of the host.
    pub fn metadata_path(&self) -> &str {
        &self.config.metadata_paths[0]
    }

    /// The Protected Resource Metadata as a service of its own, answering `GET`, `HEAD` and
    /// `OPTIONS` on whatever path it is mounted at (other methods: 405).
    ///
    /// The layer answers the metadata paths itself only when it sees them, i.e. when it wraps
    /// the whole host. Under a router that strips a prefix (axum's `nest_service("/mcp", …)`)
    /// the well-known path never reaches it: mount this service at
    /// [`metadata_path`](Self::metadata_path) (and, if the host serves one resource, at
    /// [`PROTECTED_RESOURCE_WELL_KNOWN`](crate::protocol::PROTECTED_RESOURCE_WELL_KNOWN)):
    ///
    /// ```ignore
    /// let app = axum::Router::new()
    ///     .route_service(auth.metadata_path(), auth.metadata_service())
    ///     .nest_service("/mcp", auth.layer(handler));
    /// ```
    pub fn metadata_service(&self) -> MetadataService {
        MetadataService {
            config: self.config.clone(),
        }
    }
}

/// The Protected Resource Metadata of an [`AuthLayer`] as a tower service: see
/// [`AuthLayer::metadata_service`].
#[derive(Clone)]
pub struct MetadataService {
    config: Arc<Config>,
}

impl std::fmt::Debug for MetadataService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataService")
            .field("metadata_url", &self.config.metadata_url)
            .finish_non_exhaustive()
    }
}

impl<B> tower_service::Service<Request<B>> for MetadataService {
    type Response = Response<ResponseBody>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Response<ResponseBody>, std::convert::Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        std::future::ready(Ok(self.config.metadata_response(req.method())))
    }
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService {
            inner,
            config: self.config.clone(),
        }
    }
}

/// The service [`AuthLayer`] wraps around another.
#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for AuthService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// What the layer decided about a request.
enum Gate {
    /// Pass it on (with the principal inserted, when authenticated with this scheme).
    Pass(Option<Scheme>),
    /// Answer it here.
    Answer(Response<ResponseBody>),
    /// Verify its token first (the one step that waits).
    Verify(Scheme, String),
}

impl Config {
    /// Steps 1 to 4 up to the token: what can be decided without waiting.
    fn gate<B>(&self, req: &mut Request<B>) -> Gate {
        let path = req.uri().path();
        if self.metadata_paths.iter().any(|p| p == path) {
            return Gate::Answer(self.metadata_response(req.method()));
        }
        // Other metadata documents are not here: a plain 404 (discovery takes nothing else
        // as "not here"), not a challenge for a token no client has yet.
        if let Some(not_found) = well_known_not_found(path) {
            return Gate::Answer(not_found);
        }
        if let Err(refusal) = self.security.admit(req) {
            return Gate::Answer(*refusal);
        }
        if req.method() == Method::OPTIONS {
            return Gate::Pass(None);
        }
        let dpop_on = self.dpop.mode != DpopMode::Off;
        let (scheme, token) = match credentials(req, dpop_on) {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Gate::Answer(self.challenge(StatusCode::UNAUTHORIZED, None, None, None));
            }
            Err(description) => {
                return Gate::Answer(self.challenge(
                    StatusCode::BAD_REQUEST,
                    Some("invalid_request"),
                    Some(description),
                    None,
                ));
            }
        };
        if scheme == Scheme::Bearer && self.dpop.mode == DpopMode::Required {
            return Gate::Answer(
                self.refuse_token(scheme, "This server accepts only DPoP-bound access tokens"),
            );
        }
        Gate::Verify(scheme, token)
    }

    /// The URL a DPoP proof must name (`htu`) for a request whose path, as this layer sees
    /// it, is `path`. A request at or under the resource's path: the resource's origin and
    /// `path` (the layer sees the whole path). Any other path is one a router stripped of its
    /// prefix (axum's `nest_service`): the layer cannot know the prefix, so the proof names
    /// the configured resource identifier, which is the URL clients send MCP requests to.
    fn htu(&self, path: &str) -> String {
        let resource = self.resource_path.trim_end_matches('/');
        let under = path
            .strip_prefix(resource)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if under {
            format!("{}{path}", self.origin)
        } else {
            format!("{}{}", self.origin, self.resource_path)
        }
    }

    /// 401 `invalid_token`.
    fn refuse_token(&self, scheme: Scheme, description: &'static str) -> Response<ResponseBody> {
        self.challenge(
            StatusCode::UNAUTHORIZED,
            Some("invalid_token"),
            Some(description),
            Some(scheme),
        )
    }

    /// Steps 4 to 6 for a request with a token: verified, its binding and its scopes
    /// checked, the principal inserted; `Err` is the layer's answer.
    async fn verify<B>(
        &self,
        req: &mut Request<B>,
        scheme: Scheme,
        token: String,
    ) -> Result<Scheme, Response<ResponseBody>> {
        let address = self
            .security
            .client_addresses()
            .key_of_request(req.headers(), req.extensions().get::<ConnectionInfo>());
        let known_valid = || self.verifier.is_known_valid(&token);
        match self.failures.before(address, &token, known_valid) {
            Precheck::Verify => {}
            Precheck::Known(reason) => return Err(self.refuse_token(scheme, reason.description())),
            Precheck::Limited { retry_after_secs } => {
                return Err(too_many_auth_failures(req.method(), retry_after_secs));
            }
        }
        let principal = match self.verifier.verify(&token).await {
            Ok(p) => p,
            Err(VerifyError::Invalid(reason)) => {
                tracing::debug!(reason = reason.description(), "access token refused");
                self.failures.failed(address, &token, reason);
                return Err(self.refuse_token(scheme, reason.description()));
            }
            Err(VerifyError::Unavailable) => return Err(unavailable()),
        };
        // RFC 9449 §7.1: a bound token is only good with its proof, and the DPoP scheme only
        // with a bound token. A token without `cnf` sent as Bearer goes straight on.
        match (scheme, principal.dpop_jkt.as_deref()) {
            (Scheme::Bearer, None) => {}
            (Scheme::Bearer, Some(_)) => {
                return Err(self.refuse_token(
                    scheme,
                    "The access token is DPoP-bound: send it with the DPoP scheme and a proof",
                ));
            }
            (Scheme::Dpop, None) => {
                return Err(self.refuse_token(scheme, "The access token is not DPoP-bound"));
            }
            (Scheme::Dpop, Some(jkt)) => {
                let url = self.htu(req.uri().path());
                let checked = self
                    .dpop
                    .check(req.headers(), req.method().as_str(), &url, &token, jkt)
                    .await;
                if let Err(refusal) = checked {
                    return Err(self.proof_refused(refusal));
                }
            }
        }
        if !self.required_scopes.iter().all(|s| principal.has_scope(s)) {
            return Err(self.challenge(
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                Some("The access token lacks a required scope"),
                Some(scheme),
            ));
        }
        let extensions = req.extensions_mut();
        if let Some(rules) = &self.rules {
            extensions.insert(rules.clone());
        }
        extensions.insert(principal.caller());
        extensions.insert::<Principal>(principal);
        Ok(scheme)
    }

    /// 401 for a refused proof (`invalid_dpop_proof`, or `use_dpop_nonce` with a fresh
    /// `DPoP-Nonce`), 503 when the replay cache cannot answer.
    fn proof_refused(&self, refusal: ProofRefusal) -> Response<ResponseBody> {
        match refusal {
            ProofRefusal::Invalid(description) => self.challenge(
                StatusCode::UNAUTHORIZED,
                Some("invalid_dpop_proof"),
                Some(description),
                Some(Scheme::Dpop),
            ),
            ProofRefusal::UseNonce => {
                let mut r = self.challenge(
                    StatusCode::UNAUTHORIZED,
                    Some("use_dpop_nonce"),
                    Some("The DPoP proof must carry the server's nonce"),
                    Some(Scheme::Dpop),
                );
                self.add_nonce(r.headers_mut());
                r
            }
            ProofRefusal::Unavailable => unavailable(),
        }
    }

    /// The current `DPoP-Nonce`, when nonces are on.
    fn add_nonce(&self, headers: &mut http::HeaderMap) {
        if let Some(n) = &self.dpop.nonces
            && let Ok(v) = HeaderValue::from_str(&n.current())
        {
            headers.insert(DPOP_NONCE, v);
        }
    }

    fn metadata_response(&self, method: &Method) -> Response<ResponseBody> {
        let mut r = match *method {
            Method::GET => Response::new(ResponseBody::full(self.metadata_json.clone())),
            Method::HEAD | Method::OPTIONS => Response::new(ResponseBody::empty()),
            _ => {
                let mut r = Response::new(ResponseBody::empty());
                *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
                r.headers_mut().insert(
                    header::ALLOW,
                    HeaderValue::from_static("GET, HEAD, OPTIONS"),
                );
                return r;
            }
        };
        if *method == Method::OPTIONS {
            *r.status_mut() = StatusCode::NO_CONTENT;
        }
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        // Public, credential-free metadata: browser-based clients may read it from anywhere.
        h.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=3600"),
        );
        r
    }

    /// The layer's own refusal: an OAuth error body and the challenges. `used` is the scheme
    /// the request authenticated with (none: no credentials); the error goes into that
    /// scheme's challenge. Bearer is offered unless DPoP is required (or the request used
    /// DPoP); DPoP, with its `algs`, unless it is off.
    fn challenge(
        &self,
        status: StatusCode,
        error: Option<&'static str>,
        description: Option<&'static str>,
        used: Option<Scheme>,
    ) -> Response<ResponseBody> {
        let scope = (!self.required_scopes.is_empty()).then(|| self.required_scopes.join(" "));
        let mut r = oauth_error(
            status,
            error.unwrap_or("unauthorized"),
            description.unwrap_or("An access token is required"),
        );
        self.write_challenges(r.headers_mut(), scope, error, description, used);
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    }

    /// Writes the `WWW-Authenticate` challenges (see [`Config::challenge`]).
    fn write_challenges(
        &self,
        h: &mut http::HeaderMap,
        scope: Option<String>,
        error: Option<&'static str>,
        description: Option<&'static str>,
        used: Option<Scheme>,
    ) {
        let bearer = self.dpop.mode != DpopMode::Required && used != Some(Scheme::Dpop);
        let dpop = self.dpop.mode != DpopMode::Off;
        let full = Challenge {
            resource_metadata: Some(self.metadata_url.clone()),
            scope,
            error,
            error_description: description,
        };
        let bare = Challenge {
            error: None,
            error_description: None,
            ..full.clone()
        };
        h.remove(header::WWW_AUTHENTICATE);
        let mut values = Vec::new();
        if bearer {
            let c = if used == Some(Scheme::Dpop) {
                &bare
            } else {
                &full
            };
            values.push(c.to_header_value());
        }
        if dpop {
            let c = if used == Some(Scheme::Dpop) || !bearer {
                &full
            } else {
                &bare
            };
            values.push(c.to_dpop_header_value(&self.dpop_algs));
        }
        for v in values {
            if let Ok(v) = HeaderValue::from_str(&v) {
                h.append(header::WWW_AUTHENTICATE, v);
            }
        }
    }
}

impl Config {
    /// The core refused a call for a missing scope (403): its challenge gets this layer's
    /// `resource_metadata`, and names the scopes every request needs besides the call's.
    fn step_up<B>(&self, resp: &mut Response<B>, used: Option<Scheme>) {
        let Some(refusal) = resp.extensions().get::<InsufficientScope>() else {
            return;
        };
        let mut scopes = self.required_scopes.clone();
        for s in &refusal.scopes {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        self.write_challenges(
            resp.headers_mut(),
            Some(scopes.join(" ")),
            Some("insufficient_scope"),
            Some("The access token lacks a scope this request needs"),
            used,
        );
    }
}

/// Reads and drops what a refused request's body has (up to 64 KiB, for at most 2 s) before
/// the refusal goes out. Unread bytes left in the socket when the connection closes make
/// the kernel reset it, and the client may then lose the refusal itself (seen in Chromium:
/// `Failed to fetch` instead of the 401).
async fn discard_body<B>(body: B)
where
    B: http_body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use http_body_util::BodyExt as _;
    let limited = http_body_util::Limited::new(body, 64 * 1024);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), limited.collect()).await;
}

impl<S, ReqB, ResB> tower_service::Service<Request<ReqB>> for AuthService<S>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>> + Clone,
    ReqB: http_body::Body + Send + 'static,
    ReqB::Data: Send,
    ReqB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<AuthBody<ResB>>;
    type Error = S::Error;
    type Future = AuthFuture<S, ReqB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ReqB>) -> Self::Future {
        // The clone that was made ready is the one that serves this request.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let config = self.config.clone();
        let state = match config.gate(&mut req) {
            Gate::Pass(used) => AuthState::Calling {
                future: inner.call(req),
                used,
            },
            Gate::Answer(answer) => AuthState::answering(&config, req, answer),
            Gate::Verify(scheme, token) => {
                let config = config.clone();
                AuthState::Verifying {
                    verdict: Box::pin(async move {
                        let verified = config.verify(&mut req, scheme, token).await;
                        (req, verified)
                    }),
                }
            }
        };
        AuthFuture {
            state,
            inner,
            config,
        }
    }
}

/// A token being verified (boxed: verifiers are trait objects whose futures are boxed
/// anyway), and the request it decides.
type Verdict<B> =
    Pin<Box<dyn Future<Output = (Request<B>, Result<Scheme, Response<ResponseBody>>)> + Send>>;

/// The layer's own answer being sent, once what the request's body has is read and dropped
/// (boxed: the rare path).
type Answering = Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send>>;

pin_project_lite::pin_project! {
    /// The future of an [`AuthService`] call: the layer's own answer, or the inner service's
    /// (polled here, not boxed again) once the request passed.
    pub struct AuthFuture<S, ReqB>
    where
        S: tower_service::Service<Request<ReqB>>,
    {
        #[pin]
        state: AuthState<S::Future, ReqB>,
        inner: S,
        config: Arc<Config>,
    }
}

pin_project_lite::pin_project! {
    #[project = AuthStateProj]
    enum AuthState<F, ReqB> {
        // The token is being verified.
        Verifying { verdict: Verdict<ReqB> },
        // The request passed: the inner service answers.
        Calling { #[pin] future: F, used: Option<Scheme> },
        // The layer answers.
        Answering { answer: Answering },
    }
}

impl<F, ReqB> AuthState<F, ReqB>
where
    ReqB: http_body::Body + Send + 'static,
    ReqB::Data: Send,
    ReqB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// The layer's own answer (with CORS headers for a trusted origin), sent once the
    /// request's body is drained (see [`discard_body`]).
    fn answering(config: &Config, req: Request<ReqB>, mut answer: Response<ResponseBody>) -> Self {
        config
            .security
            .decorate(req.headers(), answer.headers_mut());
        AuthState::Answering {
            answer: Box::pin(async move {
                discard_body(req.into_body()).await;
                answer
            }),
        }
    }
}

impl<S, ReqB, ResB> Future for AuthFuture<S, ReqB>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>>,
    ReqB: http_body::Body + Send + 'static,
    ReqB::Data: Send,
    ReqB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Output = Result<Response<AuthBody<ResB>>, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let mut this = self.as_mut().project();
            let next = match this.state.as_mut().project() {
                AuthStateProj::Verifying { verdict } => match ready!(verdict.as_mut().poll(cx)) {
                    (req, Ok(scheme)) => AuthState::Calling {
                        future: this.inner.call(req),
                        used: Some(scheme),
                    },
                    (req, Err(answer)) => AuthState::answering(this.config, req, answer),
                },
                AuthStateProj::Calling { future, used } => {
                    let resp = ready!(future.poll(cx));
                    let config = this.config;
                    return Poll::Ready(resp.map(|mut r| {
                        config.step_up(&mut r, *used);
                        if *used == Some(Scheme::Dpop) {
                            config.add_nonce(r.headers_mut());
                        }
                        r.map(Either::Left)
                    }));
                }
                AuthStateProj::Answering { answer } => {
                    return answer.as_mut().poll(cx).map(|r| Ok(r.map(Either::Right)));
                }
            };
            this.state.set(next);
        }
    }
}
