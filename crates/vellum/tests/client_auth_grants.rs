//! The OAuth client's grants without a user (client credentials with a secret or a private
//! key, workload identity, enterprise-managed authorization) and DPoP, against the test
//! kit's authorization and resource servers on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::json;
use vellum::client::auth::{
    AuthError, DpopMode, EnterpriseConfig, Grant, LoopbackRedirect, OAuth, PreregisteredClient,
    Secret,
};
use vellum::jose::SigningKey;
use vellum_testkit::oauth::{
    AsOptions, RsOptions, ScriptedBrowser, TestAuthServer, TestClient, send_authorized,
    start_pair as servers, tools_list as list, unix_now as now,
};
use vellum_testkit::{DEADLINE, within};

#[tokio::test]
async fn client_credentials_with_a_secret_or_a_private_key() {
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    auth.add_client(TestClient::basic("machine", "machine-secret"));
    let oauth = OAuth::builder(&rs.url)
        .grant(Grant::ClientCredentials)
        .preregistered(PreregisteredClient::new("machine").secret("machine-secret"))
        .build()
        .unwrap();
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    let t = &auth.token_requests("client_credentials")[0];
    assert!(
        t.header("authorization")
            .is_some_and(|h| h.starts_with("Basic "))
    );
    assert_eq!(t.param("resource"), Some(rs.url.as_str()));
    assert!(auth.requests_to("/authorize").is_empty() && auth.requests_to("/register").is_empty());

    let key = SigningKey::generate_es256().unwrap();
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    auth.add_client(TestClient::private_key_jwt(
        "signer",
        key.public_jwk().clone(),
    ));
    let oauth = OAuth::builder(&rs.url)
        .grant(Grant::ClientCredentials)
        .preregistered(PreregisteredClient::new("signer").signing_key(key))
        .build()
        .unwrap();
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    let t = &auth.token_requests("client_credentials")[0];
    assert_eq!(
        t.param("client_assertion_type"),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    assert!(t.param("client_assertion").is_some());

    // A key the server does not know is refused, and reported as the server said.
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    auth.add_client(TestClient::private_key_jwt(
        "signer",
        SigningKey::generate_es256().unwrap().public_jwk().clone(),
    ));
    let oauth = OAuth::builder(&rs.url)
        .grant(Grant::ClientCredentials)
        .preregistered(
            PreregisteredClient::new("signer").signing_key(SigningKey::generate_es256().unwrap()),
        )
        .build()
        .unwrap();
    let err = send_authorized(&oauth, &rs.url, &list()).await.unwrap_err();
    assert!(
        matches!(&err, AuthError::OAuth { error, .. } if error == "invalid_client"),
        "{err}"
    );
}

#[tokio::test]
async fn workload_identity_presents_the_platform_assertion_once() {
    let platform = SigningKey::generate_es256().unwrap();
    let assertion = |aud: &str| {
        platform
            .sign(
                jsonwebtoken::Header::new(platform.algorithm()),
                &json!({"iss": "https://platform.example.com", "sub": "workload-7", "aud": aud, "exp": now() + 300}),
            )
            .unwrap()
    };
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    auth.trust(
        "https://platform.example.com",
        platform.public_jwk().clone(),
    );
    let oauth = OAuth::builder(&rs.url)
        .grant(Grant::JwtBearer(Arc::new(Secret::new(assertion(
            &auth.issuer,
        )))))
        .build()
        .unwrap();
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    let t = auth.token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer");
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].param("resource"), Some(rs.url.as_str()));

    // A refused assertion is final: no second token request, no other grant.
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    auth.trust(
        "https://platform.example.com",
        platform.public_jwk().clone(),
    );
    let bad = assertion("https://another-server.example.com");
    let oauth = OAuth::builder(&rs.url)
        .grant(Grant::JwtBearer(Arc::new(Secret::new(bad))))
        .build()
        .unwrap();
    let err = send_authorized(&oauth, &rs.url, &list()).await.unwrap_err();
    assert!(
        matches!(&err, AuthError::OAuth { error, .. } if error == "invalid_grant"),
        "{err}"
    );
    assert_eq!(auth.requests_to("/token").len(), 1);
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_the_id_token_for_an_id_jag() {
    let idp = TestAuthServer::start(AsOptions {
        id_jag_client_id: Some("xaa-client".into()),
        ..Default::default()
    })
    .await;
    idp.add_client(TestClient::basic("idp-client", "idp-secret"));
    let id_token = idp
        .sign(&json!({"iss": idp.issuer, "sub": "alice", "aud": "idp-client", "exp": now() + 300}));
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    auth.trust(&idp.issuer, idp.public_jwk());
    auth.add_client(TestClient::basic("xaa-client", "xaa-secret"));
    let enterprise = EnterpriseConfig::new(idp.token_url(), "idp-client", Secret::new(id_token))
        .idp_client_secret("idp-secret");
    let oauth = OAuth::builder(&rs.url)
        .grant(Grant::EnterpriseManaged(Arc::new(enterprise)))
        .preregistered(
            PreregisteredClient::new("xaa-client")
                .for_issuer(&auth.issuer)
                .secret("xaa-secret"),
        )
        .build()
        .unwrap();
    let (status, body) = within("a call", send_authorized(&oauth, &rs.url, &list()))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["sub"], "alice");
    let x = &idp.token_requests("urn:ietf:params:oauth:grant-type:token-exchange")[0];
    assert_eq!(
        x.param("requested_token_type"),
        Some("urn:ietf:params:oauth:token-type:id-jag")
    );
    assert_eq!(x.param("audience"), Some(auth.issuer.as_str()));
    assert_eq!(x.param("resource"), Some(rs.url.as_str()));
    let b = &auth.token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer")[0];
    assert!(
        b.header("authorization")
            .is_some_and(|h| h.starts_with("Basic "))
    );
}

#[tokio::test]
async fn dpop_binds_tokens_and_follows_server_nonces() {
    let (auth, rs) = servers(
        AsOptions {
            dpop: true,
            dpop_nonce: Some("as-nonce-1".into()),
            ..Default::default()
        },
        RsOptions {
            dpop: true,
            dpop_nonce: Some("rs-nonce-1".into()),
            ..Default::default()
        },
    )
    .await;
    let oauth = OAuth::builder(&rs.url)
        .redirect(LoopbackRedirect::new(ScriptedBrowser::new()).timeout(DEADLINE))
        .build()
        .unwrap();
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    // The token endpoint asked for its nonce once; the retry carried it.
    let codes = auth.token_requests("authorization_code");
    assert_eq!(
        codes.iter().map(|t| t.status).collect::<Vec<_>>(),
        [400, 200]
    );
    assert!(codes.iter().all(|t| t.header("dpop").is_some()));
    // The resource server: one nonce challenge, then DPoP-scheme requests with proofs.
    let seen = rs.requests();
    let statuses: Vec<u16> = seen
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.status)
        .collect();
    assert_eq!(
        statuses,
        [401, 401, 200, 200],
        "no token, no nonce, then accepted twice"
    );
    let authed: Vec<_> = seen.iter().filter(|r| r.authorization.is_some()).collect();
    assert!(
        authed
            .iter()
            .all(|r| r.authorization.as_deref().unwrap().starts_with("DPoP "))
    );
    let proofs: std::collections::HashSet<_> =
        authed.iter().map(|r| r.dpop.clone().unwrap()).collect();
    assert_eq!(proofs.len(), authed.len(), "a fresh proof per request");
    let status = oauth.status().await.unwrap().unwrap();
    assert_eq!(status.token_type, vellum::client::auth::TokenType::Dpop);

    // DPoP off: a bearer token, even from a server that binds.
    let (auth, rs) = servers(
        AsOptions {
            dpop: true,
            ..Default::default()
        },
        RsOptions::default(),
    )
    .await;
    let oauth = OAuth::builder(&rs.url)
        .redirect(LoopbackRedirect::new(ScriptedBrowser::new()).timeout(DEADLINE))
        .dpop(DpopMode::Off)
        .build()
        .unwrap();
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    assert!(
        auth.requests_to("/token")
            .iter()
            .all(|t| t.header("dpop").is_none())
    );
    assert!(
        rs.requests()
            .last()
            .unwrap()
            .authorization
            .as_deref()
            .unwrap()
            .starts_with("Bearer ")
    );
}
