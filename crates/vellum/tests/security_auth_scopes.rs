//! Per-tool and per-method scopes over real loopback HTTP: a call without the scope a tool
//! declares (or the auth layer's rules name) is refused with 403 and a step-up challenge
//! before the tool runs, on both eras; the session is kept, so the stepped-up token
//! continues on it; the metadata lists every scope; `tools/list` still lists every tool;
//! `ctx.require_scope` for checks that depend on the arguments.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};
use vellum::auth::{AuthLayer, JwtVerifier};
use vellum::prelude::*;
use vellum_testkit::http::{McpHttp, Modern, TestHttpServer};

const ISSUER: &str = "http://127.0.0.1:1/issuer";
const AUDIENCE: &str = "vellum-test";
const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-scopes";

fn token(sub: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({
        "iss": ISSUER, "sub": sub, "aud": AUDIENCE, "exp": now + 600, "iat": now,
        "scope": scope,
    });
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap()
}

/// A calendar server: `read` needs nothing beyond the base scope, `delete` declares
/// `calendar:write`, `export` is given `calendar:export` by the layer, and `share` needs
/// `calendar:share` only for public links (checked by the handler). `runs` counts handler
/// runs of the scoped tools.
fn calendar(runs: Arc<AtomicUsize>) -> Server {
    let server = Server::new(Implementation::new("cal", "1.0"), ServerOptions::default());
    let counted = |name: &'static str, runs: Arc<AtomicUsize>| {
        move |_ctx: RequestContext, _req: CallToolRequest| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, HandlerError>(CallToolResult::text(name))
            }
        }
    };
    server
        .add_raw_tool(Tool::new("read", "Reads"), counted("read", runs.clone()))
        .unwrap()
        .add_raw_tool(
            Tool::new("delete", "Deletes").requires_scope("calendar:write"),
            counted("delete", runs.clone()),
        )
        .unwrap()
        .add_raw_tool(Tool::new("export", "Exports"), counted("export", runs))
        .unwrap()
        .add_raw_tool(
            Tool::new("share", "Shares"),
            |ctx: RequestContext, req: CallToolRequest| async move {
                if req.arguments["public"] == json!(true) {
                    ctx.require_scope("calendar:share")?;
                }
                Ok::<_, HandlerError>(CallToolResult::text("shared"))
            },
        )
        .unwrap();
    server
}

/// Runs of [`purge`] (only `a_macro_tool_declares_its_scopes_and_they_are_enforced` calls it).
#[cfg(feature = "macros")]
static PURGES: AtomicUsize = AtomicUsize::new(0);

/// Purges the calendar: the macro form of `requires_scope`, two scopes (both needed).
#[cfg(feature = "macros")]
#[tool(scope = "calendar:admin", scope = "calendar:write")]
async fn purge() -> String {
    PURGES.fetch_add(1, Ordering::SeqCst);
    "purged".into()
}

struct Fixture {
    mcp: TestHttpServer,
    runs: Arc<AtomicUsize>,
}

async fn start() -> Fixture {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = calendar(runs.clone());
    #[cfg(feature = "macros")]
    purge_tool().register(&server).unwrap();
    let layer_server = server.clone();
    let handler = StreamableHttpHandler::for_server(
        server,
        StreamableHttpOptions::default().json_response(true),
    );
    let mcp = TestHttpServer::start_with_layer(handler, move |url| {
        AuthLayer::builder(
            url.to_owned(),
            JwtVerifier::hs256(SECRET, ISSUER, AUDIENCE).unwrap(),
        )
        .authorization_server(ISSUER)
        .require_scope("mcp")
        .tool_scope("export", "calendar:export")
        .method_scope("prompts/list", "calendar:prompts")
        .scopes_of(&layer_server)
        .build()
        .unwrap()
    })
    .await;
    Fixture { mcp, runs }
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// A legacy session opened with `token`.
async fn legacy(f: &Fixture, token: &str) -> McpHttp {
    let mut m = McpHttp::new(&f.mcp.url);
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = m
        .builder(Method::POST)
        .bearer_auth(token)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    m.session = Some(r.headers()["mcp-session-id"].to_str().unwrap().to_owned());
    m.protocol_version = Some("2025-11-25".into());
    let r = m
        .builder(Method::POST)
        .bearer_auth(token)
        .json(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    m
}

async fn send(m: &McpHttp, token: &str, body: &Value) -> reqwest::Response {
    m.builder(Method::POST)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn send_modern(m: &Modern, token: &str, body: &Value) -> reqwest::Response {
    m.mcp
        .modern_builder(body)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()["www-authenticate"].to_str().unwrap().to_owned()
}

/// Asserts a step-up refusal naming `scope` and the metadata; returns the JSON-RPC error.
async fn assert_step_up(f: &Fixture, r: reqwest::Response, scope: &str) -> Value {
    assert_eq!(r.status(), 403);
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", f.mcp.base());
    assert_eq!(
        challenge(&r),
        format!(
            "Bearer resource_metadata=\"{metadata}\", scope=\"{scope}\", \
             error=\"insufficient_scope\", \
             error_description=\"The access token lacks a scope this request needs\""
        )
    );
    let body: Value = r.json().await.unwrap();
    body["error"].clone()
}

#[tokio::test]
async fn a_legacy_session_steps_up_to_a_tool_scope_and_keeps_its_session() {
    let f = start().await;
    let base = token("alice", "mcp");
    let m = legacy(&f, &base).await;

    // The unscoped tool runs; the scoped one is refused before it runs.
    let r = send(&m, &base, &call(1, "read", json!({}))).await;
    assert_eq!(r.status(), 200);
    let r = send(&m, &base, &call(2, "delete", json!({}))).await;
    let error = assert_step_up(&f, r, "mcp calendar:write").await;
    assert_eq!(error["data"]["error"], "insufficient_scope");
    assert_eq!(f.runs.load(Ordering::SeqCst), 1, "the refused tool ran");

    // tools/list still lists it.
    let r = send(
        &m,
        &base,
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
    )
    .await;
    let list: Value = r.json().await.unwrap();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"delete"), "{names:?}");
    assert!(
        list["result"]["tools"][1].get("requiredScopes").is_none(),
        "scopes are not on the wire"
    );

    // The stepped-up token continues on the same session.
    let up = token("alice", "mcp calendar:write");
    let r = send(&m, &up, &call(4, "delete", json!({}))).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "delete");
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);

    // The layer's rule for `export` and for a method.
    let r = send(&m, &up, &call(5, "export", json!({}))).await;
    assert_step_up(&f, r, "mcp calendar:export").await;
    let r = send(
        &m,
        &up,
        &json!({"jsonrpc":"2.0","id":6,"method":"prompts/list"}),
    )
    .await;
    assert_step_up(&f, r, "mcp calendar:prompts").await;
    let both = token("alice", "mcp calendar:export");
    let r = send(&m, &both, &call(7, "export", json!({}))).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_call_whose_tool_cannot_be_read_needs_every_tool_scope() {
    let f = start().await;
    let base = token("carol", "mcp");
    let m = legacy(&f, &base).await;
    // Two `name` keys: the scope check cannot tell which tool, so it fails closed.
    let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","name":"delete","arguments":{}}}"#;
    let r = m
        .builder(Method::POST)
        .bearer_auth(&base)
        .body(twice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let scope = challenge(&r);
    assert!(
        scope.contains("calendar:write") && scope.contains("calendar:export"),
        "{scope}"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0, "a tool ran");
}

#[tokio::test]
async fn a_modern_request_is_refused_before_the_tool_runs_and_then_steps_up() {
    let f = start().await;
    let m = Modern::new(&f.mcp.url);
    let base = token("bob", "mcp");
    let r = send_modern(
        &m,
        &base,
        &m.body(1, "tools/call", json!({"name": "delete"})),
    )
    .await;
    let error = assert_step_up(&f, r, "mcp calendar:write").await;
    assert_eq!(
        error["data"]["scope"], "calendar:write",
        "the JSON-RPC error names the call's own"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);

    let up = token("bob", "mcp calendar:write");
    let r = send_modern(&m, &up, &m.body(2, "tools/call", json!({"name": "delete"}))).await;
    assert_eq!(r.status(), 200);
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
}

#[cfg(feature = "macros")]
#[tokio::test]
async fn a_macro_tool_declares_its_scopes_and_they_are_enforced() {
    assert_eq!(
        purge_tool().tool().required_scopes,
        ["calendar:admin", "calendar:write"]
    );
    let f = start().await;
    let base = token("carol", "mcp");
    let m = legacy(&f, &base).await;
    let r = send(&m, &base, &call(1, "purge", json!({}))).await;
    assert_step_up(&f, r, "mcp calendar:admin calendar:write").await;
    // One of the two is not enough.
    let half = token("carol", "mcp calendar:admin");
    let r = send(&m, &half, &call(2, "purge", json!({}))).await;
    assert_eq!(r.status(), 403);
    assert_eq!(PURGES.load(Ordering::SeqCst), 0, "the refused tool ran");
    let up = token("carol", "mcp calendar:admin calendar:write");
    let r = send(&m, &up, &call(3, "purge", json!({}))).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "purged");
    assert_eq!(PURGES.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_metadata_lists_every_scope() {
    let f = start().await;
    vellum::transport::install_crypto_provider();
    let m: Value = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        f.mcp.base()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let mut scopes: Vec<&str> = m["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    scopes.sort_unstable();
    let mut expected = vec![
        "calendar:export",
        "calendar:prompts",
        "calendar:write",
        "mcp",
    ];
    // The macro tool's scopes (`calendar:write` is `delete`'s too: listed once).
    if cfg!(feature = "macros") {
        expected.insert(0, "calendar:admin");
    }
    assert_eq!(scopes, expected);
}

#[tokio::test]
async fn require_scope_in_a_handler_depends_on_the_arguments() {
    let f = start().await;
    let base = token("carol", "mcp");
    let m = legacy(&f, &base).await;
    let r = send(&m, &base, &call(1, "share", json!({"public": false}))).await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "shared");

    let r = send(&m, &base, &call(2, "share", json!({"public": true}))).await;
    assert_eq!(
        r.status(),
        200,
        "the handler already runs: a JSON-RPC error"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(body["error"]["data"]["error"], "insufficient_scope");
    assert_eq!(body["error"]["data"]["scope"], "calendar:share");

    let up = token("carol", "mcp calendar:share");
    let r = send(&m, &up, &call(3, "share", json!({"public": true}))).await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "shared");
}

#[tokio::test]
async fn without_an_auth_layer_a_scoped_tool_is_refused_not_assumed() {
    let runs = Arc::new(AtomicUsize::new(0));
    let srv = TestHttpServer::start(
        calendar(runs.clone()),
        StreamableHttpOptions::default().json_response(true),
    )
    .await;
    let mut m = srv.client();
    m.connect("2025-11-25").await;
    let a = m.post(&call(9, "delete", json!({}))).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.error_code(), -32600);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let a = m.post(&call(10, "read", json!({}))).await;
    assert_eq!(a.status, 200);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
