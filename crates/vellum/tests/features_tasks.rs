//! Tool calls as tasks over loopback HTTP: the 2025-11-25 experimental tasks (`task` param,
//! `tasks/get|result|list|cancel`) and the 2026-07-28 extension `io.modelcontextprotocol/tasks`
//! (`resultType: "task"`, `tasks/get|update|cancel`, input via `tasks/update`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;
use vellum::prelude::*;
use vellum::protocol::{ElicitFormParams, ElicitParams, ElicitResult, TaskSupport};
use vellum_testkit::DEADLINE;
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

struct DropSignal(Arc<Notify>);
impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

fn server(gate: Arc<Notify>, dropped: Arc<Notify>) -> Server {
    let s = Server::new(Implementation::new("tasks", "1"), ServerOptions::default());
    s.add_tool(
        Tool::new("slow", "Waits for the test to let it finish")
            .with_task_support(TaskSupport::Required),
        move |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| {
            let gate = gate.clone();
            let guard = DropSignal(dropped.clone());
            async move {
                let _guard = guard;
                gate.notified().await;
                Ok::<_, HandlerError>("slow work done")
            }
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("ask", "Asks the user inside a task").with_task_support(TaskSupport::Optional),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let r = ctx
                .elicit(ElicitParams::Form(ElicitFormParams::new(
                    "Name?",
                    schema.as_object().unwrap().clone(),
                )))
                .await?;
            let name = r.content.unwrap_or_default()["name"].clone();
            Ok::<_, HandlerError>(format!("Hello, {}", name.as_str().unwrap_or("?")))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("pair", "Asks two questions at once inside a task")
            .with_task_support(TaskSupport::Optional),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let form = |message: &str| {
                ElicitParams::Form(ElicitFormParams::new(
                    message,
                    schema.as_object().unwrap().clone(),
                ))
            };
            let (a, b) = (ctx.with_input_key("a"), ctx.with_input_key("b"));
            let (first, second) = tokio::join!(a.elicit(form("first")), b.elicit(form("second")));
            let name = |r: ElicitResult| r.content.unwrap_or_default()["name"].clone();
            Ok::<_, HandlerError>(format!("{} and {}", name(first?), name(second?)))
        },
    )
    .unwrap();
    s
}

/// Polls `tasks/get` (as a client would) until the task's status is `status`.
async fn poll_until<F, Fut>(mut get: F, status: &str) -> Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let start = Instant::now();
    loop {
        let t = get().await;
        if t["status"] == status {
            return t;
        }
        assert!(start.elapsed() < DEADLINE, "task stuck in {}", t["status"]);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn legacy_tasks() {
    let gate = Arc::new(Notify::new());
    let dropped = Arc::new(Notify::new());
    let srv = TestHttpServer::serve(server(gate.clone(), dropped.clone())).await;
    let c = Legacy::connect(&srv.url).await;
    let other = Legacy::connect(&srv.url).await;

    // A required-task tool refuses a plain call.
    let plain = c
        .request(1, "tools/call", json!({"name": "slow", "arguments": {}}))
        .await;
    assert_eq!(plain.error_code(), -32601);

    let created = c
        .request(
            2,
            "tools/call",
            json!({"name": "slow", "arguments": {}, "task": {"ttl": 60000}}),
        )
        .await;
    let task = created.result()["task"].clone();
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert!(id.len() >= 40, "task ids are unguessable");
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60000);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));

    let got = c.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got.result()["status"], "working");
    let list = c.request(4, "tasks/list", json!({})).await;
    assert_eq!(list.result()["tasks"][0]["taskId"], id.as_str());
    // Tasks belong to their session.
    let theirs = other.request(1, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(theirs.error_code(), -32602);
    let none = other.request(2, "tasks/list", json!({})).await;
    assert_eq!(none.result()["tasks"], json!([]));

    // tasks/result waits for the end (the work is let go only once it was asked), then
    // answers what the call would have.
    let (result, ()) = tokio::time::timeout(DEADLINE, async {
        tokio::join!(c.request(5, "tasks/result", json!({"taskId": id})), async {
            tokio::task::yield_now().await;
            gate.notify_one();
        })
    })
    .await
    .unwrap();
    assert_eq!(result.result()["content"][0]["text"], "slow work done");
    assert_eq!(
        result.result()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    // The finished handler was dropped too (consumes that signal).
    tokio::time::timeout(DEADLINE, dropped.notified())
        .await
        .unwrap();
    let done = c.request(6, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(done.result()["status"], "completed");
    let late = c.request(7, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(
        late.error_code(),
        -32602,
        "terminal tasks cannot be cancelled"
    );

    // Cancelling a running task drops its handler.
    let created = c
        .request(
            8,
            "tools/call",
            json!({"name": "slow", "arguments": {}, "task": {}}),
        )
        .await;
    let id2 = created.result()["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = c.request(9, "tasks/cancel", json!({"taskId": id2})).await;
    assert_eq!(cancelled.result()["status"], "cancelled");
    tokio::time::timeout(DEADLINE, dropped.notified())
        .await
        .unwrap();
    let got = c.request(10, "tasks/get", json!({"taskId": id2})).await;
    assert_eq!(got.result()["status"], "cancelled");
}

#[tokio::test]
async fn tasks_are_advertised_per_era() {
    let srv = TestHttpServer::serve(server(Arc::default(), Arc::default())).await;
    let c = Legacy::connect(&srv.url).await;
    let init = c
        .mcp
        .http
        .post(&srv.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(init.contains(r#""tasks":{"#), "{init}");
    assert!(!init.contains("io.modelcontextprotocol/tasks"), "{init}");
    let m = Modern::new(&srv.url);
    let d = m.request(1, "server/discover", json!({})).await;
    let caps = &d.result()["capabilities"];
    assert!(caps["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    assert!(caps.get("tasks").is_none());
}

#[tokio::test]
async fn modern_tasks_with_input() {
    let gate = Arc::new(Notify::new());
    let srv = TestHttpServer::serve(server(gate.clone(), Arc::default())).await;
    let mut c = Modern::new(&srv.url);
    // Without the extension, a tool that only runs as a task is refused ...
    let refused = c
        .request(1, "tools/call", json!({"name": "slow", "arguments": {}}))
        .await;
    assert_eq!(refused.error_code(), -32021);
    // ... and an optional one runs at once (here: MRTR for its question).
    let direct = c
        .request(2, "tools/call", json!({"name": "ask", "arguments": {}}))
        .await;
    assert_eq!(direct.result()["resultType"], "input_required");

    c.capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let created = c
        .request(3, "tools/call", json!({"name": "ask", "arguments": {}}))
        .await;
    let r = created.result();
    assert_eq!(r["resultType"], "task");
    assert!(r["ttlMs"].is_u64() && r["pollIntervalMs"].is_u64(), "{r}");
    let id = r["taskId"].as_str().unwrap().to_owned();

    let get = || {
        let body = json!({"taskId": id});
        let c = &c;
        async move { c.request(4, "tasks/get", body).await.result().clone() }
    };
    let waiting = poll_until(get, "input_required").await;
    assert_eq!(waiting["resultType"], "complete");
    let (key, ask) = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    let ack = c
        .request(
            5,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"name": "Lin"}}}}),
        )
        .await;
    assert_eq!(ack.result()["resultType"], "complete");
    let done = poll_until(get, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Lin");

    // Cancellation is acknowledged with an empty result.
    let created = c
        .request(6, "tools/call", json!({"name": "slow", "arguments": {}}))
        .await;
    let id2 = created.result()["taskId"].as_str().unwrap().to_owned();
    let ack = c.request(7, "tasks/cancel", json!({"taskId": id2})).await;
    assert_eq!(ack.result()["resultType"], "complete");
    let got = c.request(8, "tasks/get", json!({"taskId": id2})).await;
    assert_eq!(got.result()["status"], "cancelled");
    let unknown = c.request(9, "tasks/get", json!({"taskId": "nope"})).await;
    assert_eq!(unknown.error_code(), -32602);
}

/// A task whose handler asks two questions at once waits for both: `tasks/get` shows what is
/// still unanswered after each `tasks/update` (partial fulfillment).
#[tokio::test]
async fn modern_task_inputs_can_be_answered_one_by_one() {
    let (gate, dropped) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let srv = TestHttpServer::serve(server(gate, dropped)).await;
    let mut c = Modern::new(&srv.url);
    c.capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let created = c
        .request(1, "tools/call", json!({"name": "pair", "arguments": {}}))
        .await;
    let id = created.result()["taskId"].as_str().unwrap().to_owned();
    let get = || {
        let body = json!({"taskId": id});
        let c = &c;
        async move { c.request(2, "tasks/get", body).await.result().clone() }
    };
    let waiting = poll_until(get, "input_required").await;
    let keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["a", "b"], "{waiting}");
    let update = |key: &str, name: &str| json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"name": name}}}});
    let ack = c.request(3, "tasks/update", update("a", "Ann")).await;
    assert_eq!(ack.result()["resultType"], "complete");
    let half = c.request(4, "tasks/get", json!({"taskId": id})).await;
    let half = half.result();
    assert_eq!(half["status"], "input_required", "{half}");
    let left: Vec<&String> = half["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(left, ["b"], "{half}");
    c.request(5, "tasks/update", update("b", "Bo")).await;
    let done = poll_until(get, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "\"Ann\" and \"Bo\"");
}

/// 2026-07-28 task methods from a client without the tasks extension are -32021 (HTTP 400),
/// whether or not the task exists; `Mcp-Name` must carry the request's `taskId` (-32020).
#[tokio::test]
async fn modern_task_methods_need_the_extension_and_their_routing_header() {
    let (gate, dropped) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let srv = TestHttpServer::serve(server(gate, dropped)).await;
    let mut c = Modern::new(&srv.url);
    c.capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let created = c
        .request(1, "tools/call", json!({"name": "slow", "arguments": {}}))
        .await;
    let id = created.result()["taskId"].as_str().unwrap().to_owned();
    let mut plain = Modern::new(&srv.url);
    plain.capabilities = json!({});
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/get", json!({"taskId": "gate-test"})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": id})),
    ] {
        let a = plain.request(2, method, params).await;
        assert_eq!(a.status, 400, "{method}");
        assert_eq!(a.error_code(), -32021, "{method}");
        let data = &a.response["error"]["data"]["requiredCapabilities"];
        assert!(
            data["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
            "{method}: {}",
            a.response
        );
    }
    // The routing header: the taskId, else -32020.
    let body = c.body(3, "tasks/get", json!({"taskId": id}));
    let a = c
        .mcp
        .modern_with(&body, &[("mcp-name", Some("another"))])
        .await;
    assert_eq!(a.status, reqwest::StatusCode::BAD_REQUEST);
    assert_eq!(a.error_code(), -32020);
    let a = c.mcp.modern_with(&body, &[("mcp-name", None)]).await;
    assert_eq!(a.error_code(), -32020);
    let ok = c.request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(ok.result()["status"], "working");
    c.request(5, "tasks/cancel", json!({"taskId": id})).await;
}
