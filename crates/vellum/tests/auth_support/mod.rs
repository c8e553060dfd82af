//! What the resource-server tests over real loopback HTTP share (`security_auth.rs` and
//! `security_auth_keys.rs`): signing keys, a stand-in authorization server (JWKS and
//! introspection, which can be taken down), the MCP server under test with its `whoami`
//! tool, and requests with or without a token.

// Each test binary uses its part of these.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};
use vellum::auth::{AuthLayer, JwksCache, JwtVerifier, Principal};
use vellum::prelude::*;
use vellum_testkit::http::{McpHttp, TestHttpServer};

pub(crate) const ISSUER: &str = "http://127.0.0.1:1/issuer";
pub(crate) const AUDIENCE: &str = "vellum-test";

pub(crate) fn http() -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ---- signing keys -----------------------------------------------------------------------

pub(crate) struct Signer {
    pub(crate) kid: String,
    pub(crate) key: EncodingKey,
    pub(crate) jwk: Value,
}

impl Signer {
    pub(crate) fn ed25519(kid: &str, seed: u8) -> Self {
        let seed = [seed; 32];
        let public = ed25519_dalek::SigningKey::from_bytes(&seed)
            .verifying_key()
            .to_bytes();
        // PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410).
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&seed);
        Signer {
            kid: kid.to_owned(),
            key: EncodingKey::from_ed_der(&der),
            jwk: json!({
                "kty": "OKP", "crv": "Ed25519", "use": "sig", "kid": kid,
                "x": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public),
            }),
        }
    }

    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

pub(crate) fn claims(sub: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER, "sub": sub, "aud": AUDIENCE, "exp": now() + 600,
        "iat": now(), "scope": scope, "client_id": "test-client",
    })
}

// ---- the authorization server stand-in (JWKS + introspection) ---------------------------

#[derive(Default)]
pub(crate) struct AuthServer {
    pub(crate) jwks: Mutex<Value>,
    pub(crate) jwks_fetches: AtomicUsize,
    pub(crate) down: AtomicBool,
    /// token → introspection response
    pub(crate) introspection: Mutex<HashMap<String, Value>>,
    pub(crate) introspections: AtomicUsize,
}

pub(crate) async fn start_auth_server(state: Arc<AuthServer>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let state = state.clone();
            let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let state = state.clone();
                async move {
                    let path = req.uri().path().to_owned();
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let (status, value) = if state.down.load(Ordering::SeqCst) {
                        (500, json!({}))
                    } else if path == "/jwks" {
                        state.jwks_fetches.fetch_add(1, Ordering::SeqCst);
                        (200, state.jwks.lock().unwrap().clone())
                    } else if path == "/introspect" {
                        state.introspections.fetch_add(1, Ordering::SeqCst);
                        let form = String::from_utf8(body.to_vec()).unwrap();
                        let token = form
                            .split('&')
                            .find_map(|kv| kv.strip_prefix("token="))
                            .unwrap_or("")
                            .to_owned();
                        let map = state.introspection.lock().unwrap();
                        (
                            200,
                            map.get(&token).cloned().unwrap_or(json!({"active": false})),
                        )
                    } else {
                        (404, json!({}))
                    };
                    let mut resp = http::Response::new(Full::new(Bytes::from(value.to_string())));
                    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap();
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

// ---- the MCP server under test ---------------------------------------------------------

pub(crate) fn mcp_server() -> Server {
    let server = Server::new(
        Implementation::new("auth-test", "1.0"),
        ServerOptions::default(),
    );
    server
        .add_raw_tool(
            Tool::new("whoami", "The caller"),
            |ctx: RequestContext, _req: CallToolRequest| async move {
                let p = ctx.extension::<Principal>().cloned();
                let text = match p {
                    Some(p) => format!("{}|{}|{}", p.issuer, p.subject, p.scopes.join(",")),
                    None => "anonymous".to_owned(),
                };
                Ok::<_, HandlerError>(CallToolResult::text(text))
            },
        )
        .unwrap();
    server
        .add_raw_tool(
            Tool::new(
                "tenant",
                "The caller's tenant and roles, from the token's own claims",
            ),
            |ctx: RequestContext, _req: CallToolRequest| async move {
                let p = ctx.extension::<Principal>().cloned();
                let text = match p {
                    Some(p) => format!(
                        "{}|{}",
                        p.claim::<String>("tenant").unwrap_or_default(),
                        p.claim::<Vec<String>>("roles")
                            .unwrap_or_default()
                            .join(",")
                    ),
                    None => "anonymous".to_owned(),
                };
                Ok::<_, HandlerError>(CallToolResult::text(text))
            },
        )
        .unwrap();
    server
}

pub(crate) async fn start_mcp(layer: impl FnOnce(String) -> AuthLayer) -> TestHttpServer {
    let options = StreamableHttpOptions::default().json_response(true);
    let handler = StreamableHttpHandler::for_server(mcp_server(), options);
    TestHttpServer::start_with_layer(handler, |url| layer(url.to_owned())).await
}

pub(crate) fn jwt_layer(resource: String, jwks: Arc<JwksCache>, scope: Option<&str>) -> AuthLayer {
    let verifier = JwtVerifier::new(jwks, ISSUER, AUDIENCE).unwrap();
    let mut b = AuthLayer::builder(resource, verifier).authorization_server(ISSUER);
    if let Some(s) = scope {
        b = b.require_scope(s);
    }
    b.build().unwrap()
}

pub(crate) const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
pub(crate) const WHOAMI: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;

pub(crate) async fn post(
    c: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &'static str,
) -> reqwest::Response {
    let mut m = McpHttp::with_client(url, c.clone());
    m.session = session.map(str::to_owned);
    m.protocol_version = session.map(|_| "2025-11-25".to_owned());
    let mut r = m.builder(Method::POST).body(body);
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    r.send().await.unwrap()
}

/// initialize + initialized; returns the session id.
pub(crate) async fn open_session(c: &reqwest::Client, url: &str, token: &str) -> String {
    let r = post(c, url, Some(token), None, INIT).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let r = post(
        c,
        url,
        Some(token),
        Some(&sid),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(r.status(), 202);
    sid
}

pub(crate) async fn whoami(c: &reqwest::Client, url: &str, token: &str, sid: &str) -> (u16, Value) {
    let r = post(c, url, Some(token), Some(sid), WHOAMI).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub(crate) fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate challenge")
        .to_str()
        .unwrap()
        .to_owned()
}

pub(crate) async fn jwks_setup(signers: &[&Signer]) -> (Arc<AuthServer>, String) {
    let state = Arc::new(AuthServer::default());
    *state.jwks.lock().unwrap() =
        json!({"keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>()});
    let addr = start_auth_server(state.clone()).await;
    (state, format!("http://{addr}/jwks"))
}
