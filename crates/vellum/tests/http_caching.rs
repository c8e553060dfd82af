//! HTTP caching of 2026-07-28 results over real HTTP: a JSON answer of a list or of
//! `resources/read` carries `Cache-Control` from its `ttlMs`/`cacheScope` and a strong
//! `ETag`; `If-None-Match` with that tag gets 304 and no body, until the list changes; the
//! legacy era, SSE answers and errors carry no caching headers.
//!
//! One server for the whole file (each test its own handler on it is not needed: the
//! tests that change the server add tools nobody else lists).

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::StatusCode;
use serde_json::{Value, json};
use vellum::protocol::{CacheHint, CacheScope, Tool};
use vellum::server::ServerOptions;
use vellum::server::{Cached, CallToolRequest, HandlerError, NoArgs, RequestContext, Server};
use vellum::transport::http::StreamableHttpOptions;
use vellum_testkit::fixture::test_server_with;
use vellum_testkit::http::{Answer, McpHttp, TestHttpServer, modern_body};

fn hint(ttl_ms: u64, scope: CacheScope) -> CacheHint {
    CacheHint { ttl_ms, scope }
}

/// The fixture server with a 30 s public `tools/list` and a 5 s private `resources/read`,
/// served with JSON answers.
async fn start() -> (Server, TestHttpServer) {
    let options = ServerOptions::default()
        .with_cache_hint(Cached::ToolsList, hint(30_000, CacheScope::Public))
        .with_cache_hint(Cached::ResourcesRead, hint(5_500, CacheScope::Private));
    let server = test_server_with(options).server;
    let mut o = StreamableHttpOptions::default();
    o.json_response = true;
    let srv = TestHttpServer::start(server.clone(), o).await;
    (server, srv)
}

/// A modern request, with `If-None-Match` when given.
async fn modern(c: &McpHttp, method: &str, params: Value, if_none_match: Option<&str>) -> Answer {
    let body = modern_body(json!(c.next_id()), method, params);
    let mut b = c.modern_builder(&body);
    if let Some(tag) = if_none_match {
        b = b.header("if-none-match", tag);
    }
    c.send(b).await
}

fn etag(a: &Answer) -> String {
    a.header("etag")
        .unwrap_or_else(|| panic!("no ETag: {:?}", a.headers))
        .to_owned()
}

#[tokio::test]
async fn a_list_carries_its_hints_as_cache_control_and_a_strong_etag() {
    let (_server, srv) = start().await;
    let c = srv.client();
    let a = modern(&c, "tools/list", json!({}), None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.content_type(), "application/json");
    assert_eq!(a.header("cache-control"), Some("public, max-age=30"));
    let tag = etag(&a);
    assert!(
        tag.starts_with('"') && tag.ends_with('"') && tag.len() > 10,
        "{tag}"
    );
    // The body says the same as the headers.
    let result = &a.last()["result"];
    assert_eq!(result["ttlMs"], 30_000);
    assert_eq!(result["cacheScope"], "public");
    // Another request (another id) of the same list has the same tag.
    let again = modern(&c, "tools/list", json!({}), None).await;
    assert_eq!(etag(&again), tag);
    // The other lists keep the default hints: stale at once, public.
    let prompts = modern(&c, "prompts/list", json!({}), None).await;
    assert_eq!(prompts.header("cache-control"), Some("public, max-age=0"));
    etag(&prompts);
    for method in ["resources/list", "resources/templates/list"] {
        let a = modern(&c, method, json!({}), None).await;
        assert_eq!(
            a.header("cache-control"),
            Some("public, max-age=0"),
            "{method}"
        );
    }
}

#[tokio::test]
async fn if_none_match_gets_304_until_the_list_changes() {
    let (server, srv) = start().await;
    let c = srv.client();
    let first = modern(&c, "tools/list", json!({}), None).await;
    let tag = etag(&first);

    for line in [tag.clone(), format!("\"other\", W/{tag}"), "*".to_owned()] {
        let a = modern(&c, "tools/list", json!({}), Some(&line)).await;
        assert_eq!(a.status, StatusCode::NOT_MODIFIED, "{line}: {}", a.text());
        assert!(a.body.is_empty(), "{line}: a 304 has no body: {}", a.text());
        assert_eq!(a.header("etag"), Some(tag.as_str()));
        assert_eq!(a.header("cache-control"), Some("public, max-age=30"));
    }
    let miss = modern(&c, "tools/list", json!({}), Some("\"not-it\"")).await;
    assert_eq!(miss.status, StatusCode::OK);
    assert_eq!(etag(&miss), tag);

    server
        .add_tool(
            Tool::new("cache_probe_new", "Added to change the list"),
            |_ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                Ok::<_, HandlerError>("new")
            },
        )
        .unwrap();
    let changed = modern(&c, "tools/list", json!({}), Some(&tag)).await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text());
    let new_tag = etag(&changed);
    assert_ne!(new_tag, tag);
    let names: Vec<&str> = changed.last()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"cache_probe_new"), "{names:?}");
    let revalidated = modern(&c, "tools/list", json!({}), Some(&new_tag)).await;
    assert_eq!(revalidated.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_read_is_private_and_each_resource_has_its_tag() {
    let (_server, srv) = start().await;
    let c = srv.client();
    let greeting = modern(
        &c,
        "resources/read",
        json!({"uri": "test://greeting"}),
        None,
    )
    .await;
    assert_eq!(greeting.status, StatusCode::OK, "{}", greeting.text());
    assert_eq!(greeting.header("cache-control"), Some("private, max-age=5"));
    let item = modern(&c, "resources/read", json!({"uri": "test://items/7"}), None).await;
    assert_ne!(etag(&item), etag(&greeting));
    let tag = etag(&item);
    let again = modern(
        &c,
        "resources/read",
        json!({"uri": "test://items/7"}),
        Some(&tag),
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    // Another resource does not match this tag.
    let other = modern(
        &c,
        "resources/read",
        json!({"uri": "test://items/8"}),
        Some(&tag),
    )
    .await;
    assert_eq!(other.status, StatusCode::OK);
    assert!(other.text().contains("item 8"), "{}", other.text());
}

#[tokio::test]
async fn errors_legacy_answers_and_sse_answers_carry_no_caching_headers() {
    let (server, srv) = start().await;
    let c = srv.client();
    // An error of a cacheable method.
    let missing = modern(
        &c,
        "resources/read",
        json!({"uri": "test://nope"}),
        Some("*"),
    )
    .await;
    assert_ne!(
        missing.status,
        StatusCode::NOT_MODIFIED,
        "{}",
        missing.text()
    );
    assert!(missing.last().get("error").is_some(), "{}", missing.text());
    assert_eq!(missing.header("etag"), None);
    assert_eq!(missing.header("cache-control"), None);
    // Not a cacheable method.
    let call = modern(
        &c,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        Some("*"),
    )
    .await;
    assert_eq!(call.status, StatusCode::OK, "{}", call.text());
    assert_eq!(call.header("etag"), None);

    // The legacy era: a 2025-11-25 session's list, asked with a tag that would match anything.
    let mut legacy = srv.client();
    legacy.connect("2025-11-25").await;
    let list = json!({"jsonrpc": "2.0", "id": 50, "method": "tools/list"});
    let a = legacy
        .send(
            legacy
                .builder(reqwest::Method::POST)
                .header("if-none-match", "*")
                .body(list.to_string()),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert!(a.last()["result"]["tools"].is_array(), "{}", a.text());
    assert_eq!(a.last()["result"].get("ttlMs"), None);
    assert_eq!(a.header("etag"), None);
    assert_eq!(a.header("cache-control"), None);

    // An SSE answer (the handler's default when the client accepts both) is left alone.
    let sse = TestHttpServer::start(server, StreamableHttpOptions::default()).await;
    let s = sse.client();
    let a = modern(&s, "tools/list", json!({}), Some("*")).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type(), "text/event-stream");
    assert_eq!(a.header("etag"), None);
    assert_ne!(a.header("cache-control"), Some("public, max-age=30"));
}
