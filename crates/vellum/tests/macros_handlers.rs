//! Free `#[tool]`, `#[prompt]` and `#[resource]` functions over loopback HTTP: extractors in
//! any order, state given to the route builder, every return type, sync functions, prompt
//! arguments and template variables parsed into their types.
#![cfg(feature = "macros")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use vellum::prelude::*;
use vellum::protocol::PromptMessage;
use vellum_testkit::http::{Legacy, TestHttpServer};

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

/// Adds two integers.
#[tool(title = "Add")]
async fn add(
    req: &CallToolRequest,
    Json(input): Json<AddInput>,
    ctx: &RequestContext,
) -> Json<Sum> {
    assert_eq!(req.name, "add");
    assert_eq!(ctx.method(), "tools/call");
    Json(Sum {
        sum: input.a + input.b,
    })
}

/// Counts calls.
#[tool(name = "count.calls")]
fn count(
    State(counter): State<Arc<AtomicU64>>,
    /// How much to add.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    by: u64,
) -> String {
    (counter.fetch_add(by, Ordering::SeqCst) + by).to_string()
}

fn one() -> u64 {
    1
}

/// Who is calling.
#[tool]
async fn whoami(caller: Option<vellum::server::Caller>, ctx: RequestContext) -> CallToolResult {
    let who = caller.map_or("anonymous".to_owned(), |p| p.subject);
    CallToolResult::text(format!("{who} over {}", ctx.protocol_version()))
}

/// Divides; refuses zero.
#[tool(description = "Divides a by b")]
async fn divide(a: f64, b: f64) -> Result<String, vellum::server::HandlerError> {
    if b == 0.0 {
        return Err(HandlerError::failed("division by zero"));
    }
    Ok((a / b).to_string())
}

/// Nothing to say.
#[tool]
async fn noop() {}

/// Reviews code in a language.
#[prompt]
async fn review(
    /// The code.
    code: String,
    /// The language, if known.
    language: Option<String>,
    /// How many points at most.
    points: Option<u8>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "any".into());
    let points = points.unwrap_or(3);
    vec![PromptMessage::user(format!(
        "Review this {language} code in {points} points:\n{code}"
    ))]
}

/// The project's notes.
#[resource("notes://index", mime_type = "text/markdown")]
async fn notes() -> String {
    "# Notes".into()
}

/// One note by number.
#[resource("notes://note/{id}{?rev}", name = "note")]
fn note(id: u32, rev: Option<u32>, req: &ReadResourceRequest) -> Result<String, String> {
    assert!(req.uri.starts_with("notes://note/"));
    if id == 0 {
        return Err("there is no note 0".into());
    }
    Ok(format!("note {id} rev {}", rev.unwrap_or(1)))
}

fn server(counter: Arc<AtomicU64>) -> Server {
    let server = Server::new(
        Implementation::new("handlers", "1"),
        ServerOptions::default(),
    );
    (
        add_tool(),
        count_tool(counter),
        whoami_tool(),
        divide_tool(),
        noop_tool(),
        review_prompt(),
        notes_resource(),
        note_resource(),
    )
        .register(&server)
        .unwrap();
    server
}

#[tokio::test]
async fn free_handlers_serve_what_they_declare() {
    let counter = Arc::new(AtomicU64::new(0));
    let srv = TestHttpServer::serve(server(counter.clone())).await;
    let c = Legacy::connect(&srv.url).await;

    let list = c.request(1, "tools/list", json!({})).await;
    let tools = list.result()["tools"].as_array().unwrap().clone();
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    let add = by_name("add");
    assert_eq!(add["title"], "Add");
    assert_eq!(add["description"], "Adds two integers.");
    assert_eq!(
        add["inputSchema"]["properties"]["a"]["description"],
        "First addend."
    );
    assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "integer");
    let count = by_name("count.calls");
    assert_eq!(count["inputSchema"]["properties"]["by"]["minimum"], 1);
    assert_eq!(count["inputSchema"]["properties"]["by"]["default"], 1);
    assert!(count["inputSchema"].get("required").is_none(), "{count}");
    assert_eq!(by_name("divide")["description"], "Divides a by b");
    assert_eq!(
        by_name("noop")["inputSchema"],
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );

    let call = |id, name: &str, arguments| {
        let c = &c;
        let name = name.to_owned();
        async move {
            c.request(
                id,
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await
            .result()
            .clone()
        }
    };
    assert_eq!(
        call(2, "add", json!({"a": 2, "b": 3})).await["structuredContent"],
        json!({"sum": 5})
    );
    assert_eq!(
        call(3, "count.calls", json!({})).await["content"][0]["text"],
        "1"
    );
    assert_eq!(
        call(4, "count.calls", json!({"by": 5})).await["content"][0]["text"],
        "6"
    );
    assert_eq!(
        counter.load(Ordering::SeqCst),
        6,
        "the route's state is the caller's"
    );
    let who = call(5, "whoami", json!({})).await;
    assert_eq!(who["content"][0]["text"], "anonymous over 2025-11-25");
    assert_eq!(
        call(6, "divide", json!({"a": 1, "b": 4})).await["content"][0]["text"],
        "0.25"
    );
    let zero = call(7, "divide", json!({"a": 1, "b": 0})).await;
    assert_eq!(zero["isError"], true);
    assert_eq!(zero["content"][0]["text"], "division by zero");
    assert_eq!(call(8, "noop", json!({})).await["content"], json!([]));

    let prompts = c.request(9, "prompts/list", json!({})).await;
    assert_eq!(
        prompts.result()["prompts"][0],
        json!({"name": "review", "description": "Reviews code in a language.", "arguments": [
            {"name": "code", "description": "The code.", "required": true},
            {"name": "language", "description": "The language, if known.", "required": false},
            {"name": "points", "description": "How many points at most.", "required": false},
        ]})
    );
    let got = c
        .request(
            10,
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "fn x() {}", "language": "Rust"}}),
        )
        .await;
    assert_eq!(
        got.result()["messages"][0]["content"]["text"],
        "Review this Rust code in 3 points:\nfn x() {}"
    );
    let bad = c
        .request(
            11,
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "x", "points": "many"}}),
        )
        .await;
    assert_eq!(
        bad.error_code(),
        -32602,
        "an argument that does not parse is invalid params"
    );

    let resources = c.request(12, "resources/list", json!({})).await;
    assert_eq!(
        resources.result()["resources"][0],
        json!({"uri": "notes://index", "name": "notes", "description": "The project's notes.", "mimeType": "text/markdown"})
    );
    let templates = c.request(13, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates.result()["resourceTemplates"][0]["uriTemplate"],
        "notes://note/{id}{?rev}"
    );
    assert_eq!(templates.result()["resourceTemplates"][0]["name"], "note");
    let read = c
        .request(14, "resources/read", json!({"uri": "notes://index"}))
        .await;
    assert_eq!(
        read.result()["contents"][0],
        json!({"uri": "notes://index", "mimeType": "text/markdown", "text": "# Notes"})
    );
    let read = c
        .request(15, "resources/read", json!({"uri": "notes://note/7?rev=2"}))
        .await;
    assert_eq!(read.result()["contents"][0]["text"], "note 7 rev 2");
    let read = c
        .request(16, "resources/read", json!({"uri": "notes://note/0"}))
        .await;
    assert_eq!(
        read.error_code(),
        -32603,
        "a resource's failure is an internal error"
    );
    let read = c
        .request(17, "resources/read", json!({"uri": "notes://note/x"}))
        .await;
    assert_eq!(
        read.error_code(),
        -32602,
        "a variable that does not parse is invalid params"
    );
}
