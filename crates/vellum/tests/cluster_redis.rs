//! Sessions shared across server instances through a real `redis-server`: instances of the
//! `cluster` example, one session, requests spread over them with no stickiness.
//!
//! Each test runs twice: against one `redis-server`, and against a Redis Cluster of three
//! masters (`VELLUM_TEST_REDIS_CLUSTER`, which `scripts/test.sh` starts; outside CI a test
//! starts its own when it is unset). On the cluster every instance gets a key prefix of its
//! test, so the tests can share one cluster.
//!
//! Needs `redis-server` on PATH (`scripts/test.sh` installs Debian's package); the tests
//! fail with that message when it is missing.

#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vellum_testkit::http::{McpHttp, Modern, SseReader, Streamed, text_of};
use vellum_testkit::process::{ServerProcess, example_bin};
use vellum_testkit::redis::{OnBoth, RedisCluster, RedisServer};

/// Where a test keeps its data: one node, or a cluster (with this test's key prefix).
enum Store {
    Node(RedisServer),
    Cluster(RedisCluster, String),
}

impl Store {
    fn node() -> Store {
        Store::Node(RedisServer::start())
    }

    fn cluster(test: &str) -> Store {
        let mut raw = [0u8; 4];
        getrandom::fill(&mut raw).unwrap();
        let tag: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        Store::Cluster(RedisCluster::get(), format!("vt-{test}-{tag}"))
    }

    fn prefix(&self) -> &str {
        match self {
            Store::Node(_) => "vellum",
            Store::Cluster(_, p) => p,
        }
    }

    /// The keys of `session`.
    fn session_keys(&self, session: &str) -> Vec<String> {
        self.keys(&format!("{}:{{{session}}}*", self.prefix()))
    }

    /// Every key of this test: `DBSIZE` on one node (the test has it to itself), the keys
    /// under the test's prefix on the shared cluster.
    fn key_count(&self) -> usize {
        match self {
            Store::Node(r) => {
                let out = Command::new("redis-cli")
                    .args(["-u", &r.url(), "dbsize"])
                    .output()
                    .expect("redis-cli");
                String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
            }
            Store::Cluster(c, p) => c.keys(&format!("{p}:*")).len(),
        }
    }

    fn keys(&self, pattern: &str) -> Vec<String> {
        match self {
            Store::Node(r) => r.keys(pattern),
            Store::Cluster(c, _) => c.keys(pattern),
        }
    }
}

impl OnBoth for Store {
    fn node() -> Store {
        Store::node()
    }

    fn cluster(test: &'static str) -> Store {
        Store::cluster(test)
    }
}

/// One instance of the `cluster` example, on a free port, sharing `store`.
fn instance(store: &Store, extra: &[&str]) -> ServerProcess {
    let mut cmd = Command::new(example_bin("cluster"));
    cmd.args(["--addr", "127.0.0.1:0"]);
    match store {
        Store::Node(r) => cmd.args(["--redis", &r.url()]),
        Store::Cluster(c, p) => cmd.args(["--redis", &c.url(), "--redis-prefix", p]),
    };
    cmd.args(extra);
    ServerProcess::spawn(cmd)
}

/// Reads a listen stream's first frame, which must be its acknowledgement.
async fn expect_acknowledged(stream: &mut SseReader) {
    let ack = stream
        .next_message()
        .await
        .expect("the acknowledgement")
        .json();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
}

/// A client that declares elicitation; each request names the instance it goes to.
fn client() -> McpHttp {
    let mut c = McpHttp::new("http://127.0.0.1:9/unused");
    c.capabilities = json!({"elicitation": {}});
    c
}

/// `initialize` (2025-11-25) on `url`; the session is then usable on every instance.
async fn initialize(c: &mut McpHttp, url: &str) {
    c.url = url.to_owned();
    let a = c.initialize("2025-11-25").await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(a.text().contains("\"protocolVersion\""), "{}", a.text());
}

/// A request to `url`: its answer as it streams (or whole, for a refusal).
async fn request(c: &McpHttp, url: &str, id: i64, method: &str, params: Value) -> Streamed {
    c.at(url)
        .post_stream(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .await
}

/// A request to `url`; its response (asserting HTTP 200).
async fn call(c: &McpHttp, url: &str, id: i64, method: &str, params: Value) -> Value {
    let id = json!(id);
    let a = c
        .at(url)
        .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .await;
    assert_eq!(a.status, 200, "{method} on {url}: {}", a.text());
    a.response(&id).clone()
}

/// A notification to `url`; the status.
async fn notify(c: &McpHttp, url: &str, method: &str, params: Value) -> u16 {
    c.at(url).notify(method, Some(params)).await.status.as_u16()
}

/// The next message within `wait`, if any (comments skipped).
async fn next_within(s: &mut SseReader, wait: Duration) -> Option<Value> {
    loop {
        match s.next_block_within(wait).await {
            Ok(Some(b)) if b.is_message() => return Some(b.json()),
            Ok(Some(_)) => continue,
            Ok(None) | Err(()) => return None,
        }
    }
}

async fn no_keys_left(store: &Store, session: &str, within: Duration) {
    let end = Instant::now() + within;
    loop {
        let keys = store.session_keys(session);
        if keys.is_empty() {
            return;
        }
        assert!(Instant::now() < end, "keys left in Redis: {keys:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A legacy session initialized on `init`, with its GET stream open on `get` (its first
/// frame read, so the stream is registered before anything the test then does).
async fn legacy_listening(init: &str, get: &str) -> (McpHttp, SseReader) {
    let mut c = client();
    initialize(&mut c, init).await;
    notify(&c, init, "notifications/initialized", json!({})).await;
    let mut stream = c
        .at(get)
        .get_stream(None)
        .await
        .expect_stream("the GET stream");
    stream.next_block().await.expect("the GET stream opens");
    (c, stream)
}

// ---- the tests -----------------------------------------------------------------------------

vellum_testkit::on_both!(one_session_across_three_instances);
async fn one_session_across_three_instances(store: Store) {
    let inst: Vec<ServerProcess> = (0..3).map(|_| instance(&store, &[])).collect();
    let u = |i: usize| inst[i % 3].mcp_url();
    let mut c = client();

    // initialize on one instance, everything else on the others.
    initialize(&mut c, &u(0)).await;
    assert_eq!(
        notify(&c, &u(1), "notifications/initialized", json!({})).await,
        202
    );
    let list = call(&c, &u(2), 1, "tools/list", json!({})).await;
    assert!(list.to_string().contains("hello_world"));
    let hello = call(
        &c,
        &u(1),
        2,
        "tools/call",
        json!({"name":"hello_world","arguments":{"user_name":"Alice"}}),
    )
    .await;
    assert_eq!(text_of(&hello), "Hello World, Alice");

    // A GET stream on the third instance hears a list change made on the first.
    let mut get = c
        .at(&u(2))
        .get_stream(None)
        .await
        .expect_stream("the GET stream");
    let added = call(
        &c,
        &u(0),
        3,
        "tools/call",
        json!({"name":"add_tool","arguments":{"name":"dyn_one"}}),
    )
    .await;
    assert_eq!(text_of(&added), "added dyn_one");
    let ev = get
        .next_message_within(Duration::from_secs(10))
        .await
        .expect("list_changed on the GET stream of another instance");
    assert_eq!(
        ev.json()["method"],
        "notifications/tools/list_changed",
        "{ev:?}"
    );

    // An elicitation waiting on instance 0, answered through instance 1.
    let mut ask = request(
        &c,
        &u(0),
        4,
        "tools/call",
        json!({"name":"ask_name","arguments":{}}),
    )
    .await
    .expect_stream("the answer");
    let q = ask
        .next_message_within(Duration::from_secs(10))
        .await
        .expect("elicitation request");
    let q = q.json();
    assert_eq!(q["method"], "elicitation/create");
    let answer =
        json!({"jsonrpc":"2.0","id":q["id"],"result":{"action":"accept","content":{"name":"Bob"}}});
    let st = c.at(&u(1)).post(&answer).await.status;
    assert_eq!(st, 202);
    let done = ask
        .next_message_within(Duration::from_secs(10))
        .await
        .expect("the tool's result");
    let done = done.json();
    assert_eq!(text_of(&done), "Hello, Bob");

    // A cancellation sent to instance 2 stops a call running on instance 1.
    let mut slow = request(
        &c,
        &u(1),
        5,
        "tools/call",
        json!({"name":"slow","arguments":{"ms":20000},"_meta":{"progressToken":"p5"}}),
    )
    .await
    .expect_stream("the answer");
    let p = slow
        .next_message_within(Duration::from_secs(10))
        .await
        .expect("progress");
    assert_eq!(p.json()["method"], "notifications/progress", "{p:?}");
    let started = Instant::now();
    assert_eq!(
        notify(
            &c,
            &u(2),
            "notifications/cancelled",
            json!({"requestId":5,"reason":"test"})
        )
        .await,
        202
    );
    while let Some(ev) = slow.next_message_within(Duration::from_secs(10)).await {
        let v = ev.json();
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
    assert_eq!(c.at(&u(2)).delete().await, 204);
    for i in 0..3 {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let status = request(&c, &u(i), 10 + i as i64, "tools/list", json!({}))
                .await
                .status();
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
    no_keys_left(&store, &sid, Duration::from_secs(5)).await;
}

vellum_testkit::on_both!(a_stream_resumes_on_another_instance);
async fn a_stream_resumes_on_another_instance(store: Store) {
    let a = instance(&store, &[]);
    let b = instance(&store, &[]);
    let mut c = client();
    initialize(&mut c, &a.mcp_url()).await;
    // Log messages need a level: set it on B (the change reaches A through the bus).
    let lvl = call(
        &c,
        &b.mcp_url(),
        1,
        "logging/setLevel",
        json!({"level":"info"}),
    )
    .await;
    assert!(lvl.get("result").is_some(), "{lvl}");

    for (round, drop_after) in [(0_i64, 1_usize), (1, 4), (2, 9)] {
        let id = 100 + round;
        let mut sse = request(
            &c,
            &a.mcp_url(),
            id,
            "tools/call",
            json!({"name":"ticker","arguments":{"count":15,"interval_ms":40}}),
        )
        .await
        .expect_stream("the answer");
        // Read a few ticks, then drop the connection.
        let mut seen = Vec::new();
        let mut last_id = None;
        while seen.len() < drop_after {
            let ev = sse
                .next_message_within(Duration::from_secs(10))
                .await
                .expect("tick");
            last_id = ev.id.clone();
            seen.push(ev.json());
        }
        drop(sse);
        // Resume on B with the last id received: the rest, exactly once, in order.
        let mut resumed = c
            .at(&b.mcp_url())
            .get_stream(last_id.as_deref())
            .await
            .expect_stream("resume on another instance");
        while let Some(ev) = resumed.next_message_within(Duration::from_secs(10)).await {
            seen.push(ev.json());
        }
        let ticks: Vec<u32> = seen
            .iter()
            .filter_map(|v| {
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
        let last = seen.last().unwrap();
        assert_eq!(last["id"], json!(id));
        assert_eq!(text_of(last), "15 ticks");
    }
}

vellum_testkit::on_both!(a_dead_instance_does_not_leave_clients_waiting);
async fn a_dead_instance_does_not_leave_clients_waiting(store: Store) {
    let mut a = instance(&store, &[]);
    let b = instance(&store, &[]);
    let mut c = client();
    initialize(&mut c, &b.mcp_url()).await;
    let mut sse = request(
        &c,
        &a.mcp_url(),
        7,
        "tools/call",
        json!({"name":"slow","arguments":{"ms":60000},"_meta":{"progressToken":"p7"}}),
    )
    .await
    .expect_stream("the answer");
    let first = sse
        .next_message_within(Duration::from_secs(10))
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
    let mut resumed = c
        .at(&b.mcp_url())
        .get_stream(Some(&last_id))
        .await
        .expect_stream("the GET stream");
    let mut answer = None;
    while let Some(ev) = resumed.next_message_within(Duration::from_secs(20)).await {
        let v = ev.json();
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
    let hello = call(
        &c,
        &b.mcp_url(),
        8,
        "tools/call",
        json!({"name":"hello_world","arguments":{"user_name":"Eve"}}),
    )
    .await;
    assert_eq!(text_of(&hello), "Hello World, Eve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_recovers_after_a_redis_restart() {
    let store = Store::node();
    let a = instance(&store, &[]);
    let b = instance(&store, &[]);
    let mut c = client();
    initialize(&mut c, &a.mcp_url()).await;
    let Store::Node(redis) = store else {
        unreachable!()
    };
    let (dir, port) = redis.stop();

    // While Redis is down: a new session, or one this instance never saw, gets a clear 503.
    let mut other = client();
    other.url = b.mcp_url();
    let refused = other.initialize("2025-11-25").await;
    assert_eq!(refused.status, 503);
    let body: Value = serde_json::from_slice(&refused.body).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session store"),
        "{body}"
    );
    let status = request(&c, &b.mcp_url(), 1, "tools/list", json!({}))
        .await
        .status();
    assert_eq!(status, 503);

    // Redis comes back (with its data): the same instances serve again.
    let _redis = RedisServer::start_in(dir, port);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = request(&c, &b.mcp_url(), 2, "tools/list", json!({}))
            .await
            .status();
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no recovery after Redis restarted (last status {status})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    initialize(&mut other, &b.mcp_url()).await;
    let hello = call(
        &other,
        &a.mcp_url(),
        3,
        "tools/call",
        json!({"name":"hello_world","arguments":{"user_name":"Zoe"}}),
    )
    .await;
    assert_eq!(text_of(&hello), "Hello World, Zoe");
}

vellum_testkit::on_both!(expired_sessions_leave_nothing_in_redis);
async fn expired_sessions_leave_nothing_in_redis(store: Store) {
    let a = instance(&store, &["--session-timeout-ms", "1500"]);
    let b = instance(&store, &["--session-timeout-ms", "1500"]);
    let mut c = client();
    initialize(&mut c, &a.mcp_url()).await;
    call(
        &c,
        &b.mcp_url(),
        1,
        "tools/call",
        json!({"name":"ticker","arguments":{"count":3,"interval_ms":10}}),
    )
    .await;
    let sid = c.session.clone().unwrap();
    assert!(!store.session_keys(&sid).is_empty());
    no_keys_left(&store, &sid, Duration::from_secs(10)).await;
    // And it is gone for clients too.
    let status = request(&c, &a.mcp_url(), 2, "tools/list", json!({}))
        .await
        .status();
    assert_eq!(status, 404);
}

vellum_testkit::on_both!(a_list_change_reaches_listen_streams_on_other_instances);
/// 2026-07-28: a `subscriptions/listen` stream held on B hears a list change made on A
/// (the bus carries it), tagged with its own subscription id; and a legacy GET stream on C
/// hears it exactly once, though its session is known on A as well.
async fn a_list_change_reaches_listen_streams_on_other_instances(store: Store) {
    let inst: Vec<ServerProcess> = (0..3).map(|_| instance(&store, &[])).collect();
    let modern = Modern::new(&inst[1].mcp_url());
    let mut tools = modern.listen(41, json!({"toolsListChanged": true})).await;
    // A legacy session, initialized on A, its GET stream on C.
    let (legacy, mut get) = legacy_listening(&inst[0].mcp_url(), &inst[2].mcp_url()).await;
    // Each stream is registered before the change: its first frame is sent when it opens
    // (the GET stream's was read above).
    expect_acknowledged(&mut tools).await;

    let added = call(
        &legacy,
        &inst[0].mcp_url(),
        2,
        "tools/call",
        json!({"name":"add_tool","arguments":{"name":"dyn_listen"}}),
    )
    .await;
    assert_eq!(text_of(&added), "added dyn_listen");

    let heard = loop {
        let m = tools
            .next_message_within(Duration::from_secs(10))
            .await
            .expect("list_changed on the listen stream of another instance")
            .json();
        if m["method"] == "notifications/tools/list_changed" {
            break m;
        }
    };
    assert_eq!(
        heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(41),
        "{heard}"
    );
    let g = get
        .next_message_within(Duration::from_secs(10))
        .await
        .expect("list_changed on the legacy GET stream of a third instance")
        .json();
    assert_eq!(g["method"], "notifications/tools/list_changed", "{g}");
    // Exactly once on each.
    if let Some(m) = next_within(&mut get, Duration::from_millis(500)).await {
        panic!("the GET stream heard more: {m}");
    }
    if let Some(m) = next_within(&mut tools, Duration::from_millis(100)).await {
        panic!("the listen stream heard more: {m}");
    }
}

vellum_testkit::on_both!(a_resource_update_reaches_subscribers_on_other_instances);
/// A resource update announced on A reaches, over the bus, a `subscriptions/listen` stream
/// on B that subscribed to it (tagged with its subscription id) and the GET stream on C of a
/// legacy session subscribed on A, once each; a legacy session that did not subscribe hears
/// nothing. (No fallback delivers these: with the bus path broken the streams stay silent.)
async fn a_resource_update_reaches_subscribers_on_other_instances(store: Store) {
    let inst: Vec<ServerProcess> = (0..3).map(|_| instance(&store, &[])).collect();
    let note = "note://shared";
    let modern = Modern::new(&inst[1].mcp_url());
    let mut listen = modern
        .listen(43, json!({"resourceSubscriptions": [note]}))
        .await;
    expect_acknowledged(&mut listen).await;
    // Subscribed on A (before its GET stream opens on C, so C loads it subscribed), and
    // another session, not subscribed, its GET stream on B.
    let mut subscribed = client();
    initialize(&mut subscribed, &inst[0].mcp_url()).await;
    notify(
        &subscribed,
        &inst[0].mcp_url(),
        "notifications/initialized",
        json!({}),
    )
    .await;
    let sub = call(
        &subscribed,
        &inst[0].mcp_url(),
        1,
        "resources/subscribe",
        json!({"uri": note}),
    )
    .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    // The subscription is saved before its answer: a GET stream opened on C right after
    // loads the session subscribed (no waiting for the store here).
    let mut get = subscribed
        .at(&inst[2].mcp_url())
        .get_stream(None)
        .await
        .expect_stream("the GET stream");
    get.next_block().await.expect("the GET stream opens");
    let (_other, mut quiet) = legacy_listening(&inst[1].mcp_url(), &inst[1].mcp_url()).await;

    let touched = call(
        &subscribed,
        &inst[0].mcp_url(),
        2,
        "tools/call",
        json!({"name":"touch_note","arguments":{}}),
    )
    .await;
    assert_eq!(text_of(&touched), "touched note://shared");

    let heard = next_within(&mut listen, Duration::from_secs(10))
        .await
        .expect("resources/updated on the listen stream of another instance");
    assert_eq!(
        heard["method"], "notifications/resources/updated",
        "{heard}"
    );
    assert_eq!(heard["params"]["uri"], note, "{heard}");
    assert_eq!(
        heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(43),
        "{heard}"
    );
    let g = next_within(&mut get, Duration::from_secs(10))
        .await
        .expect("resources/updated on the GET stream of a third instance");
    assert_eq!(g["method"], "notifications/resources/updated", "{g}");
    assert_eq!(g["params"]["uri"], note, "{g}");
    // Once each, and not to the session that did not subscribe.
    if let Some(m) = next_within(&mut quiet, Duration::from_millis(500)).await {
        panic!("a session that did not subscribe heard: {m}");
    }
    if let Some(m) = next_within(&mut get, Duration::from_millis(100)).await {
        panic!("the GET stream heard more: {m}");
    }
    if let Some(m) = next_within(&mut listen, Duration::from_millis(100)).await {
        panic!("the listen stream heard more: {m}");
    }
}

/// 2026-07-28 `requestState` across instances: minted on A, verified on B when both read
/// the same key file; refused (-32602, HTTP 400) by an instance with another key; and a
/// rotation (new first line, old line kept) accepts states of the old key while signing with
/// the new one, which an instance still on the old file refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_state_keys_are_shared_and_rotate() {
    let store = Store::node();
    let dir = std::env::temp_dir().join(format!("vellum-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let old = file("old", "old-secret-0123456789abcdef\n");
    let other = file("other", "another-secret-fedcba9876543210\n");
    let rotated = file(
        "rotated",
        "# rotation\nnew-secret-00112233445566\nold-secret-0123456789abcdef\n",
    );
    let a = instance(&store, &["--request-state-key-file", &old]);
    let b = instance(&store, &["--request-state-key-file", &old]);
    let stranger = instance(&store, &["--request-state-key-file", &other]);
    let r = instance(&store, &["--request-state-key-file", &rotated]);

    let call = json!({"name": "ask_name", "arguments": {}});
    let retry = |state: &str| {
        let mut p = call.clone();
        p["inputResponses"] = json!({"1": {"action": "accept", "content": {"name": "Bob"}}});
        p["requestState"] = json!(state);
        p
    };
    // Round 1 on a given instance: its state.
    let mint = async |url: &str| {
        let first = Modern::new(url)
            .request(1, "tools/call", call.clone())
            .await;
        assert_eq!(
            first.result()["resultType"],
            "input_required",
            "{}",
            first.result()
        );
        first.result()["requestState"]
            .as_str()
            .expect("a requestState")
            .to_owned()
    };

    let from_a = mint(&a.mcp_url()).await;
    let done = Modern::new(&b.mcp_url())
        .request(2, "tools/call", retry(&from_a))
        .await;
    assert_eq!(done.result()["resultType"], "complete", "{}", done.result());
    assert_eq!(done.result()["content"][0]["text"], "Hello, Bob");

    let refused = Modern::new(&stranger.mcp_url())
        .request(3, "tools/call", retry(&from_a))
        .await;
    assert_eq!(refused.error_code(), -32602);
    assert_eq!(refused.status, 400);

    // Rotation: the rotated instance accepts the old key's state...
    let done = Modern::new(&r.mcp_url())
        .request(4, "tools/call", retry(&from_a))
        .await;
    assert_eq!(done.result()["resultType"], "complete", "{}", done.result());
    // ...and signs with the new key, which an instance on the old file alone refuses.
    let from_r = mint(&r.mcp_url()).await;
    let refused = Modern::new(&a.mcp_url())
        .request(5, "tools/call", retry(&from_r))
        .await;
    assert_eq!(refused.error_code(), -32602);
    let _ = std::fs::remove_dir_all(&dir);
}

vellum_testkit::on_both!(load_leaves_no_key_behind);
/// Redis memory: sessions, streamed calls, a resumed stream and a GET stream over two
/// instances; once the load stops and the timeouts pass (session 1.5 s, heartbeat 3 s after
/// the instances stop), the key count is back to zero (`DBSIZE` on one node).
async fn load_leaves_no_key_behind(store: Store) {
    let a = instance(&store, &["--session-timeout-ms", "1500"]);
    let b = instance(&store, &["--session-timeout-ms", "1500"]);
    for n in 0..4 {
        let mut c = client();
        initialize(&mut c, &a.mcp_url()).await;
        let lvl = call(
            &c,
            &b.mcp_url(),
            1,
            "logging/setLevel",
            json!({"level": "info"}),
        )
        .await;
        assert!(lvl.get("result").is_some(), "{lvl}");
        let _get = c.at(&b.mcp_url()).get_stream(None).await;
        let mut sse = request(
            &c,
            &a.mcp_url(),
            2,
            "tools/call",
            json!({"name": "ticker", "arguments": {"count": 5, "interval_ms": 10}}),
        )
        .await
        .expect_stream("the answer");
        while sse
            .next_message_within(Duration::from_secs(10))
            .await
            .is_some()
        {}
        if n % 2 == 0 {
            assert_eq!(c.at(&b.mcp_url()).delete().await, 204);
        }
    }
    assert!(store.key_count() > 0, "the load stored nothing");
    drop((a, b));
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let n = store.key_count();
        if n == 0 {
            break;
        }
        assert!(Instant::now() < end, "{n} keys left after the timeouts");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
