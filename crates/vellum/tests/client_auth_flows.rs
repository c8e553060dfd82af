//! The OAuth client's authorization-code flow against a real authorization server and
//! resource server on loopback (the test kit's): discovery in every form, the checks that
//! make it refuse (resource, issuer, RFC 9207 `iss`), scope selection and step-up,
//! registration (dynamic, pre-registered, metadata document) and the token endpoint's client
//! authentication methods, and the 2025-03-26 fallbacks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use vellum::client::auth::{
    AuthError, LoopbackRedirect, OAuth, OAuthBuilder, PreregisteredClient, TokenEndpointAuth,
};
use vellum_testkit::oauth::{
    AsOptions, IssInResponse, MetadataForm, PrmAt, RsOptions, ScriptedBrowser, TestAuthServer,
    TestClient, send_authorized, start_pair as servers, tools_list as list,
};
use vellum_testkit::{DEADLINE, within};

fn client(url: &str, browser: &ScriptedBrowser) -> OAuthBuilder {
    OAuth::builder(url).redirect(LoopbackRedirect::new(browser.clone()).timeout(DEADLINE))
}

fn call() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}})
}

#[tokio::test]
async fn authorization_code_with_dynamic_registration() {
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    let browser = ScriptedBrowser::new();
    let oauth = client(&rs.url, &browser).build().unwrap();
    let (status, body) = within("the first call", send_authorized(&oauth, &rs.url, &list()))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["ok"], true);

    let reg = &auth.requests_to("/register")[0];
    assert_eq!(reg.param("application_type"), Some("native"));
    assert_eq!(reg.param("token_endpoint_auth_method"), Some("none"));
    assert!(reg.param("grant_types").unwrap().contains("refresh_token"));
    let authz = auth.requests_to("/authorize");
    assert_eq!(authz.len(), 1);
    let a = &authz[0];
    assert_eq!(a.param("code_challenge_method"), Some("S256"));
    assert_eq!(a.param("resource"), Some(rs.url.as_str()));
    assert!(a.param("state").is_some_and(|s| s.len() >= 16));
    assert!(
        a.param("redirect_uri")
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert_eq!(
        a.param("scope"),
        None,
        "nothing to ask for: no scope parameter"
    );
    let tok = &auth.token_requests("authorization_code")[0];
    assert_eq!(
        tok.param("resource"),
        a.param("resource"),
        "the same resource in both requests"
    );
    assert!(tok.param("code_verifier").is_some());
    assert_eq!(browser.opened().len(), 1);

    // The token is kept: the next call costs the authorization server nothing.
    let before = auth.requests().len();
    let (status, _) = send_authorized(&oauth, &rs.url, &list()).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(auth.requests().len(), before);
    let seen = rs.requests();
    assert!(
        seen.last()
            .unwrap()
            .authorization
            .as_deref()
            .unwrap()
            .starts_with("Bearer ")
    );
    assert!(
        seen.first().unwrap().authorization.is_none(),
        "the first request had no token"
    );
}

#[tokio::test]
async fn discovery_in_every_form() {
    let cases: Vec<(&str, RsOptions, AsOptions, &[&str])> = vec![
        (
            "metadata named in the challenge, RFC 8414 at the root",
            RsOptions::default(),
            AsOptions::default(),
            &["/.well-known/oauth-protected-resource/mcp"],
        ),
        (
            "no resource_metadata: path-inserted first, then the root; OpenID metadata",
            RsOptions {
                prm: PrmAt::Root,
                no_prm_in_challenge: true,
                ..Default::default()
            },
            AsOptions {
                metadata: MetadataForm::OpenId,
                ..Default::default()
            },
            &[
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "a custom metadata URL; an issuer with a path (RFC 8414 path-inserted)",
            RsOptions {
                prm: PrmAt::Custom("/custom/metadata.json".into()),
                ..Default::default()
            },
            AsOptions {
                prefix: "/tenant1".into(),
                ..Default::default()
            },
            &["/custom/metadata.json"],
        ),
        (
            "an issuer with a path, OpenID path-appended",
            RsOptions::default(),
            AsOptions {
                prefix: "/tenant1".into(),
                metadata: MetadataForm::OpenIdAppended,
                ..Default::default()
            },
            &["/.well-known/oauth-protected-resource/mcp"],
        ),
    ];
    for (what, r, a, prm_paths) in cases {
        let (auth, rs) = servers(a, r).await;
        let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
        let (status, _) = within(what, send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap();
        assert_eq!(status, 200, "{what}");
        let rs_gets: Vec<String> = rs
            .requests()
            .into_iter()
            .filter(|r| r.method == "GET")
            .map(|r| r.path)
            .collect();
        assert_eq!(rs_gets, *prm_paths, "{what}");
        // Metadata lookups stop at the first hit, in the spec's order.
        let as_gets: Vec<String> = auth
            .requests()
            .into_iter()
            .filter(|r| r.path.contains(".well-known"))
            .map(|r| r.path)
            .collect();
        let want: &[&str] = match (auth.issuer.ends_with("/tenant1"), as_gets.len()) {
            (false, 1) => &["/.well-known/oauth-authorization-server"],
            (false, _) => &[
                "/.well-known/oauth-authorization-server",
                "/.well-known/openid-configuration",
            ],
            (true, 1) => &["/.well-known/oauth-authorization-server/tenant1"],
            (true, _) => &[
                "/.well-known/oauth-authorization-server/tenant1",
                "/.well-known/openid-configuration/tenant1",
                "/tenant1/.well-known/openid-configuration",
            ],
        };
        assert_eq!(as_gets, want, "{what}");
    }
}

#[tokio::test]
async fn metadata_for_another_resource_or_issuer_is_refused() {
    let (auth, rs) = servers(
        AsOptions::default(),
        RsOptions {
            resource_override: Some("https://evil.example.com/mcp".into()),
            ..Default::default()
        },
    )
    .await;
    let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
    let err = send_authorized(&oauth, &rs.url, &list()).await.unwrap_err();
    assert!(matches!(err, AuthError::ResourceMismatch { .. }), "{err}");
    assert!(
        auth.requests().is_empty(),
        "the authorization server is never contacted"
    );

    let (auth, rs) = servers(
        AsOptions {
            issuer_override: Some("https://attacker.example.com".into()),
            ..Default::default()
        },
        RsOptions::default(),
    )
    .await;
    let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
    let err = send_authorized(&oauth, &rs.url, &list()).await.unwrap_err();
    assert!(matches!(err, AuthError::IssuerMismatch { .. }), "{err}");
    let used: Vec<String> = auth.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        used,
        ["/.well-known/oauth-authorization-server"],
        "nothing but the metadata"
    );
}

#[tokio::test]
async fn the_authorization_response_issuer_is_checked() {
    // (advertised, what the server sends, accepted)
    let cases = [
        (true, IssInResponse::Correct, true),
        (false, IssInResponse::Omit, true),
        (true, IssInResponse::Omit, false),
        (true, IssInResponse::Wrong, false),
        (false, IssInResponse::Wrong, false),
    ];
    for (advertise_iss, iss, accepted) in cases {
        let (auth, rs) = servers(
            AsOptions {
                advertise_iss,
                iss,
                ..Default::default()
            },
            RsOptions::default(),
        )
        .await;
        let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
        let result = within("a flow", send_authorized(&oauth, &rs.url, &list())).await;
        let case = format!("advertised {advertise_iss}, {iss:?}");
        assert_eq!(auth.requests_to("/authorize").len(), 1, "{case}");
        if accepted {
            assert_eq!(result.unwrap().0, 200, "{case}");
        } else {
            assert!(
                matches!(result, Err(AuthError::IssuerResponseMismatch { .. })),
                "{case}: {result:?}"
            );
            assert!(
                auth.requests_to("/token").is_empty(),
                "{case}: the code is never redeemed"
            );
        }
    }
}

#[tokio::test]
async fn scopes_come_from_the_challenge_then_the_metadata() {
    let scope_of = |auth: &TestAuthServer| {
        auth.requests_to("/authorize")[0]
            .param("scope")
            .map(str::to_owned)
    };
    let (auth, rs) = servers(
        AsOptions::default(),
        RsOptions {
            challenge_scope: Some("mcp:basic".into()),
            scopes_supported: vec!["other".into()],
            ..Default::default()
        },
    )
    .await;
    send_authorized(
        &client(&rs.url, &ScriptedBrowser::new()).build().unwrap(),
        &rs.url,
        &list(),
    )
    .await
    .unwrap();
    assert_eq!(scope_of(&auth).as_deref(), Some("mcp:basic"));

    let (auth, rs) = servers(
        AsOptions {
            scopes_supported: vec![
                "mcp:basic".into(),
                "mcp:read".into(),
                "offline_access".into(),
            ],
            ..Default::default()
        },
        RsOptions {
            scopes_supported: vec!["mcp:basic".into(), "mcp:read".into()],
            ..Default::default()
        },
    )
    .await;
    send_authorized(
        &client(&rs.url, &ScriptedBrowser::new()).build().unwrap(),
        &rs.url,
        &list(),
    )
    .await
    .unwrap();
    assert_eq!(
        scope_of(&auth).as_deref(),
        Some("mcp:basic mcp:read offline_access"),
        "offline_access where offered"
    );

    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    send_authorized(
        &client(&rs.url, &ScriptedBrowser::new())
            .offline_access(false)
            .build()
            .unwrap(),
        &rs.url,
        &list(),
    )
    .await
    .unwrap();
    assert_eq!(scope_of(&auth), None);
}

#[tokio::test]
async fn insufficient_scope_steps_up_with_the_union() {
    let (auth, rs) = servers(
        AsOptions::default(),
        RsOptions {
            challenge_scope: Some("mcp:basic".into()),
            method_scopes: vec![("tools/call".into(), vec!["mcp:write".into()])],
            ..Default::default()
        },
    )
    .await;
    let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
    assert_eq!(
        send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
        200
    );
    assert_eq!(
        within("the step-up", send_authorized(&oauth, &rs.url, &call()))
            .await
            .unwrap()
            .0,
        200
    );
    let scopes: Vec<Option<String>> = auth
        .requests_to("/authorize")
        .iter()
        .map(|r| r.param("scope").map(str::to_owned))
        .collect();
    assert_eq!(
        scopes,
        [
            Some("mcp:basic".to_owned()),
            Some("mcp:basic mcp:write".to_owned())
        ]
    );
    assert_eq!(rs.requests().iter().filter(|r| r.status == 403).count(), 1);
}

#[tokio::test]
async fn a_scope_that_is_never_granted_stops_after_three_authorizations() {
    let (auth, rs) = servers(
        AsOptions {
            grant_only: Some(vec!["mcp:basic".into()]),
            ..Default::default()
        },
        RsOptions {
            method_scopes: vec![("tools/list".into(), vec!["mcp:admin".into()])],
            ..Default::default()
        },
    )
    .await;
    let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
    let err = within("the loop to end", send_authorized(&oauth, &rs.url, &list()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AuthError::TooManyAttempts { attempts: 3 }),
        "{err}"
    );
    assert_eq!(auth.requests_to("/authorize").len(), 3);
    // Another request (as a client that gives up on one call and tries another) gets no
    // fourth authorization: the limit holds until the server accepts a request.
    let err = within(
        "the second request",
        send_authorized(&oauth, &rs.url, &list()),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AuthError::TooManyAttempts { .. }), "{err}");
    assert_eq!(auth.requests_to("/authorize").len(), 3);
}

#[tokio::test]
async fn without_a_redirect_handler_the_user_must_log_in_first() {
    let (auth, rs) = servers(AsOptions::default(), RsOptions::default()).await;
    let oauth = OAuth::builder(&rs.url).build().unwrap();
    let err = send_authorized(&oauth, &rs.url, &list()).await.unwrap_err();
    assert!(
        matches!(&err, AuthError::LoginRequired { server } if *server == rs.url),
        "{err}"
    );
    assert!(auth.requests().is_empty());
}

#[tokio::test]
async fn the_token_endpoint_sees_the_registered_method() {
    for method in ["client_secret_basic", "client_secret_post", "none"] {
        let (auth, rs) = servers(
            AsOptions {
                auth_methods: vec![method.into()],
                ..Default::default()
            },
            RsOptions::default(),
        )
        .await;
        let oauth = client(&rs.url, &ScriptedBrowser::new()).build().unwrap();
        assert_eq!(
            send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
            200,
            "{method}"
        );
        let t = &auth.token_requests("authorization_code")[0];
        let used = if t
            .header("authorization")
            .is_some_and(|h| h.starts_with("Basic "))
        {
            "client_secret_basic"
        } else if t.param("client_secret").is_some() {
            "client_secret_post"
        } else {
            "none"
        };
        assert_eq!(used, method);
    }
}

#[tokio::test]
async fn preregistered_credentials_and_metadata_documents_need_no_registration() {
    let (auth, rs) = servers(
        AsOptions {
            dynamic_registration: false,
            auth_methods: vec!["client_secret_basic".into()],
            ..Default::default()
        },
        RsOptions::default(),
    )
    .await;
    auth.add_client(TestClient::basic("pre-registered", "pre-secret"));
    let oauth = client(&rs.url, &ScriptedBrowser::new())
        .preregistered(
            PreregisteredClient::new("elsewhere")
                .for_issuer("https://other.example.com")
                .secret("x"),
        )
        .preregistered(
            PreregisteredClient::new("pre-registered")
                .for_issuer(&auth.issuer)
                .secret("pre-secret"),
        )
        .build()
        .unwrap();
    assert_eq!(
        send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
        200
    );
    assert_eq!(
        auth.requests_to("/authorize")[0].param("client_id"),
        Some("pre-registered")
    );

    let (auth, rs) = servers(
        AsOptions {
            cimd: true,
            ..Default::default()
        },
        RsOptions::default(),
    )
    .await;
    let url = "https://app.example.com/oauth/client.json";
    let oauth = client(&rs.url, &ScriptedBrowser::new())
        .client_metadata_url(url)
        .build()
        .unwrap();
    assert_eq!(
        send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
        200
    );
    assert_eq!(
        auth.requests_to("/authorize")[0].param("client_id"),
        Some(url)
    );
    assert!(auth.requests_to("/register").is_empty());

    // Without a metadata document, a server that offers no registration cannot be used.
    let (_auth, rs) = servers(
        AsOptions {
            dynamic_registration: false,
            ..Default::default()
        },
        RsOptions::default(),
    )
    .await;
    let err = send_authorized(
        &client(&rs.url, &ScriptedBrowser::new()).build().unwrap(),
        &rs.url,
        &list(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AuthError::NoClientIdentity { .. }), "{err}");
    assert_eq!(
        TokenEndpointAuth::parse("client_secret_basic"),
        Some(TokenEndpointAuth::ClientSecretBasic)
    );
}

#[tokio::test]
async fn servers_of_2025_03_26_are_their_own_authorization_server() {
    // Metadata at the MCP server's origin.
    let auth = TestAuthServer::start(AsOptions::default()).await;
    let server = format!("{}/mcp", auth.url);
    let status = within(
        "login",
        client(&server, &ScriptedBrowser::new())
            .build()
            .unwrap()
            .login(),
    )
    .await
    .unwrap();
    assert_eq!(status.issuer, auth.issuer);
    let probes: Vec<String> = auth
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.path)
        .take(3)
        .collect();
    assert_eq!(
        probes,
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server"
        ]
    );
    // No metadata at all: the default endpoints.
    let auth = TestAuthServer::start(AsOptions {
        metadata: MetadataForm::None,
        advertise_iss: false,
        ..Default::default()
    })
    .await;
    let server = format!("{}/mcp", auth.url);
    within(
        "login",
        client(&server, &ScriptedBrowser::new())
            .build()
            .unwrap()
            .login(),
    )
    .await
    .unwrap();
    for path in ["/register", "/authorize", "/token"] {
        assert_eq!(auth.requests_to(path).len(), 1, "{path}");
    }
    assert_eq!(
        auth.requests_to("/authorize")[0].param("resource"),
        Some(server.as_str())
    );
}

#[tokio::test]
async fn a_refusal_is_reported_with_the_servers_reason() {
    let (_auth, rs) = servers(
        AsOptions {
            deny: true,
            ..Default::default()
        },
        RsOptions::default(),
    )
    .await;
    let err = send_authorized(
        &client(&rs.url, &ScriptedBrowser::new()).build().unwrap(),
        &rs.url,
        &list(),
    )
    .await
    .unwrap_err();
    match err {
        AuthError::OAuth {
            error, description, ..
        } => {
            assert_eq!(error, "access_denied");
            assert_eq!(description.as_deref(), Some("the user said no"));
        }
        other => panic!("{other}"),
    }
}
