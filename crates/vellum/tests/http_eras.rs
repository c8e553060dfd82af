//! Both protocol eras on one running handler, over real HTTP: legacy sessions and modern
//! (2026-07-28) requests interleaved on the same endpoint; the modern checks (`_meta`,
//! `MCP-Protocol-Version`, `Mcp-Method` / `Mcp-Name` with -32020, -32021, -32022, 404 for
//! unknown methods, 405 for GET/DELETE, `resultType` and cache hints); the legacy version
//! header rules and batches; the standalone GET stream.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use vellum::prelude::{CallToolRequest, CallToolResult, HandlerError, RequestContext, Tool};
use vellum::server::NoArgs;
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{
    Answer, MODERN, PROTOCOL_VERSION, SESSION_ID, Streamed, TestHttpServer, assert_rejected,
    modern_body, text_of,
};

const ALL_VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// A refusal (see `assert_rejected`) that echoes the request's id when given.
fn assert_error(a: &Answer, status: StatusCode, code: i64, id: Option<&Value>) -> Value {
    let body = assert_rejected(a, status, code);
    if let Some(id) = id {
        assert_eq!(&body["id"], id, "the id is echoed: {body}");
    }
    body
}

/// The only response of a modern answer (JSON or SSE), asserting 200.
fn modern_result(a: &Answer) -> &Value {
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    let r = a.messages.last().expect("a response");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    r
}

async fn start() -> (vellum_testkit::fixture::Fixture, TestHttpServer) {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), StreamableHttpOptions::default()).await;
    (f, srv)
}

// ---- one endpoint, both eras -------------------------------------------------------------------

#[tokio::test]
async fn legacy_sessions_and_modern_requests_interleave_on_one_handler() {
    let (_f, srv) = start().await;
    let mut legacy = srv.client();
    legacy.connect("2025-11-25").await;
    let modern = srv.client();

    for round in 0..3 {
        let d = modern.modern("server/discover", json!({})).await;
        let r = modern_result(&d);
        assert_eq!(r["result"]["supportedVersions"], json!(ALL_VERSIONS), "{r}");
        assert!(r["result"]["capabilities"]["tools"].is_object(), "{r}");
        assert!(
            r["result"]["ttlMs"].is_u64() && r["result"]["cacheScope"].is_string(),
            "{r}"
        );

        let l = legacy
            .request(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": "L"}}),
            )
            .await;
        assert_eq!(text_of(&l), "Hello World, L");
        assert!(
            l["result"].get("resultType").is_none(),
            "a legacy result with resultType: {l}"
        );

        let m = modern
            .modern(
                "tools/call",
                json!({"name": "hello_world", "arguments": {"user_name": format!("M{round}")}}),
            )
            .await;
        let r = modern_result(&m);
        assert_eq!(text_of(r), format!("Hello World, M{round}"));
        assert_eq!(
            r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "hello-world"
        );

        // Lists alternate between the eras: each gets its own shape (no shared cache leak).
        let ml = modern.modern("tools/list", json!({})).await;
        let r = modern_result(&ml);
        assert!(r["result"]["ttlMs"].is_u64(), "{r}");
        assert!(r["result"]["cacheScope"].is_string(), "{r}");
        let ll = legacy.request("tools/list", json!({})).await;
        for k in ["resultType", "ttlMs", "cacheScope"] {
            assert!(
                ll["result"].get(k).is_none(),
                "legacy tools/list has {k}: {ll}"
            );
        }
        assert_eq!(ll["result"]["tools"], r["result"]["tools"]);
    }
    assert_eq!(
        srv.handler.session_count(),
        1,
        "modern requests made sessions"
    );
}

#[tokio::test]
async fn modern_requests_ignore_session_ids() {
    let (_f, srv) = start().await;
    let mut legacy = srv.client();
    legacy.connect("2025-06-18").await;
    let session = legacy.session.clone().expect("a session");
    for sid in [session.as_str(), "no-such-session"] {
        let body = modern_body(
            json!(7),
            "tools/call",
            json!({"name": "hello_world", "arguments": {"user_name": "S"}}),
        );
        let a = legacy
            .send(legacy.modern_builder(&body).header(SESSION_ID, sid))
            .await;
        let r = modern_result(&a);
        assert_eq!(text_of(r), "Hello World, S");
        assert_eq!(
            a.header(SESSION_ID),
            None,
            "a modern answer named a session"
        );
    }
    assert!(
        legacy
            .request("ping", json!({}))
            .await
            .get("result")
            .is_some()
    );
}

#[tokio::test]
async fn modern_progress_and_logs_ride_the_requests_stream() {
    let (_f, srv) = start().await;
    let c = srv.client();
    let a = c
        .modern(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3},
                   "_meta": {"progressToken": "m", "io.modelcontextprotocol/logLevel": "info"}}),
        )
        .await;
    assert!(
        a.content_type().starts_with("text/event-stream"),
        "{}",
        a.content_type()
    );
    let progress: Vec<&Value> = a
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", a.messages);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "m"));
    assert_eq!(text_of(modern_result(&a)), "done");
    // The log level is the request's own.
    for (level, logged) in [(Some("info"), true), (Some("error"), false), (None, false)] {
        let mut meta = json!({});
        if let Some(l) = level {
            meta["io.modelcontextprotocol/logLevel"] = json!(l);
        }
        let a = c
            .modern(
                "tools/call",
                json!({"name": "log", "arguments": {"message": "hey"}, "_meta": meta}),
            )
            .await;
        let logs = a
            .messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count();
        assert_eq!(
            logs,
            usize::from(logged),
            "level {level:?}: {:?}",
            a.messages
        );
    }
}

#[tokio::test]
async fn modern_client_capabilities_are_per_request() {
    let (_f, srv) = start().await;
    let c = srv.client();
    let a = c
        .modern(
            "tools/call",
            json!({"name": "ask", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    let r = a.messages.last().expect("a response");
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(
        r["result"]["inputRequests"]["1"]["method"] == "elicitation/create",
        "{r}"
    );
}

#[tokio::test]
async fn modern_missing_client_capability_is_32021() {
    let (_f, srv) = start().await;
    let c = srv.client();
    let id = json!(41);
    let body = modern_body(
        id.clone(),
        "tools/call",
        json!({"name": "ask", "arguments": {}}),
    );
    let a = c.send(c.modern_builder(&body)).await;
    let e = assert_error(&a, StatusCode::BAD_REQUEST, -32021, Some(&id));
    assert!(
        e["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "data.requiredCapabilities names elicitation: {e}"
    );
}

// ---- modern checks ---------------------------------------------------------------------------

#[tokio::test]
async fn mcp_method_and_mcp_name_must_mirror_the_body() {
    let (_f, srv) = start().await;
    let c = srv.client();
    let id = json!("req-1");
    let call = modern_body(
        id.clone(),
        "tools/call",
        json!({"name": "hello_world", "arguments": {"user_name": "H"}}),
    );
    let ok: [&[(&str, Option<&str>)]; 5] = [
        &[],
        &[("mcp-method", Some("=?base64?dG9vbHMvY2FsbA==?="))],
        &[("mcp-name", Some("=?base64?aGVsbG9fd29ybGQ=?="))],
        &[("mcp-method", Some("tools/call \t"))],
        &[("mcp-name", Some("\thello_world "))],
    ];
    for h in ok {
        let a = c.modern_with(&call, h).await;
        assert_eq!(text_of(modern_result(&a)), "Hello World, H", "{h:?}");
    }
    let bad: [&[(&str, Option<&str>)]; 7] = [
        &[("mcp-method", None)],
        &[("mcp-method", Some("tools/list"))],
        &[("mcp-method", Some("=?base64?dG9vbHMvbGlzdA==?="))],
        &[("mcp-method", Some("=?base64?not base64?="))],
        &[("mcp-name", None)],
        &[("mcp-name", Some("add"))],
        &[("mcp-name", Some("Hello_World"))],
    ];
    for h in bad {
        let a = c.modern_with(&call, h).await;
        assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&id));
    }
    // A non-ASCII name travels base64-encoded.
    let prompt = modern_body(
        id.clone(),
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Zoë"}}),
    );
    let a = c.modern_with(&prompt, &[]).await;
    modern_result(&a);
    let a = c.modern_with(&prompt, &[("mcp-name", Some("grete"))]).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&id));
    // resources/read mirrors the uri.
    let read = modern_body(
        id.clone(),
        "resources/read",
        json!({"uri": "test://greeting"}),
    );
    let a = c.modern_with(&read, &[]).await;
    modern_result(&a);
    let a = c
        .modern_with(&read, &[("mcp-name", Some("test://other"))])
        .await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&id));
    let a = c
        .modern_with(
            &read,
            &[("mcp-name", Some("=?base64?dGVzdDovL2dyZWV0aW5n?="))],
        )
        .await;
    modern_result(&a);
    // Methods without a name need no Mcp-Name; notifications need Mcp-Method too.
    let list = modern_body(id.clone(), "tools/list", json!({}));
    modern_result(&c.modern_with(&list, &[("mcp-name", None)]).await);
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let a = c.modern_with(&note, &[]).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.text());
    assert!(a.body.is_empty());
    let a = c.modern_with(&note, &[("mcp-method", None)]).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32020, None);
}

/// A server with one tool whose `region` argument is mirrored into `Mcp-Param-Region`.
fn header_server() -> vellum::server::Server {
    use vellum::prelude::{Implementation, Server, ServerOptions};
    let s = Server::new(
        Implementation::new("headers", "1"),
        ServerOptions::default(),
    );
    let schema = json!({"type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                       "count": {"type": "integer", "x-mcp-header": "Count"}},
        "required": ["region"]});
    let tool = Tool::new("route", "Routes by region")
        .with_input_schema(schema.as_object().unwrap().clone());
    s.add_tool(
        tool,
        |_ctx: RequestContext, req: CallToolRequest, _: Value| async move {
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "routed {}",
                req.arguments["region"]
            )))
        },
    )
    .unwrap();
    s
}

/// SEP-2243 on the server: each `Mcp-Param-*` header of an `x-mcp-header` argument is checked
/// against the body before the handler runs (Base64 decoded strictly, invalid characters and
/// a missing, unexpected or different value refused with -32020 and HTTP 400), in SSE and
/// JSON response modes; legacy sessions are not concerned.
#[tokio::test]
async fn modern_param_headers_must_mirror_their_arguments() {
    for json_mode in [false, true] {
        let srv = TestHttpServer::start(
            header_server(),
            StreamableHttpOptions::default().json_response(json_mode),
        )
        .await;
        let c = srv.client();
        let call = |region: &str, count: Option<i64>| {
            let mut args = json!({"region": region});
            if let Some(n) = count {
                args["count"] = json!(n);
            }
            modern_body(
                json!(1),
                "tools/call",
                json!({"name": "route", "arguments": args}),
            )
        };
        let send = |body: Value, headers: Vec<(&'static str, &'static [u8])>| {
            let mut b = c.modern_builder(&body);
            for (h, v) in headers {
                b = b.header(h, reqwest::header::HeaderValue::from_bytes(v).unwrap());
            }
            c.send(b)
        };
        let ok = |a: &Answer| {
            assert_eq!(a.status, StatusCode::OK, "{}", a.text());
            assert!(
                a.messages.last().unwrap()["result"].is_object(),
                "{}",
                a.text()
            );
        };
        let region = "mcp-param-region";
        ok(&send(call("Hello", None), vec![(region, b"=?base64?SGVsbG8=?=")]).await);
        ok(&send(call("Hello", None), vec![(region, b"Hello")]).await);
        ok(&send(call("SGVsbG8=", None), vec![(region, b"SGVsbG8=")]).await);
        ok(&send(
            call("=?base64?SGVsbG8=", None),
            vec![(region, b"=?base64?SGVsbG8=")],
        )
        .await);
        ok(&send(
            call("eu", Some(42)),
            vec![(region, b"eu"), ("mcp-param-count", b"42")],
        )
        .await);
        let refused = [
            (
                call("Hello", None),
                vec![(region, &b"=?base64?SGVsbG8?="[..])],
            ),
            (
                call("Hello", None),
                vec![(region, &b"=?base64?SGVs!!!bG8=?="[..])],
            ),
            (call("Hello", None), vec![(region, &b"Hell\xc3\xa9"[..])]),
            (call("Hello", None), vec![(region, &b"Bye"[..])]),
            (call("test-value", None), vec![]),
            (
                call("eu", None),
                vec![(region, &b"eu"[..]), ("mcp-param-count", &b"1"[..])],
            ),
            (
                call("eu", Some(2)),
                vec![(region, &b"eu"[..]), ("mcp-param-count", &b"3"[..])],
            ),
            (
                call("eu", None),
                vec![(region, &b"eu"[..]), (region, &b"eu"[..])],
            ),
        ];
        for (body, headers) in refused {
            let what = format!("{headers:?}");
            let a = send(body, headers).await;
            assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&json!(1)));
            assert!(a.content_type().starts_with("application/json"), "{what}");
        }
    }
    // A legacy session sends no Mcp-Param-* headers: nothing to check.
    let srv = TestHttpServer::start(header_server(), StreamableHttpOptions::default()).await;
    let mut legacy = srv.client();
    legacy.connect("2025-11-25").await;
    let r = legacy
        .request(
            "tools/call",
            json!({"name": "route", "arguments": {"region": "eu"}}),
        )
        .await;
    assert_eq!(text_of(&r), "routed \"eu\"");
}

#[test]
fn invalid_param_header_annotations_are_refused_at_registration() {
    use vellum::prelude::{Implementation, Server, ServerOptions};
    let s = Server::new(
        Implementation::new("headers", "1"),
        ServerOptions::default(),
    );
    for schema in [
        json!({"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "bad name"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                               "b": {"type": "string", "x-mcp-header": "a"}}}),
    ] {
        let tool = Tool::new("t", "t").with_input_schema(schema.as_object().unwrap().clone());
        let r = s.add_tool(
            tool,
            |_ctx: RequestContext, _req: CallToolRequest, _: Value| async move {
                Ok::<_, HandlerError>(CallToolResult::text("x"))
            },
        );
        assert!(
            r.is_err_and(|e| e.is_registration() && e.is_param_header()),
            "{schema}"
        );
    }
}

#[tokio::test]
async fn modern_version_header_rules() {
    let (_f, srv) = start().await;
    let c = srv.client();
    let id = json!(9);
    let call = modern_body(id.clone(), "tools/list", json!({}));
    // `_meta` names the version but the header is missing, or differs.
    let a = c.modern_with(&call, &[(PROTOCOL_VERSION, None)]).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&id));
    let a = c
        .modern_with(&call, &[(PROTOCOL_VERSION, Some("2026-07-29"))])
        .await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&id));
    // A modern version this server does not speak.
    let mut future = call.clone();
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let a = c
        .modern_with(&future, &[(PROTOCOL_VERSION, Some("2099-01-01"))])
        .await;
    let e = assert_error(&a, StatusCode::BAD_REQUEST, -32022, Some(&id));
    assert_eq!(e["error"]["data"]["supported"], json!(ALL_VERSIONS), "{e}");
    assert_eq!(e["error"]["data"]["requested"], "2099-01-01", "{e}");
    // The header alone, with a legacy-shaped body: still modern, so `_meta` is missing.
    let bare = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let a = c.modern_with(&bare, &[]).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32602, Some(&id));
    let mut no_caps = call.clone();
    no_caps["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let a = c.modern_with(&no_caps, &[]).await;
    let e = assert_error(&a, StatusCode::BAD_REQUEST, -32602, Some(&id));
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities"),
        "{e}"
    );
}

#[tokio::test]
async fn a_legacy_header_or_a_session_makes_a_request_legacy_whatever_its_meta() {
    let (_f, srv) = start().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let body = modern_body(
        json!(3),
        "tools/call",
        json!({"name": "hello_world", "arguments": {"user_name": "Old"}}),
    );
    // In the session, with its version header or without one: served as legacy.
    for version in [Some("2025-11-25"), None] {
        let mut b = c.clone();
        b.protocol_version = version.map(str::to_owned);
        let a = b.post(&body).await;
        assert_eq!(a.status, StatusCode::OK, "{version:?}: {}", a.text());
        let r = a.messages.last().expect("a response");
        assert_eq!(text_of(r), "Hello World, Old");
        assert!(r["result"].get("resultType").is_none(), "{version:?}: {r}");
    }
    // A legacy header without a session: a legacy request that needs one.
    let mut stranger = srv.client();
    stranger.protocol_version = Some("2025-11-25".into());
    let a = stranger.post(&body).await;
    assert_rejected(&a, StatusCode::BAD_REQUEST, -32600);
    // Neither: `_meta` decides, and the version header is then required.
    stranger.protocol_version = None;
    let a = stranger.post(&body).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32020, Some(&json!(3)));
}

#[tokio::test]
async fn modern_unknown_and_legacy_only_methods_are_404() {
    let (_f, srv) = start().await;
    let c = srv.client();
    for method in [
        "no/such",
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        let id = json!(method);
        let mut params = json!({});
        if method == "resources/subscribe" {
            params = json!({"uri": "test://greeting"});
        }
        if method == "logging/setLevel" {
            params = json!({"level": "info"});
        }
        let body = modern_body(id.clone(), method, params);
        let a = c.send(c.modern_builder(&body)).await;
        assert_error(&a, StatusCode::NOT_FOUND, -32601, Some(&id));
    }
    // Unknown tools and resources are -32602 / -32002 with their own statuses.
    let id = json!(3);
    let body = modern_body(
        id.clone(),
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    );
    let a = c.send(c.modern_builder(&body)).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32602, Some(&id));
}

/// SEP-2575's statuses hold with `json_response` too: the JSON path once answered 200.
#[tokio::test]
async fn modern_error_statuses_hold_in_json_response_mode() {
    let f = test_server();
    let srv = TestHttpServer::start(
        f.server.clone(),
        StreamableHttpOptions::default().json_response(true),
    )
    .await;
    let c = srv.client();
    for method in ["no/such", "ping"] {
        let id = json!(method);
        let a = c
            .send(c.modern_builder(&modern_body(id.clone(), method, json!({}))))
            .await;
        assert_error(&a, StatusCode::NOT_FOUND, -32601, Some(&id));
    }
    let id = json!(7);
    let ask = modern_body(
        id.clone(),
        "tools/call",
        json!({"name": "ask", "arguments": {}}),
    );
    let a = c.send(c.modern_builder(&ask)).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32021, Some(&id));
    let nope = modern_body(
        id.clone(),
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    );
    let a = c.send(c.modern_builder(&nope)).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32602, Some(&id));
}

#[tokio::test]
async fn modern_get_and_delete_are_405() {
    let (_f, srv) = start().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    for method in [Method::GET, Method::DELETE] {
        let a = c
            .send(
                c.http
                    .request(method.clone(), &c.url)
                    .header(PROTOCOL_VERSION, MODERN)
                    .header(SESSION_ID, c.session.clone().unwrap())
                    .header("accept", "text/event-stream"),
            )
            .await;
        assert_error(&a, StatusCode::METHOD_NOT_ALLOWED, -32600, None);
        assert_eq!(a.header("allow"), Some("POST"), "{method}");
    }
    // The legacy session is untouched.
    assert_eq!(srv.handler.session_count(), 1);
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn modern_batches_and_responses_are_refused() {
    let (_f, srv) = start().await;
    let c = srv.client();
    let one = modern_body(json!(1), "tools/list", json!({}));
    let batch = json!([one, modern_body(json!(2), "tools/list", json!({}))]);
    let a = c
        .send(c.modern_builder(&batch).header("mcp-method", "tools/list"))
        .await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32600, None);
    let response = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
    let a = c.send(c.modern_builder(&response)).await;
    assert_error(&a, StatusCode::BAD_REQUEST, -32600, None);
}

// ---- legacy version header -------------------------------------------------------------------

#[tokio::test]
async fn legacy_version_header_rules_and_batches() {
    let (_f, srv) = start().await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let list = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let batch = json!([list(1), list(2)]);

    // The negotiated header, and no header at all (the session's version) both serve.
    let a = c.post(&list(3)).await;
    assert_eq!(a.status, StatusCode::OK);
    let mut bare = c.clone();
    bare.protocol_version = None;
    let a = bare.post(&list(4)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    // Batches pass with 2025-03-26 only; without the header the session's 2025-06-18
    // decides, which has none.
    for (v, ok) in [
        (None, false),
        (Some("2025-03-26"), true),
        (Some("2025-06-18"), false),
        (Some("2025-11-25"), false),
    ] {
        let mut b = c.clone();
        b.protocol_version = v.map(str::to_owned);
        let a = b.post(&batch).await;
        if ok {
            assert_eq!(a.status, StatusCode::OK, "{v:?}: {}", a.text());
            assert_eq!(a.messages.len(), 2, "{v:?}: {:?}", a.messages);
        } else {
            assert_error(&a, StatusCode::BAD_REQUEST, -32600, None);
        }
    }
    // An unsupported legacy version: 400 naming the supported ones.
    for v in ["2024-11-05", "2025-01-01", "1999-01-01"] {
        let mut b = c.clone();
        b.protocol_version = Some(v.to_owned());
        let a = b.post(&list(5)).await;
        let e = assert_error(&a, StatusCode::BAD_REQUEST, -32600, None);
        assert_eq!(e["error"]["data"]["requested"], v, "{e}");
        assert_eq!(e["error"]["data"]["supported"], json!(ALL_VERSIONS), "{e}");
    }
}

// ---- the standalone GET stream ------------------------------------------------------------------

#[tokio::test]
async fn one_standalone_stream_at_a_time() {
    let (_f, srv) = start().await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let mut first = c.listen().await;
    first.next_block().await.expect("the opening comment");
    let second = c.get_stream(None).await.expect_whole("a second GET");
    assert_error(&second, StatusCode::CONFLICT, -32600, None);
    // Other sessions have their own.
    let mut other = srv.client();
    other.connect("2025-11-25").await;
    let _theirs = other.listen().await;
    // Once the first is gone, a new one may open.
    drop(first);
    let deadline = tokio::time::Instant::now() + vellum_testkit::DEADLINE;
    loop {
        match c.get_stream(None).await {
            Streamed::Stream(_) => break,
            Streamed::Whole(a) if a.status == StatusCode::CONFLICT => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "still 409 after the drop"
                );
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            Streamed::Whole(a) => panic!("{} {}", a.status, a.text()),
        }
    }
}

#[tokio::test]
async fn the_standalone_stream_announces_tools_added_at_run_time() {
    let (f, srv) = start().await;
    let mut c = srv.client();
    c.connect("2025-06-18").await;
    let mut g = c.listen().await;
    g.next_block().await.expect("the opening comment");
    f.server
        .add_tool(
            Tool::new("late", "Added while a client listens"),
            |_ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                Ok::<_, HandlerError>(CallToolResult::text("late"))
            },
        )
        .expect("the tool registers");
    let m = g.next_message().await.expect("a notification").json();
    assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
    let list = c.request("tools/list", json!({})).await;
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "late"),
        "{list}"
    );
}
