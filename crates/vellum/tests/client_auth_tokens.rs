//! What the OAuth client keeps and how it keeps it current: refresh before expiry and after
//! a 401, the fallback to a new authorization when refresh fails, tokens kept on disk and
//! used by another process's client, logout (with revocation), a move to another
//! authorization server, and one flow for many requests waiting at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use vellum::client::auth::{
    AuthError, FileTokenStore, LoopbackRedirect, MemoryTokenStore, OAuth, OAuthBuilder, TokenStore,
};
use vellum_testkit::oauth::{
    AsOptions, RsOptions, ScriptedBrowser, TestAuthServer, TestResourceServer, send_authorized,
    tools_list as list, unix_now as now,
};
use vellum_testkit::{DEADLINE, eventually, within};

fn client(url: &str) -> OAuthBuilder {
    OAuth::builder(url).redirect(LoopbackRedirect::new(ScriptedBrowser::new()).timeout(DEADLINE))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("vellum-client-auth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn servers(a: AsOptions) -> (TestAuthServer, TestResourceServer) {
    let auth = TestAuthServer::start(a).await;
    let rs = TestResourceServer::start(RsOptions::default(), &[&auth]).await;
    (auth, rs)
}

/// The `Authorization` headers the resource server accepted.
fn accepted_tokens(rs: &TestResourceServer) -> Vec<String> {
    rs.requests()
        .into_iter()
        .filter(|r| r.status == 200 && r.method == "POST")
        .filter_map(|r| r.authorization)
        .collect()
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let (auth, rs) = servers(AsOptions {
        access_token_ttl: 2,
        ..Default::default()
    })
    .await;
    let oauth = client(&rs.url).build().unwrap();
    let status = within("login", oauth.login()).await.unwrap();
    assert!(status.refreshable);
    let expires_at = status.expires_at.unwrap();
    // Due within half its two-second life.
    eventually("the token to be due for refresh", || {
        now() + 1 >= expires_at
    })
    .await;
    assert_eq!(
        send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
        200
    );
    assert_eq!(auth.token_requests("refresh_token").len(), 1);
    assert_eq!(auth.requests_to("/authorize").len(), 1, "no second login");
    assert!(
        rs.requests().iter().all(|r| r.status != 401),
        "the old token was never sent"
    );
    assert!(oauth.status().await.unwrap().unwrap().expires_at.unwrap() > expires_at);
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_and_the_request_retried() {
    let (auth, rs) = servers(AsOptions::default()).await;
    let oauth = client(&rs.url).build().unwrap();
    assert_eq!(
        send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
        200
    );
    let first_refresh = auth.token_requests("authorization_code");
    assert_eq!(first_refresh.len(), 1);
    rs.reject_tokens_seen();
    assert_eq!(
        within("the retry", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    let refreshes = auth.token_requests("refresh_token");
    assert_eq!(refreshes.len(), 1);
    assert_eq!(refreshes[0].param("resource"), Some(rs.url.as_str()));
    assert_eq!(auth.requests_to("/authorize").len(), 1);
    let tokens = accepted_tokens(&rs);
    assert_eq!(tokens.len(), 2);
    assert_ne!(tokens[0], tokens[1]);

    // The refresh token was rotated: when it is revoked too, the client authorizes anew.
    auth.revoke_refresh_tokens();
    rs.reject_tokens_seen();
    assert_eq!(
        within(
            "the new authorization",
            send_authorized(&oauth, &rs.url, &list())
        )
        .await
        .unwrap()
        .0,
        200
    );
    assert_eq!(auth.token_requests("refresh_token").len(), 2);
    assert_eq!(auth.requests_to("/authorize").len(), 2);

    // Logging out revokes both tokens.
    assert_eq!(oauth.logout().await.unwrap(), 1);
    let revoked: Vec<Option<String>> = auth
        .requests_to("/revoke")
        .iter()
        .map(|r| r.param("token_type_hint").map(str::to_owned))
        .collect();
    assert_eq!(
        revoked,
        [
            Some("refresh_token".to_owned()),
            Some("access_token".to_owned())
        ]
    );
    assert!(oauth.status().await.unwrap().is_none());
}

#[tokio::test]
async fn tokens_on_disk_serve_the_next_process_and_logout_revokes_them() {
    let dir = temp_dir("disk");
    let (auth, rs) = servers(AsOptions::default()).await;
    let first = client(&rs.url)
        .store(FileTokenStore::new(&dir))
        .build()
        .unwrap();
    within("login", first.login()).await.unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    // Another client on the same store, unable to log in itself: it uses what is there.
    let before = auth.requests().len();
    let second = OAuth::builder(&rs.url)
        .store(FileTokenStore::new(&dir))
        .build()
        .unwrap();
    assert_eq!(
        send_authorized(&second, &rs.url, &list()).await.unwrap().0,
        200
    );
    assert_eq!(
        auth.requests().len(),
        before,
        "no authorization server traffic"
    );
    // …and refreshes it when the server turns it down.
    rs.reject_tokens_seen();
    assert_eq!(
        send_authorized(&second, &rs.url, &list()).await.unwrap().0,
        200
    );
    assert_eq!(auth.token_requests("refresh_token").len(), 1);
    // Without a refresh token, it says the user must log in.
    auth.revoke_refresh_tokens();
    rs.reject_tokens_seen();
    let err = send_authorized(&second, &rs.url, &list())
        .await
        .unwrap_err();
    assert!(matches!(err, AuthError::LoginRequired { .. }), "{err}");

    assert_eq!(within("logout", first.logout()).await.unwrap(), 1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let revoked: Vec<Option<String>> = auth
        .requests_to("/revoke")
        .iter()
        .map(|r| r.param("token_type_hint").map(str::to_owned))
        .collect();
    // The refresh token the server refused was dropped already: only the access token is left.
    assert_eq!(revoked, [Some("access_token".to_owned())]);
    let third = OAuth::builder(&rs.url)
        .store(FileTokenStore::new(&dir))
        .build()
        .unwrap();
    assert!(third.status().await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_move_to_another_authorization_server_registers_there_afresh() {
    let as1 = TestAuthServer::start(AsOptions::default()).await;
    let as2 = TestAuthServer::start(AsOptions::default()).await;
    let rs = TestResourceServer::start(RsOptions::default(), &[&as1]).await;
    let store = MemoryTokenStore::new();
    let oauth = client(&rs.url).store(store.clone()).build().unwrap();
    assert_eq!(
        send_authorized(&oauth, &rs.url, &list()).await.unwrap().0,
        200
    );
    let as1_client = as1.clients().pop().unwrap().id;

    rs.switch_to(&as2);
    assert_eq!(
        within("the move", send_authorized(&oauth, &rs.url, &list()))
            .await
            .unwrap()
            .0,
        200
    );
    assert_eq!(as2.requests_to("/register").len(), 1);
    assert_eq!(
        as1.token_requests("refresh_token").len(),
        0,
        "the old issuer's refresh token is not tried"
    );
    for r in as2.requests() {
        assert!(
            !r.params.iter().any(|(_, v)| v.contains(&as1_client)),
            "{r:?}"
        );
        assert!(
            !r.header("authorization")
                .is_some_and(|h| h.contains(&as1_client))
        );
    }
    let kept = store.for_server(&rs.url).await.unwrap();
    assert_eq!(
        kept.iter().map(|r| r.issuer.as_str()).collect::<Vec<_>>(),
        [as2.issuer.as_str()]
    );
}

#[tokio::test]
async fn requests_waiting_together_share_one_authorization() {
    let (auth, rs) = servers(AsOptions::default()).await;
    let oauth = client(&rs.url).build().unwrap();
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let oauth = oauth.clone();
            let url = rs.url.clone();
            tokio::spawn(async move { send_authorized(&oauth, &url, &list()).await })
        })
        .collect();
    for c in calls {
        assert_eq!(within("a call", c).await.unwrap().unwrap().0, 200);
    }
    assert_eq!(auth.requests_to("/authorize").len(), 1);
    assert_eq!(auth.requests_to("/register").len(), 1);
}
