//! Sessions shared across server instances through a real `redis-server`: instances of the
//! `cluster` example, one session, requests spread over them with no stickiness.
//!
//! Needs `redis-server` on PATH (`scripts/test.sh` installs Debian's package); the tests
//! fail with that message when it is missing.

#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

// ---- processes ---------------------------------------------------------------------------

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `redis-server` on a free loopback port, killed on drop.
struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    fn start() -> RedisServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("vellum-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self::start_in(dir, port)
    }

    fn start_in(dir: PathBuf, port: u16) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): install it (apt-get install redis-server); scripts/test.sh does")
            });
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        RedisServer { child, port, dir }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn stop(mut self) -> (PathBuf, u16) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.dir.clone(), self.port)
    }

    fn keys(&self, pattern: &str) -> Vec<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--raw", "keys", pattern])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cluster_binary() -> PathBuf {
    // Tests run from target/<profile>/deps; examples are built next to it.
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let bin = dir.join("examples").join("cluster");
    assert!(
        bin.exists(),
        "the cluster example is not built at {} (cargo test --all-features builds it)",
        bin.display()
    );
    bin
}

/// One instance of the `cluster` example.
struct Instance {
    child: Child,
    url: String,
}

impl Instance {
    fn start(redis: &str, extra: &[&str]) -> Instance {
        let mut child = Command::new(cluster_binary())
            .args(["--addr", "127.0.0.1:0", "--redis", redis])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            for _ in lines {}
        });
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the instance did not print its start line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("start line with an address");
        Instance {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---- an MCP client over plain HTTP ----------------------------------------------------------

/// One SSE event.
#[derive(Debug, Clone)]
struct Event {
    id: Option<String>,
    data: String,
}

/// Reads SSE events from a streaming response.
struct Sse {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: String,
}

impl Sse {
    fn new(resp: reqwest::Response) -> Sse {
        Sse {
            body: Box::pin(resp.bytes_stream()),
            buf: String::new(),
        }
    }

    /// The next event with data (priming events and comments skipped), `None` at the end.
    async fn next(&mut self) -> Option<Event> {
        loop {
            while let Some(pos) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..pos + 2).collect();
                let mut ev = Event {
                    id: None,
                    data: String::new(),
                };
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        ev.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        ev.data.push_str(v.trim_start());
                    }
                }
                if !ev.data.is_empty() {
                    return Some(ev);
                }
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }

    /// The next event, within a deadline.
    async fn next_within(&mut self, d: Duration) -> Option<Event> {
        tokio::time::timeout(d, self.next()).await.ok().flatten()
    }
}

struct Client {
    http: reqwest::Client,
    session: Option<String>,
}

impl Client {
    fn new() -> Client {
        Client {
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            session: None,
        }
    }

    fn post(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(body);
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        r
    }

    async fn initialize(&mut self, url: &str) {
        let resp = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25",
                "capabilities":{"elicitation":{}},
                "clientInfo":{"name":"cluster-test","version":"1"}}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        self.session = Some(
            resp.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
        let mut sse = Sse::new(resp);
        let ev = sse.next().await.unwrap();
        assert!(ev.data.contains("\"protocolVersion\""), "{}", ev.data);
    }

    async fn notify(&self, url: &str, method: &str, params: Value) -> u16 {
        self.post(
            url,
            &json!({"jsonrpc":"2.0","method":method,"params":params}),
        )
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
    }

    /// A request; the SSE stream of its answer.
    async fn request(&self, url: &str, id: i64, method: &str, params: Value) -> (u16, Sse) {
        let resp = self
            .post(
                url,
                &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            )
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), Sse::new(resp))
    }

    /// A request; its final answer (the response with its id).
    async fn call(&self, url: &str, id: i64, method: &str, params: Value) -> Value {
        let (status, mut sse) = self.request(url, id, method, params).await;
        assert_eq!(status, 200, "{method} on {url}");
        while let Some(ev) = sse.next_within(Duration::from_secs(10)).await {
            let v: Value = serde_json::from_str(&ev.data).unwrap();
            if v["id"] == json!(id) && v.get("method").is_none() {
                return v;
            }
        }
        panic!("no answer to {method} id {id} from {url}");
    }

    async fn get_stream(&self, url: &str, last_event_id: Option<&str>) -> (u16, Sse) {
        let mut r = self
            .http
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", self.session.as_deref().unwrap());
        if let Some(id) = last_event_id {
            r = r.header("last-event-id", id);
        }
        let resp = r.send().await.unwrap();
        (resp.status().as_u16(), Sse::new(resp))
    }
}

fn text_of(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn no_keys_left(redis: &RedisServer, pattern: &str, within: Duration) {
    let end = Instant::now() + within;
    loop {
        let keys = redis.keys(pattern);
        if keys.is_empty() {
            return;
        }
        assert!(Instant::now() < end, "keys left in Redis: {keys:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- the tests -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_across_three_instances() {
    let redis = RedisServer::start();
    let inst: Vec<Instance> = (0..3).map(|_| Instance::start(&redis.url(), &[])).collect();
    let u = |i: usize| inst[i % 3].url.clone();
    let mut c = Client::new();

    // initialize on one instance, everything else on the others.
    c.initialize(&u(0)).await;
    assert_eq!(
        c.notify(&u(1), "notifications/initialized", json!({}))
            .await,
        202
    );
    let list = c.call(&u(2), 1, "tools/list", json!({})).await;
    assert!(list.to_string().contains("hello_world"));
    let hello = c
        .call(
            &u(1),
            2,
            "tools/call",
            json!({"name":"hello_world","arguments":{"user_name":"Alice"}}),
        )
        .await;
    assert_eq!(text_of(&hello), "Hello World, Alice");

    // A GET stream on the third instance hears a list change made on the first.
    let (status, mut get) = c.get_stream(&u(2), None).await;
    assert_eq!(status, 200);
    let added = c
        .call(
            &u(0),
            3,
            "tools/call",
            json!({"name":"add_tool","arguments":{"name":"dyn_one"}}),
        )
        .await;
    assert_eq!(text_of(&added), "added dyn_one");
    let ev = get
        .next_within(Duration::from_secs(10))
        .await
        .expect("list_changed on the GET stream of another instance");
    assert!(
        ev.data.contains("notifications/tools/list_changed"),
        "{}",
        ev.data
    );

    // An elicitation waiting on instance 0, answered through instance 1.
    let (status, mut ask) = c
        .request(
            &u(0),
            4,
            "tools/call",
            json!({"name":"ask_name","arguments":{}}),
        )
        .await;
    assert_eq!(status, 200);
    let q = ask
        .next_within(Duration::from_secs(10))
        .await
        .expect("elicitation request");
    let q: Value = serde_json::from_str(&q.data).unwrap();
    assert_eq!(q["method"], "elicitation/create");
    let answer =
        json!({"jsonrpc":"2.0","id":q["id"],"result":{"action":"accept","content":{"name":"Bob"}}});
    let st = c.post(&u(1), &answer).send().await.unwrap().status();
    assert_eq!(st, 202);
    let done = ask
        .next_within(Duration::from_secs(10))
        .await
        .expect("the tool's result");
    let done: Value = serde_json::from_str(&done.data).unwrap();
    assert_eq!(text_of(&done), "Hello, Bob");

    // A cancellation sent to instance 2 stops a call running on instance 1.
    let (status, mut slow) = c
        .request(
            &u(1),
            5,
            "tools/call",
            json!({"name":"slow","arguments":{"ms":20000},"_meta":{"progressToken":"p5"}}),
        )
        .await;
    assert_eq!(status, 200);
    let p = slow
        .next_within(Duration::from_secs(10))
        .await
        .expect("progress");
    assert!(p.data.contains("notifications/progress"));
    let started = Instant::now();
    assert_eq!(
        c.notify(
            &u(2),
            "notifications/cancelled",
            json!({"requestId":5,"reason":"test"})
        )
        .await,
        202
    );
    while let Some(ev) = slow.next_within(Duration::from_secs(10)).await {
        let v: Value = serde_json::from_str(&ev.data).unwrap();
        assert!(
            v.get("result").is_none() && v.get("error").is_none(),
            "a cancelled call answers nothing: {v}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the cancellation crossed instances promptly"
    );

    // DELETE on one instance: 404 on every other (the bus carries the end within
    // milliseconds; allow a short deadline for its delivery).
    let sid = c.session.clone().unwrap();
    let del = c
        .http
        .delete(u(2))
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 204);
    for i in 0..3 {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let (status, _) = c
                .request(&u(i), 10 + i as i64, "tools/list", json!({}))
                .await;
            if status == 404 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "instance {i} still serves the deleted session ({status})"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Nothing of the session is left in Redis.
    let pattern = format!("vellum:{{{sid}}}*");
    no_keys_left(&redis, &pattern, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_instance() {
    let redis = RedisServer::start();
    let a = Instance::start(&redis.url(), &[]);
    let b = Instance::start(&redis.url(), &[]);
    let mut c = Client::new();
    c.initialize(&a.url).await;
    // Log messages need a level: set it on B (the change reaches A through the bus).
    let lvl = c
        .call(&b.url, 1, "logging/setLevel", json!({"level":"info"}))
        .await;
    assert!(lvl.get("result").is_some(), "{lvl}");

    for (round, drop_after) in [(0_i64, 1_usize), (1, 4), (2, 9)] {
        let id = 100 + round;
        let (status, mut sse) = c
            .request(
                &a.url,
                id,
                "tools/call",
                json!({"name":"ticker","arguments":{"count":15,"interval_ms":40}}),
            )
            .await;
        assert_eq!(status, 200);
        // Read a few ticks, then drop the connection.
        let mut seen = Vec::new();
        let mut last_id = None;
        while seen.len() < drop_after {
            let ev = sse
                .next_within(Duration::from_secs(10))
                .await
                .expect("tick");
            last_id = ev.id.clone();
            seen.push(ev.data);
        }
        drop(sse);
        // Resume on B with the last id received: the rest, exactly once, in order.
        let (status, mut resumed) = c.get_stream(&b.url, last_id.as_deref()).await;
        assert_eq!(status, 200, "resume on another instance");
        while let Some(ev) = resumed.next_within(Duration::from_secs(10)).await {
            seen.push(ev.data);
        }
        let ticks: Vec<u32> = seen
            .iter()
            .filter_map(|d| {
                let v: Value = serde_json::from_str(d).ok()?;
                v["params"]["data"]
                    .as_str()?
                    .strip_prefix("tick ")?
                    .parse()
                    .ok()
            })
            .collect();
        // The level may reach A a moment after it was set: ticks start at some k and then
        // continue without gaps or repeats.
        assert!(!ticks.is_empty(), "round {round}: no ticks");
        let first = ticks[0];
        assert_eq!(
            ticks,
            (first..=15).collect::<Vec<_>>(),
            "round {round}: every tick once, in order"
        );
        let last: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
        assert_eq!(last["id"], json!(id));
        assert_eq!(text_of(&last), "15 ticks");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_instance_does_not_leave_clients_waiting() {
    let redis = RedisServer::start();
    let mut a = Instance::start(&redis.url(), &[]);
    let b = Instance::start(&redis.url(), &[]);
    let mut c = Client::new();
    c.initialize(&b.url).await;
    let (status, mut sse) = c
        .request(
            &a.url,
            7,
            "tools/call",
            json!({"name":"slow","arguments":{"ms":60000},"_meta":{"progressToken":"p7"}}),
        )
        .await;
    assert_eq!(status, 200);
    let first = sse
        .next_within(Duration::from_secs(10))
        .await
        .expect("progress");
    let last_id = first
        .id
        .clone()
        .unwrap_or_else(|| panic!("stored events carry ids: {first:?}"));
    // SIGKILL the instance running the call.
    a.kill();
    drop(sse);
    let started = Instant::now();
    let (status, mut resumed) = c.get_stream(&b.url, Some(&last_id)).await;
    assert_eq!(status, 200);
    let mut answer = None;
    while let Some(ev) = resumed.next_within(Duration::from_secs(20)).await {
        let v: Value = serde_json::from_str(&ev.data).unwrap();
        if v["id"] == json!(7) {
            answer = Some(v);
            break;
        }
    }
    let answer = answer.expect("an answer for the orphaned request");
    assert!(answer.get("error").is_some(), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "bounded: {:?}",
        started.elapsed()
    );
    // The session keeps working on the survivor.
    let hello = c
        .call(
            &b.url,
            8,
            "tools/call",
            json!({"name":"hello_world","arguments":{"user_name":"Eve"}}),
        )
        .await;
    assert_eq!(text_of(&hello), "Hello World, Eve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_recovers_after_a_redis_restart() {
    let redis = RedisServer::start();
    let a = Instance::start(&redis.url(), &[]);
    let b = Instance::start(&redis.url(), &[]);
    let mut c = Client::new();
    c.initialize(&a.url).await;
    let (dir, port) = redis.stop();

    // While Redis is down: a new session, or one this instance never saw, gets a clear 503.
    let mut other = Client::new();
    let resp = other
        .http
        .post(&b.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session store"),
        "{body}"
    );
    let (status, _) = c.request(&b.url, 1, "tools/list", json!({})).await;
    assert_eq!(status, 503);

    // Redis comes back (with its data): the same instances serve again.
    let _redis = RedisServer::start_in(dir, port);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = c.request(&b.url, 2, "tools/list", json!({})).await;
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no recovery after Redis restarted (last status {status})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    other.initialize(&b.url).await;
    let hello = other
        .call(
            &a.url,
            3,
            "tools/call",
            json!({"name":"hello_world","arguments":{"user_name":"Zoe"}}),
        )
        .await;
    assert_eq!(text_of(&hello), "Hello World, Zoe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_sessions_leave_nothing_in_redis() {
    let redis = RedisServer::start();
    let a = Instance::start(&redis.url(), &["--session-timeout-ms", "1500"]);
    let b = Instance::start(&redis.url(), &["--session-timeout-ms", "1500"]);
    let mut c = Client::new();
    c.initialize(&a.url).await;
    c.call(
        &b.url,
        1,
        "tools/call",
        json!({"name":"ticker","arguments":{"count":3,"interval_ms":10}}),
    )
    .await;
    let sid = c.session.clone().unwrap();
    let pattern = format!("vellum:{{{sid}}}*");
    assert!(!redis.keys(&pattern).is_empty());
    no_keys_left(&redis, &pattern, Duration::from_secs(10)).await;
    // And it is gone for clients too.
    let (status, _) = c.request(&a.url, 2, "tools/list", json!({})).await;
    assert_eq!(status, 404);
}
