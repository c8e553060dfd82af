//! A tool call that gathers input by multi round-trip first and becomes a task only where its
//! handler calls `RequestContext::become_task` (SEP-2663, MRTR to tasks), over loopback HTTP
//! at 2026-07-28; and the same tool for a client without the extension, and in a legacy
//! session, where `become_task` just goes on. Every tool here counts how often its body
//! starts: a call that becomes a task runs it once per round (a question's retry, a task's
//! answered `input_required`), never once more for becoming the task.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vellum::prelude::*;
use vellum::protocol::{ElicitFormParams, ElicitParams, TaskSupport};
use vellum_testkit::DEADLINE;
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// How often each tool's body started, and how often `named` went past `become_task`.
#[derive(Default)]
struct Runs {
    named: AtomicUsize,
    named_after: AtomicUsize,
    plain: AtomicUsize,
    asking: AtomicUsize,
}

fn count(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

fn name_form() -> ElicitParams {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    ElicitParams::Form(ElicitFormParams::new(
        "Name?",
        schema.as_object().unwrap().clone(),
    ))
}

fn server(runs: &Arc<Runs>) -> Server {
    let s = Server::new(
        Implementation::new("compose", "1"),
        ServerOptions::default(),
    );
    let r = runs.clone();
    s.add_tool(
        Tool::new("named", "Asks a name, then goes on as a task")
            .with_task_support(TaskSupport::Optional)
            .with_input_before_task(),
        move |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| {
            let r = r.clone();
            async move {
                r.named.fetch_add(1, Ordering::SeqCst);
                let answer = ctx.with_input_key("user_name").elicit(name_form()).await?;
                ctx.become_task().await;
                r.named_after.fetch_add(1, Ordering::SeqCst);
                let name = answer.content.unwrap_or_default()["name"].clone();
                Ok::<_, HandlerError>(format!("Hello, {}", name.as_str().unwrap_or("?")))
            }
        },
    )
    .unwrap();
    let r = runs.clone();
    s.add_tool(
        Tool::new("plain", "Runs as a task when asked, asks nothing")
            .with_task_support(TaskSupport::Optional),
        move |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| {
            let r = r.clone();
            async move {
                r.plain.fetch_add(1, Ordering::SeqCst);
                Ok::<_, HandlerError>("plain work done")
            }
        },
    )
    .unwrap();
    let r = runs.clone();
    s.add_tool(
        Tool::new("asking", "Asks a name inside its task").with_task_support(TaskSupport::Optional),
        move |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| {
            let r = r.clone();
            async move {
                r.asking.fetch_add(1, Ordering::SeqCst);
                let answer = ctx.with_input_key("user_name").elicit(name_form()).await?;
                let name = answer.content.unwrap_or_default()["name"].clone();
                Ok::<_, HandlerError>(format!("Hi, {}", name.as_str().unwrap_or("?")))
            }
        },
    )
    .unwrap();
    s
}

/// Polls `tasks/get` until the task's status is `status`, failing on `never`.
async fn poll_until(c: &Modern, id: &str, status: &str, never: &str) -> Value {
    let start = Instant::now();
    loop {
        let t = c
            .request(90, "tasks/get", json!({"taskId": id}))
            .await
            .result()
            .clone();
        assert_ne!(t["status"], never, "{t}");
        if t["status"] == status {
            return t;
        }
        assert!(start.elapsed() < DEADLINE, "task stuck: {t}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn answer(name: &str) -> Value {
    json!({"user_name": {"action": "accept", "content": {"name": name}}})
}

#[tokio::test]
async fn input_first_then_a_task() {
    let runs = Arc::new(Runs::default());
    let srv = TestHttpServer::serve(server(&runs)).await;
    let mut c = Modern::new(&srv.url);
    c.capabilities["extensions"] = json!({ TASKS: {} });

    // Round 1: a question, not a task.
    let round1 = c
        .request(1, "tools/call", json!({"name": "named", "arguments": {}}))
        .await;
    let r = round1.result();
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r.get("taskId").is_none(), "{r}");
    assert!(r["inputRequests"]["user_name"].is_object(), "{r}");
    let state = r["requestState"].clone();
    assert_eq!(count(&runs.named), 1);

    // Round 2, answered: the task (no MRTR state in its envelope).
    let round2 = c
        .request(
            2,
            "tools/call",
            json!({"name": "named", "arguments": {}, "inputResponses": answer("Alice"),
                   "requestState": state}),
        )
        .await;
    let created = round2.result();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none(), "{created}");
    assert!(created.get("inputRequests").is_none(), "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();

    // The task finishes with the answer of round 2 and asks nothing more.
    let done = poll_until(&c, &id, "completed", "input_required").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice");
    // Once per round: the handler that became the task went on; nothing ran it again.
    assert_eq!(
        count(&runs.named),
        2,
        "the body ran again to become the task"
    );
    assert_eq!(count(&runs.named_after), 1);
}

/// A task-augmented call runs its tool's body once per round, in both eras: a 2025-11-25
/// `tools/call` with `task`, and 2026-07-28 tasks (extension) with and without a question.
#[tokio::test]
async fn a_task_runs_its_body_once_per_round() {
    let runs = Arc::new(Runs::default());
    let srv = TestHttpServer::serve(server(&runs)).await;

    let legacy = Legacy::connect(&srv.url).await;
    let created = legacy
        .request(
            1,
            "tools/call",
            json!({"name": "plain", "arguments": {}, "task": {}}),
        )
        .await;
    let id = created.result()["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let result = legacy
        .request(2, "tasks/result", json!({"taskId": id}))
        .await;
    assert_eq!(result.result()["content"][0]["text"], "plain work done");
    assert_eq!(count(&runs.plain), 1);

    let mut c = Modern::new(&srv.url);
    c.capabilities["extensions"] = json!({ TASKS: {} });
    let created = c
        .request(3, "tools/call", json!({"name": "plain", "arguments": {}}))
        .await;
    let id = created.result()["taskId"].as_str().unwrap().to_owned();
    poll_until(&c, &id, "completed", "failed").await;
    assert_eq!(count(&runs.plain), 2);

    // Round 1 asks (the task waits in input_required); round 2 runs with the answer.
    let created = c
        .request(4, "tools/call", json!({"name": "asking", "arguments": {}}))
        .await;
    let id = created.result()["taskId"].as_str().unwrap().to_owned();
    poll_until(&c, &id, "input_required", "failed").await;
    assert_eq!(count(&runs.asking), 1);
    c.request(
        5,
        "tasks/update",
        json!({"taskId": id, "inputResponses": answer("Dee")}),
    )
    .await;
    let done = poll_until(&c, &id, "completed", "failed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hi, Dee");
    assert_eq!(count(&runs.asking), 2);
}

#[tokio::test]
async fn without_the_extension_or_in_a_session_it_just_goes_on() {
    let runs = Arc::new(Runs::default());
    let srv = TestHttpServer::serve(server(&runs)).await;
    let c = Modern::new(&srv.url);
    let round1 = c
        .request(1, "tools/call", json!({"name": "named", "arguments": {}}))
        .await;
    let state = round1.result()["requestState"].clone();
    let round2 = c
        .request(
            2,
            "tools/call",
            json!({"name": "named", "arguments": {}, "inputResponses": answer("Bo"),
                   "requestState": state}),
        )
        .await;
    let r = round2.result();
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(r["content"][0]["text"], "Hello, Bo");

    // A legacy session: the question goes to the client, the call completes in place.
    let s = Legacy::connect(&srv.url).await;
    let accept = |_question: &Value| json!({"action": "accept", "content": {"name": "Cy"}});
    let reply = s
        .request_answering(
            3,
            "tools/call",
            json!({"name": "named", "arguments": {}}),
            Some(&accept),
        )
        .await;
    assert_eq!(reply.result()["content"][0]["text"], "Hello, Cy");
    // Two MRTR rounds and one call in a session: once each.
    assert_eq!(count(&runs.named), 3);
    assert_eq!(count(&runs.named_after), 2);
}
