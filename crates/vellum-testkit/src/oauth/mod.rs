//! [`TestAuthServer`]: a real OAuth 2.1 authorization server on `127.0.0.1:0`, strict where
//! MCP clients can go wrong, for the OAuth client's tests and the CLI's end-to-end login.
//!
//! It serves RFC 8414 (or OpenID) metadata, `/authorize` (approves at once with a 302, as a
//! logged-in user who consents would: a test's "browser" is an HTTP GET), `/token`
//! (authorization code with PKCE S256, refresh with rotation, client credentials, JWT
//! bearer, token exchange for ID-JAGs), `/register` (RFC 7591), `/revoke`, `/introspect` and
//! `/jwks`. Access tokens are ES256 JWTs for the requested `resource`, so `vellum serve
//! --auth-jwks` or `--auth-introspection-url` can check them; DPoP proofs are verified and
//! bind tokens (`cnf.jkt`), with server nonces on demand.
//!
//! Every request is recorded ([`TestAuthServer::requests`]) with its form or query, so a
//! test can say what the client sent. What a real server would refuse, it refuses: a
//! missing `resource`, a PKCE verifier that does not match, a reused code, a redirect URI
//! that was not registered, the wrong client authentication.

mod browser;
mod endpoints;
mod grants;
mod resource;

pub use browser::{ScriptedBrowser, send_authorized, start_pair, tools_list, unix_now};
pub use resource::{PrmAt, RsOptions, SeenRsRequest, TestResourceServer};

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use tokio::sync::oneshot;
use vellum::jose::{Jwk, SigningKey};

/// Which well-known document the server publishes its metadata as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetadataForm {
    /// `/.well-known/oauth-authorization-server[/prefix]` (RFC 8414).
    #[default]
    OAuth,
    /// `/.well-known/openid-configuration[/prefix]`.
    OpenId,
    /// `[/prefix]/.well-known/openid-configuration` (OpenID, path appended).
    OpenIdAppended,
    /// None at all (a 2025-03-26 server relying on default endpoints).
    None,
}

/// What the server puts in `iss` of its authorization responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IssInResponse {
    /// Its issuer.
    #[default]
    Correct,
    /// Nothing.
    Omit,
    /// Another issuer.
    Wrong,
}

/// How the server behaves. `Default` is a well-behaved server: metadata at the RFC 8414
/// location, dynamic registration, public and confidential clients, refresh tokens.
#[derive(Debug, Clone)]
pub struct AsOptions {
    /// The issuer's path (`/tenant1`), or empty.
    pub prefix: String,
    /// Where the metadata is.
    pub metadata: MetadataForm,
    /// Put this in the metadata's `issuer` instead of the real one.
    pub issuer_override: Option<String>,
    /// `iss` in authorization responses.
    pub iss: IssInResponse,
    /// Advertise `authorization_response_iss_parameter_supported`.
    pub advertise_iss: bool,
    /// Offer dynamic registration.
    pub dynamic_registration: bool,
    /// Accept HTTPS URLs as client ids (Client ID Metadata Documents).
    pub cimd: bool,
    /// `token_endpoint_auth_methods_supported`.
    pub auth_methods: Vec<String>,
    /// `scopes_supported` (omitted when empty).
    pub scopes_supported: Vec<String>,
    /// `grant_types_supported`.
    pub grant_types: Vec<String>,
    /// Advertise `code_challenge_methods_supported: [S256]`.
    pub advertise_pkce: bool,
    /// How long access tokens live, in seconds.
    pub access_token_ttl: u64,
    /// Issue refresh tokens (rotated at each use).
    pub refresh_tokens: bool,
    /// Advertise ES256 DPoP proofs and bind tokens to them.
    pub dpop: bool,
    /// Require this DPoP nonce at the token endpoint (`use_dpop_nonce` without it).
    pub dpop_nonce: Option<String>,
    /// The `sub` of issued tokens.
    pub subject: String,
    /// Refuse every authorization request with `access_denied`.
    pub deny: bool,
    /// Grant at most these scopes (others asked for are silently left out); `None`: what
    /// is asked for.
    pub grant_only: Option<Vec<String>>,
    /// As an identity provider: the `client_id` its ID-JAGs name (the client's id at the
    /// authorization server they are for). Default: the id of the client asking.
    pub id_jag_client_id: Option<String>,
}

impl Default for AsOptions {
    fn default() -> Self {
        AsOptions {
            prefix: String::new(),
            metadata: MetadataForm::OAuth,
            issuer_override: None,
            iss: IssInResponse::Correct,
            advertise_iss: true,
            dynamic_registration: true,
            cimd: false,
            auth_methods: [
                "none",
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt",
            ]
            .map(str::to_owned)
            .to_vec(),
            scopes_supported: Vec::new(),
            grant_types: [
                "authorization_code",
                "refresh_token",
                "client_credentials",
                "urn:ietf:params:oauth:grant-type:jwt-bearer",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ]
            .map(str::to_owned)
            .to_vec(),
            advertise_pkce: true,
            access_token_ttl: 3600,
            refresh_tokens: true,
            dpop: false,
            dpop_nonce: None,
            subject: "user-1".into(),
            deny: false,
            id_jag_client_id: None,
            grant_only: None,
        }
    }
}

/// A client the server knows.
#[derive(Debug, Clone)]
pub struct TestClient {
    /// The client id.
    pub id: String,
    /// Its secret (confidential clients).
    pub secret: Option<String>,
    /// Its token endpoint authentication method.
    pub method: String,
    /// Its redirect URIs (loopback ones match any port, RFC 8252 §7.3).
    pub redirect_uris: Vec<String>,
    /// Its public key, for `private_key_jwt`.
    pub jwk: Option<Jwk>,
}

impl TestClient {
    /// A confidential client authenticating with HTTP Basic.
    pub fn basic(id: &str, secret: &str) -> Self {
        TestClient {
            id: id.into(),
            secret: Some(secret.into()),
            method: "client_secret_basic".into(),
            redirect_uris: vec!["http://127.0.0.1/callback".into()],
            jwk: None,
        }
    }

    /// A public client.
    pub fn public(id: &str) -> Self {
        TestClient {
            id: id.into(),
            secret: None,
            method: "none".into(),
            redirect_uris: vec!["http://127.0.0.1/callback".into()],
            jwk: None,
        }
    }

    /// A client authenticating with a JWT signed by the key whose public half is `jwk`.
    pub fn private_key_jwt(id: &str, jwk: Jwk) -> Self {
        TestClient {
            id: id.into(),
            secret: None,
            method: "private_key_jwt".into(),
            redirect_uris: Vec::new(),
            jwk: Some(jwk),
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct SeenAsRequest {
    /// The method.
    pub method: String,
    /// The path (without the query).
    pub path: String,
    /// The query's or the form body's parameters.
    pub params: Vec<(String, String)>,
    /// The headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The status answered.
    pub status: u16,
}

impl SeenAsRequest {
    /// A parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: Option<String>,
    resource: String,
}

struct Refresh {
    client_id: String,
    scope: Option<String>,
    resource: String,
    jkt: Option<String>,
}

pub(crate) struct Issued {
    active: bool,
    client_id: Option<String>,
    scope: Option<String>,
    resource: String,
    exp: u64,
}

#[derive(Default)]
pub(crate) struct Books {
    clients: HashMap<String, TestClient>,
    codes: HashMap<String, Code>,
    refresh: HashMap<String, Refresh>,
    access: HashMap<String, Issued>,
    trusted: Vec<(String, Jwk)>,
    log: Vec<SeenAsRequest>,
    next: u64,
}

pub(crate) struct Shared {
    opts: AsOptions,
    base: String,
    issuer: String,
    key: SigningKey,
    books: Mutex<Books>,
}

impl Shared {
    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `<base><prefix><path>`.
    fn endpoint(&self, path: &str) -> String {
        format!("{}{}{path}", self.base, self.opts.prefix)
    }

    fn fresh_id(&self, kind: &str) -> String {
        let mut b = self.books();
        b.next += 1;
        format!(
            "{kind}-{}-{}",
            b.next,
            vellum::jose::sha256_b64url(format!("{}{}", b.next, self.base).as_bytes())
                .get(..10)
                .unwrap_or("")
        )
    }
}

/// The authorization server, served until dropped.
pub struct TestAuthServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its issuer identifier (`url` + prefix).
    pub issuer: String,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
}

impl TestAuthServer {
    /// Starts a server with `opts`.
    pub async fn start(opts: AsOptions) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let base = format!("http://{addr}");
        let issuer = format!("{base}{}", opts.prefix);
        let key = SigningKey::generate_es256()
            .expect("an ES256 key")
            .with_key_id("test-as-key");
        let shared = Arc::new(Shared {
            opts,
            base: base.clone(),
            issuer: issuer.clone(),
            key,
            books: Mutex::new(Books::default()),
        });
        let served = shared.clone();
        let stop = serve(listener, move |req| {
            let shared = served.clone();
            async move { handle(&shared, req).await }
        });
        TestAuthServer {
            addr,
            url: base,
            issuer,
            shared,
            stop: Some(stop),
        }
    }

    /// The JWKS URL (`--auth-jwks`).
    pub fn jwks_url(&self) -> String {
        self.shared.endpoint("/jwks")
    }

    /// The introspection URL (`--auth-introspection-url`).
    pub fn introspection_url(&self) -> String {
        self.shared.endpoint("/introspect")
    }

    /// The token endpoint.
    pub fn token_url(&self) -> String {
        self.shared.endpoint("/token")
    }

    /// Registers a client beforehand.
    pub fn add_client(&self, client: TestClient) {
        self.shared
            .books()
            .clients
            .insert(client.id.clone(), client);
    }

    /// Trusts JWTs (JWT bearer assertions, ID tokens, ID-JAGs) from `issuer` signed by `jwk`.
    pub fn trust(&self, issuer: &str, jwk: Jwk) {
        self.shared.books().trusted.push((issuer.into(), jwk));
    }

    /// The public key its tokens are signed with.
    pub fn public_jwk(&self) -> Jwk {
        self.shared.key.public_jwk().clone()
    }

    /// Signs `claims` with its key (to make ID tokens or assertions in tests).
    pub fn sign(&self, claims: &serde_json::Value) -> String {
        self.shared
            .key
            .sign(
                jsonwebtoken::Header::new(self.shared.key.algorithm()),
                claims,
            )
            .expect("signing")
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<SeenAsRequest> {
        self.shared.books().log.clone()
    }

    /// The requests to `path` (after the prefix: `/token`, `/authorize`, …).
    pub fn requests_to(&self, path: &str) -> Vec<SeenAsRequest> {
        let full = format!("{}{path}", self.shared.opts.prefix);
        self.requests()
            .into_iter()
            .filter(|r| r.path == full)
            .collect()
    }

    /// The token requests of `grant_type`.
    pub fn token_requests(&self, grant_type: &str) -> Vec<SeenAsRequest> {
        self.requests_to("/token")
            .into_iter()
            .filter(|r| r.param("grant_type") == Some(grant_type))
            .collect()
    }

    /// Makes every access token issued so far inactive (introspection says so), as if they
    /// had expired.
    pub fn expire_access_tokens(&self) {
        for issued in self.shared.books().access.values_mut() {
            issued.active = false;
        }
    }

    /// Revokes every refresh token issued so far.
    pub fn revoke_refresh_tokens(&self) {
        self.shared.books().refresh.clear();
    }

    /// The clients registered (beforehand or dynamically).
    pub fn clients(&self) -> Vec<TestClient> {
        self.shared.books().clients.values().cloned().collect()
    }
}

impl Drop for TestAuthServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub(crate) type Reply = http::Response<Full<Bytes>>;

/// Serves HTTP/1.1 on `listener` with `handler` until the returned sender is dropped or
/// fired.
pub(crate) fn serve<F, Fut>(listener: tokio::net::TcpListener, handler: F) -> oneshot::Sender<()>
where
    F: Fn(http::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Reply> + Send + 'static,
{
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = &mut stopped => return,
            };
            let Ok((stream, _)) = accepted else { continue };
            let handler = handler.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let reply = handler(req);
                    async move { Ok::<_, Infallible>(reply.await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    stop
}

pub(crate) fn json_reply(status: u16, body: &serde_json::Value) -> Reply {
    let mut r = http::Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    r
}

pub(crate) fn oauth_error(status: u16, error: &str, description: &str) -> Reply {
    json_reply(
        status,
        &serde_json::json!({"error": error, "error_description": description}),
    )
}

/// A parsed request: what the endpoints see.
pub(crate) struct Req {
    pub(crate) method: http::Method,
    pub(crate) path: String,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) headers: http::HeaderMap,
    pub(crate) json: Option<serde_json::Value>,
}

impl Req {
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub(crate) fn form_pairs(s: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(&format!("http://x/?{s}"))
        .map(|u| {
            u.query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

async fn handle(shared: &Shared, req: http::Request<hyper::body::Incoming>) -> Reply {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let is_json = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let mut params = form_pairs(parts.uri.query().unwrap_or_default());
    let json = if is_json {
        serde_json::from_slice(&bytes).ok()
    } else {
        None
    };
    if !is_json && !text.is_empty() {
        params.extend(form_pairs(&text));
    }
    let r = Req {
        method: parts.method.clone(),
        path: parts.uri.path().to_owned(),
        params,
        headers: parts.headers.clone(),
        json,
    };
    let reply = endpoints::route(shared, &r).await;
    let seen = SeenAsRequest {
        method: r.method.to_string(),
        path: r.path.clone(),
        params: match &r.json {
            // JSON bodies (registration): strings as they are, anything else as JSON text.
            Some(serde_json::Value::Object(o)) => o
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect(),
            _ => r.params.clone(),
        },
        headers: r
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        status: reply.status().as_u16(),
    };
    shared.books().log.push(seen);
    reply
}
