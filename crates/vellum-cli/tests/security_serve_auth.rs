//! `vellum serve --auth-*`: the resource server from the command line (a real child process
//! on loopback): challenge and metadata, tokens checked, scopes, sessions bound to their
//! principal, insecure key-set URLs refused at start.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jsonwebtoken::{EncodingKey, Header};
use serde_json::json;
use vellum_testkit::process::{
    ServerProcess, vellum_serve, vellum_serve_fails, vellum_serve_with_env,
};
use vellum_testkit::raw::{INIT, INITIALIZED, build, post_headers, send};

const SECRET: &str = "a test secret of at least thirty-two bytes";
const ISSUER: &str = "http://127.0.0.1:9/as";
const AUDIENCE: &str = "vellum-cli-test";

fn token(sub: &str, aud: &str, scope: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let claims = json!({"iss": ISSUER, "sub": sub, "aud": aud, "exp": exp, "scope": scope});
    jsonwebtoken::encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn serve(extra: &[&str]) -> ServerProcess {
    let mut args = vec!["--auth-issuer", ISSUER, "--auth-audience", AUDIENCE];
    args.extend_from_slice(extra);
    vellum_serve_with_env(&args, &[("VELLUM_AUTH_HS256_SECRET", SECRET)])
}

fn post(
    s: &ServerProcess,
    bearer: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> vellum_testkit::raw::Resp {
    let host = s.host();
    let auth = bearer.map(|t| format!("Bearer {t}"));
    let mut extra = Vec::new();
    if let Some(a) = &auth {
        extra.push(("authorization", a.as_str()));
    }
    if let Some(id) = session {
        extra.push(("mcp-session-id", id));
        extra.push(("mcp-protocol-version", "2025-11-25"));
    }
    send(
        s,
        &build("POST", "/mcp", &post_headers(&host, &extra), Some(body)),
    )
}

/// The protected-resource metadata the server publishes.
fn metadata(s: &ServerProcess) -> serde_json::Value {
    let host = s.host();
    send(
        s,
        &build(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            &[("host", &host)],
            None,
        ),
    )
    .json()
}

#[test]
fn a_request_without_a_token_gets_the_challenge_and_the_metadata_names_the_issuer() {
    let s = serve(&[]);
    let r = post(&s, None, None, INIT);
    assert_eq!(r.status, 401);
    let metadata = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        s.host()
    );
    assert_eq!(
        r.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata}\"").as_str())
    );
    let host = s.host();
    let m = send(
        &s,
        &build(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            &[("host", &host)],
            None,
        ),
    );
    assert_eq!(m.status, 200);
    let m = m.json();
    assert_eq!(m["authorization_servers"], json!([ISSUER]));
    assert_eq!(m["resource"], format!("http://{}/mcp", s.host()));
    assert!(
        m.get("scopes_supported").is_none(),
        "no scope unless --auth-scope"
    );
}

#[test]
fn tokens_are_checked_and_sessions_stay_with_their_principal() {
    let s = serve(&[]);
    let alice = token("alice", AUDIENCE, "");
    let r = post(&s, Some(&alice), None, INIT);
    assert_eq!(r.status, 200, "{}", r.text());
    let sid = r.header("mcp-session-id").expect("a session").to_owned();
    assert_eq!(post(&s, Some(&alice), Some(&sid), INITIALIZED).status, 202);

    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello_world","arguments":{"user_name":"alice"}}}"#;
    let r = post(&s, Some(&alice), Some(&sid), call);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "Hello World, alice"
    );

    // A token for another resource, and one for another caller on alice's session.
    let r = post(
        &s,
        Some(&token("alice", "https://other.example", "")),
        Some(&sid),
        call,
    );
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    let r = post(&s, Some(&token("mallory", AUDIENCE, "")), Some(&sid), call);
    assert_eq!(r.status, 403, "{}", r.text());
}

#[test]
fn auth_scope_requires_the_scope() {
    let s = serve(&["--auth-scope", "mcp:tools"]);
    let r = post(&s, Some(&token("alice", AUDIENCE, "other")), None, INIT);
    assert_eq!(r.status, 403);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");
    let r = post(&s, Some(&token("alice", AUDIENCE, "mcp:tools")), None, INIT);
    assert_eq!(r.status, 200);
}

#[test]
fn key_set_urls_must_be_https_unless_loopback() {
    let err = vellum_serve_fails(&[
        "--auth-jwks",
        "http://as.example.com/jwks.json",
        "--auth-issuer",
        "https://as.example.com",
        "--auth-audience",
        AUDIENCE,
    ]);
    assert!(err.contains("https"), "{err}");
    // A loopback key set is accepted; while it is unreachable, tokens get 503, not 401.
    let s = vellum_serve(&[
        "--auth-jwks",
        "http://127.0.0.1:9/jwks.json",
        "--auth-issuer",
        ISSUER,
        "--auth-audience",
        AUDIENCE,
    ]);
    let r = post(&s, Some(&token("alice", AUDIENCE, "")), None, INIT);
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
}

#[test]
fn auth_tool_scope_steps_up_on_the_same_session() {
    let s = serve(&["--auth-tool-scope", "hello_world=greet"]);
    let base = token("alice", AUDIENCE, "");
    let r = post(&s, Some(&base), None, INIT);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session").to_owned();
    assert_eq!(post(&s, Some(&base), Some(&sid), INITIALIZED).status, 202);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello_world","arguments":{"user_name":"alice"}}}"#;
    let r = post(&s, Some(&base), Some(&sid), call);
    assert_eq!(r.status, 403, "{}", r.text());
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"greet\""),
        "{challenge}"
    );
    let up = token("alice", AUDIENCE, "greet");
    let r = post(&s, Some(&up), Some(&sid), call);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "Hello World, alice"
    );
    let m = metadata(&s);
    assert_eq!(m["scopes_supported"], json!(["greet"]));
}

#[test]
fn auth_dpop_required_refuses_bearer_tokens() {
    let s = serve(&["--auth-dpop", "required", "--auth-dpop-nonce", "60"]);
    let r = post(&s, Some(&token("alice", AUDIENCE, "")), None, INIT);
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("DPoP algs=") && challenge.contains("invalid_token"),
        "{challenge}"
    );
    let m = metadata(&s);
    assert_eq!(m["dpop_bound_access_tokens_required"], true);
    assert!(vellum_serve_fails(&["--auth-dpop", "maybe"]).contains("maybe"));
}
