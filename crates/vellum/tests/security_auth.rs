//! The OAuth resource-server layer over real loopback HTTP, as a client meets it: metadata
//! and challenges, the principal reaching tools, scopes, sessions bound to their principal,
//! Host/Origin checks before the token's, and the URLs a configuration refuses. How tokens
//! are verified (key sets, introspection, the verified-token cache) is in
//! `security_auth_keys.rs`.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_support;

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use vellum::auth::{AuthLayer, JwksCache, JwtVerifier};

use auth_support::*;

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

/// An issuer's own claims (a tenant, roles) reach the tool through `Principal::claim`.
#[tokio::test]
async fn the_tokens_own_claims_reach_the_tool() {
    let key = Signer::ed25519("k1", 1);
    let (_as, jwks_url) = jwks_setup(&[&key]).await;
    let jwks = Arc::new(JwksCache::new(jwks_url).unwrap());
    let mcp = start_mcp(|r| jwt_layer(r, jwks, None)).await;
    let c = http();
    let url = format!("{}/mcp", mcp.base());
    let mut cl = claims("alice", "mcp");
    cl["tenant"] = "acme".into();
    cl["roles"] = json!(["admin", "billing"]);
    let token = key.sign(&cl);
    let sid = open_session(&c, &url, &token).await;
    let r = post(
        &c,
        &url,
        Some(&token),
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tenant","arguments":{}}}"#,
    )
    .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["result"]["content"][0]["text"], "acme|admin,billing",
        "{body}"
    );
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
