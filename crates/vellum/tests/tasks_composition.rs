//! A tool call that gathers input by multi round-trip first and becomes a task only where its
//! handler calls `RequestContext::become_task` (SEP-2663, MRTR to tasks), over loopback HTTP
//! at 2026-07-28; and the same tool for a client without the extension, and in a legacy
//! session, where `become_task` just goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vellum::prelude::*;
use vellum::protocol::{ElicitFormParams, ElicitParams, TaskSupport};
use vellum_testkit::DEADLINE;
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn server() -> Server {
    let s = Server::new(
        Implementation::new("compose", "1"),
        ServerOptions::default(),
    );
    s.add_tool(
        Tool::new("named", "Asks a name, then goes on as a task")
            .with_task_support(TaskSupport::Optional)
            .with_input_before_task(),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let form = ElicitParams::Form(ElicitFormParams::new(
                "Name?",
                schema.as_object().unwrap().clone(),
            ));
            let answer = ctx.with_input_key("user_name").elicit(form).await?;
            ctx.become_task()?;
            let name = answer.content.unwrap_or_default()["name"].clone();
            Ok::<_, HandlerError>(format!("Hello, {}", name.as_str().unwrap_or("?")))
        },
    )
    .unwrap();
    s
}

fn answer(name: &str) -> Value {
    json!({"user_name": {"action": "accept", "content": {"name": name}}})
}

#[tokio::test]
async fn input_first_then_a_task() {
    let srv = TestHttpServer::serve(server()).await;
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
    let start = Instant::now();
    let done = loop {
        let t = c
            .request(3, "tasks/get", json!({"taskId": id}))
            .await
            .result()
            .clone();
        assert_ne!(t["status"], "input_required", "asked again: {t}");
        if t["status"] == "completed" {
            break t;
        }
        assert!(start.elapsed() < DEADLINE, "task stuck: {t}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice");
}

#[tokio::test]
async fn without_the_extension_or_in_a_session_it_just_goes_on() {
    let srv = TestHttpServer::serve(server()).await;
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
}
