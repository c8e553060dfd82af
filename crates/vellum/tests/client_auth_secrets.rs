//! No credential ever shows: every flow of the OAuth client runs with every log line of
//! every crate recorded (TRACE), then each token, refresh token, client secret, code, PKCE
//! verifier, client assertion and DPoP proof that went over the wire is searched for in the
//! log, in the `Debug` output of everything the client hands out, and in the text of every
//! error it returned. One test in its own binary: it installs the global log subscriber.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use vellum::client::auth::{
    AuthError, Grant, LoopbackRedirect, MemoryTokenStore, OAuth, PreregisteredClient, TokenStore,
};
use vellum::jose::SigningKey;
use vellum_testkit::oauth::{
    AsOptions, RsOptions, ScriptedBrowser, TestAuthServer, TestClient, TestResourceServer,
    send_authorized, tools_list as list,
};
use vellum_testkit::{DEADLINE, within};

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credential_appears_in_logs_debug_output_or_errors() {
    let log = Log::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();

    let mut shown: Vec<String> = Vec::new();
    let mut errors: Vec<AuthError> = Vec::new();

    // A confidential client (dynamic registration hands out a secret), DPoP with nonces on
    // both servers, refresh, a refused refresh, a new authorization, logout.
    let auth = TestAuthServer::start(AsOptions {
        auth_methods: vec!["client_secret_post".into()],
        dpop: true,
        dpop_nonce: Some("as-nonce".into()),
        ..Default::default()
    })
    .await;
    let rs = TestResourceServer::start(
        RsOptions {
            dpop: true,
            dpop_nonce: Some("rs-nonce".into()),
            ..Default::default()
        },
        &[&auth],
    )
    .await;
    let store = MemoryTokenStore::new();
    let oauth = OAuth::builder(&rs.url)
        .redirect(LoopbackRedirect::new(ScriptedBrowser::new()).timeout(DEADLINE))
        .store(store.clone())
        .build()
        .unwrap();
    assert_eq!(
        within("a call", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    rs.reject_tokens_seen();
    assert_eq!(
        within("a refresh", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    shown.push(format!("{oauth:?}"));
    shown.push(format!("{:?}", oauth.status().await.unwrap()));
    shown.push(format!("{:?}", store.for_server(&rs.url).await.unwrap()));
    // A client that cannot log in, with a refresh token the server no longer honours.
    let headless = OAuth::builder(&rs.url)
        .store(store.clone())
        .build()
        .unwrap();
    auth.revoke_refresh_tokens();
    rs.reject_tokens_seen();
    errors.push(
        send_authorized(&headless, &rs.url, &list())
            .await
            .unwrap_err(),
    );
    assert!(matches!(
        errors.last(),
        Some(AuthError::LoginRequired { .. })
    ));
    assert_eq!(
        within("a new login", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    shown.push(format!("{:?}", store.for_server(&rs.url).await.unwrap()));
    oauth.logout().await.unwrap();

    // Machine clients: a wrong secret, and a key the server does not know.
    let machine_as = TestAuthServer::start(AsOptions::default()).await;
    machine_as.add_client(TestClient::basic("machine", "the-real-secret"));
    machine_as.add_client(TestClient::private_key_jwt(
        "signer",
        SigningKey::generate_es256().unwrap().public_jwk().clone(),
    ));
    let machine_rs = TestResourceServer::start(RsOptions::default(), &[&machine_as]).await;
    for client in [
        PreregisteredClient::new("machine").secret("a-wrong-secret-value"),
        PreregisteredClient::new("signer").signing_key(SigningKey::generate_es256().unwrap()),
    ] {
        shown.push(format!("{client:?}"));
        let o = OAuth::builder(&machine_rs.url)
            .grant(Grant::ClientCredentials)
            .preregistered(client)
            .build()
            .unwrap();
        errors.push(
            send_authorized(&o, &machine_rs.url, &list())
                .await
                .unwrap_err(),
        );
    }
    let good = OAuth::builder(&machine_rs.url)
        .grant(Grant::ClientCredentials)
        .preregistered(PreregisteredClient::new("machine").secret("the-real-secret"))
        .build()
        .unwrap();
    assert_eq!(
        send_authorized(&good, &machine_rs.url, &list())
            .await
            .unwrap()
            .0,
        200
    );
    shown.push(format!("{good:?}"));

    // Every credential that went over the wire.
    let mut secrets: Vec<String> = vec!["the-real-secret".into(), "a-wrong-secret-value".into()];
    for c in auth.clients().into_iter().chain(machine_as.clients()) {
        secrets.extend(c.secret);
    }
    for r in auth.requests().into_iter().chain(machine_as.requests()) {
        for name in [
            "code",
            "code_verifier",
            "refresh_token",
            "client_secret",
            "client_assertion",
            "token",
            "assertion",
        ] {
            secrets.extend(r.param(name).map(str::to_owned));
        }
        secrets.extend(
            r.header("authorization")
                .and_then(|h| h.split_once(' '))
                .map(|(_, v)| v.to_owned()),
        );
        secrets.extend(r.header("dpop").map(str::to_owned));
    }
    for r in rs.requests().into_iter().chain(machine_rs.requests()) {
        secrets.extend(
            r.authorization
                .and_then(|h| h.split_once(' ').map(|(_, v)| v.to_owned())),
        );
        secrets.extend(r.dpop);
    }
    secrets.retain(|s| s.len() >= 8);
    secrets.sort();
    secrets.dedup();
    assert!(
        secrets.len() > 20,
        "the flows ran: {} credentials",
        secrets.len()
    );

    for e in &errors {
        shown.push(e.to_string());
        shown.push(format!("{e:?}"));
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            shown.push(s.to_string());
            source = s.source();
        }
    }
    let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("vellum"), "the log was recorded");
    for secret in &secrets {
        assert!(
            !logged.contains(secret.as_str()),
            "a credential is in the log: {secret}"
        );
        for text in &shown {
            assert!(!text.contains(secret.as_str()), "a credential is in {text}");
        }
    }
}
