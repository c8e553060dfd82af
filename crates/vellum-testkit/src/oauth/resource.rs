//! [`TestResourceServer`]: a protected resource with every discovery and challenge variant
//! MCP clients meet, for OAuth tests that need no MCP: it answers each authorized JSON-RPC
//! request with `{"ok": true, "method": …}`.
//!
//! Its protected-resource metadata can sit at the path-inserted or root well-known URL, at
//! a custom URL, or nowhere; the 401 names it or not, with a `scope` or not; methods can
//! need scopes (403 `insufficient_scope` for step-up); tokens are ES256 JWTs of the
//! authorization servers it trusts, for its resource, optionally DPoP-bound (then proofs
//! are checked, with a server nonce on demand). [`TestResourceServer::switch_to`] moves it
//! to another authorization server.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use http_body_util::BodyExt as _;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use vellum::jose::{DpopCheck, Jwk, verify_dpop_proof};

use super::endpoints::vellum_now;
use super::{Reply, TestAuthServer, json_reply};

/// Where the protected-resource metadata is served.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PrmAt {
    /// `/.well-known/oauth-protected-resource/mcp`.
    #[default]
    PathInserted,
    /// `/.well-known/oauth-protected-resource` (the resource is then the origin).
    Root,
    /// At this path.
    Custom(String),
    /// Nowhere (a 2025-03-26 server).
    None,
}

/// How the resource server behaves.
#[derive(Debug, Clone, Default)]
pub struct RsOptions {
    /// Where its metadata is.
    pub prm: PrmAt,
    /// Leave `resource_metadata` out of the 401.
    pub no_prm_in_challenge: bool,
    /// The `scope` of the 401 challenge.
    pub challenge_scope: Option<String>,
    /// `scopes_supported` in the metadata.
    pub scopes_supported: Vec<String>,
    /// Put this in the metadata's `resource` instead of the real one.
    pub resource_override: Option<String>,
    /// Scopes a JSON-RPC method needs (403 `insufficient_scope` naming only the missing ones).
    pub method_scopes: Vec<(String, Vec<String>)>,
    /// Challenge with the `DPoP` scheme.
    pub dpop: bool,
    /// Require this DPoP nonce (`use_dpop_nonce` without it).
    pub dpop_nonce: Option<String>,
}

/// A request the resource server received.
#[derive(Debug, Clone)]
pub struct SeenRsRequest {
    /// The method and path.
    pub method: String,
    /// The path.
    pub path: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `DPoP` header.
    pub dpop: Option<String>,
    /// The status answered.
    pub status: u16,
}

struct RsState {
    opts: RsOptions,
    base: String,
    trusted: Vec<(String, Jwk)>,
    authorization_servers: Vec<String>,
    /// Token ids seen, and those refused from now on.
    seen: Vec<String>,
    rejected: Vec<String>,
    log: Vec<SeenRsRequest>,
}

/// The resource server, served until dropped.
pub struct TestResourceServer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<RsState>>,
    stop: Option<oneshot::Sender<()>>,
}

impl TestResourceServer {
    /// Serves a resource trusting the tokens of `servers` (the first is named in the
    /// metadata).
    pub async fn start(opts: RsOptions, servers: &[&TestAuthServer]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let base = format!("http://{addr}");
        let state = Arc::new(Mutex::new(RsState {
            opts,
            base: base.clone(),
            trusted: servers
                .iter()
                .map(|s| (s.issuer.clone(), s.public_jwk()))
                .collect(),
            authorization_servers: servers
                .first()
                .map(|s| vec![s.issuer.clone()])
                .unwrap_or_default(),
            seen: Vec::new(),
            rejected: Vec::new(),
            log: Vec::new(),
        }));
        let served = state.clone();
        let stop = super::serve(listener, move |req| {
            let state = served.clone();
            async move { handle(&state, req).await }
        });
        TestResourceServer {
            url: format!("{base}/mcp"),
            base,
            state,
            stop: Some(stop),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RsState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Names `server` as its authorization server from now on, and accepts only its tokens.
    pub fn switch_to(&self, server: &TestAuthServer) {
        let mut s = self.lock();
        s.authorization_servers = vec![server.issuer.clone()];
        s.trusted = vec![(server.issuer.clone(), server.public_jwk())];
    }

    /// Refuses every token presented so far (as if they had expired or been revoked).
    pub fn reject_tokens_seen(&self) {
        let mut s = self.lock();
        let seen = s.seen.clone();
        s.rejected.extend(seen);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<SeenRsRequest> {
        self.lock().log.clone()
    }
}

impl Drop for TestResourceServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn prm_path(opts: &RsOptions) -> Option<String> {
    match &opts.prm {
        PrmAt::PathInserted => Some("/.well-known/oauth-protected-resource/mcp".into()),
        PrmAt::Root => Some("/.well-known/oauth-protected-resource".into()),
        PrmAt::Custom(p) => Some(p.clone()),
        PrmAt::None => None,
    }
}

async fn handle(state: &Mutex<RsState>, req: http::Request<hyper::body::Incoming>) -> Reply {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let header = |n: &str| {
        parts
            .headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    let reply = answer(
        &mut s,
        &parts.method,
        parts.uri.path(),
        header("authorization"),
        header("dpop"),
        &bytes,
    );
    s.log.push(SeenRsRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        authorization: header("authorization"),
        dpop: header("dpop"),
        status: reply.status().as_u16(),
    });
    reply
}

fn answer(
    s: &mut RsState,
    method: &http::Method,
    path: &str,
    authorization: Option<String>,
    dpop: Option<String>,
    body: &[u8],
) -> Reply {
    let prm = prm_path(&s.opts);
    if method == http::Method::GET && prm.as_deref() == Some(path) {
        let resource = resource_of(s);
        let mut doc =
            json!({"resource": resource, "authorization_servers": s.authorization_servers});
        if !s.opts.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(s.opts.scopes_supported);
        }
        return json_reply(200, &doc);
    }
    if path != "/mcp" || method != http::Method::POST {
        return json_reply(404, &json!({"error": "not found"}));
    }
    let rpc: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let rpc_method = rpc["method"].as_str().unwrap_or_default().to_owned();
    let scheme = if s.opts.dpop { "DPoP" } else { "Bearer" };
    let challenge = |error: Option<&str>, scope: Option<&str>| -> String {
        let mut parts: Vec<String> = Vec::new();
        if let (Some(p), false) = (&prm, s.opts.no_prm_in_challenge) {
            parts.push(format!("resource_metadata=\"{}{p}\"", s.base));
        }
        if let Some(sc) = scope {
            parts.push(format!("scope=\"{sc}\""));
        }
        if let Some(e) = error {
            parts.push(format!("error=\"{e}\""));
        }
        if parts.is_empty() {
            scheme.to_owned()
        } else {
            format!("{scheme} {}", parts.join(", "))
        }
    };
    let refuse = |status: u16, error: Option<&str>, scope: Option<&str>| -> Reply {
        let mut r = json_reply(status, &json!({"error": error.unwrap_or("unauthorized")}));
        if let Ok(v) = http::HeaderValue::from_str(&challenge(error, scope)) {
            r.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
        }
        r
    };
    let Some(authorization) = authorization else {
        return refuse(401, None, s.opts.challenge_scope.as_deref());
    };
    let Some((given_scheme, token)) = authorization.split_once(' ') else {
        return refuse(401, Some("invalid_request"), None);
    };
    let Some(claims) = verify(s, token) else {
        return refuse(
            401,
            Some("invalid_token"),
            s.opts.challenge_scope.as_deref(),
        );
    };
    let jti = claims["jti"].as_str().unwrap_or_default().to_owned();
    if s.rejected.contains(&jti) {
        return refuse(
            401,
            Some("invalid_token"),
            s.opts.challenge_scope.as_deref(),
        );
    }
    s.seen.push(jti);
    let bound = claims["cnf"]["jkt"].as_str();
    if let Some(jkt) = bound {
        if !given_scheme.eq_ignore_ascii_case("dpop") {
            return refuse(401, Some("invalid_token"), None);
        }
        let url = format!("{}/mcp", s.base);
        let mut check = DpopCheck::new("POST", &url).access_token(token, Some(jkt));
        if let Some(n) = &s.opts.dpop_nonce {
            check = check.nonce(n);
        }
        match dpop.as_deref().map(|p| verify_dpop_proof(p, &check)) {
            Some(Ok(_)) => {}
            Some(Err(e)) if e.is_use_nonce() => {
                let mut r = refuse(401, Some("use_dpop_nonce"), None);
                if let Some(v) = s
                    .opts
                    .dpop_nonce
                    .as_deref()
                    .and_then(|n| http::HeaderValue::from_str(n).ok())
                {
                    r.headers_mut().insert("dpop-nonce", v);
                }
                return r;
            }
            _ => return refuse(401, Some("invalid_dpop_proof"), None),
        }
    } else if !given_scheme.eq_ignore_ascii_case("bearer") {
        return refuse(401, Some("invalid_token"), None);
    }
    let granted: Vec<&str> = claims["scope"]
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .collect();
    if let Some((_, needed)) = s.opts.method_scopes.iter().find(|(m, _)| *m == rpc_method) {
        let missing: Vec<&str> = needed
            .iter()
            .map(String::as_str)
            .filter(|n| !granted.contains(n))
            .collect();
        if !missing.is_empty() {
            return refuse(403, Some("insufficient_scope"), Some(&missing.join(" ")));
        }
    }
    json_reply(
        200,
        &json!({"jsonrpc": "2.0", "id": rpc["id"], "result": {"ok": true, "method": rpc_method, "sub": claims["sub"]}}),
    )
}

/// The resource indicator it answers for: the origin when its metadata is at the root.
fn resource_of(s: &RsState) -> String {
    s.opts
        .resource_override
        .clone()
        .unwrap_or_else(|| match s.opts.prm {
            PrmAt::Root => s.base.clone(),
            _ => format!("{}/mcp", s.base),
        })
}

/// The claims of a token of a trusted issuer, for this resource, current.
fn verify(s: &RsState, token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let unverified: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?,
    )
    .ok()?;
    let iss = unverified["iss"].as_str()?;
    let (_, jwk) = s.trusted.iter().find(|(i, _)| i == iss)?;
    let header = jsonwebtoken::decode_header(token).ok()?;
    let mut v = Validation::new(header.alg);
    v.required_spec_claims.clear();
    v.validate_aud = false;
    v.validate_exp = false;
    let claims = jsonwebtoken::decode::<Value>(token, &DecodingKey::from_jwk(jwk).ok()?, &v)
        .ok()?
        .claims;
    let resource = resource_of(s);
    let fresh = claims["exp"].as_u64().is_some_and(|e| e > vellum_now());
    (claims["aud"] == resource.as_str() && fresh).then_some(claims)
}
