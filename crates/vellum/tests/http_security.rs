//! The request checks that run before anything else, over real HTTP on a loopback listener:
//! localhost (DNS-rebinding) protection, cross-origin protection (`Sec-Fetch-Site`,
//! `Origin`, trusted origins, bypass prefixes, the spec's rule on a foreign `Origin` in every
//! mode), and CORS for trusted origins.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use vellum::transport::http::{CrossOriginProtection, StreamableHttpOptions};

use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{ACCEPT_BOTH, Answer, McpHttp, TestHttpServer};

const TRUSTED: &str = "http://app.test:3000";

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string()
}

/// A request with exactly these extra headers (an `initialize` body for POST).
async fn send(c: &McpHttp, method: Method, headers: &[(&str, &str)]) -> Answer {
    let mut b = c.http.request(method.clone(), &c.url);
    if method == Method::POST {
        b = b
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .body(initialize_body());
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    c.send(b).await
}

fn assert_forbidden(a: &Answer, what: &str) {
    assert_eq!(a.status, StatusCode::FORBIDDEN, "{what}: {}", a.text());
    assert_eq!(a.content_type(), "application/json", "{what}");
    let body: Value = serde_json::from_slice(&a.body).expect("a JSON-RPC error body");
    assert_eq!(body["error"]["code"], -32600, "{what}: {body}");
}

fn with_origin_policy(p: CrossOriginProtection) -> StreamableHttpOptions {
    let mut o = StreamableHttpOptions::default();
    o.cross_origin_protection = Some(p);
    o
}

fn trusting(mut p: CrossOriginProtection) -> CrossOriginProtection {
    p.add_trusted_origin(TRUSTED).expect("a valid origin");
    p
}

type Headers<'a> = &'a [(&'a str, &'a str)];

/// POSTs with each header set of `pass` (expecting 200) and of `refuse` (expecting 403).
async fn origin_matrix(c: &McpHttp, pass: &[Headers<'_>], refuse: &[Headers<'_>]) {
    for h in pass {
        let a = send(c, Method::POST, h).await;
        assert_eq!(a.status, StatusCode::OK, "{h:?}: {}", a.text());
    }
    for h in refuse {
        let a = send(c, Method::POST, h).await;
        assert_forbidden(&a, &format!("{h:?}"));
    }
}

// ---- localhost protection ------------------------------------------------------------------

#[tokio::test]
async fn localhost_protection_checks_the_host_of_loopback_requests() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let port = srv.addr.port();
    let c = srv.client();
    let pass = [
        "localhost".to_owned(),
        format!("localhost:{port}"),
        "127.0.0.1".to_owned(),
        format!("127.0.0.1:{port}"),
        "[::1]".to_owned(),
        format!("[::1]:{port}"),
    ];
    for host in &pass {
        let a = send(&c, Method::POST, &[("host", host)]).await;
        assert_eq!(a.status, StatusCode::OK, "Host {host}: {}", a.text());
    }
    let refuse = [
        "evil.com".to_owned(),
        format!("evil.com:{port}"),
        "localhost.evil.com".to_owned(),
        format!("localhost.evil.com:{port}"),
        "127.0.0.1.evil.com".to_owned(),
    ];
    for host in &refuse {
        let a = send(&c, Method::POST, &[("host", host)]).await;
        assert_forbidden(&a, &format!("Host {host}"));
        // Every method: the check runs first.
        let a = send(&c, Method::GET, &[("host", host)]).await;
        assert_forbidden(&a, &format!("GET with Host {host}"));
    }
    assert_eq!(
        srv.handler.session_count(),
        pass.len(),
        "a refused request made a session"
    );
}

/// A reverse proxy on the same machine forwards with its public name: the allowed hosts
/// pass on a loopback connection (any port, any case), nothing else does.
#[tokio::test]
async fn allowed_hosts_pass_on_loopback_and_nothing_else_does() {
    let f = test_server();
    let o = StreamableHttpOptions::default().allow_host("mcp.example.com");
    let srv = TestHttpServer::start(f.server, o).await;
    let c = srv.client();
    for host in ["mcp.example.com", "MCP.Example.Com:443", "localhost"] {
        let a = send(&c, Method::POST, &[("host", host)]).await;
        assert_eq!(a.status, StatusCode::OK, "Host {host}: {}", a.text());
    }
    for host in ["evil.com", "mcp.example.com.evil.com", "example.com"] {
        let a = send(&c, Method::POST, &[("host", host)]).await;
        assert_forbidden(&a, &format!("Host {host}"));
    }
}

#[tokio::test]
async fn disabled_localhost_protection_accepts_any_host() {
    let f = test_server();
    let mut o = StreamableHttpOptions::default();
    o.disable_localhost_protection = true;
    let srv = TestHttpServer::start(f.server, o).await;
    let c = srv.client();
    for host in ["evil.com", "localhost.evil.com:8000", "localhost"] {
        let a = send(&c, Method::POST, &[("host", host)]).await;
        assert_eq!(a.status, StatusCode::OK, "Host {host}: {}", a.text());
    }
}

// ---- cross-origin protection ----------------------------------------------------------------

#[tokio::test]
async fn cross_origin_protection_by_default() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let same = format!("http://{}", srv.addr);
    let c = srv.client();
    let pass: [Headers<'_>; 5] = [
        &[],
        &[("origin", &same)],
        &[("sec-fetch-site", "same-origin")],
        &[("sec-fetch-site", "none")],
        &[("origin", &same), ("sec-fetch-site", "same-origin")],
    ];
    let refuse: [Headers<'_>; 7] = [
        &[("origin", "http://evil.com")],
        &[("origin", "null")],
        &[("origin", TRUSTED)],
        &[("sec-fetch-site", "cross-site")],
        &[("sec-fetch-site", "same-site")],
        &[("origin", &same), ("sec-fetch-site", "cross-site")],
        // Same host, other scheme or port: another origin.
        &[("origin", "http://127.0.0.1:1")],
    ];
    origin_matrix(&c, &pass, &refuse).await;
    // Safe methods skip Sec-Fetch-Site, but a foreign Origin is refused on any method.
    let a = send(&c, Method::GET, &[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(
        a.status,
        StatusCode::BAD_REQUEST,
        "GET passes the origin check: {}",
        a.text()
    );
    let a = send(&c, Method::GET, &[("origin", "http://evil.com")]).await;
    assert_forbidden(&a, "GET with a foreign Origin");
    let a = send(&c, Method::DELETE, &[("sec-fetch-site", "cross-site")]).await;
    assert_forbidden(&a, "DELETE with Sec-Fetch-Site: cross-site");
}

#[tokio::test]
async fn trusted_origins_pass_cross_origin_protection() {
    let f = test_server();
    let srv = TestHttpServer::start(
        f.server,
        with_origin_policy(trusting(CrossOriginProtection::default())),
    )
    .await;
    let pass: [Headers<'_>; 2] = [
        &[("origin", TRUSTED)],
        &[("origin", TRUSTED), ("sec-fetch-site", "cross-site")],
    ];
    let refuse: [Headers<'_>; 3] = [
        &[("origin", "http://app.test:3001")],
        &[("origin", "https://app.test:3000")],
        &[
            ("origin", "http://evil.com"),
            ("sec-fetch-site", "cross-site"),
        ],
    ];
    origin_matrix(&srv.client(), &pass, &refuse).await;
}

#[tokio::test]
async fn bypass_prefixes_skip_sec_fetch_site_but_not_the_origin_rule() {
    let f = test_server();
    let mut p = CrossOriginProtection::default();
    p.add_insecure_bypass_prefix("/open");
    let srv = TestHttpServer::start(f.server, with_origin_policy(p)).await;
    let open = McpHttp::new(&format!("http://{}/open/mcp", srv.addr));
    let a = send(&open, Method::POST, &[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    let a = send(&open, Method::POST, &[("origin", "http://evil.com")]).await;
    assert_forbidden(&a, "a foreign Origin on a bypassed path");
    let a = send(
        &srv.client(),
        Method::POST,
        &[("sec-fetch-site", "cross-site")],
    )
    .await;
    assert_forbidden(&a, "Sec-Fetch-Site: cross-site off the bypassed path");
}

#[tokio::test]
async fn disabled_cross_origin_protection_still_refuses_a_foreign_origin() {
    let f = test_server();
    let srv = TestHttpServer::start(
        f.server,
        with_origin_policy(trusting(CrossOriginProtection::disabled())),
    )
    .await;
    let same = format!("http://{}", srv.addr);
    let pass: [Headers<'_>; 4] = [
        &[],
        &[("sec-fetch-site", "cross-site")],
        &[("origin", &same)],
        &[("origin", TRUSTED), ("sec-fetch-site", "cross-site")],
    ];
    let refuse: [Headers<'_>; 3] = [
        &[("origin", "http://evil.com")],
        &[("origin", "null")],
        &[
            ("origin", "http://evil.com"),
            ("sec-fetch-site", "same-origin"),
        ],
    ];
    origin_matrix(&srv.client(), &pass, &refuse).await;
}

// ---- CORS --------------------------------------------------------------------------------------

fn header_list(a: &Answer, name: &str) -> Vec<String> {
    a.headers
        .get_all(name)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("").split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

fn cors_options() -> StreamableHttpOptions {
    let mut o = with_origin_policy(trusting(CrossOriginProtection::default()));
    o.cors = true;
    o
}

#[tokio::test]
async fn cors_preflight_from_a_trusted_origin() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, cors_options()).await;
    let c = srv.client();
    let a = send(
        &c,
        Method::OPTIONS,
        &[
            ("origin", TRUSTED),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type, mcp-session-id, mcp-protocol-version",
            ),
        ],
    )
    .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.text());
    assert_eq!(a.header("access-control-allow-origin"), Some(TRUSTED));
    let methods = header_list(&a, "access-control-allow-methods");
    for m in ["get", "post", "delete"] {
        assert!(
            methods.contains(&m.to_owned()),
            "{m} not allowed: {methods:?}"
        );
    }
    let allowed = header_list(&a, "access-control-allow-headers");
    for h in ["content-type", "mcp-session-id", "mcp-protocol-version"] {
        assert!(
            allowed.contains(&h.to_owned()),
            "{h} not allowed: {allowed:?}"
        );
    }
    let exposed = header_list(&a, "access-control-expose-headers");
    assert!(
        exposed.contains(&"mcp-session-id".to_owned()),
        "{exposed:?}"
    );

    // Without a list of request headers, the MCP headers are allowed.
    let a = send(
        &c,
        Method::OPTIONS,
        &[
            ("origin", TRUSTED),
            ("access-control-request-method", "POST"),
        ],
    )
    .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let allowed = header_list(&a, "access-control-allow-headers");
    for h in [
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ] {
        assert!(
            allowed.contains(&h.to_owned()),
            "{h} not allowed: {allowed:?}"
        );
    }
}

#[tokio::test]
async fn cors_responses_to_a_trusted_origin_expose_the_session_id() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, cors_options()).await;
    let c = srv.client();
    let a = send(
        &c,
        Method::POST,
        &[("origin", TRUSTED), ("sec-fetch-site", "cross-site")],
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert!(a.header("mcp-session-id").is_some());
    assert_eq!(a.header("access-control-allow-origin"), Some(TRUSTED));
    let exposed = header_list(&a, "access-control-expose-headers");
    assert!(
        exposed.contains(&"mcp-session-id".to_owned()),
        "{exposed:?}"
    );
    assert!(header_list(&a, "vary").contains(&"origin".to_owned()));
    // Refusals too, so the page can read why.
    let a = send(
        &c,
        Method::GET,
        &[("origin", TRUSTED), ("accept", "text/event-stream")],
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.text());
    assert_eq!(a.header("access-control-allow-origin"), Some(TRUSTED));
}

#[tokio::test]
async fn cors_gives_nothing_to_an_untrusted_origin() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, cors_options()).await;
    let c = srv.client();
    for method in [Method::OPTIONS, Method::POST] {
        let a = send(
            &c,
            method.clone(),
            &[
                ("origin", "http://evil.com"),
                ("access-control-request-method", "POST"),
            ],
        )
        .await;
        assert_forbidden(&a, &format!("{method} from an untrusted origin"));
        for h in [
            "access-control-allow-origin",
            "access-control-expose-headers",
        ] {
            assert_eq!(a.header(h), None, "{method}: {h}");
        }
    }
}

#[tokio::test]
async fn without_cors_there_are_no_preflights_or_cors_headers() {
    let f = test_server();
    let srv = TestHttpServer::start(
        f.server,
        with_origin_policy(trusting(CrossOriginProtection::default())),
    )
    .await;
    let c = srv.client();
    let a = send(
        &c,
        Method::OPTIONS,
        &[
            ("origin", TRUSTED),
            ("access-control-request-method", "POST"),
        ],
    )
    .await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{}", a.text());
    assert_eq!(a.header("allow"), Some("GET, POST, DELETE"));
    assert_eq!(a.header("access-control-allow-origin"), None);
    let a = send(&c, Method::POST, &[("origin", TRUSTED)]).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.header("access-control-allow-origin"), None);
    assert_eq!(a.header("access-control-expose-headers"), None);
}
