//! `vellum proxy --stdio` end to end, with real processes: the proxy, and as its child
//! `tests/interop/gateway/child.py` (a 2025-era stdio server written for these tests: it
//! says on stderr what reached it, and misbehaves on request). What a client of the proxy
//! relies on: a child per session initialized with the client's own `initialize`, both eras
//! in front (a 2026-07-28 client served by a 2025-era child), the child's questions,
//! progress, logs and list changes reaching the client, cancellation both ways, a child that
//! dies or writes garbage failing its session only (404 next, then a new child), the start
//! timeout, and the child limit under 1,000 sessions at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use vellum_testkit::http::{Legacy, McpHttp, Modern, Responder, full_capabilities};
use vellum_testkit::process::{ServerProcess, vellum_bin};
use vellum_testkit::within;

/// The test child's command line.
fn child(extra: &str) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop/gateway/child.py")
        .canonicalize()
        .expect("tests/interop/gateway/child.py");
    format!("python3 -S -u {} {extra}", script.display())
}

/// `vellum proxy --stdio CHILD ARGS` on a free loopback port, once it listens.
fn proxy(child: &str, args: &[&str]) -> ServerProcess {
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["proxy", "--addr", "127.0.0.1:0", "--stdio", child])
        .args(args)
        .env_remove("RUST_LOG");
    ServerProcess::spawn(cmd)
}

/// The pids of the processes whose parent is `parent` (Linux: `/proc/*/stat`).
fn children_of(parent: u32) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so read after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.insert(pid);
        }
    }
    out
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn call(session: &Legacy, id: i64, tool: &str, args: Value) -> Value {
    let r = session
        .request(id, "tools/call", json!({"name": tool, "arguments": args}))
        .await;
    r.response
}

async fn pid_of(session: &Legacy, id: i64) -> u32 {
    let r = call(session, id, "pid", json!({})).await;
    text_of(&r["result"]).parse().expect("a pid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_session_children_serve_both_eras() {
    let p = proxy(&child(""), &[]);
    let url = p.mcp_url();

    // A legacy session: its child is initialized with the client's own params.
    let a = Legacy::connect(&url).await;
    let caps = p.line_with("initialized by vellum-tests with");
    assert!(caps.contains("\"elicitation\""), "{caps}");
    assert!(
        caps.contains("] initialized by"),
        "the child's stderr is prefixed: {caps}"
    );
    let r = call(&a, 1, "echo", json!({"text": "hi"})).await;
    assert_eq!(text_of(&r["result"]), "echo: hi");
    let pid_a = pid_of(&a, 2).await;
    let b = Legacy::connect_with(&url, "2025-06-18", json!({})).await;
    let pid_b = pid_of(&b, 1).await;
    assert_ne!(pid_a, pid_b, "a child per session");
    assert!(children_of(p.pid()).is_superset(&[pid_a, pid_b].into()));

    // A 2026-07-28 client of a 2025-era child: discover from the child's initialize.
    let m = Modern::new(&url);
    let d = m.request(1, "server/discover", json!({})).await;
    assert_eq!(d.result()["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(d.result()["instructions"], "a test child");
    let r = m
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "modern"}}),
        )
        .await;
    assert_eq!(r.result()["resultType"], "complete");
    assert_eq!(text_of(r.result()), "echo: modern");

    // Progress comes back with the client's own token, in order.
    let r = a
        .request(
            3,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok-a"}}),
        )
        .await;
    let progress: Vec<(Value, f64)> = r
        .notifications("notifications/progress")
        .iter()
        .map(|n| {
            let p = &n["params"];
            (p["progressToken"].clone(), p["progress"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(
        progress,
        [1.0, 2.0, 3.0].map(|i| (json!("tok-a"), i)).to_vec()
    );

    // A log line of the child reaches the request's stream.
    let r = a
        .request(
            4,
            "tools/call",
            json!({"name": "log", "arguments": {"text": "from the child"}}),
        )
        .await;
    assert_eq!(text_of(r.result()), "logged");
    let logs = r.notifications("notifications/message");
    assert_eq!(logs.len(), 1, "{:?}", r.messages);
    assert_eq!(logs[0]["params"]["data"], "from the child");

    // The child's question: a request on the POST's stream (legacy) …
    let roots: &Responder = &|_m| json!({"roots": [{"uri": "file:///work"}]});
    let r = a
        .request_answering(
            5,
            "tools/call",
            json!({"name": "ask", "arguments": {"method": "roots/list"}}),
            Some(roots),
        )
        .await;
    assert!(
        text_of(r.result()).contains("file:///work"),
        "{}",
        r.response
    );
    // … and an input round (2026-07-28): the first answer asks, the retry carries the answer.
    let ask = json!({"name": "ask", "arguments": {"method": "elicitation/create"}});
    let first = m.request(3, "tools/call", ask.clone()).await;
    let asked = first.result();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let (key, question) = asked["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let mut retry = ask.clone();
    retry["inputResponses"] =
        json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    retry["requestState"] = asked["requestState"].clone();
    let done = m.request(4, "tools/call", retry).await;
    assert!(text_of(done.result()).contains("Ada"), "{}", done.response);

    // The child gives up its own question: the client is told, on the same stream.
    let give_up = a.mcp.call_tool("ask_then_cancel", json!({}), None);
    let mut s = a
        .mcp
        .post_stream(&give_up)
        .await
        .expect_stream("ask_then_cancel");
    let question = within("the question", s.next_json()).await.unwrap();
    assert_eq!(question["method"], "roots/list", "{question}");
    let cancel = within("its cancellation", s.next_json()).await.unwrap();
    assert_eq!(cancel["method"], "notifications/cancelled", "{cancel}");
    assert_eq!(cancel["params"]["requestId"], question["id"]);
    let answer = within("the result", s.next_json()).await.unwrap();
    assert!(
        text_of(&answer["result"]).starts_with("gave up"),
        "{answer}"
    );

    // The client cancels a call: the child hears it.
    let slow = a.mcp.call_tool("slow", json!({"seconds": 30}), None);
    let slow_id = slow["id"].clone();
    let running = a.mcp.post_stream(&slow).await;
    let cancelled = a
        .mcp
        .notify(
            "notifications/cancelled",
            Some(json!({"requestId": slow_id})),
        )
        .await;
    assert_eq!(cancelled.status, 202);
    p.line_with("cancelled");
    drop(running);

    // List changes of a session's child reach that session's GET stream.
    let mut stream = a.listen().await;
    call(&a, 8, "changed", json!({})).await;
    let n = within("list_changed on the GET stream", stream.next_json())
        .await
        .unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");

    // Ending a session ends its child.
    assert_eq!(a.mcp.delete().await, 204);
    p.wait_until(Duration::from_secs(10), "the child to exit", || {
        !children_of(p.pid()).contains(&pid_a)
    });
    assert!(children_of(p.pid()).contains(&pid_b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_child_fails_its_session_only() {
    let p = proxy(&child(""), &["--max-line-bytes", "4096"]);
    let url = p.mcp_url();
    let bystander = Legacy::connect(&url).await;

    for (tool, args, why) in [
        ("die", json!({}), "exited"),
        ("garbage", json!({}), "not JSON-RPC"),
        ("huge", json!({"bytes": 10_000}), "longer than 4096 bytes"),
    ] {
        let s = Legacy::connect(&url).await;
        let pid = pid_of(&s, 1).await;
        let r = call(&s, 2, tool, args).await;
        let message = r["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{tool}: {r}");
        assert!(
            message.contains(&pid.to_string()),
            "{tool}: names the child: {r}"
        );
        // The session is gone: its client gets 404 and initializes a new one.
        let after = s.mcp.post(&s.mcp.call_tool("echo", json!({}), None)).await;
        assert_eq!(after.status, 404, "{tool}: {}", after.text());
        let fresh = Legacy::connect(&url).await;
        assert_ne!(pid_of(&fresh, 1).await, pid, "{tool}: a new child");
        // Every other session is served throughout.
        let r = call(&bystander, 10, "echo", json!({"text": tool})).await;
        assert_eq!(text_of(&r["result"]), format!("echo: {tool}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_never_answers_times_out() {
    let p = proxy(&child("--mute"), &["--child-start-timeout", "1s"]);
    let mut c = McpHttp::new(&p.mcp_url());
    let started = std::time::Instant::now();
    let init = c.initialize("2025-11-25").await;
    let message = init.last()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("did not start within 1s"),
        "{}",
        init.text()
    );
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(c.session.is_none(), "no session without a child");

    // A call the child does not answer in time fails, and the child hears it cancelled.
    let p = proxy(&child(""), &["--call-timeout", "1s"]);
    let s = Legacy::connect(&p.mcp_url()).await;
    let r = call(&s, 1, "slow", json!({"seconds": 30})).await;
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did not answer within 1s"), "{r}");
    p.line_with("cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_sessions_against_fifty_children() {
    let p = proxy(&child(""), &["--max-children", "50"]);
    let url = p.mcp_url();
    let pid = p.pid();
    let fds_before = p.fds();
    // Sample the children while the sessions arrive.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (s, most) = (
        stop.clone(),
        std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0)),
    );
    let m = most.clone();
    let sampler = std::thread::spawn(move || {
        while !s.load(std::sync::atomic::Ordering::Acquire) {
            m.fetch_max(children_of(pid).len(), std::sync::atomic::Ordering::AcqRel);
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    // One connection pool for the thousand clients, as a load balancer in front would be.
    // Fifty children start at once: on a loaded machine that takes seconds, so the wait
    // here is longer than the test kit's per-request deadline.
    let http = McpHttp::new(&url).http;
    let started = std::time::Instant::now();
    let attempts = (0..1000).map(|_| {
        let (url, http) = (url.clone(), http.clone());
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "burst", "version": "1"}}});
            let resp = http
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string())
                .timeout(Duration::from_secs(90))
                .send()
                .await
                .expect("an answer");
            let status = resp.status().as_u16();
            let session = resp
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = resp.text().await.unwrap_or_default();
            (status, session, text)
        }
    });
    let mut served = Vec::new();
    let mut refused = 0;
    for (status, session, text) in futures_util::future::join_all(attempts).await {
        if let Some(id) = session {
            let mut c = McpHttp::with_client(&url, http.clone());
            c.session = Some(id);
            c.protocol_version = Some("2025-11-25".into());
            served.push(c);
            continue;
        }
        refused += 1;
        let clear = status == 503 || text.contains("limit of 50");
        assert!(clear, "a refusal says why: {status} {text}");
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    sampler.join().unwrap();
    eprintln!("1,000 initializes answered in {:?}", started.elapsed());
    assert_eq!(served.len(), 50, "as many sessions as children");
    assert_eq!(refused, 950);
    assert!(most.load(std::sync::atomic::Ordering::Acquire) <= 50);
    // Each served session has its child; ending them frees the places.
    for c in &served {
        let r = c
            .post(&c.call_tool("echo", json!({"text": "x"}), None))
            .await;
        assert_eq!(text_of(&r.last()["result"]), "echo: x");
        assert_eq!(c.delete().await, 204);
    }
    p.wait_until(Duration::from_secs(20), "the children to exit", || {
        children_of(pid).is_empty()
    });
    // Their pipes and the refused connections are gone too.
    drop((served, http));
    p.wait_until(
        Duration::from_secs(20),
        "the descriptors to be released",
        || p.fds() <= fds_before + 8,
    );
    let mut again = McpHttp::new(&url);
    again.connect("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_children_serve_every_session() {
    let p = proxy(&child(""), &["--shared-children", "2"]);
    // The pool starts before the proxy listens, initialized with the proxy's own params.
    let started = p
        .before
        .iter()
        .filter(|l| l.contains("initialized by vellum-proxy"));
    assert_eq!(started.count(), 2, "{:?}", p.before);
    let url = p.mcp_url();
    let pool = children_of(p.pid());
    assert_eq!(pool.len(), 2, "{pool:?}");
    let mut seen = BTreeSet::new();
    for _ in 0..3 {
        let s = Legacy::connect(&url).await;
        seen.insert(pid_of(&s, 1).await);
    }
    let m = Modern::new(&url);
    let r = m
        .request(1, "tools/call", json!({"name": "pid", "arguments": {}}))
        .await;
    seen.insert(text_of(r.result()).parse().unwrap());
    assert!(seen.is_subset(&pool), "{seen:?} ⊄ {pool:?}");
    assert_eq!(children_of(p.pid()), pool, "no child per session");
}

/// An HS256 token of `issuer` for `audience`.
fn token(issuer: &str, audience: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let claims = json!({"iss": issuer, "sub": "someone", "aud": audience, "exp": exp});
    let key = jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).unwrap()
}

const SECRET: &str = "a test secret of at least thirty-two bytes";

/// A vellum client of `url` sending `bearer`, answering sampling (the test kit's handlers).
async fn client_with(
    url: &str,
    bearer: &str,
    choice: vellum::client::ProtocolChoice,
) -> vellum::client::Client {
    let mut options = vellum::transport::http_client::HttpClientOptions::default();
    options.headers.insert(
        http::header::AUTHORIZATION,
        format!("Bearer {bearer}").parse().unwrap(),
    );
    let t =
        vellum::transport::http_client::StreamableHttpClientTransport::with_options(url, options)
            .unwrap();
    let seen = vellum_testkit::client::Seen::default();
    vellum_testkit::client::builder(choice, &seen)
        .connect(t)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_in_front_of_vellum_serve() {
    use vellum::client::ProtocolChoice;
    // The upstream: a protected vellum serve; the proxy holds its token.
    let upstream = vellum_testkit::process::vellum_serve_with_env(
        &[
            "--server",
            "everything",
            "--auth-issuer",
            "https://up.example",
            "--auth-audience",
            "up",
        ],
        &[("VELLUM_AUTH_HS256_SECRET", SECRET)],
    );
    let header = format!(
        "Authorization: Bearer {}",
        token("https://up.example", "up")
    );
    for era in ["auto", "legacy"] {
        let mut cmd = Command::new(vellum_bin());
        cmd.args([
            "proxy",
            "--addr",
            "127.0.0.1:0",
            "--upstream",
            &upstream.mcp_url(),
        ])
        .args(["--upstream-header", &header, "--upstream-protocol", era])
        // Its own clients authenticate to it, with another audience.
        .args([
            "--auth-issuer",
            "https://front.example",
            "--auth-audience",
            "front",
        ])
        .env("VELLUM_AUTH_HS256_SECRET", SECRET)
        .env_remove("RUST_LOG");
        let p = ServerProcess::spawn(cmd);
        let url = p.mcp_url();
        // No token, no entry: the proxy's own resource server answers.
        let bare = McpHttp::new(&url)
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .await;
        assert_eq!(bare.status, 401, "{era}");
        let front = token("https://front.example", "front");
        for choice in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
            let c = client_with(&url, &front, choice).await;
            let r = c
                .call_tool("hello_world", json!({"user_name": "Up"}))
                .await
                .unwrap();
            assert_eq!(
                r.content[0].as_text(),
                Some("Hello World, Up"),
                "{era} {choice:?}"
            );
            // The upstream asks the client's model (a request or an input round) through it.
            let r = c
                .call_tool("test_sampling", json!({"prompt": "2+2?"}))
                .await
                .unwrap();
            let text = r.content[0].as_text().unwrap_or_default();
            assert!(text.contains("four"), "{era} {choice:?}: {text}");
            c.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_sharing_redis_serve_each_others_sessions() {
    let redis = vellum_testkit::redis::RedisServer::start();
    let store = redis.url();
    let start = || {
        proxy(
            &child(""),
            &["--session-store", &store, "--event-store", &store],
        )
    };
    let (a, b) = (start(), start());
    // A session begun on one instance …
    let s = Legacy::connect(&a.mcp_url()).await;
    let pid_a = pid_of(&s, 1).await;
    assert!(children_of(a.pid()).contains(&pid_a));
    // … is served by the other, whose child for it starts with the session's own
    // initialize (restored from the store).
    let mut on_b = s.mcp.at(&b.mcp_url());
    on_b.capabilities = full_capabilities();
    let on_b = Legacy { mcp: on_b };
    let r = call(&on_b, 2, "echo", json!({"text": "elsewhere"})).await;
    assert_eq!(text_of(&r["result"]), "echo: elsewhere");
    let caps = b.line_with("initialized by vellum-tests with");
    assert!(caps.contains("\"elicitation\""), "{caps}");
    let pid_b = pid_of(&on_b, 3).await;
    assert!(
        children_of(b.pid()).contains(&pid_b),
        "B runs a child of its own"
    );
    // Ending it on B ends it everywhere: A's child goes too.
    assert_eq!(on_b.mcp.delete().await, 204);
    a.wait_until(Duration::from_secs(10), "A's child to exit", || {
        !children_of(a.pid()).contains(&pid_a)
    });
}
