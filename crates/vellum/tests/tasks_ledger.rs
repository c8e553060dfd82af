//! What a task is charged in the server's task ledger comes back however the task ends:
//! a handler that panics, a call cancelled while its record is being stored; and to whom it
//! is charged: a client address cannot take every task of the server. Real HTTP over
//! loopback (distinct 127.x addresses are distinct clients).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast};
use vellum::prelude::*;
use vellum::protocol::{ElicitFormParams, ElicitParams, InputResponses, TaskSupport};
use vellum::server::StateLimits;
use vellum::store::{
    Answered, MemoryTaskStore, StoreError, TaskRecord, TaskSignal, TaskStore, TaskTransition,
};
use vellum_testkit::DEADLINE;
use vellum_testkit::http::{Legacy, McpHttp, Modern, TestHttpServer};

/// A server whose sessions may keep one task each, with a tool that panics and one that
/// answers at once.
fn server() -> Server {
    server_with(StateLimits::default().with_max_tasks_per_session(1))
}

/// A server with these limits and the tools `boom` (panics), `quick` (answers at once) and
/// `ask` (asks the user a question).
fn server_with(limits: StateLimits) -> Server {
    let s = Server::new(
        Implementation::new("ledger", "1"),
        ServerOptions::default().with_limits(limits),
    );
    s.add_tool(
        Tool::new("boom", "Panics").with_task_support(TaskSupport::Required),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            if Instant::now().elapsed() < DEADLINE {
                panic!("the tool panics");
            }
            Ok::<_, HandlerError>("unreachable")
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("quick", "Answers at once").with_task_support(TaskSupport::Required),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>("done")
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("ask", "Asks the user").with_task_support(TaskSupport::Required),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let form = ElicitFormParams::new("Name?", schema.as_object().unwrap().clone());
            let r = ctx.elicit(ElicitParams::Form(form)).await?;
            Ok::<_, HandlerError>(format!("{}", r.content.unwrap_or_default()["name"]))
        },
    )
    .unwrap();
    s
}

/// Calls `tool` as a task (kept 1 ms once it ends) until the session's cap admits it: the
/// task created. Refusals past the deadline fail the test (the slot never came back).
async fn call_until_admitted(c: &Legacy, id: i64, tool: &str) -> Value {
    let start = Instant::now();
    loop {
        let r = c
            .request(
                id,
                "tools/call",
                json!({"name": tool, "arguments": {}, "task": {"ttl": 1}}),
            )
            .await;
        if r.response.get("error").is_none() {
            return r.result()["task"].clone();
        }
        assert_eq!(r.error_code(), -32602, "{}", r.response);
        assert!(
            start.elapsed() < DEADLINE,
            "the session's task slot never came back: {}",
            r.response
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_task_whose_tool_panics_gives_its_slot_back() {
    let srv = TestHttpServer::serve(server()).await;
    let c = Legacy::connect(&srv.url).await;
    // Each panicking task holds the session's only slot until its charge is released.
    for id in 1..=3 {
        let task = call_until_admitted(&c, id, "boom").await;
        assert_eq!(task["status"], "working");
    }
    let task = call_until_admitted(&c, 10, "quick").await;
    assert_eq!(task["status"], "working");
}

/// A memory store whose next `create` never finishes (until the caller drops it).
struct HeldCreate {
    inner: MemoryTaskStore,
    hold: AtomicBool,
    entered: Arc<Notify>,
}

impl TaskStore for HeldCreate {
    fn instance_id(&self) -> &str {
        self.inner.instance_id()
    }
    fn create(
        &self,
        record: &TaskRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        if !self.hold.swap(false, Ordering::AcqRel) {
            return self.inner.create(record, ttl);
        }
        let entered = self.entered.clone();
        Box::pin(async move {
            entered.notify_one();
            std::future::pending().await
        })
    }
    fn load(
        &self,
        id: &str,
        updated: &str,
    ) -> BoxFuture<'static, Result<Option<TaskRecord>, StoreError>> {
        self.inner.load(id, updated)
    }
    fn list(&self, owner: &str) -> BoxFuture<'static, Result<Vec<TaskRecord>, StoreError>> {
        self.inner.list(owner)
    }
    fn transition(
        &self,
        id: &str,
        change: TaskTransition,
        updated: &str,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        self.inner.transition(id, change, updated)
    }
    fn answer(
        &self,
        id: &str,
        answers: InputResponses,
    ) -> BoxFuture<'static, Result<Answered, StoreError>> {
        self.inner.answer(id, answers)
    }
    fn signal(&self, signal: TaskSignal) -> BoxFuture<'static, Result<(), StoreError>> {
        self.inner.signal(signal)
    }
    fn signals(&self) -> broadcast::Receiver<TaskSignal> {
        self.inner.signals()
    }
}

#[tokio::test]
async fn a_task_call_cancelled_while_its_record_is_stored_gives_its_slot_back() {
    let entered = Arc::new(Notify::new());
    let s = server();
    s.set_task_store(Arc::new(HeldCreate {
        inner: MemoryTaskStore::new(),
        hold: AtomicBool::new(true),
        entered: entered.clone(),
    }));
    let srv = TestHttpServer::serve(s).await;
    let c = Arc::new(Legacy::connect(&srv.url).await);

    let pending = tokio::spawn({
        let c = c.clone();
        async move {
            c.post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "quick", "arguments": {}, "task": {"ttl": 1}}}))
                .await
        }
    });
    tokio::time::timeout(DEADLINE, entered.notified())
        .await
        .expect("the task's record was never being stored");
    let ack = c
        .mcp
        .notify("notifications/cancelled", Some(json!({"requestId": 7})))
        .await;
    assert_eq!(ack.status, 202, "{}", ack.text());

    let task = call_until_admitted(&c, 8, "quick").await;
    assert_eq!(task["status"], "working");
    pending.abort();
}

/// Answers sent with `tasks/update` are kept with the task: counted against the task byte
/// budgets, refused past them (and then not kept: the question is still open).
#[tokio::test]
async fn answers_past_the_task_byte_budget_are_refused() {
    let limits = StateLimits::default().with_max_task_bytes(64 * 1024);
    let srv = TestHttpServer::serve(server_with(limits)).await;
    let mut c = Modern::new(&srv.url);
    c.capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let created = c
        .request(1, "tools/call", json!({"name": "ask", "arguments": {}}))
        .await;
    let id = created.result()["taskId"].as_str().unwrap().to_owned();
    let start = Instant::now();
    let key = loop {
        let t = c.request(2, "tasks/get", json!({"taskId": id})).await;
        if let Some(asked) = t.result()["inputRequests"].as_object() {
            break asked.keys().next().unwrap().clone();
        }
        assert!(start.elapsed() < DEADLINE, "never asked: {}", t.response);
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let answer = |name: String| json!({"taskId": id, "inputResponses": {&key: {"action": "accept", "content": {"name": name}}}});

    let big = c
        .request(3, "tasks/update", answer("x".repeat(80 * 1024)))
        .await;
    assert_eq!(big.error_code(), -32602, "{}", big.response);
    let message = big.response["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_task_bytes"), "{message}");
    let still = c.request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(
        still.result()["status"],
        "input_required",
        "{}",
        still.response
    );

    let ok = c.request(5, "tasks/update", answer("Lin".into())).await;
    assert_eq!(ok.result()["resultType"], "complete", "{}", ok.response);
    let start = Instant::now();
    loop {
        let t = c.request(6, "tasks/get", json!({"taskId": id})).await;
        if t.result()["status"] == "completed" {
            assert_eq!(t.result()["result"]["content"][0]["text"], "\"Lin\"");
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "never completed: {}",
            t.response
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A 2026-07-28 client with the tasks extension whose connections come from `from`.
fn tasks_client(url: &str, from: [u8; 4]) -> Modern {
    let mut c = Modern {
        mcp: McpHttp::from_address(url, from),
        ..Modern::new(url)
    };
    c.capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    c
}

/// Asserts that `r` is a task refused by the per-address count cap, nothing kept.
fn assert_refused_per_address(r: &vellum_testkit::http::Reply) {
    assert_eq!(r.error_code(), -32602, "{}", r.response);
    let message = r.response["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_tasks_per_address"), "{message}");
    assert!(message.contains("nothing was kept"), "{message}");
}

/// Callers without a principal are charged per client address, across their sessions and
/// eras: one address (127.0.0.1) that fills its cap gets a JSON-RPC error naming it, and
/// another (127.0.0.2) still gets its tasks. The server-wide cap (six) is exactly the two
/// addresses' caps (three each), so the second address is served only if the refused calls
/// kept nothing.
#[tokio::test]
async fn one_address_filling_its_task_cap_leaves_room_for_another() {
    let limits = StateLimits::default()
        .with_max_tasks_per_address(3)
        .with_max_tasks(6);
    let srv = TestHttpServer::serve(server_with(limits)).await;
    let quick = json!({"name": "quick", "arguments": {}});
    // Kept for an hour once done: their charges stay for the whole test.
    let quick_legacy = json!({"name": "quick", "arguments": {}, "task": {"ttl": 3_600_000}});

    let a = tasks_client(&srv.url, [127, 0, 0, 1]);
    let a_session = Legacy::connect(&srv.url).await;
    for id in 1..=2 {
        let r = a.request(id, "tools/call", quick.clone()).await;
        assert!(r.result()["taskId"].is_string(), "{}", r.response);
    }
    let r = a_session
        .request(3, "tools/call", quick_legacy.clone())
        .await;
    assert_eq!(r.result()["task"]["status"], "working", "{}", r.response);
    // The address's fourth task is refused in either era, though its session has room and
    // a new session or a 2026-07-28 request costs nothing to make.
    assert_refused_per_address(&a.request(4, "tools/call", quick.clone()).await);
    assert_refused_per_address(&a_session.request(5, "tools/call", quick_legacy).await);
    let another_session = Legacy::connect(&srv.url).await;
    let r = another_session
        .request(
            6,
            "tools/call",
            json!({"name": "quick", "arguments": {}, "task": {}}),
        )
        .await;
    assert_refused_per_address(&r);

    let b = tasks_client(&srv.url, [127, 0, 0, 2]);
    for id in 1..=3 {
        let r = b.request(id, "tools/call", quick.clone()).await;
        assert!(r.result()["taskId"].is_string(), "{}", r.response);
    }
    assert_refused_per_address(&b.request(4, "tools/call", quick).await);
}
