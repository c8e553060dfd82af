//! `vellum serve` flags, each checked on a real child process over loopback HTTP (or its
//! Unix socket): `vellum serve` is the one place flags become handler options, so each test
//! shows a flag changes what the server does, against the default where that matters. What
//! each option does in detail is tested on the library (`crates/vellum/tests/http_*.rs`).

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use vellum_testkit::http::{Answer, McpHttp, assert_rejected};
use vellum_testkit::process::{ServerProcess, vellum_serve_fails, vellum_serve_with_env};

const DEADLINE: Duration = Duration::from_secs(30);

/// `vellum serve ARGS` (killed on drop); its start line must be the first thing it prints.
fn serve(args: &[&str]) -> ServerProcess {
    serve_with_env(args, &[])
}

/// [`serve`] with extra environment variables.
fn serve_with_env(args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
    let s = vellum_serve_with_env(args, env);
    assert!(
        s.before.is_empty(),
        "vellum serve {args:?} printed before its start line: {:?}",
        s.before
    );
    s
}

/// A client of the server's `/mcp` endpoint.
fn client(s: &ServerProcess) -> McpHttp {
    McpHttp::new(&s.mcp_url())
}

/// `tools/call hello_world` with `user_name: name` (id 1).
async fn hello(c: &McpHttp, name: &str) -> Answer {
    c.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hello_world", "arguments": {"user_name": name}}}))
        .await
}

/// The text of the last message's first content block.
fn text_of(a: &Answer) -> String {
    vellum_testkit::http::text_of(a.last()).to_owned()
}

// ---- the tests --------------------------------------------------------------------------------

#[tokio::test]
async fn stateless() {
    let s = serve(&["--stateless"]);
    let mut c = client(&s);
    let a = c.initialize("2025-06-18").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    assert_eq!(a.header("mcp-session-id"), None);
    let fresh = client(&s);
    assert_eq!(text_of(&hello(&fresh, "Sl").await), "Hello World, Sl");
    let g = fresh.send(fresh.get(None)).await;
    assert_eq!(g.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(g.header("allow"), Some("POST"));
    // By default: sessions.
    let d = serve(&[]);
    assert_eq!(
        hello(&client(&d), "x").await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn json_response() {
    for (args, json) in [(&["--json-response"][..], true), (&[][..], false)] {
        let s = serve(args);
        let mut c = client(&s);
        c.connect("2025-06-18").await;
        let a = hello(&c, "J").await;
        assert_eq!(
            a.content_type().starts_with("application/json"),
            json,
            "{args:?}"
        );
        assert_eq!(text_of(&a), "Hello World, J");
    }
}

/// `test_tool_with_progress` of `--server everything`: it keeps streaming for ~100 ms, so
/// its answer is resumable (event ids; a priming event on 2025-11-25). Returns the answer
/// and its event ids.
async fn progress_call(c: &McpHttp) -> (Answer, Vec<String>) {
    let a = c
        .post(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "test_tool_with_progress", "arguments": {},
            "_meta": {"progressToken": "p"}}}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    let ids = a
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
        .collect();
    (a, ids)
}

#[tokio::test]
async fn event_store() {
    let s = serve(&["--server", "everything", "--event-store", "memory"]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    let (a, ids) = progress_call(&c).await;
    assert!(
        a.text().starts_with("id: "),
        "a priming event: {:?}",
        a.text()
    );
    assert!(a.text().contains("retry: "), "{:?}", a.text());
    assert_eq!(ids.len(), 5, "priming, 3 progress, result: {:?}", a.text());
    // Resuming after the priming event replays the whole stream from the store.
    let g = c.send(c.get(Some(&ids[0]))).await;
    assert_eq!(g.status, StatusCode::OK, "{}", g.text());
    assert_eq!(g.messages.len(), 4, "{}", g.text());
    assert_eq!(text_of(&g), "Progress test completed");

    // A bounded store evicts: resuming an old stream is a clear 400.
    let s = serve(&["--server", "everything", "--event-store", "memory:300"]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    let (_, first) = progress_call(&c).await;
    for _ in 0..3 {
        progress_call(&c).await;
    }
    let g = c.send(c.get(Some(&first[0]))).await;
    assert_eq!(g.status, StatusCode::BAD_REQUEST, "{}", g.text());
    assert!(g.text().contains("evicted"), "{}", g.text());

    // Without the flag the finished stream is gone: nothing to replay.
    let s = serve(&["--server", "everything"]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    let (_, ids) = progress_call(&c).await;
    let g = c.send(c.get(Some(&ids[0]))).await;
    assert_eq!(g.status, StatusCode::BAD_REQUEST, "{}", g.text());
}

#[tokio::test]
async fn session_timeout() {
    let s = serve(&["--session-timeout", "200ms"]);
    let mut c = client(&s);
    c.connect("2025-06-18").await;
    let kept_server = serve(&[]);
    let mut kept = client(&kept_server);
    kept.connect("2025-06-18").await;
    // Every probe is activity, so wait longer and longer between probes until the session
    // is gone (the gaps soon exceed the timeout); a deadline bounds the whole.
    let mut gap = Duration::from_millis(50);
    let started = std::time::Instant::now();
    loop {
        tokio::time::sleep(gap).await;
        let a = hello(&c, "t").await;
        if a.status == StatusCode::NOT_FOUND {
            break;
        }
        assert_eq!(a.status, StatusCode::OK, "{}", a.text());
        assert!(started.elapsed() < DEADLINE, "the session was never reaped");
        gap *= 2;
    }
    // The default keeps idle sessions (this one idled as long as the reaped one).
    assert_eq!(hello(&kept, "k").await.status, StatusCode::OK);
}

#[tokio::test]
async fn localhost_protection() {
    for (args, status) in [
        (&[][..], StatusCode::FORBIDDEN),
        (&["--disable-localhost-protection"][..], StatusCode::OK),
        (&["--allowed-host", "evil.example"][..], StatusCode::OK),
        (
            &["--allowed-host", "mcp.example.com"][..],
            StatusCode::FORBIDDEN,
        ),
    ] {
        let s = serve(args);
        let c = client(&s);
        let a = c
            .send(
                c.builder(Method::POST).header("host", "evil.example").body(
                    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                            "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}}})
                    .to_string(),
                ),
            )
            .await;
        assert_eq!(a.status, status, "{args:?}: {}", a.text());
    }
}

async fn initialize_with(c: &McpHttp, headers: &[(&str, &str)]) -> Answer {
    let mut b = c.builder(Method::POST);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    c.send(
        b.body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        ),
    )
    .await
}

#[tokio::test]
async fn cross_origin_flags() {
    const APP: &str = "http://app.test:3000";
    let trusted_cross = [("origin", APP), ("sec-fetch-site", "cross-site")];
    let cross_site = [("sec-fetch-site", "cross-site")];
    let foreign = [("origin", "http://evil.example")];
    let cases: [(&[&str], [StatusCode; 3]); 4] = [
        (&[], [StatusCode::FORBIDDEN; 3]),
        (&["--cross-origin-protection"], [StatusCode::FORBIDDEN; 3]),
        (
            &["--trusted-origin", APP],
            [StatusCode::OK, StatusCode::FORBIDDEN, StatusCode::FORBIDDEN],
        ),
        (
            &["--no-cross-origin-protection"],
            [StatusCode::FORBIDDEN, StatusCode::OK, StatusCode::FORBIDDEN],
        ),
    ];
    for (args, [trusted, cross, foreign_status]) in cases {
        let s = serve(args);
        let c = client(&s);
        assert_eq!(
            initialize_with(&c, &trusted_cross).await.status,
            trusted,
            "{args:?} trusted"
        );
        assert_eq!(
            initialize_with(&c, &cross_site).await.status,
            cross,
            "{args:?} cross-site"
        );
        let a = initialize_with(&c, &foreign).await;
        assert_eq!(a.status, foreign_status, "{args:?} foreign Origin");
        assert_eq!(a.error_code(), -32600);
    }
    // A malformed trusted origin is refused at start.
    let out = Command::new(env!("CARGO_BIN_EXE_vellum"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--trusted-origin",
            "http://x/path",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("vellum runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("http://x/path"));
}

#[tokio::test]
async fn cors() {
    const APP: &str = "http://app.test:3000";
    let s = serve(&["--cors", "--trusted-origin", APP]);
    let c = client(&s);
    let pre = c
        .send(
            c.http
                .request(Method::OPTIONS, c.url.clone())
                .header("origin", APP)
                .header("access-control-request-method", "POST")
                .header(
                    "access-control-request-headers",
                    "content-type, mcp-session-id",
                ),
        )
        .await;
    assert_eq!(pre.status, StatusCode::NO_CONTENT, "{}", pre.text());
    assert_eq!(pre.header("access-control-allow-origin"), Some(APP));
    let a = initialize_with(&c, &[("origin", APP)]).await;
    assert_eq!(a.status, StatusCode::OK);
    let exposed = a
        .header("access-control-expose-headers")
        .unwrap_or("")
        .to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id"), "{exposed:?}");
    // Without --cors: no preflight.
    let s = serve(&["--trusted-origin", APP]);
    let c = client(&s);
    let pre = c
        .send(
            c.http
                .request(Method::OPTIONS, c.url.clone())
                .header("origin", APP),
        )
        .await;
    assert_eq!(pre.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn max_body_bytes() {
    let s = serve(&["--max-body-bytes", "300"]);
    let mut c = client(&s);
    c.connect("2025-06-18").await;
    assert_eq!(hello(&c, "short").await.status, StatusCode::OK);
    let a = hello(&c, &"x".repeat(300)).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.text());
    assert_eq!(a.error_code(), -32600);
    // The default takes it.
    let d = serve(&[]);
    let mut c = client(&d);
    c.connect("2025-06-18").await;
    assert_eq!(hello(&c, &"x".repeat(300)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn max_sessions() {
    let s = serve(&["--max-sessions", "1"]);
    let mut one = client(&s);
    one.connect("2025-06-18").await;
    let mut two = client(&s);
    let a = two.initialize("2025-06-18").await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.text());
    assert!(a.header("retry-after").is_some());
    assert_eq!(a.error_code(), -32603);
}

#[tokio::test]
async fn sse_keep_alive() {
    use futures_util::StreamExt as _;
    let s = serve(&["--sse-keep-alive", "100ms"]);
    let mut c = client(&s);
    c.connect("2025-06-18").await;
    let r = c.get(None).send().await.expect("a GET stream");
    assert_eq!(r.status(), StatusCode::OK);
    let mut body = r.bytes_stream();
    let mut text = String::new();
    // The opening comment and three keep-alives (comment lines are `: `).
    while text.lines().filter(|l| l.starts_with(':')).count() < 4 {
        let chunk = tokio::time::timeout(DEADLINE, body.next())
            .await
            .expect("a keep-alive in time")
            .expect("the stream stays open")
            .expect("a chunk");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket() {
    let dir = std::env::temp_dir().join(format!("vellum-serve-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.sock");
    let s = serve(&["--unix", path.to_str().unwrap()]);
    assert_eq!(s.url, format!("unix:{}", path.display()));
    vellum::transport::install_crypto_provider();
    let http = reqwest::Client::builder()
        .unix_socket(path.clone())
        .build()
        .unwrap();
    let mut c = McpHttp::with_client("http://localhost/mcp", http);
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&hello(&c, "Sock").await), "Hello World, Sock");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn log_flag() {
    // `--log info`: a line per request on stderr.
    let s = serve(&["--log", "info"]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&hello(&c, "Logged").await), "Hello World, Logged");
    let (_, lines) = s.finish("-TERM");
    let all = lines.join("\n");
    assert!(all.contains("tools/call"), "no per-request log: {all}");
    assert!(all.contains("hello_world"), "{all}");
    assert!(
        !all.contains(c.session.as_deref().unwrap()),
        "the full session id was logged: {all}"
    );
    // The default: nothing per request, even when RUST_LOG asks for everything.
    let s = serve_with_env(&[], &[("RUST_LOG", "trace")]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&hello(&c, "Quiet").await), "Hello World, Quiet");
    let (_, lines) = s.finish("-TERM");
    // (The start-up lines say what the server is; nothing after them.)
    let logged: Vec<_> = lines
        .iter()
        .filter(|l| !l.starts_with("options: "))
        .collect();
    assert!(logged.is_empty(), "logged by default: {logged:?}");
}

#[tokio::test]
async fn sigterm_ends_streams_with_retry_and_exits_cleanly() {
    let s = serve(&[]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    let r = c.get(None).send().await.expect("a GET stream");
    assert_eq!(r.status(), StatusCode::OK);
    let reading = tokio::spawn(async move { r.text().await.unwrap_or_default() });
    let (status, _) = s.finish("-TERM");
    assert!(status.success(), "vellum serve exited with {status}");
    let text = tokio::time::timeout(DEADLINE, reading)
        .await
        .unwrap()
        .unwrap();
    assert!(
        text.contains("retry: "),
        "the stream did not end with a retry: {text:?}"
    );
}

#[tokio::test]
async fn body_timeout_and_buffered_body_budget() {
    use std::io::Write as _;
    let s = serve(&["--body-timeout", "300ms", "--max-buffered-body-bytes", "1"]);
    // Half a body, then nothing: 408 once the body deadline passes.
    let mut raw = s.connect();
    let host = s.host();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{\"json"
    );
    raw.write_all(head.as_bytes()).unwrap();
    let r = tokio::task::spawn_blocking(move || vellum_testkit::raw::read_response(&mut raw))
        .await
        .unwrap();
    assert_eq!(r.status, 408, "{}", r.text());
    // A 100 KiB body passes the uncounted 64 KiB, and the budget of one byte refuses it.
    let mut c = client(&s);
    c.connect("2025-06-18").await;
    let a = hello(&c, &"x".repeat(100 * 1024)).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.text());
    assert!(a.header("retry-after").is_some());
    // The defaults take both.
    let d = serve(&[]);
    let mut c = client(&d);
    c.connect("2025-06-18").await;
    assert_eq!(
        hello(&c, &"x".repeat(100 * 1024)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn network_defaults_on_a_non_loopback_address() {
    let start = |extra: &[&str]| {
        let mut cmd = Command::new(vellum_testkit::process::vellum_bin());
        cmd.args(["serve", "--addr", "0.0.0.0:0"]).args(extra);
        ServerProcess::spawn(cmd)
    };
    let s = start(&[]);
    let line = s
        .next_line(DEADLINE)
        .expect("a line naming the network defaults");
    assert!(
        line.contains("at most 10000 sessions")
            && line.contains("30m")
            && line.contains("at most 100 sessions per client address"),
        "{line}"
    );
    // The session cap is live: a client on loopback (the wildcard address covers it).
    let mut c = McpHttp::new(&format!("http://127.0.0.1:{}/mcp", s.addr().port()));
    c.connect("2025-06-18").await;
    // Naming a cap, or the flag, turns them off: the next line is not about them.
    let caps = ["--max-sessions", "5", "--max-sessions-per-address", "0"];
    for extra in [&caps[..], &["--no-network-defaults"]] {
        let s = start(extra);
        let next = s.next_line(Duration::from_millis(500));
        assert!(
            next.as_deref()
                .is_none_or(|l| !l.contains("network defaults")),
            "{extra:?}: {next:?}"
        );
    }
}

/// GET `path` on the server, with no MCP headers.
async fn get_path(s: &ServerProcess, path: &str) -> Answer {
    let c = client(s);
    c.send(c.http.get(format!("{}{path}", s.url))).await
}

#[tokio::test]
async fn path_serves_mcp_there_alone_and_well_known_is_404() {
    let s = serve(&["--path", "/mcp"]);
    let mut c = client(&s);
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&hello(&c, "Path").await), "Hello World, Path");
    let mut elsewhere = c.at(&format!("{}/other", s.url));
    elsewhere.session = None;
    let a = elsewhere.initialize("2025-11-25").await;
    let body = assert_rejected(&a, StatusCode::NOT_FOUND, -32600);
    assert_eq!(
        body["error"]["message"],
        "Not Found: this server serves MCP at /mcp"
    );
    // The health probes stay where they were.
    assert_eq!(get_path(&s, "/healthz").await.status, StatusCode::OK);
    // The default: every path is MCP, but a well-known URI is not found (it was 406/400).
    let d = serve(&[]);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/openid-configuration",
    ] {
        assert_rejected(&get_path(&d, path).await, StatusCode::NOT_FOUND, -32600);
    }
    let mut anywhere = client(&d).at(&format!("{}/any", d.url));
    anywhere.connect("2025-11-25").await;
    let err = vellum_serve_fails(&["--path", "mcp"]);
    assert!(err.contains("must start with `/`"), "{err}");
}

#[tokio::test]
async fn protocol_versions_flag() {
    let s = serve(&["--protocol-versions", "2025-11-25,2025-06-18"]);
    let mut c = client(&s);
    let a = c.modern("tools/list", json!({})).await;
    let body = assert_rejected(&a, StatusCode::BAD_REQUEST, -32022);
    assert_eq!(
        body["error"]["data"]["supported"],
        json!(["2025-11-25", "2025-06-18"])
    );
    let a = c.initialize("2025-03-26").await;
    assert_eq!(a.messages[0]["result"]["protocolVersion"], "2025-11-25");
    // The default accepts the modern era.
    let d = serve(&[]);
    assert_eq!(
        client(&d).modern("tools/list", json!({})).await.status,
        StatusCode::OK
    );
    // An unknown version is refused at start, by name.
    let err = vellum_serve_fails(&["--protocol-versions", "2026-07-28,2024-11-05"]);
    assert!(
        err.contains("unknown protocol version \"2024-11-05\""),
        "{err}"
    );
}

#[tokio::test]
async fn one_line_lists_the_effective_options_after_the_start_line() {
    let s = serve(&[
        "--path",
        "/mcp",
        "--protocol-versions",
        "2026-07-28,2025-06-18",
        "--max-sessions",
        "9",
    ]);
    // The start line is the seed's: the URL alone.
    assert_eq!(s.url, format!("http://{}", s.addr()));
    let line = s.next_line(DEADLINE).expect("the options line");
    for pair in [
        "path=/mcp",
        "protocol-versions=2026-07-28,2025-06-18",
        "max-sessions=9",
        "stateless=false",
        "max-body-bytes=4194304",
        "session-timeout=off",
    ] {
        assert!(
            line.starts_with("options: ") && line.split(' ').any(|p| p == pair),
            "{pair}: {line}"
        );
    }
}
