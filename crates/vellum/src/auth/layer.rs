//! [`AuthLayer`]: the MCP server as an OAuth 2.1 resource server, as a tower layer.
//!
//! Order of a request through [`AuthService`]:
//! 1. `GET`/`HEAD` of the metadata paths answer the Protected Resource Metadata (public).
//! 2. The handler's [`SecurityLayer`] (Host and Origin checks, with the handler's settings),
//!    so a hostile page is refused with the same 403 whether or not it sends a token: a 401
//!    never tells a rebinding page more than the 403 would. The request is marked admitted,
//!    so the handler behind does not check it again.
//! 3. `OPTIONS` (CORS preflight, which never carries credentials) passes through.
//! 4. The bearer token: missing → 401 with a challenge; in the query string or twice → 400;
//!    invalid → 401 `invalid_token`; verifier unreachable → 503 with `Retry-After`.
//! 5. Required scopes: missing → 403 `insufficient_scope` naming all of them.
//! 6. The [`Principal`] goes into the request's extensions (for handlers), with the neutral
//!    [`Caller`](crate::server::Caller) the server core binds sessions and state to, and the inner service runs.
//!
//! The body is never read here: 401 and 403 never depend on it.
//!
//! Not here: verifying tokens (`TokenVerifier` and its implementations) and per-tool
//! scopes (a handler checks `principal.has_scope(..)` itself).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::Either;

use super::Principal;
use super::challenge::Challenge;
use super::endpoint::{AuthConfigError, check_scope, check_url};
use super::verifier::{TokenVerifier, VerifyError};
use crate::protocol::{PROTECTED_RESOURCE_WELL_KNOWN, ProtectedResourceMetadata};
use crate::transport::http::{ResponseBody, SecurityLayer, StreamableHttpOptions};

/// The body of an [`AuthService`] response: the inner service's, or the layer's own
/// (metadata, challenges).
pub type AuthBody<B> = Either<B, ResponseBody>;

/// The longest bearer token accepted.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

struct Config {
    verifier: Arc<dyn TokenVerifier>,
    metadata_json: Bytes,
    /// The absolute, path-aware metadata URL named in challenges.
    metadata_url: String,
    /// The path-aware and root metadata paths.
    metadata_paths: [String; 2],
    required_scopes: Vec<String>,
    /// The handler's Host/Origin checks and CORS rule, run before any token is looked at.
    security: SecurityLayer,
}

/// Adds OAuth 2.1 resource-server authorization to a service (usually a
/// [`StreamableHttpHandler`](crate::transport::http::StreamableHttpHandler)).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use vellum::auth::{AuthLayer, JwksCache, JwtVerifier};
/// # fn f() -> Result<(), vellum::auth::AuthConfigError> {
/// let jwks = Arc::new(JwksCache::new("https://as.example.com/jwks.json")?);
/// let verifier = JwtVerifier::new(jwks, "https://as.example.com", "https://mcp.example.com/mcp")?;
/// let layer = AuthLayer::builder("https://mcp.example.com/mcp", verifier)
///     .authorization_server("https://as.example.com")
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AuthLayer {
    config: Arc<Config>,
}

impl std::fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayer")
            .field("metadata_url", &self.config.metadata_url)
            .field("required_scopes", &self.config.required_scopes)
            .finish_non_exhaustive()
    }
}

/// Builds an [`AuthLayer`].
pub struct AuthLayerBuilder {
    resource: String,
    verifier: Arc<dyn TokenVerifier>,
    authorization_servers: Vec<String>,
    required_scopes: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    resource_name: Option<String>,
    security: SecurityLayer,
}

impl std::fmt::Debug for AuthLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayerBuilder")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .finish_non_exhaustive()
    }
}

impl AuthLayer {
    /// Starts a layer for the MCP server at `resource` (its canonical URI, e.g.
    /// `https://mcp.example.com/mcp`, which is also the audience tokens should carry),
    /// checking tokens with `verifier`.
    pub fn builder(resource: impl Into<String>, verifier: impl TokenVerifier) -> AuthLayerBuilder {
        AuthLayerBuilder {
            resource: resource.into(),
            verifier: Arc::new(verifier),
            authorization_servers: Vec::new(),
            required_scopes: Vec::new(),
            scopes_supported: None,
            resource_name: None,
            security: SecurityLayer::new(&StreamableHttpOptions::default()),
        }
    }

    /// The absolute URL of the Protected Resource Metadata (path-aware form).
    pub fn metadata_url(&self) -> &str {
        &self.config.metadata_url
    }
}

impl AuthLayerBuilder {
    /// Names an authorization server (its issuer identifier) in the metadata; at least one
    /// is required.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Requires `scope` on every request (none by default). A token without it gets 403
    /// `insufficient_scope` naming every required scope.
    #[must_use]
    pub fn require_scope(mut self, scope: impl Into<String>) -> Self {
        self.required_scopes.push(scope.into());
        self
    }

    /// The scopes advertised in the metadata (default: the required scopes).
    #[must_use]
    pub fn scopes_supported(mut self, scopes: Vec<String>) -> Self {
        self.scopes_supported = Some(scopes);
        self
    }

    /// A human-readable name for the metadata.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Runs the Host and Origin checks, and answers trusted origins with CORS headers, with
    /// the same settings as the handler behind the layer (by default the layer uses the
    /// handler's defaults: both checks on, no CORS).
    #[must_use]
    pub fn request_checks_of(mut self, options: &StreamableHttpOptions) -> Self {
        self.security = SecurityLayer::new(options);
        self
    }

    /// Builds the layer, checking the configuration.
    pub fn build(self) -> Result<AuthLayer, AuthConfigError> {
        let uri = check_url("resource", &self.resource)?;
        if uri.query().is_some() || self.resource.contains('#') {
            return Err(AuthConfigError::BadResource(self.resource));
        }
        if self.authorization_servers.is_empty() {
            return Err(AuthConfigError::InsecureUrl {
                what: "authorization server (none given)",
                url: String::new(),
            });
        }
        for issuer in &self.authorization_servers {
            check_url("authorization server", issuer)?;
        }
        for s in &self.required_scopes {
            check_scope(s)?;
        }
        let mut scopes_supported = self
            .scopes_supported
            .unwrap_or_else(|| self.required_scopes.clone());
        scopes_supported.retain(|s| s != "offline_access");
        for s in &scopes_supported {
            check_scope(s)?;
        }
        let path_aware = ProtectedResourceMetadata::well_known_path(uri.path());
        let origin = match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
            _ => return Err(AuthConfigError::BadResource(self.resource)),
        };
        let mut metadata =
            ProtectedResourceMetadata::new(self.resource.clone(), self.authorization_servers);
        metadata.scopes_supported = scopes_supported;
        metadata.resource_name = self.resource_name;
        let metadata_json = serde_json::to_vec(&metadata)
            .map_err(|e| AuthConfigError::BadResource(e.to_string()))?;
        Ok(AuthLayer {
            config: Arc::new(Config {
                verifier: self.verifier,
                metadata_json: Bytes::from(metadata_json),
                metadata_url: format!("{origin}{path_aware}"),
                metadata_paths: [path_aware, PROTECTED_RESOURCE_WELL_KNOWN.to_owned()],
                required_scopes: self.required_scopes,
                security: self.security,
            }),
        })
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
    /// Pass it on (with the principal inserted, when authenticated).
    Pass,
    /// Answer it here.
    Answer(Response<ResponseBody>),
}

impl Config {
    /// Adds CORS headers to the layer's own answer when the page's origin is trusted.
    fn decorate<B>(&self, req: &Request<B>, resp: &mut Response<ResponseBody>) {
        self.security.decorate(req.headers(), resp.headers_mut());
    }

    async fn gate<B>(&self, req: &mut Request<B>) -> Gate {
        let path = req.uri().path();
        if self.metadata_paths.iter().any(|p| p == path) {
            return Gate::Answer(self.metadata_response(req.method()));
        }
        if let Err(refusal) = self.security.admit(req) {
            return Gate::Answer(*refusal);
        }
        if req.method() == Method::OPTIONS {
            return Gate::Pass;
        }
        let token = match bearer_token(req) {
            Ok(Some(t)) => t,
            Ok(None) => return Gate::Answer(self.challenge(StatusCode::UNAUTHORIZED, None, None)),
            Err(description) => {
                return Gate::Answer(self.challenge(
                    StatusCode::BAD_REQUEST,
                    Some("invalid_request"),
                    Some(description),
                ));
            }
        };
        let principal = match self.verifier.verify(&token).await {
            Ok(p) => p,
            Err(VerifyError::Invalid(reason)) => {
                tracing::debug!(reason = reason.description(), "bearer token refused");
                return Gate::Answer(self.challenge(
                    StatusCode::UNAUTHORIZED,
                    Some("invalid_token"),
                    Some(reason.description()),
                ));
            }
            Err(VerifyError::Unavailable) => return Gate::Answer(unavailable()),
        };
        if !self.required_scopes.iter().all(|s| principal.has_scope(s)) {
            return Gate::Answer(self.challenge(
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                Some("The access token lacks a required scope"),
            ));
        }
        let extensions = req.extensions_mut();
        extensions.insert(principal.caller());
        extensions.insert::<Principal>(principal);
        Gate::Pass
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

    fn challenge(
        &self,
        status: StatusCode,
        error: Option<&'static str>,
        description: Option<&'static str>,
    ) -> Response<ResponseBody> {
        let scope = (!self.required_scopes.is_empty()).then(|| self.required_scopes.join(" "));
        let challenge = Challenge {
            resource_metadata: Some(self.metadata_url.clone()),
            scope,
            error,
            error_description: description,
        };
        let mut r = oauth_error(
            status,
            error.unwrap_or("unauthorized"),
            description.unwrap_or("An access token is required"),
        );
        let h = r.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&challenge.to_header_value()) {
            h.insert(header::WWW_AUTHENTICATE, v);
        }
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    }
}

fn unavailable() -> Response<ResponseBody> {
    let mut r = oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "The access token cannot be verified right now",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

/// An OAuth-style JSON error body (`error`, `error_description`) with `status`.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response<ResponseBody> {
    let body = serde_json::json!({ "error": error, "error_description": description });
    let mut r = Response::new(ResponseBody::full(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The bearer token of a request: `Ok(None)` without credentials for this scheme,
/// `Err` for a malformed request (token in the query, two Authorization headers, bad syntax).
fn bearer_token<B>(req: &Request<B>) -> Result<Option<String>, &'static str> {
    if req.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv.split('=').next() == Some("access_token"))
    }) {
        return Err("Access tokens are accepted only in the Authorization header");
    }
    let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("More than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return Err("The Authorization header is not ASCII");
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim_matches(' ');
    // RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    let body = token.trim_end_matches('=');
    let valid = !body.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !valid {
        return Err("The bearer token is malformed");
    }
    Ok(Some(token.to_owned()))
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
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqB: http_body::Body + Send + 'static,
    ReqB::Data: Send,
    ReqB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    ResB: Send + 'static,
{
    type Response = Response<AuthBody<ResB>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ReqB>) -> Self::Future {
        // The clone that was made ready is the one that serves this request.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let config = self.config.clone();
        Box::pin(async move {
            match config.gate(&mut req).await {
                Gate::Pass => inner.call(req).await.map(|r| r.map(Either::Left)),
                Gate::Answer(mut r) => {
                    config.decorate(&req, &mut r);
                    discard_body(req.into_body()).await;
                    Ok(r.map(Either::Right))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(auth: &[&str], uri: &str) -> Request<()> {
        let mut b = Request::builder().uri(uri);
        for a in auth {
            b = b.header(header::AUTHORIZATION, *a);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer_token(&req(&[], "/mcp")), Ok(None));
        assert_eq!(
            bearer_token(&req(&["Bearer abc.def-_~+/=="], "/mcp")),
            Ok(Some("abc.def-_~+/==".into()))
        );
        assert_eq!(
            bearer_token(&req(&["bearer abc"], "/mcp")),
            Ok(Some("abc".into()))
        );
        assert_eq!(
            bearer_token(&req(&["Basic dXNlcjpwdw=="], "/mcp")),
            Ok(None)
        );
        assert!(bearer_token(&req(&["Bearer a b"], "/mcp")).is_err());
        assert!(bearer_token(&req(&["Bearer "], "/mcp")).is_err());
        assert!(bearer_token(&req(&["Bearer a", "Bearer b"], "/mcp")).is_err());
        assert!(bearer_token(&req(&[], "/mcp?access_token=abc")).is_err());
        assert_eq!(bearer_token(&req(&[], "/mcp?x=access_token")), Ok(None));
    }
}
