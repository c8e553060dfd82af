//! What Redis holds per session, per stored event and per task, measured with
//! `MEMORY USAGE KEY SAMPLES 0` (the key, its value and the allocator's overhead, every
//! element counted) on a real `redis-server` behind `vellum serve`. It prints the figures
//! (`redis sizing: …`) that docs/cluster.md's "Sizing Redis" quotes, and fails when one grows
//! past a bound, so the documented figures cannot drift far unnoticed.
//!
//! Needs `redis-server` and `redis-cli` on PATH (`scripts/test.sh` installs Debian's package).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use serde_json::{Value, json};
use vellum_testkit::http::{Legacy, Modern, full_capabilities};
use vellum_testkit::process::vellum_serve;
use vellum_testkit::redis::RedisServer;

/// Sessions measured (the figure is their mean).
const SESSIONS: usize = 20;
/// Progress events of the streaming call measured.
const EVENTS: u64 = 200;
/// Tasks measured.
const TASKS: usize = 10;

fn cli(redis: &RedisServer, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-u", &redis.url(), "--raw"])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `MEMORY USAGE` of each key, summed.
fn bytes(redis: &RedisServer, keys: &[String]) -> u64 {
    keys.iter()
        .map(|k| {
            cli(redis, &["memory", "usage", k, "samples", "0"])
                .parse::<u64>()
                .unwrap_or_else(|e| panic!("MEMORY USAGE {k}: {e}"))
        })
        .sum()
}

fn session_keys(redis: &RedisServer, sid: &str) -> Vec<String> {
    redis.keys(&format!("vellum:{{{sid}}}*"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_per_session_event_and_task() {
    let redis = RedisServer::start();
    let url = redis.url();
    let bench = vellum_serve(&[
        "--server",
        "bench",
        "--session-store",
        &url,
        "--event-store",
        &url,
    ]);

    // Sessions: initialized, nothing else done.
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(Legacy::connect(&bench.mcp_url()).await);
    }
    let mut session_bytes = 0;
    let mut layout = Vec::new();
    for s in &sessions {
        let sid = s.mcp.session.clone().unwrap();
        let keys = session_keys(&redis, &sid);
        assert!(!keys.is_empty(), "session {sid} has no key in Redis");
        if layout.is_empty() {
            layout = keys
                .iter()
                .map(|k| k.replace(&sid, "S"))
                .collect::<Vec<_>>();
        }
        session_bytes += bytes(&redis, &keys);
    }
    let per_session = session_bytes / SESSIONS as u64;

    // Events: one streaming call of EVENTS progress notifications, each stored in the
    // session's Redis stream (for resumption) as the call runs. (An answer complete at the
    // first poll is written whole and not stored: 1 ms between events keeps it streaming.)
    let s = &sessions[0];
    let sid = s.mcp.session.clone().unwrap();
    let before_keys = session_keys(&redis, &sid);
    let before = bytes(&redis, &before_keys);
    let reply = s
        .request(
            7,
            "tools/call",
            json!({"name":"stream","arguments":{"count":EVENTS,"interval_ms":1},"_meta":{"progressToken":"t"}}),
        )
        .await;
    assert_eq!(
        reply.notifications("notifications/progress").len() as u64,
        EVENTS
    );
    let after_keys = session_keys(&redis, &sid);
    let stored: u64 = after_keys
        .iter()
        .filter(|k| cli(&redis, &["type", k]) == "stream")
        .map(|k| cli(&redis, &["xlen", k]).parse::<u64>().unwrap())
        .sum();
    assert!(
        stored >= EVENTS,
        "only {stored} events stored of {EVENTS}: {after_keys:?}"
    );
    // Of which fixed per stream: its metadata hash, the session's list of streams, its counter.
    let new_meta: Vec<String> = after_keys
        .iter()
        .filter(|k| !before_keys.contains(k) && cli(&redis, &["type", k]) != "stream")
        .cloned()
        .collect();
    let per_stream = bytes(&redis, &new_meta);
    let per_event = (bytes(&redis, &after_keys) - before - per_stream) / stored;
    let new_meta: Vec<String> = new_meta.iter().map(|k| k.replace(&sid, "S")).collect();
    let sample = reply.notifications("notifications/progress")[0].to_string();

    // Tasks: 2026-07-28 tasks of `slow_compute`, completed, as `tasks/get` keeps them.
    let everything = vellum_serve(&[
        "--server",
        "everything",
        "--session-store",
        &url,
        "--task-store",
        &url,
    ]);
    let mut m = Modern::new(&everything.mcp_url());
    m.capabilities = full_capabilities();
    m.capabilities["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    let mut ids = Vec::new();
    for i in 0..TASKS {
        let created = m
            .request(
                i as i64 + 1,
                "tools/call",
                json!({"name":"slow_compute","arguments":{"seconds":0.05,"label":"sized"}}),
            )
            .await;
        let id = created.result()["taskId"].as_str().unwrap().to_owned();
        ids.push(id);
    }
    let mut task_bytes = 0;
    let mut record_len = 0;
    for (n, id) in ids.iter().enumerate() {
        // Polled until completed (each poll waits on the answer, not on time).
        let task = loop {
            let t: Value = m
                .request(100 + n as i64, "tasks/get", json!({"taskId": id}))
                .await
                .result()
                .clone();
            if t["status"] == "completed" {
                break t;
            }
            assert_eq!(t["status"], "working", "{t}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        assert!(task.get("result").is_some(), "{task}");
        let keys = redis.keys(&format!("vellum:{{t:{id}}}*"));
        assert_eq!(keys.len(), 1, "{keys:?}");
        task_bytes += bytes(&redis, &keys);
        record_len += cli(&redis, &["hstrlen", &keys[0], "rec"])
            .parse::<u64>()
            .unwrap();
    }
    let per_task = task_bytes / TASKS as u64;

    eprintln!(
        "redis sizing: {per_session} bytes per session (keys {layout:?}, mean of {SESSIONS}), \
         {per_event} bytes per stored event (mean of {stored}; a progress event is {} bytes of \
         JSON; and once per stream {per_stream} bytes: {new_meta:?}), {per_task} bytes per \
         completed task (mean of {TASKS}; its record {} bytes of JSON)",
        sample.len(),
        record_len / TASKS as u64
    );
    // Bounds well above today's figures: a change that doubles one shows here.
    assert!(per_session < 2048, "{per_session} bytes per session");
    assert!(per_event < 512, "{per_event} bytes per event");
    assert!(per_task < 2048, "{per_task} bytes per task");
}
