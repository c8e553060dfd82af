//! `vellum serve` flags, each checked on a real child process over loopback HTTP (or its
//! Unix socket): `vellum serve` is the one place flags become handler options, so each test
//! shows a flag changes what the server does, against the default where that matters. What
//! each option does in detail is tested on the library (`crates/vellum/tests/http_*.rs`).

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);
const START_PREFIX: &str = "streamable HTTP MCP: ";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A `vellum serve` child (killed on drop) and its stderr, line by line.
struct Serve {
    child: Child,
    /// `http://ADDR` or `unix:PATH`.
    endpoint: String,
    lines: mpsc::Receiver<String>,
}

impl Serve {
    fn start(args: &[&str]) -> Serve {
        Self::start_with_env(args, &[])
    }

    fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Serve {
        let tcp = !args.contains(&"--unix");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vellum"));
        cmd.arg("serve");
        if tcp {
            cmd.args(["--addr", "127.0.0.1:0"]);
        }
        let mut child = cmd
            .args(args)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("vellum serve starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("vellum serve {args:?} printed no start line"));
        let endpoint = first
            .strip_prefix(START_PREFIX)
            .unwrap_or_else(|| panic!("vellum serve {args:?}: {first}"))
            .trim()
            .to_owned();
        Serve {
            child,
            endpoint,
            lines,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.endpoint)
    }

    fn client(&self) -> Client {
        Client::new(
            &self.url(),
            reqwest::Client::builder().no_proxy().build().unwrap(),
        )
    }

    /// Ends the process with `signal` and returns everything it wrote to stderr after its
    /// start line (read until the pipe closes, which is the event waited for).
    fn finish(mut self, signal: &str) -> (std::process::ExitStatus, Vec<String>) {
        // The shell's `kill` builtin: no extra package, no unsafe code.
        let status = Command::new("sh")
            .args(["-c", &format!("kill {signal} {}", self.child.id())])
            .status()
            .expect("sh runs");
        assert!(status.success());
        let mut out = Vec::new();
        loop {
            match self.lines.recv_timeout(DEADLINE) {
                Ok(l) => out.push(l),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("stderr stayed open: {out:?}"),
            }
        }
        let exit = self.child.wait().expect("an exit status");
        (exit, out)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal MCP-over-HTTP client.
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    version: Option<String>,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }
    /// The JSON-RPC messages of a JSON or SSE body.
    fn messages(&self) -> Vec<Value> {
        if self.content_type().starts_with("text/event-stream") {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter(|d| !d.is_empty())
                .map(|d| serde_json::from_str(d).expect("SSE data is JSON"))
                .collect()
        } else if self.body.is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&self.body).expect("a JSON body")]
        }
    }
    fn error_code(&self) -> Value {
        let v: Value = serde_json::from_str(&self.body).expect("a JSON-RPC error body");
        v["error"]["code"].clone()
    }
}

impl Client {
    fn new(url: &str, http: reqwest::Client) -> Client {
        Client {
            http,
            url: url.to_owned(),
            session: None,
            version: None,
        }
    }

    fn builder(&self, method: Method) -> RequestBuilder {
        let mut b = self.http.request(method.clone(), &self.url);
        if method == Method::POST {
            b = b
                .header("content-type", "application/json")
                .header("accept", ACCEPT_BOTH);
        }
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = &self.version {
            b = b.header("mcp-protocol-version", v);
        }
        b
    }

    async fn send(&self, b: RequestBuilder) -> Answer {
        let r = tokio::time::timeout(DEADLINE, async {
            let r = b.send().await.expect("the request is answered");
            let status = r.status();
            let headers = r.headers().clone();
            let body = r.text().await.expect("a body");
            Answer {
                status,
                headers,
                body,
            }
        })
        .await;
        r.unwrap_or_else(|_| panic!("no answer within {DEADLINE:?}"))
    }

    /// A GET of the session's stream, resuming after `last_event_id` when given.
    fn get(&self, last_event_id: Option<&str>) -> RequestBuilder {
        let b = self
            .builder(Method::GET)
            .header("accept", "text/event-stream");
        match last_event_id {
            Some(id) => b.header("last-event-id", id),
            None => b,
        }
    }

    async fn post(&self, body: &Value) -> Answer {
        self.send(self.builder(Method::POST).body(body.to_string()))
            .await
    }

    async fn initialize(&mut self, version: &str) -> Answer {
        let a = self
            .post(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            )
            .await;
        if a.status == StatusCode::OK {
            self.session = a.header("mcp-session-id").map(str::to_owned);
            self.version = Some(version.to_owned());
        }
        a
    }

    async fn connect(&mut self, version: &str) {
        let a = self.initialize(version).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let n = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(n.status, StatusCode::ACCEPTED, "{}", n.body);
    }

    async fn hello(&self, name: &str) -> Answer {
        self.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hello_world", "arguments": {"user_name": name}}}))
            .await
    }
}

fn text_of(a: &Answer) -> String {
    let m = a.messages();
    let last = m.last().unwrap_or_else(|| panic!("no message: {}", a.body));
    last["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {last}"))
        .to_owned()
}

// ---- the tests --------------------------------------------------------------------------------

#[tokio::test]
async fn stateless() {
    let s = Serve::start(&["--stateless"]);
    let mut c = s.client();
    let a = c.initialize("2025-06-18").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.header("mcp-session-id"), None);
    let fresh = s.client();
    assert_eq!(text_of(&fresh.hello("Sl").await), "Hello World, Sl");
    let g = fresh.send(fresh.get(None)).await;
    assert_eq!(g.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(g.header("allow"), Some("POST"));
    // By default: sessions.
    let d = Serve::start(&[]);
    assert_eq!(d.client().hello("x").await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn json_response() {
    for (args, json) in [(&["--json-response"][..], true), (&[][..], false)] {
        let s = Serve::start(args);
        let mut c = s.client();
        c.connect("2025-06-18").await;
        let a = c.hello("J").await;
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
async fn progress_call(c: &Client) -> (Answer, Vec<String>) {
    let a = c
        .post(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "test_tool_with_progress", "arguments": {},
            "_meta": {"progressToken": "p"}}}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let ids = a
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
        .collect();
    (a, ids)
}

#[tokio::test]
async fn event_store() {
    let s = Serve::start(&["--server", "everything", "--event-store", "memory"]);
    let mut c = s.client();
    c.connect("2025-11-25").await;
    let (a, ids) = progress_call(&c).await;
    assert!(a.body.starts_with("id: "), "a priming event: {:?}", a.body);
    assert!(a.body.contains("retry: "), "{:?}", a.body);
    assert_eq!(ids.len(), 5, "priming, 3 progress, result: {:?}", a.body);
    // Resuming after the priming event replays the whole stream from the store.
    let g = c.send(c.get(Some(&ids[0]))).await;
    assert_eq!(g.status, StatusCode::OK, "{}", g.body);
    assert_eq!(g.messages().len(), 4, "{}", g.body);
    assert_eq!(text_of(&g), "Progress test completed");

    // A bounded store evicts: resuming an old stream is a clear 400.
    let s = Serve::start(&["--server", "everything", "--event-store", "memory:300"]);
    let mut c = s.client();
    c.connect("2025-11-25").await;
    let (_, first) = progress_call(&c).await;
    for _ in 0..3 {
        progress_call(&c).await;
    }
    let g = c.send(c.get(Some(&first[0]))).await;
    assert_eq!(g.status, StatusCode::BAD_REQUEST, "{}", g.body);
    assert!(g.body.contains("evicted"), "{}", g.body);

    // Without the flag the finished stream is gone: nothing to replay.
    let s = Serve::start(&["--server", "everything"]);
    let mut c = s.client();
    c.connect("2025-11-25").await;
    let (_, ids) = progress_call(&c).await;
    let g = c.send(c.get(Some(&ids[0]))).await;
    assert_eq!(g.status, StatusCode::BAD_REQUEST, "{}", g.body);
}

#[tokio::test]
async fn session_timeout() {
    let s = Serve::start(&["--session-timeout", "200ms"]);
    let mut c = s.client();
    c.connect("2025-06-18").await;
    let kept_server = Serve::start(&[]);
    let mut kept = kept_server.client();
    kept.connect("2025-06-18").await;
    // Every probe is activity, so wait longer and longer between probes until the session
    // is gone (the gaps soon exceed the timeout); a deadline bounds the whole.
    let mut gap = Duration::from_millis(50);
    let started = std::time::Instant::now();
    loop {
        tokio::time::sleep(gap).await;
        let a = c.hello("t").await;
        if a.status == StatusCode::NOT_FOUND {
            break;
        }
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert!(started.elapsed() < DEADLINE, "the session was never reaped");
        gap *= 2;
    }
    // The default keeps idle sessions (this one idled as long as the reaped one).
    assert_eq!(kept.hello("k").await.status, StatusCode::OK);
}

#[tokio::test]
async fn localhost_protection() {
    for (args, status) in [
        (&[][..], StatusCode::FORBIDDEN),
        (&["--disable-localhost-protection"][..], StatusCode::OK),
    ] {
        let s = Serve::start(args);
        let c = s.client();
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
        assert_eq!(a.status, status, "{args:?}: {}", a.body);
    }
}

async fn initialize_with(c: &Client, headers: &[(&str, &str)]) -> Answer {
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
        let s = Serve::start(args);
        let c = s.client();
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
    let s = Serve::start(&["--cors", "--trusted-origin", APP]);
    let c = s.client();
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
    assert_eq!(pre.status, StatusCode::NO_CONTENT, "{}", pre.body);
    assert_eq!(pre.header("access-control-allow-origin"), Some(APP));
    let a = initialize_with(&c, &[("origin", APP)]).await;
    assert_eq!(a.status, StatusCode::OK);
    let exposed = a
        .header("access-control-expose-headers")
        .unwrap_or("")
        .to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id"), "{exposed:?}");
    // Without --cors: no preflight.
    let s = Serve::start(&["--trusted-origin", APP]);
    let c = s.client();
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
    let s = Serve::start(&["--max-body-bytes", "300"]);
    let mut c = s.client();
    c.connect("2025-06-18").await;
    assert_eq!(c.hello("short").await.status, StatusCode::OK);
    let a = c.hello(&"x".repeat(300)).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", a.body);
    assert_eq!(a.error_code(), -32600);
    // The default takes it.
    let d = Serve::start(&[]);
    let mut c = d.client();
    c.connect("2025-06-18").await;
    assert_eq!(c.hello(&"x".repeat(300)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn max_sessions() {
    let s = Serve::start(&["--max-sessions", "1"]);
    let mut one = s.client();
    one.connect("2025-06-18").await;
    let mut two = s.client();
    let a = two.initialize("2025-06-18").await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
    assert!(a.header("retry-after").is_some());
    assert_eq!(a.error_code(), -32603);
}

#[tokio::test]
async fn sse_keep_alive() {
    use futures_util::StreamExt as _;
    let s = Serve::start(&["--sse-keep-alive", "100ms"]);
    let mut c = s.client();
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
    let s = Serve::start(&["--unix", path.to_str().unwrap()]);
    assert_eq!(s.endpoint, format!("unix:{}", path.display()));
    let http = reqwest::Client::builder()
        .unix_socket(path.clone())
        .build()
        .unwrap();
    let mut c = Client::new("http://localhost/mcp", http);
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&c.hello("Sock").await), "Hello World, Sock");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn log_flag() {
    // `--log info`: a line per request on stderr.
    let s = Serve::start(&["--log", "info"]);
    let mut c = s.client();
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&c.hello("Logged").await), "Hello World, Logged");
    let (_, lines) = s.finish("-TERM");
    let all = lines.join("\n");
    assert!(all.contains("tools/call"), "no per-request log: {all}");
    assert!(all.contains("hello_world"), "{all}");
    assert!(
        !all.contains(c.session.as_deref().unwrap()),
        "the full session id was logged: {all}"
    );
    // The default: nothing per request, even when RUST_LOG asks for everything.
    let s = Serve::start_with_env(&[], &[("RUST_LOG", "trace")]);
    let mut c = s.client();
    c.connect("2025-11-25").await;
    assert_eq!(text_of(&c.hello("Quiet").await), "Hello World, Quiet");
    let (_, lines) = s.finish("-TERM");
    assert!(lines.is_empty(), "logged by default: {lines:?}");
}

#[tokio::test]
async fn sigterm_ends_streams_with_retry_and_exits_cleanly() {
    let s = Serve::start(&[]);
    let mut c = s.client();
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
