//! Tasks shared across `vellum serve` instances through a real `redis-server`
//! (`--task-store redis://…`): a task started on one instance is read, answered and
//! cancelled on the others; a task whose instance is SIGKILLed turns `failed` within the
//! heartbeat window; expired tasks leave no key behind. And `--redis URL` alone (no store
//! flag) puts every store there: sessions, tasks, the bus behind `subscriptions/listen`, rate
//! limits.
//!
//! Each test runs twice: on one `redis-server` (`…::node`) and on a Redis Cluster of three
//! masters (`…::cluster`: `VELLUM_TEST_REDIS_CLUSTER`, which `scripts/test.sh` starts; outside
//! CI one is started when it is unset), where every task script must stay in its task's slot.
//!
//! What crosses instances over the bus is timed against the store's fallback re-read (once a
//! second): an answer or an end that took the fallback would arrive too late, so the tests
//! fail when the bus path is broken.
//!
//! Needs `redis-server` on PATH (`scripts/test.sh` installs Debian's package).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vellum_testkit::http::{Legacy, Modern, full_capabilities, text_of};
use vellum_testkit::process::{ServerProcess, vellum_serve};

/// Where the instances keep tasks and sessions: one node, or a cluster shared with other
/// tests (so its key checks look at this test's keys only).
use vellum_testkit::redis::Backend as Store;

/// How long a bus signal may take across instances: well inside the fallback re-read
/// (`RECHECK`, 1 s), which a broken bus path would have to wait for.
const BUS: Duration = Duration::from_millis(500);

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One `vellum serve --server everything` instance keeping tasks (and sessions) in `redis`.
fn instance(redis: &str, window: &str) -> ServerProcess {
    vellum_serve(&[
        "--server",
        "everything",
        "--session-store",
        redis,
        "--task-store",
        redis,
        "--task-heartbeat-window",
        window,
    ])
}

/// A 2026-07-28 client that declares the tasks extension, talking to `url`.
fn modern(url: &str) -> Modern {
    let mut m = Modern::new(url);
    m.capabilities = full_capabilities();
    m.capabilities["extensions"] = json!({ TASKS: {} });
    m
}

/// Polls `tasks/get` on `m` until `done(task)`, for at most `limit`; the last task seen.
async fn poll(m: &Modern, id: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + limit;
    let mut n = 1000;
    loop {
        n += 1;
        let task = m
            .request(n, "tasks/get", json!({"taskId": id}))
            .await
            .result()
            .clone();
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < end, "task never got there: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn status_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |t| t["status"] == status
}

/// Starts `tool` as a task on `m`; its id.
async fn start(m: &Modern, tool: &str, arguments: Value) -> String {
    let r = m
        .request(
            1,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .await;
    let created = r.result();
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

vellum_testkit::on_both!(a_task_is_read_answered_and_cancelled_on_other_instances);
async fn a_task_is_read_answered_and_cancelled_on_other_instances(redis: Store) {
    let inst: Vec<ServerProcess> = (0..3).map(|_| instance(&redis.url(), "2s")).collect();
    let m: Vec<Modern> = inst.iter().map(|i| modern(&i.mcp_url())).collect();

    // Question asked on instance 0, seen on 1, answered on 2: the handler on 0 resumes.
    let id = start(&m[0], "confirm_delete", json!({"filename": "a.txt"})).await;
    let asking = poll(
        &m[1],
        &id,
        Duration::from_secs(10),
        status_is("input_required"),
    )
    .await;
    let keys: Vec<String> = asking["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 1, "{asking}");
    let answer = json!({"action": "accept", "content": {"confirm": true}});
    // The handler on 0 began waiting when it asked; seen on 1 within one poll of that, the
    // answer lands long before the handler's fallback re-read (1 s after it began).
    let answered = Instant::now();
    let ack = m[2]
        .request(
            2,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {keys[0].clone(): answer}}),
        )
        .await;
    assert_eq!(ack.result()["resultType"], "complete", "{}", ack.response);
    let done = poll(&m[1], &id, Duration::from_secs(10), status_is("completed")).await;
    let took = answered.elapsed();
    assert!(
        took < BUS,
        "the answer reached the running instance only after {took:?}: not over the bus"
    );
    let wrapped = json!({"result": done["result"]});
    assert_eq!(text_of(&wrapped), "a.txt deleted (not really)");

    // Started on 0, cancelled on 2, seen cancelled on 1 (and it stays so).
    let id = start(
        &m[0],
        "slow_compute",
        json!({"seconds": 60, "label": "long"}),
    )
    .await;
    let working = poll(&m[1], &id, Duration::from_secs(10), |_| true).await;
    assert_eq!(working["status"], "working", "{working}");
    let ack = m[2].request(3, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack.result()["resultType"], "complete", "{}", ack.response);
    let cancelled = poll(&m[1], &id, Duration::from_secs(5), status_is("cancelled")).await;
    assert!(cancelled.get("result").is_none(), "{cancelled}");

    // A task of one instance is not another caller's business: unknown ids are -32602.
    let unknown = m[2]
        .request(4, "tasks/get", json!({"taskId": "no-such-task"}))
        .await;
    assert_eq!(unknown.error_code(), -32602);
}

vellum_testkit::on_both!(the_tasks_of_a_killed_instance_fail_within_the_heartbeat_window);
async fn the_tasks_of_a_killed_instance_fail_within_the_heartbeat_window(redis: Store) {
    let mut a = instance(&redis.url(), "1s");
    let b = instance(&redis.url(), "1s");
    let (ma, mb) = (modern(&a.mcp_url()), modern(&b.mcp_url()));
    let id = start(&ma, "slow_compute", json!({"seconds": 60})).await;
    // Alive: well past the window, the task still works (the heartbeat keeps it).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let t = poll(&mb, &id, Duration::from_secs(1), |_| true).await;
    assert_eq!(t["status"], "working", "{t}");

    a.kill(); // SIGKILL: no goodbye.
    let killed = Instant::now();
    let failed = poll(&mb, &id, Duration::from_secs(5), status_is("failed")).await;
    let took = killed.elapsed();
    assert!(
        took < Duration::from_millis(2500),
        "failed only after {took:?}"
    );
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped"), "{failed}");
    assert_eq!(failed["statusMessage"].as_str(), Some(message), "{failed}");
}

vellum_testkit::on_both!(legacy_tasks_across_instances_then_no_key_left);
async fn legacy_tasks_across_instances_then_no_key_left(redis: Store) {
    let inst: Vec<ServerProcess> = (0..3).map(|_| instance(&redis.url(), "1s")).collect();
    let s0 = Legacy::connect(&inst[0].mcp_url()).await;
    let on = |i: usize| Legacy {
        mcp: s0.mcp.at(&inst[i].mcp_url()),
    };
    // The session's standalone stream is on instance 2; the task runs on instance 0.
    let mut stream = on(2).mcp.listen().await;

    let created = s0
        .request(
            1,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "short"},
                   "task": {"ttl": 1500}}),
        )
        .await;
    let id = created.result()["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    // tasks/result on 1 waits for the end on 0: the end's bus signal wakes it (0.3 s in),
    // not its fallback re-read (1 s after it began waiting).
    let waited = Instant::now();
    let result = on(1)
        .request(2, "tasks/result", json!({"taskId": id}))
        .await;
    assert_eq!(text_of(&result.response), "short done after 0.3 s");
    let took = waited.elapsed();
    assert!(
        took < Duration::from_millis(300) + BUS,
        "tasks/result answered only after {took:?}: the end did not come over the bus"
    );
    // tasks/list on 2 knows it; tasks/get on 1 says completed.
    let list = on(2).request(3, "tasks/list", json!({})).await;
    let ids: Vec<&str> = list.result()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["taskId"].as_str())
        .collect();
    assert_eq!(ids, [id.as_str()]);
    let got = on(1).request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got.result()["status"], "completed");

    // The status change reached the client's stream on instance 2.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = stream
            .next_message_within(Duration::from_secs(10))
            .await
            .expect("the stream ended")
            .json();
        if m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed" {
            assert_eq!(m["params"]["taskId"], id.as_str());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no completed status notification"
        );
    }

    // After the ttl, the task's keys are gone; with the session deleted, only the live
    // instances' heartbeats remain (on the shared cluster: none of this task's and session's
    // keys remain).
    let sid = s0.mcp.session.clone().unwrap();
    assert!(s0.mcp.delete().await.is_success());
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let left: Vec<String> = redis
            .keys("*")
            .into_iter()
            .filter(|k| !k.starts_with("vellum:i:"))
            .filter(|k| matches!(redis, Store::Node(_)) || k.contains(&id) || k.contains(&sid))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < end, "keys left in Redis: {left:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

vellum_testkit::on_both!(redis_alone_shares_sessions_tasks_listen_streams_and_rate_limits);
/// `--redis URL` and no store flag: three instances share sessions (a session initialized on
/// one is served by the others), tasks (`tasks/get` on another instance), and list changes
/// reach `subscriptions/listen` streams on the other instances; the rate-limit buckets are in
/// Redis too.
async fn redis_alone_shares_sessions_tasks_listen_streams_and_rate_limits(redis: Store) {
    let url = redis.url();
    let everything: Vec<ServerProcess> = (0..3)
        .map(|_| vellum_serve(&["--server", "everything", "--redis", &url]))
        .collect();

    // Sessions: initialized on 0, served by 1 and 2.
    let s0 = Legacy::connect(&everything[0].mcp_url()).await;
    for (n, inst) in everything.iter().enumerate().skip(1) {
        let on = Legacy {
            mcp: s0.mcp.at(&inst.mcp_url()),
        };
        let r = on
            .request(
                n as i64,
                "tools/call",
                json!({"name": "test_simple_text", "arguments": {}}),
            )
            .await;
        assert!(
            !text_of(&r.response).is_empty(),
            "instance {n} did not serve the session: {}",
            r.response
        );
    }

    // Tasks: started on 0, known on 1 and 2.
    let m: Vec<Modern> = everything.iter().map(|i| modern(&i.mcp_url())).collect();
    let id = start(&m[0], "slow_compute", json!({"seconds": 0.2, "label": "r"})).await;
    for other in &m[1..] {
        let got = other.request(9, "tasks/get", json!({"taskId": id})).await;
        assert!(
            ["working", "completed"].contains(&got.result()["status"].as_str().unwrap_or("")),
            "{}",
            got.response
        );
    }

    // Listen fan-out: streams on 1 and 2 hear a list change made on 0.
    let bench: Vec<ServerProcess> = (0..3)
        .map(|_| {
            vellum_serve(&[
                "--server",
                "bench",
                "--redis",
                &url,
                "--rate-limit-tool",
                "touch=1000/s",
            ])
        })
        .collect();
    let b: Vec<Modern> = bench.iter().map(|i| Modern::new(&i.mcp_url())).collect();
    let mut streams = Vec::new();
    for (n, client) in b.iter().enumerate().skip(1) {
        let mut s = client
            .listen(40 + n as i64, json!({"toolsListChanged": true}))
            .await;
        let ack = s.next_message().await.expect("the acknowledgement").json();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        streams.push(s);
    }
    let touched = b[0]
        .request(5, "tools/call", json!({"name": "touch", "arguments": {}}))
        .await;
    assert_eq!(text_of(&touched.response), "added", "{}", touched.response);
    for s in &mut streams {
        let heard = loop {
            let m = s
                .next_message_within(Duration::from_secs(10))
                .await
                .expect("list_changed on the listen stream of another instance")
                .json();
            if m["method"] == "notifications/tools/list_changed" {
                break m;
            }
        };
        assert!(heard["params"]["_meta"].is_object(), "{heard}");
    }
    // The tool's bucket is a Redis key (the limiter is the shared one).
    let buckets = redis.keys("vellum:rl:*");
    assert!(
        buckets.iter().any(|k| k.ends_with(":t:touch}")),
        "{buckets:?}"
    );
}
