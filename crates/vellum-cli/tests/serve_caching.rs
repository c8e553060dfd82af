//! `vellum serve --list-ttl --read-ttl --cache-scope` on a real child process: the hints in
//! the 2026-07-28 results, the same as `Cache-Control` on JSON answers, and 304 for a
//! matching `If-None-Match`.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::StatusCode;
use serde_json::json;
use vellum_testkit::http::{McpHttp, modern_body};
use vellum_testkit::process::{vellum_serve, vellum_serve_fails};

#[tokio::test]
async fn the_flags_become_hints_headers_and_304() {
    let s = vellum_serve(&[
        "--json-response",
        "--list-ttl",
        "45s",
        "--read-ttl",
        "2s",
        "--cache-scope",
        "private",
    ]);
    let c = McpHttp::new(&s.mcp_url());
    let list = modern_body(json!(1), "tools/list", json!({}));
    let a = c.send(c.modern_builder(&list)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.last()["result"]["ttlMs"], 45_000);
    assert_eq!(a.last()["result"]["cacheScope"], "private");
    assert_eq!(a.header("cache-control"), Some("private, max-age=45"));
    let tag = a.header("etag").expect("an ETag").to_owned();
    let list = modern_body(json!(2), "tools/list", json!({}));
    let again = c
        .send(c.modern_builder(&list).header("if-none-match", &tag))
        .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    // The other lists follow --list-ttl.
    let prompts = c
        .send(c.modern_builder(&modern_body(json!(3), "prompts/list", json!({}))))
        .await;
    assert_eq!(prompts.header("cache-control"), Some("private, max-age=45"));
}

#[test]
fn a_bad_scope_or_ttl_is_refused_at_start() {
    let err = vellum_serve_fails(&["--cache-scope", "shared"]);
    assert!(err.contains("--cache-scope"), "{err}");
    let err = vellum_serve_fails(&["--list-ttl", "soon"]);
    assert!(err.contains("--list-ttl"), "{err}");
}
