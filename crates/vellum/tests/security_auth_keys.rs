//! How the OAuth resource-server layer verifies tokens, over real loopback HTTP: JWTs
//! against a JWKS served by the test (rotation, single-flight refresh, outage),
//! introspection with its cache, and the verified-token cache (bounded, whole-token keys,
//! expiry, key removal). What a client meets (challenges, metadata, sessions) is in
//! `security_auth.rs`.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use vellum::auth::{
    AuthLayer, ClientAuth, IntrospectionVerifier, JwksCache, JwtVerifier, TokenVerifier,
};
use vellum_testkit::http::TestHttpServer;

use auth_support::*;

// ---- tests -------------------------------------------------------------------------------

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
    // The response's own fields are the principal's claims.
    assert_eq!(p.claim::<String>("client_id").as_deref(), Some("c1"));
    assert_eq!(p.claims()["scope"], "a b");
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
