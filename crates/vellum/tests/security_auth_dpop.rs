//! DPoP (RFC 9449) at the resource server over real loopback HTTP: a bound token (`cnf.jkt`)
//! only with the `DPoP` scheme and a valid proof. One test per refusal, each asserting the
//! status, the challenge and the `error_description` that names the check (Bearer-sent bound
//! token, missing or doubled proof, replay on the same and on another instance, wrong
//! `htu`/`htm`, another key, `iat` outside the window, wrong `ath`, wrong `typ`, an
//! algorithm not configured, unbound token as DPoP, Bearer in `required` mode, nonce
//! required and mismatched), server nonces, both eras, and step-up with a DPoP token.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};
use vellum::auth::{AuthLayer, DpopMode, DpopReplayCache, JwtVerifier, MemoryReplayCache};
use vellum::jose::{SigningKey, dpop_proof, sha256_b64url};
use vellum::prelude::*;
use vellum_testkit::http::{McpHttp, Modern, TestHttpServer};
#[cfg(feature = "redis")]
use vellum_testkit::within;

const ISSUER: &str = "http://127.0.0.1:1/issuer";
const AUDIENCE: &str = "vellum-test";
const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-dpop";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An Ed25519 DPoP key from a fixed seed (PKCS#8 v1, RFC 8410).
fn key(seed: u8) -> SigningKey {
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&[seed; 32]);
    SigningKey::from_pkcs8_der(&der, Algorithm::EdDSA).unwrap()
}

/// A proof with exactly these claims (what `dpop_proof` would not make: a stale `iat`, a
/// chosen `jti`).
fn proof_with(k: &SigningKey, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.typ = Some("dpop+jwt".into());
    header.jwk = Some(k.public_jwk().clone());
    k.sign(header, claims).unwrap()
}

/// An access token for `scope`, bound to `jkt` when given.
fn token(scope: &str, jkt: Option<&str>) -> String {
    let mut claims = json!({
        "iss": ISSUER, "sub": "alice", "aud": AUDIENCE, "exp": now() + 600, "iat": now(),
        "scope": scope,
    });
    if let Some(j) = jkt {
        claims["cnf"] = json!({ "jkt": j });
    }
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap()
}

fn server() -> Server {
    let server = Server::new(Implementation::new("dpop", "1.0"), ServerOptions::default());
    server
        .add_raw_tool(
            Tool::new("echo", "Echo"),
            |_c: RequestContext, _r: CallToolRequest| async move {
                Ok::<_, HandlerError>(CallToolResult::text("ok"))
            },
        )
        .unwrap()
        .add_raw_tool(
            Tool::new("write", "Writes").requires_scope("write"),
            |_c: RequestContext, _r: CallToolRequest| async move {
                Ok::<_, HandlerError>(CallToolResult::text("written"))
            },
        )
        .unwrap();
    server
}

type Configure =
    Box<dyn FnOnce(vellum::auth::AuthLayerBuilder) -> vellum::auth::AuthLayerBuilder + Send>;

async fn start(configure: Configure) -> TestHttpServer {
    let handler = StreamableHttpHandler::for_server(
        server(),
        StreamableHttpOptions::default()
            .json_response(true)
            .stateless(true),
    );
    TestHttpServer::start_with_layer(handler, move |url| {
        let b = AuthLayer::builder(
            url.to_owned(),
            JwtVerifier::hs256(SECRET, ISSUER, AUDIENCE).unwrap(),
        )
        .authorization_server(ISSUER);
        configure(b).build().unwrap()
    })
    .await
}

fn echo_body() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
           "params":{"name":"echo","arguments":{}}})
}

/// POSTs a legacy (stateless) `tools/call` with `authorization` and the given proofs.
async fn post(
    mcp: &TestHttpServer,
    authorization: &str,
    proofs: &[&str],
    body: &Value,
) -> reqwest::Response {
    let m = McpHttp::new(&mcp.url);
    let mut b = m
        .builder(Method::POST)
        .header("authorization", authorization)
        .json(body);
    for p in proofs {
        b = b.header("dpop", *p);
    }
    b.send().await.unwrap()
}

fn challenges(r: &reqwest::Response) -> Vec<String> {
    r.headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// Asserts 401 with a DPoP challenge carrying `error`.
fn assert_dpop_refusal(r: &reqwest::Response, error: &str) {
    assert_eq!(r.status(), 401, "{:?}", challenges(r));
    let c = challenges(r);
    assert!(
        c.iter()
            .any(|c| c.starts_with("DPoP ") && c.contains(&format!("error=\"{error}\""))),
        "{c:?}"
    );
}

async fn metadata(mcp: &TestHttpServer) -> Value {
    let url = format!("{}/.well-known/oauth-protected-resource", mcp.base());
    vellum::transport::install_crypto_provider();
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

fn allowed() -> Configure {
    Box::new(|b| b)
}

/// A server in `allowed` mode, a DPoP key and an access token bound to it.
async fn bound() -> (TestHttpServer, SigningKey, String) {
    let mcp = start(allowed()).await;
    let k = key(1);
    let t = token("", Some(k.thumbprint()));
    (mcp, k, t)
}

/// A fresh, valid proof for a POST to `url` carrying `tok`.
fn proof(k: &SigningKey, method: &str, url: &str, tok: &str) -> String {
    dpop_proof(k, method, url, Some(tok), None).unwrap()
}

/// Asserts 401 with a DPoP challenge carrying `error`, and a body naming why.
async fn assert_refused_because(r: reqwest::Response, error: &str, description: &str) {
    assert_dpop_refusal(&r, error);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], error, "{body}");
    assert_eq!(body["error_description"], description, "{body}");
}

#[tokio::test]
async fn a_bound_token_with_a_valid_proof_is_served() {
    let (mcp, k, t) = bound().await;
    let p = proof(&k, "POST", &mcp.url, &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_bound_token_sent_as_bearer_is_refused() {
    let (mcp, _k, t) = bound().await;
    let r = post(&mcp, &format!("Bearer {t}"), &[], &echo_body()).await;
    assert_eq!(r.status(), 401);
    // invalid_token on the scheme used, with both challenges offered.
    let c = challenges(&r);
    assert!(
        c[0].starts_with("Bearer ") && c[0].contains("error=\"invalid_token\""),
        "{c:?}"
    );
    assert!(
        c[1].starts_with("DPoP algs=\"ES256 ES384 EdDSA RS256 PS256\""),
        "{c:?}"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error_description"],
        "The access token is DPoP-bound: send it with the DPoP scheme and a proof"
    );
}

#[tokio::test]
async fn a_bound_token_without_a_proof_is_refused() {
    let (mcp, _k, t) = bound().await;
    let r = post(&mcp, &format!("DPoP {t}"), &[], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "Exactly one DPoP proof header is required",
    )
    .await;
}

#[tokio::test]
async fn two_proofs_are_refused() {
    let (mcp, k, t) = bound().await;
    let p = proof(&k, "POST", &mcp.url, &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p, &p], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "Exactly one DPoP proof header is required",
    )
    .await;
}

#[tokio::test]
async fn a_replayed_proof_is_refused() {
    let (mcp, k, t) = bound().await;
    let p = proof(&k, "POST", &mcp.url, &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_eq!(r.status(), 200);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(r, "invalid_dpop_proof", "The DPoP proof was already used").await;
}

#[tokio::test]
async fn a_proof_for_another_url_is_refused() {
    let (mcp, k, t) = bound().await;
    let p = proof(&k, "POST", &format!("{}/other", mcp.base()), &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(r, "invalid_dpop_proof", "The DPoP proof is for another URL").await;
}

#[tokio::test]
async fn a_proof_whose_htu_carries_a_query_is_refused() {
    let (mcp, k, t) = bound().await;
    // RFC 9449 §4.2: htu is the URL without query and fragment; one that has them is refused
    // even though its path is right.
    let p = proof_with(
        &k,
        &json!({"jti": "query-1", "htm": "POST", "htu": format!("{}?x=1", mcp.url),
                "iat": now(), "ath": sha256_b64url(t.as_bytes())}),
    );
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(r, "invalid_dpop_proof", "The DPoP proof is for another URL").await;
}

#[tokio::test]
async fn a_proof_whose_htu_differs_only_by_normalisation_is_served() {
    let (mcp, k, t) = bound().await;
    // RFC 9449 §4.3 and RFC 3986 §6.2.2: the scheme and host compare case-insensitively.
    let htu = mcp.url.replacen("http://", "HTTP://", 1);
    assert_ne!(htu, mcp.url);
    let p = proof_with(
        &k,
        &json!({"jti": "norm-1", "htm": "POST", "htu": htu, "iat": now(),
                "ath": sha256_b64url(t.as_bytes())}),
    );
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_eq!(r.status(), 200, "{:?}", challenges(&r));
}

#[tokio::test]
async fn a_proof_for_another_method_is_refused() {
    let (mcp, k, t) = bound().await;
    let p = proof(&k, "GET", &mcp.url, &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "The DPoP proof is for another HTTP method",
    )
    .await;
}

#[tokio::test]
async fn a_proof_for_another_token_is_refused() {
    let (mcp, k, t) = bound().await;
    // A different token bound to the same key (its scope differs, so it differs even within
    // the same second): the proof's ath is its hash, not the hash of the token sent.
    let p = proof(&k, "POST", &mcp.url, &token("other", Some(k.thumbprint())));
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "The DPoP proof is not bound to this access token",
    )
    .await;
}

#[tokio::test]
async fn a_proof_signed_by_another_key_is_refused() {
    let (mcp, _k, t) = bound().await;
    // Valid in itself (signed with the key it carries, right ath), but not the token's key.
    let p = proof(&key(2), "POST", &mcp.url, &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "The access token is bound to another key",
    )
    .await;
}

#[tokio::test]
async fn a_proof_with_an_iat_outside_the_window_is_refused() {
    let (mcp, k, t) = bound().await;
    // Ten minutes ago and ten minutes ahead, against the default ±5 minutes.
    for (jti, iat) in [("stale-1", now() - 600), ("ahead-1", now() + 600)] {
        let p = proof_with(
            &k,
            &json!({"jti": jti, "htm": "POST", "htu": mcp.url, "iat": iat,
                    "ath": sha256_b64url(t.as_bytes())}),
        );
        let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
        assert_refused_because(
            r,
            "invalid_dpop_proof",
            "The DPoP proof is too old or from the future",
        )
        .await;
    }
}

#[tokio::test]
async fn a_proof_of_another_type_is_refused() {
    let (mcp, k, t) = bound().await;
    let mut header = Header::new(Algorithm::EdDSA);
    header.typ = Some("JWT".into());
    header.jwk = Some(k.public_jwk().clone());
    let claims = json!({"jti": "typ-1", "htm": "POST", "htu": mcp.url, "iat": now(),
                        "ath": sha256_b64url(t.as_bytes())});
    let p = k.sign(header, &claims).unwrap();
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "The DPoP proof's typ is not dpop+jwt",
    )
    .await;
}

#[tokio::test]
async fn a_proof_signed_with_an_algorithm_not_configured_is_refused() {
    let mcp = start(Box::new(|b| b.dpop_algorithms(vec![Algorithm::ES256]))).await;
    let k = key(9);
    let t = token("", Some(k.thumbprint()));
    let p = proof(&k, "POST", &mcp.url, &t);
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "The DPoP proof's algorithm is not accepted here",
    )
    .await;
}

#[tokio::test]
async fn an_unbound_token_is_refused_as_dpop_and_served_as_bearer() {
    let mcp = start(allowed()).await;
    let unbound = token("", None);
    let p = proof(&key(1), "POST", &mcp.url, &unbound);
    let r = post(&mcp, &format!("DPoP {unbound}"), &[&p], &echo_body()).await;
    assert_refused_because(r, "invalid_token", "The access token is not DPoP-bound").await;
    // ... and as Bearer it goes through (allowed mode).
    let r = post(&mcp, &format!("Bearer {unbound}"), &[], &echo_body()).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn the_metadata_and_the_plain_challenge_name_dpop() {
    let mcp = start(allowed()).await;
    let m: Value = metadata(&mcp).await;
    assert_eq!(
        m["dpop_signing_alg_values_supported"],
        json!(["ES256", "ES384", "EdDSA", "RS256", "PS256"])
    );
    assert!(m.get("dpop_bound_access_tokens_required").is_none());
    let r = McpHttp::new(&mcp.url)
        .post_raw(echo_body().to_string())
        .await;
    assert_eq!(r.status, 401);
    let c: Vec<&str> = r
        .headers
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c[0].starts_with("Bearer resource_metadata="));
    assert!(c[1].starts_with("DPoP algs="));
}

#[tokio::test]
async fn required_mode_refuses_bearer_tokens() {
    let mcp = start(Box::new(|b| b.dpop(DpopMode::Required))).await;
    let r = post(
        &mcp,
        &format!("Bearer {}", token("", None)),
        &[],
        &echo_body(),
    )
    .await;
    assert_dpop_refusal(&r, "invalid_token");
    assert_eq!(
        challenges(&r).len(),
        1,
        "no Bearer challenge in required mode"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error_description"],
        "This server accepts only DPoP-bound access tokens"
    );
    let m: Value = metadata(&mcp).await;
    assert_eq!(m["dpop_bound_access_tokens_required"], true);

    let k = key(3);
    let t = token("", Some(k.thumbprint()));
    let p = dpop_proof(&k, "POST", &mcp.url, Some(&t), None).unwrap();
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn off_mode_does_not_take_the_dpop_scheme_nor_bound_tokens() {
    let mcp = start(Box::new(|b| b.dpop(DpopMode::Off))).await;
    let k = key(4);
    let t = token("", Some(k.thumbprint()));
    let p = dpop_proof(&k, "POST", &mcp.url, Some(&t), None).unwrap();
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_eq!(r.status(), 401);
    assert_eq!(challenges(&r).len(), 1);
    assert!(challenges(&r)[0].starts_with("Bearer "));
    let r = post(&mcp, &format!("Bearer {t}"), &[], &echo_body()).await;
    assert_eq!(
        r.status(),
        401,
        "a bound token is never taken as a bearer token"
    );
}

#[tokio::test]
async fn a_server_nonce_is_required_and_then_satisfied() {
    let mcp = start(Box::new(|b| b.dpop_nonce(Duration::from_secs(300)))).await;
    let k = key(5);
    let t = token("", Some(k.thumbprint()));
    let p = dpop_proof(&k, "POST", &mcp.url, Some(&t), None).unwrap();
    let r = post(&mcp, &format!("DPoP {t}"), &[&p], &echo_body()).await;
    assert_dpop_refusal(&r, "use_dpop_nonce");
    let nonce = r.headers()["dpop-nonce"].to_str().unwrap().to_owned();

    let good = dpop_proof(&k, "POST", &mcp.url, Some(&t), Some(&nonce)).unwrap();
    let r = post(&mcp, &format!("DPoP {t}"), &[&good], &echo_body()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["dpop-nonce"], nonce.as_str());
}

#[tokio::test]
async fn a_proof_with_a_nonce_not_of_this_server_gets_use_dpop_nonce() {
    let mcp = start(Box::new(|b| b.dpop_nonce(Duration::from_secs(300)))).await;
    let k = key(5);
    let t = token("", Some(k.thumbprint()));
    let bad = dpop_proof(&k, "POST", &mcp.url, Some(&t), Some("made-up")).unwrap();
    let r = post(&mcp, &format!("DPoP {t}"), &[&bad], &echo_body()).await;
    assert_dpop_refusal(&r, "use_dpop_nonce");
    assert!(r.headers().contains_key("dpop-nonce"));
    assert_ne!(r.headers()["dpop-nonce"], "made-up");
}

#[tokio::test]
async fn a_proof_replayed_to_another_instance_sharing_the_cache_is_refused() {
    let cache: Arc<dyn DpopReplayCache> = Arc::new(MemoryReplayCache::default());
    let (c1, c2) = (cache.clone(), cache);
    let a = start(Box::new(move |b| b.dpop_replay_cache(c1))).await;
    let b = start(Box::new(move |b| b.dpop_replay_cache(c2))).await;
    let k = key(6);
    let t = token("", Some(k.thumbprint()));
    // Both instances know themselves by the same canonical URL in production; here each
    // has its own, so the proof is made for `a` and its htu is what `b` is told it is not:
    // make one per instance with the same jti instead.
    let proof_for = |url: &str| {
        proof_with(
            &k,
            &json!({"jti": "same-jti", "htm": "POST", "htu": url, "iat": now(),
                    "ath": sha256_b64url(t.as_bytes())}),
        )
    };
    let r = post(
        &a,
        &format!("DPoP {t}"),
        &[&proof_for(&a.url)],
        &echo_body(),
    )
    .await;
    assert_eq!(r.status(), 200);
    let r = post(
        &b,
        &format!("DPoP {t}"),
        &[&proof_for(&b.url)],
        &echo_body(),
    )
    .await;
    assert_dpop_refusal(&r, "invalid_dpop_proof");
}

/// The same across instances that share nothing but a real Redis: each instance has its own
/// connection, as two processes would; one a connection of the cache's own, the other the
/// stores' [`Redis`](vellum::store::redis::Redis) handle (what `vellum serve --redis` gives).
#[cfg(feature = "redis")]
#[tokio::test]
async fn a_proof_replayed_to_another_instance_sharing_redis_is_refused() {
    use vellum::auth::RedisReplayCache;
    use vellum::store::redis::{Redis, RedisOptions};
    let redis = vellum_testkit::redis::RedisServer::start();
    let c1 = RedisReplayCache::connect(&redis.url(), "vellum")
        .await
        .unwrap();
    let stores = Redis::connect(&redis.url(), RedisOptions::default())
        .await
        .unwrap();
    let c2 = RedisReplayCache::on(&stores, "vellum");
    let (c1, c2) = (
        Arc::new(c1) as Arc<dyn DpopReplayCache>,
        Arc::new(c2) as Arc<dyn DpopReplayCache>,
    );
    let a = start(Box::new(move |b| b.dpop_replay_cache(c1))).await;
    let b = start(Box::new(move |b| b.dpop_replay_cache(c2))).await;
    let k = key(8);
    let t = token("", Some(k.thumbprint()));
    let proof_for = |url: &str, jti: &str| {
        proof_with(
            &k,
            &json!({"jti": jti, "htm": "POST", "htu": url, "iat": now(),
                    "ath": sha256_b64url(t.as_bytes())}),
        )
    };
    let auth = format!("DPoP {t}");
    let r = post(&a, &auth, &[&proof_for(&a.url, "redis-jti")], &echo_body()).await;
    assert_eq!(r.status(), 200);
    // Another instance, the same proof id: refused.
    let r = post(&b, &auth, &[&proof_for(&b.url, "redis-jti")], &echo_body()).await;
    assert_dpop_refusal(&r, "invalid_dpop_proof");
    // And on the first instance too (Redis, not memory, decides).
    let r = post(&a, &auth, &[&proof_for(&a.url, "redis-jti")], &echo_body()).await;
    assert_dpop_refusal(&r, "invalid_dpop_proof");
    // A fresh proof id is accepted by the other instance.
    let r = post(
        &b,
        &auth,
        &[&proof_for(&b.url, "redis-jti-2")],
        &echo_body(),
    )
    .await;
    assert_eq!(r.status(), 200);

    // One key per accepted proof, hash-tagged, living no longer than the proof is acceptable
    // (the default window, 300 s, plus a second).
    let keys = redis.keys("vellum:dpop:*");
    assert_eq!(keys.len(), 2, "{keys:?}");
    for key in &keys {
        assert!(
            key.starts_with("vellum:dpop:{") && key.ends_with('}'),
            "{key}"
        );
        let out = std::process::Command::new("redis-cli")
            .args(["-u", &redis.url(), "pttl", key])
            .output()
            .unwrap();
        let pttl: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!((1..=301_000).contains(&pttl), "{key}: PTTL {pttl}");
    }
}

/// Redis gone: a valid proof cannot be checked for replay, so it is refused with 503 and a
/// retry hint (never accepted unchecked, never blamed on the client with a 401).
#[cfg(feature = "redis")]
#[tokio::test]
async fn an_unreachable_redis_replay_cache_is_503_not_a_pass() {
    use vellum::auth::RedisReplayCache;
    let redis = vellum_testkit::redis::RedisServer::start();
    let cache = RedisReplayCache::connect(&redis.url(), "vellum")
        .await
        .unwrap();
    let cache = Arc::new(cache) as Arc<dyn DpopReplayCache>;
    let mcp = start(Box::new(move |b| b.dpop_replay_cache(cache))).await;
    let k = key(9);
    let t = token("", Some(k.thumbprint()));
    let auth = format!("DPoP {t}");
    let r = post(
        &mcp,
        &auth,
        &[&proof(&k, "POST", &mcp.url, &t)],
        &echo_body(),
    )
    .await;
    assert_eq!(r.status(), 200, "served while Redis answers");

    redis.stop();
    // A fresh proof: only the replay check is left to fail. The cache's command timeout
    // bounds how long this waits.
    let r = within(
        "the refusal",
        post(
            &mcp,
            &auth,
            &[&proof(&k, "POST", &mcp.url, &t)],
            &echo_body(),
        ),
    )
    .await;
    assert_eq!(r.status(), 503, "{:?}", challenges(&r));
    assert_eq!(r.headers()["retry-after"], "5");
    assert!(challenges(&r).is_empty(), "{:?}", challenges(&r));
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "temporarily_unavailable", "{body}");
}

#[tokio::test]
async fn a_modern_request_with_a_bound_token_and_no_proof_is_refused() {
    let (mcp, k, t) = bound().await;
    let m = Modern::new(&mcp.url);
    let body = m.body(1, "tools/call", json!({"name": "echo"}));
    let r = m
        .mcp
        .modern_builder(&body)
        .header("authorization", format!("DPoP {t}"))
        .send()
        .await
        .unwrap();
    assert_refused_because(
        r,
        "invalid_dpop_proof",
        "Exactly one DPoP proof header is required",
    )
    .await;
    // The same request with its proof is served.
    let r = m
        .mcp
        .modern_builder(&body)
        .header("authorization", format!("DPoP {t}"))
        .header("dpop", proof(&k, "POST", &mcp.url, &t))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn modern_requests_take_dpop_and_step_up_names_the_dpop_scheme() {
    let mcp = start(allowed()).await;
    let k = key(7);
    let m = Modern::new(&mcp.url);
    let send = async |tok: &str, body: &Value| {
        let p = dpop_proof(&k, "POST", &mcp.url, Some(tok), None).unwrap();
        m.mcp
            .modern_builder(body)
            .header("authorization", format!("DPoP {tok}"))
            .header("dpop", p)
            .send()
            .await
            .unwrap()
    };
    let base = token("", Some(k.thumbprint()));
    let r = send(&base, &m.body(1, "tools/call", json!({"name": "echo"}))).await;
    assert_eq!(r.status(), 200);

    let r = send(&base, &m.body(2, "tools/call", json!({"name": "write"}))).await;
    assert_eq!(r.status(), 403);
    let c = challenges(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(
        c[0].starts_with("DPoP algs=")
            && c[0].contains("error=\"insufficient_scope\"")
            && c[0].contains("scope=\"write\""),
        "{c:?}"
    );
    let up = token("write", Some(k.thumbprint()));
    let r = send(&up, &m.body(3, "tools/call", json!({"name": "write"}))).await;
    assert_eq!(r.status(), 200);
}
