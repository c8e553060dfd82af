//! Before authentication, over real loopback HTTP (issue 27, item 7): a forged token sent
//! again is refused without reaching the verifier (the failed-token cache), and a client
//! address past its budget of failed authentications gets 429 with `Retry-After` before its
//! token is looked at, while other addresses and valid tokens stay served, during the
//! attack. The verifier of these tests counts its calls: a call is a signature check.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_support;

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use vellum::auth::{AuthLayer, InvalidToken, Principal, TokenVerifier, VerifyFuture};
use vellum::prelude::*;
use vellum::store::RateLimit;
use vellum_testkit::http::TestHttpServer;

use auth_support::{INIT, ISSUER, WHOAMI, mcp_server, open_session, post, whoami};

/// Accepts `valid-<name>` as the principal `<name>`; anything else has a bad signature. A
/// token it accepted once it knows valid (as a verifier's cache does).
#[derive(Default)]
struct CountingVerifier {
    calls: AtomicUsize,
    verified: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl TokenVerifier for CountingVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let verdict = match token.strip_prefix("valid-") {
            Some(sub) => {
                self.verified.lock().unwrap().insert(token.to_owned());
                Ok(Principal::new(ISSUER, sub))
            }
            None => Err(InvalidToken::BadSignature.into()),
        };
        Box::pin(std::future::ready(verdict))
    }

    fn is_known_valid(&self, token: &str) -> bool {
        self.verified.lock().unwrap().contains(token)
    }
}

/// The MCP server behind an `AuthLayer` with `verifier`, as `configure` sets it up.
async fn start(
    verifier: Arc<CountingVerifier>,
    configure: impl FnOnce(vellum::auth::AuthLayerBuilder) -> vellum::auth::AuthLayerBuilder,
) -> TestHttpServer {
    let options = StreamableHttpOptions::default().json_response(true);
    let handler = StreamableHttpHandler::for_server(mcp_server(), options);
    TestHttpServer::start_with_layer(handler, |url| {
        let b = AuthLayer::builder(url, verifier).authorization_server(ISSUER);
        configure(b).build().unwrap()
    })
    .await
}

/// A client whose connections come from `from` (any 127.x address is loopback).
fn client_from(from: [u8; 4]) -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .local_address(IpAddr::from(from))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_repeated_forged_token_is_verified_once() {
    for cache in [true, false] {
        let verifier = Arc::new(CountingVerifier::default());
        let s = start(verifier.clone(), |b| {
            let b = b.failed_auth_limit(None);
            if cache {
                b
            } else {
                b.failed_token_cache(0, Duration::from_secs(60))
            }
        })
        .await;
        let c = client_from([127, 0, 0, 1]);
        for _ in 0..50 {
            let r = post(&c, &s.url, Some("forged"), None, INIT).await;
            assert_eq!(r.status(), 401);
            let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
            assert!(challenge.contains("invalid_token"), "{challenge}");
        }
        let calls = verifier.calls.load(Ordering::SeqCst);
        // Without the cache (the control) every request reaches the verifier.
        assert_eq!(calls, if cache { 1 } else { 50 }, "cache {cache}");
        // A valid token is verified and served as ever.
        let sid = open_session(&c, &s.url, "valid-alice").await;
        let (status, _) = whoami(&c, &s.url, "valid-alice", &sid).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn an_address_past_its_failure_budget_gets_429_before_verification() {
    let verifier = Arc::new(CountingVerifier::default());
    // Distinct forged tokens (the cache cannot help): only the budget stops them.
    let s = start(verifier.clone(), |b| {
        b.failed_auth_limit(Some(RateLimit::new(20.0 / 60.0, 20)))
    })
    .await;
    let attacker = client_from([127, 0, 0, 2]);
    for i in 0..20 {
        let r = post(&attacker, &s.url, Some(&format!("forged-{i}")), None, INIT).await;
        assert_eq!(r.status(), 401, "failure {i}");
    }
    assert_eq!(verifier.calls.load(Ordering::SeqCst), 20);
    let r = post(&attacker, &s.url, Some("forged-20"), None, INIT).await;
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // One failure's worth flows back in 3 s.
    assert!((1..=3).contains(&wait), "{wait}");
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("failed authentications"),
        "{body}"
    );
    // No signature check for the refused request.
    assert_eq!(verifier.calls.load(Ordering::SeqCst), 20);

    // During a flood from 127.0.0.2, a fresh client elsewhere is served within a second
    // (initialize, then a tool call), and another address's forged token is only a 401.
    let flood = {
        let url = s.url.clone();
        tokio::spawn(async move {
            let mut n = 0u32;
            loop {
                let token = format!("forged-flood-{n}");
                let r = post(&attacker, &url, Some(&token), None, INIT).await;
                assert_eq!(r.status(), 429);
                n += 1;
                tokio::task::yield_now().await;
            }
        })
    };
    let fresh = client_from([127, 0, 0, 1]);
    let started = Instant::now();
    let sid = open_session(&fresh, &s.url, "valid-bob").await;
    let (status, text) = whoami(&fresh, &s.url, "valid-bob", &sid).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let other = client_from([127, 0, 0, 3]);
    let r = post(&other, &s.url, Some("forged-elsewhere"), None, WHOAMI).await;
    assert_eq!(r.status(), 401);
    flood.abort();
    // The flood reached the verifier not once.
    // (Two requests to open the session, one call, the other address's token.)
    assert_eq!(verifier.calls.load(Ordering::SeqCst), 20 + 4);
}

#[tokio::test]
async fn a_valid_token_known_valid_is_served_from_an_address_past_its_budget() {
    let verifier = Arc::new(CountingVerifier::default());
    let s = start(verifier.clone(), |b| {
        b.failed_auth_limit(Some(RateLimit::new(1.0 / 3600.0, 3)))
    })
    .await;
    // A shared address (a NAT): a valid user, then someone forging tokens.
    let shared = client_from([127, 0, 0, 4]);
    let sid = open_session(&shared, &s.url, "valid-carol").await;
    for i in 0..3 {
        let r = post(&shared, &s.url, Some(&format!("forged-{i}")), None, INIT).await;
        assert_eq!(r.status(), 401, "failure {i}");
    }
    let r = post(&shared, &s.url, Some("forged-3"), None, INIT).await;
    assert_eq!(r.status(), 429);
    // The valid user goes on being served.
    let (status, text) = whoami(&shared, &s.url, "valid-carol", &sid).await;
    assert_eq!(status, 200, "{text}");
    // A token not known valid waits out the budget like any other.
    let r = post(&shared, &s.url, Some("valid-dave"), None, INIT).await;
    assert_eq!(r.status(), 429);
}
