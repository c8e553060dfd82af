//! The OAuth resource-server layer over real loopback HTTP: metadata and challenges, JWTs
//! checked against a JWKS served by the test (rotation, single-flight refresh, outage),
//! introspection with its cache, scopes, the principal reaching tools, and sessions bound
//! to their principal.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};
use vellum::auth::{
    AuthLayer, ClientAuth, IntrospectionVerifier, JwksCache, JwtVerifier, Principal, TokenVerifier,
};
use vellum::prelude::*;
use vellum_testkit::http::{McpHttp, TestHttpServer};

const ISSUER: &str = "http://127.0.0.1:1/issuer";
const AUDIENCE: &str = "vellum-test";

fn http() -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ---- signing keys -----------------------------------------------------------------------

struct Signer {
    kid: String,
    key: EncodingKey,
    jwk: Value,
}

impl Signer {
    fn ed25519(kid: &str, seed: u8) -> Self {
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

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn claims(sub: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER, "sub": sub, "aud": AUDIENCE, "exp": now() + 600,
        "iat": now(), "scope": scope, "client_id": "test-client",
    })
}

// ---- the authorization server stand-in (JWKS + introspection) ---------------------------

#[derive(Default)]
struct AuthServer {
    jwks: Mutex<Value>,
    jwks_fetches: AtomicUsize,
    down: AtomicBool,
    /// token → introspection response
    introspection: Mutex<HashMap<String, Value>>,
    introspections: AtomicUsize,
}

async fn start_auth_server(state: Arc<AuthServer>) -> SocketAddr {
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

fn mcp_server() -> Server {
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
}

async fn start_mcp(layer: impl FnOnce(String) -> AuthLayer) -> TestHttpServer {
    let options = StreamableHttpOptions::default().json_response(true);
    let handler = StreamableHttpHandler::for_server(mcp_server(), options);
    TestHttpServer::start_with_layer(handler, |url| layer(url.to_owned())).await
}

fn jwt_layer(resource: String, jwks: Arc<JwksCache>, scope: Option<&str>) -> AuthLayer {
    let verifier = JwtVerifier::new(jwks, ISSUER, AUDIENCE).unwrap();
    let mut b = AuthLayer::builder(resource, verifier).authorization_server(ISSUER);
    if let Some(s) = scope {
        b = b.require_scope(s);
    }
    b.build().unwrap()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const WHOAMI: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;

async fn post(
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
async fn open_session(c: &reqwest::Client, url: &str, token: &str) -> String {
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

async fn whoami(c: &reqwest::Client, url: &str, token: &str, sid: &str) -> (u16, Value) {
    let r = post(c, url, Some(token), Some(sid), WHOAMI).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate challenge")
        .to_str()
        .unwrap()
        .to_owned()
}

async fn jwks_setup(signers: &[&Signer]) -> (Arc<AuthServer>, String) {
    let state = Arc::new(AuthServer::default());
    *state.jwks.lock().unwrap() =
        json!({"keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>()});
    let addr = start_auth_server(state.clone()).await;
    (state, format!("http://{addr}/jwks"))
}

// ---- tests -------------------------------------------------------------------------------

#[tokio::test]
async fn no_token_gets_a_challenge_naming_the_metadata() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, None)).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let r = post(&c, &url, None, None, INIT).await;
    assert_eq!(r.status(), 401);
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", mcp.base());
    assert_eq!(
        challenge(&r),
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );

    // Both well-known forms serve the metadata, without a token.
    for u in [
        metadata_url.clone(),
        format!("{}/.well-known/oauth-protected-resource", mcp.base()),
    ] {
        let r = c.get(&u).send().await.unwrap();
        assert_eq!(r.status(), 200, "{u}");
        assert_eq!(r.headers()["content-type"], "application/json");
        let m: Value = r.json().await.unwrap();
        assert_eq!(m["resource"], format!("{}/mcp", mcp.base()));
        assert_eq!(m["authorization_servers"], json!([ISSUER]));
        assert_eq!(m["bearer_methods_supported"], json!(["header"]));
    }

    // A garbage token: invalid_token. A token in the query: invalid_request (400).
    let r = post(&c, &url, Some("garbage"), None, INIT).await;
    assert_eq!(r.status(), 401);
    assert!(challenge(&r).contains("error=\"invalid_token\""));
    let r = post(
        &c,
        &format!("{url}?access_token={}", key.sign(&claims("alice", ""))),
        None,
        None,
        INIT,
    )
    .await;
    assert_eq!(r.status(), 400);
    assert!(challenge(&r).contains("error=\"invalid_request\""));
}

#[tokio::test]
async fn the_principal_reaches_the_tool_and_tokens_are_checked() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, None)).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let token = key.sign(&claims("alice", "files:read mcp"));
    let sid = open_session(&c, &url, &token).await;
    let (status, body) = whoami(&c, &url, &token, &sid).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["result"]["content"][0]["text"],
        format!("{ISSUER}|alice|files:read,mcp")
    );

    let refused = |mut cl: Value, edit: &dyn Fn(&mut Value)| {
        edit(&mut cl);
        key.sign(&cl)
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "audience",
            refused(claims("alice", ""), &|c| {
                c["aud"] = "https://other.example".into()
            }),
        ),
        (
            "issuer",
            refused(claims("alice", ""), &|c| {
                c["iss"] = "https://evil.example".into()
            }),
        ),
        (
            "expiry",
            refused(claims("alice", ""), &|c| c["exp"] = (now() - 3600).into()),
        ),
        (
            "no audience",
            refused(claims("alice", ""), &|c| {
                c.as_object_mut().unwrap().remove("aud");
            }),
        ),
        (
            "another key",
            Signer::ed25519("k1", 9).sign(&claims("alice", "")),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(r#"{"alg":"none","kid":"k1"}"#),
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(claims("alice", "").to_string())
            ),
        ),
    ];
    for (what, bad) in cases {
        let r = post(&c, &url, Some(&bad), Some(&sid), WHOAMI).await;
        assert_eq!(r.status(), 401, "{what}");
        let ch = challenge(&r);
        assert!(ch.contains("error=\"invalid_token\""), "{what}: {ch}");
        assert!(ch.contains("resource_metadata=\""), "{what}: {ch}");
        let body = r.text().await.unwrap();
        assert!(!body.contains("alice"), "{what}: {body}");
    }
}

#[tokio::test]
async fn insufficient_scope_is_403_naming_the_scope() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, Some("mcp:tools"))).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let r = post(&c, &url, None, None, INIT).await;
    assert_eq!(r.status(), 401);
    assert!(challenge(&r).contains("scope=\"mcp:tools\""));

    let weak = key.sign(&claims("alice", "files:read"));
    let r = post(&c, &url, Some(&weak), None, INIT).await;
    assert_eq!(r.status(), 403);
    let ch = challenge(&r);
    assert!(ch.contains("error=\"insufficient_scope\""), "{ch}");
    assert!(ch.contains("scope=\"mcp:tools\""), "{ch}");

    let strong = key.sign(&claims("alice", "files:read mcp:tools"));
    let sid = open_session(&c, &url, &strong).await;
    assert_eq!(whoami(&c, &url, &strong, &sid).await.0, 200);
}

#[tokio::test]
async fn a_stolen_session_id_is_refused_and_a_refreshed_token_keeps_its_session() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, None)).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let alice = key.sign(&claims("alice", ""));
    let sid = open_session(&c, &url, &alice).await;
    let mallory = key.sign(&claims("mallory", ""));
    let (status, _) = whoami(&c, &url, &mallory, &sid).await;
    assert_eq!(status, 403, "another principal presenting the session id");
    // Nor can the thief listen on the session's stream or delete it.
    let r = c
        .get(&url)
        .bearer_auth(&mallory)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = c
        .delete(&url)
        .bearer_auth(&mallory)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // Alice's refreshed token (new expiry, same issuer and subject) keeps the session.
    let mut refreshed = claims("alice", "");
    refreshed["exp"] = (now() + 1200).into();
    refreshed["jti"] = "second".into();
    let alice2 = key.sign(&refreshed);
    assert_ne!(alice, alice2);
    let (status, body) = whoami(&c, &url, &alice2, &sid).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn jwks_rotation_refreshes_once_for_concurrent_unknown_kids() {
    let k1 = Signer::ed25519("k1", 1);
    let k2 = Signer::ed25519("k2", 2);
    let (state, jwks_url) = jwks_setup(&[&k1]).await;
    let interval = Duration::from_millis(1500);
    let jwks = Arc::new(
        JwksCache::new(jwks_url)
            .unwrap()
            .min_refresh_interval(interval),
    );
    let verifier = JwtVerifier::new(jwks.clone(), ISSUER, AUDIENCE).unwrap();

    verifier.verify(&k1.sign(&claims("a", ""))).await.unwrap();
    assert_eq!(state.jwks_fetches.load(Ordering::SeqCst), 1);
    // Within the refresh interval an unknown kid is refused without a fetch.
    let k2_early = k2.sign(&claims("b", ""));
    assert!(verifier.verify(&k2_early).await.is_err());
    assert_eq!(state.jwks_fetches.load(Ordering::SeqCst), 1);
    // The rate limit is a time window: let it pass (this is the behaviour under test).
    tokio::time::sleep(interval).await;

    // The server rotates to k2: 20 concurrent tokens with the new kid, one fetch.
    *state.jwks.lock().unwrap() = json!({"keys": [k1.jwk, k2.jwk]});
    let token = k2.sign(&claims("b", ""));
    let verifier = Arc::new(verifier);
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let v = verifier.clone();
        let t = token.clone();
        tasks.push(tokio::spawn(async move { v.verify(&t).await }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().subject, "b");
    }
    assert_eq!(state.jwks_fetches.load(Ordering::SeqCst), 2);

    // Unknown kids within the refresh interval are refused without fetching.
    let k3 = Signer::ed25519("k3", 3);
    for _ in 0..10 {
        let e = verifier
            .verify(&k3.sign(&claims("c", "")))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            vellum::auth::VerifyError::Invalid(vellum::auth::InvalidToken::UnknownKey)
        );
    }
    assert_eq!(state.jwks_fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_unreachable_key_set_is_503_not_401() {
    let key = Signer::ed25519("k1", 1);
    let (state, jwks_url) = jwks_setup(&[&key]).await;
    state.down.store(true, Ordering::SeqCst);
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, None)).await;
    let c = http();
    let r = post(
        &c,
        &format!("{}/mcp", mcp.base()),
        Some(&key.sign(&claims("alice", ""))),
        None,
        INIT,
    )
    .await;
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let body = r.text().await.unwrap();
    assert!(
        !body.contains("500") && !body.contains("127.0.0.1"),
        "{body}"
    );
}

#[tokio::test]
async fn host_and_origin_checks_run_before_the_token_check() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, None)).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());
    let token = key.sign(&claims("alice", ""));
    for tok in [None, Some(token.as_str())] {
        // DNS rebinding: a loopback connection naming a foreign host.
        let mut r = c
            .post(&url)
            .header("host", "evil.example:8000")
            .header("content-type", "application/json")
            .body(INIT);
        if let Some(t) = tok {
            r = r.bearer_auth(t);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), 403, "rebinding, token {}", tok.is_some());
        assert!(!r.headers().contains_key("www-authenticate"));
        // A cross-origin page.
        let mut r = c
            .post(&url)
            .header("origin", "http://evil.example")
            .header("content-type", "application/json")
            .body(INIT);
        if let Some(t) = tok {
            r = r.bearer_auth(t);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), 403, "cross-origin, token {}", tok.is_some());
    }
}

#[tokio::test]
async fn introspection_checks_audience_and_caches_by_token_hash() {
    let state = Arc::new(AuthServer::default());
    let addr = start_auth_server(state.clone()).await;
    {
        let mut m = state.introspection.lock().unwrap();
        m.insert(
            "good".into(),
            json!({"active": true, "sub": "alice", "aud": AUDIENCE, "iss": ISSUER,
                   "scope": "a b", "exp": now() + 600, "client_id": "c1"}),
        );
        m.insert(
            "elsewhere".into(),
            json!({"active": true, "sub": "alice", "aud": "other", "exp": now() + 600}),
        );
        m.insert(
            "no-aud".into(),
            json!({"active": true, "sub": "alice", "exp": now() + 600}),
        );
        m.insert(
            "machine".into(),
            json!({"active": true, "client_id": "svc", "aud": [AUDIENCE, "x"]}),
        );
    }
    let v = IntrospectionVerifier::new(
        format!("http://{addr}/introspect"),
        ClientAuth::Basic {
            client_id: "rs".into(),
            client_secret: "secret".into(),
        },
        ISSUER,
        AUDIENCE,
    )
    .unwrap();

    let p = v.verify("good").await.unwrap();
    assert_eq!((p.subject.as_str(), p.scopes.len()), ("alice", 2));
    v.verify("good").await.unwrap();
    assert_eq!(state.introspections.load(Ordering::SeqCst), 1, "cached");

    for bad in ["elsewhere", "no-aud", "revoked"] {
        assert!(v.verify(bad).await.is_err(), "{bad}");
    }
    assert_eq!(
        v.verify("machine").await.unwrap().subject,
        "client:svc",
        "a client-credentials token"
    );
    // A failing endpoint is an outage (503), not a verdict, and is not cached.
    state.down.store(true, Ordering::SeqCst);
    assert_eq!(
        v.verify("unseen").await,
        Err(vellum::auth::VerifyError::Unavailable)
    );
    state.down.store(false, Ordering::SeqCst);
    state.introspection.lock().unwrap().insert(
        "unseen".into(),
        json!({"active": true, "sub": "bob", "aud": AUDIENCE}),
    );
    assert_eq!(v.verify("unseen").await.unwrap().subject, "bob");
}

#[test]
fn insecure_urls_are_refused() {
    assert!(JwksCache::new("http://as.example.com/jwks").is_err());
    assert!(JwksCache::new("https://as.example.com/jwks").is_ok());
    let v = JwtVerifier::hs256(&[7; 32], ISSUER, AUDIENCE).unwrap();
    let err = AuthLayer::builder("http://mcp.example.com/mcp", v)
        .authorization_server(ISSUER)
        .build();
    assert!(err.is_err());
    let v = JwtVerifier::hs256(&[7; 32], ISSUER, AUDIENCE).unwrap();
    assert!(
        AuthLayer::builder("https://mcp.example.com/mcp", v)
            .build()
            .is_err(),
        "no authorization server"
    );
}

// ---- the verified-token cache -----------------------------------------------------------

/// An MCP server whose JWT verifier caches tokens (capacity 3); the verifier is returned
/// too, to read how many tokens it holds.
async fn start_cached(jwks: Arc<JwksCache>, leeway: u64) -> (TestHttpServer, Arc<JwtVerifier>) {
    let verifier = Arc::new(
        JwtVerifier::new(jwks, ISSUER, AUDIENCE)
            .unwrap()
            .leeway(leeway)
            .token_cache(3, Duration::from_secs(60)),
    );
    let v = verifier.clone();
    let mcp = start_mcp(move |r| {
        AuthLayer::builder(r, v)
            .authorization_server(ISSUER)
            .build()
            .unwrap()
    })
    .await;
    (mcp, verifier)
}

#[tokio::test]
async fn cached_tokens_are_reused_bounded_and_whole() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let (mcp, verifier) = start_cached(jwks, 60).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let token = key.sign(&claims("alice", "mcp"));
    let sid = open_session(&c, &url, &token).await;
    assert_eq!(verifier.cached_tokens(), 1);
    for _ in 0..3 {
        assert_eq!(whoami(&c, &url, &token, &sid).await.0, 200);
    }
    assert_eq!(verifier.cached_tokens(), 1);

    // The cache key is the whole token: a forged signature behind the same header and
    // claims is checked, and refused.
    let (signed, sig) = token.rsplit_once('.').unwrap();
    let flipped = if sig.starts_with('A') { 'B' } else { 'A' };
    let forged = format!("{signed}.{flipped}{}", &sig[1..]);
    assert_eq!(whoami(&c, &url, &forged, &sid).await.0, 401);

    // Many distinct valid tokens never grow the cache beyond its bound.
    for i in 0..8 {
        let t = key.sign(&claims(&format!("user{i}"), "mcp"));
        let r = post(&c, &url, Some(&t), None, INIT).await;
        assert_eq!(r.status(), 200);
        assert!(
            verifier.cached_tokens() <= 3,
            "{}",
            verifier.cached_tokens()
        );
    }
}

#[tokio::test]
async fn a_cached_token_is_refused_once_it_expires() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let (mcp, verifier) = start_cached(jwks, 0).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let exp = now() + 1;
    let mut cl = claims("alice", "mcp");
    cl["exp"] = exp.into();
    let token = key.sign(&cl);
    let sid = open_session(&c, &url, &token).await;
    assert_eq!(verifier.cached_tokens(), 1);
    // Expiry is the behaviour under test: ask until the token is refused, within a second
    // or two of its `exp` (the cache alone would accept it for 60 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(4);
    loop {
        let (status, _) = whoami(&c, &url, &token, &sid).await;
        if status == 401 {
            break;
        }
        assert_eq!(status, 200);
        assert!(
            tokio::time::Instant::now() < deadline,
            "an expired cached token is still accepted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(now() > exp);
}

#[tokio::test]
async fn a_cached_token_is_refused_after_its_key_leaves_the_key_set() {
    let k1 = Signer::ed25519("k1", 1);
    let k2 = Signer::ed25519("k2", 2);
    let (state, jwks_url) = jwks_setup(&[&k1]).await;
    let jwks = Arc::new(
        JwksCache::new(jwks_url)
            .unwrap()
            .min_refresh_interval(Duration::ZERO),
    );
    let (mcp, verifier) = start_cached(jwks, 60).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());

    let old = k1.sign(&claims("alice", "mcp"));
    let sid = open_session(&c, &url, &old).await;
    assert_eq!(whoami(&c, &url, &old, &sid).await.0, 200);
    assert_eq!(verifier.cached_tokens(), 1);

    // The authorization server replaces k1 with k2; a k2 token makes the server refresh.
    *state.jwks.lock().unwrap() = json!({"keys": [k2.jwk]});
    let new = k2.sign(&claims("bob", "mcp"));
    let r = post(&c, &url, Some(&new), None, INIT).await;
    assert_eq!(r.status(), 200);
    let r = post(&c, &url, Some(&old), Some(&sid), WHOAMI).await;
    assert_eq!(
        r.status(),
        401,
        "a token of a dropped key is still accepted"
    );
}
