//! The test server: the seed's `hello-world` server (its `hello_world` tool, unchanged) plus
//! named tools, a resource, a template, a prompt and completions, so tests can reach every
//! kind of message the server emits.
//!
//! | tool | does |
//! |---|---|
//! | `hello_world` | the seed: `Hello World, <user_name>` |
//! | `add` | structured output `{"sum": a + b}` (with an `outputSchema`) |
//! | `fail` | fails: a result with `isError: true` |
//! | `progress` | sends `steps` progress notifications (when asked for), then `done` |
//! | `log` | logs `message` at `info` (when the client's level allows), then `logged` |
//! | `slow` | waits until the test releases its [`SlowGate`] |
//! | `ask` | asks the user for a name (elicitation), answers `Hello, <name>` |
//!
//! [`http_test_server`] adds the tools the Streamable HTTP tests need (kept out of
//! [`test_server`] so the protocol cases' `tools/list` stays as written):
//!
//! | tool | does |
//! |---|---|
//! | `ping_client` | sends `ping` to the client (60 s timeout), answers `pong` or fails with the error |
//! | `paced` | sends `steps` progress notifications, each once the test allows it ([`HttpFixture::pace`]), then `paced done` |
//! | `close_stream` | progress 1, ends its SSE response (`close_sse_stream(retry_ms)`), waits for the [`HttpFixture::resume`] gate, progress 2, then `resumed` |

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use vellum::prelude::*;
use vellum::protocol::{
    CompleteResult, Completion, ElicitAction, ElicitFormParams, ElicitParams, GetPromptResult,
    JsonObject, LoggingLevel, ReadResourceResult, ResourceContents,
};
use vellum::server::NoArgs;

use super::hello_world::hello_world_server;

/// Lets a test hold the `slow` tool until it chooses to release it.
#[derive(Clone)]
pub struct SlowGate {
    entered: Arc<Semaphore>,
    release: CancellationToken,
}

impl SlowGate {
    fn new() -> Self {
        SlowGate {
            entered: Arc::new(Semaphore::new(0)),
            release: CancellationToken::new(),
        }
    }

    /// Waits until a `slow` call is running (each call is counted once).
    pub async fn entered(&self) {
        let permit = super::within("the slow tool to start", self.entered.acquire())
            .await
            .expect("the gate's semaphore is never closed");
        permit.forget();
    }

    /// Lets every `slow` call (running or future) finish.
    pub fn release(&self) {
        self.release.cancel();
    }
}

/// The test server and the handle of its `slow` tool.
pub struct Fixture {
    /// The server.
    pub server: Server,
    /// Holds `slow` calls.
    pub slow: SlowGate,
}

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// a + b
    sum: i64,
}

#[derive(Deserialize, JsonSchema)]
struct ProgressInput {
    /// How many progress notifications to send.
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct LogInput {
    /// The message to log.
    message: String,
}

/// Builds the test server.
///
/// Registration announces list changes to live sessions after a short debounce; building
/// on a thread without a Tokio runtime makes sure no stray `list_changed` notification
/// reaches a session the test opens right after.
pub fn test_server() -> Fixture {
    std::thread::spawn(build)
        .join()
        .expect("building the test server panicked")
}

fn build() -> Fixture {
    let server = hello_world_server().expect("the seed's server registers");
    let slow = SlowGate::new();

    server
        .add_tool(
            Tool::new("add", "Adds two integers (structured output)"),
            |_ctx: RequestContext, _req: CallToolRequest, input: AddInput| async move {
                Ok::<_, HandlerError>(Structured(Sum {
                    sum: input.a + input.b,
                }))
            },
        )
        .expect("add registers");

    server
        .add_tool(
            Tool::new("fail", "Always fails"),
            |_ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                Err::<CallToolResult, _>(HandlerError::failed("the tool failed on purpose"))
            },
        )
        .expect("fail registers");

    server
        .add_tool(
            Tool::new("progress", "Reports progress, then finishes"),
            |ctx: RequestContext, _req: CallToolRequest, input: ProgressInput| async move {
                let total = f64::from(input.steps);
                for step in 1..=input.steps {
                    ctx.notify_progress(f64::from(step), Some(total), Some(format!("step {step}")))
                        .await
                        .map_err(HandlerError::from)?;
                }
                Ok::<_, HandlerError>(CallToolResult::text("done"))
            },
        )
        .expect("progress registers");

    server
        .add_tool(
            Tool::new("log", "Logs a message at info level"),
            |ctx: RequestContext, _req: CallToolRequest, input: LogInput| async move {
                ctx.log(LoggingLevel::Info, Some("fixtures"), input.message)
                    .await
                    .map_err(HandlerError::from)?;
                Ok::<_, HandlerError>(CallToolResult::text("logged"))
            },
        )
        .expect("log registers");

    let gate = slow.clone();
    server
        .add_tool(
            Tool::new("slow", "Waits until the test releases it"),
            move |_ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| {
                let gate = gate.clone();
                async move {
                    gate.entered.add_permits(1);
                    gate.release.cancelled().await;
                    Ok::<_, HandlerError>(CallToolResult::text("slow done"))
                }
            },
        )
        .expect("slow registers");

    server
        .add_tool(
            Tool::new("ask", "Asks the user for a name"),
            |ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                let schema: JsonObject = serde_json::from_value(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }))?;
                let answer = ctx
                    .elicit(ElicitParams::Form(ElicitFormParams::new(
                        "What is your name?",
                        schema,
                    )))
                    .await
                    .map_err(HandlerError::from)?;
                let name = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("name"))
                    .and_then(|v| v.as_str());
                Ok::<_, HandlerError>(match (answer.action, name) {
                    (ElicitAction::Accept, Some(name)) => {
                        CallToolResult::text(format!("Hello, {name}"))
                    }
                    _ => CallToolResult::text("no name given"),
                })
            },
        )
        .expect("ask registers");

    let mut greeting = Resource::new("test://greeting", "greeting");
    greeting.mime_type = Some("text/plain".into());
    server
        .add_resource(
            greeting,
            |_ctx: RequestContext, req: ReadResourceRequest| async move {
                Ok::<_, HandlerError>(ReadResourceResult {
                    contents: vec![ResourceContents::text(
                        req.uri,
                        Some("text/plain"),
                        "Hello from a resource",
                    )],
                    meta: None,
                })
            },
        )
        .expect("the resource registers");

    let template: ResourceTemplate = serde_json::from_value(json!({
        "uriTemplate": "test://items/{id}",
        "name": "item",
        "mimeType": "text/plain"
    }))
    .expect("a valid template");
    server
        .add_resource_template(
            template,
            |_ctx: RequestContext, req: ReadResourceRequest| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                Ok::<_, HandlerError>(ReadResourceResult {
                    contents: vec![ResourceContents::text(
                        req.uri,
                        Some("text/plain"),
                        format!("item {id}"),
                    )],
                    meta: None,
                })
            },
        )
        .expect("the template registers");

    let prompt: Prompt = serde_json::from_value(json!({
        "name": "greet",
        "description": "Greets someone",
        "arguments": [{"name": "name", "description": "Who to greet", "required": true}]
    }))
    .expect("a valid prompt");
    server
        .add_prompt(
            prompt,
            |_ctx: RequestContext, req: GetPromptRequest| async move {
                let name = req.argument("name").unwrap_or("nobody").to_owned();
                Ok::<_, HandlerError>(GetPromptResult {
                    description: Some("A greeting".into()),
                    messages: vec![PromptMessage::user(format!("Please greet {name}"))],
                    meta: None,
                })
            },
        )
        .expect("the prompt registers");

    server.set_completion_handler(
        |_ctx: RequestContext, p: vellum::protocol::CompleteParams| async move {
            let values: Vec<String> = ["Alice", "Bob", "Carol"]
                .iter()
                .filter(|v| v.starts_with(&p.argument.value))
                .map(|v| (*v).to_owned())
                .collect();
            Ok::<_, HandlerError>(CompleteResult {
                completion: Completion {
                    total: Some(values.len() as u64),
                    values,
                    has_more: Some(false),
                },
                meta: None,
            })
        },
    );

    Fixture { server, slow }
}

/// The test server with the HTTP tools, and the gates of `slow` and `close_stream`.
pub struct HttpFixture {
    /// The server.
    pub server: Server,
    /// Holds `slow` calls.
    pub slow: SlowGate,
    /// Holds `close_stream` calls after they ended their SSE response.
    pub resume: SlowGate,
    /// Paces `paced` calls.
    pub pace: Pacer,
}

/// Lets a test decide when the `paced` tool sends each progress notification.
#[derive(Clone)]
pub struct Pacer(Arc<Semaphore>);

impl Pacer {
    /// Lets `n` more progress notifications go (across all `paced` calls).
    pub fn allow(&self, n: usize) {
        self.0.add_permits(n);
    }
}

#[derive(Deserialize, JsonSchema)]
struct PacedInput {
    /// How many progress notifications to send.
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct CloseStreamInput {
    /// The reconnect delay to announce, in milliseconds.
    retry_ms: u64,
}

/// Builds [`test_server`] plus the HTTP tools (see the module docs).
pub fn http_test_server() -> HttpFixture {
    std::thread::spawn(build_http)
        .join()
        .expect("building the HTTP test server panicked")
}

fn build_http() -> HttpFixture {
    let Fixture { server, slow } = build();
    let resume = SlowGate::new();
    let pace = Pacer(Arc::new(Semaphore::new(0)));

    let permits = pace.0.clone();
    server
        .add_tool(
            Tool::new("paced", "Reports progress when the test allows it"),
            move |ctx: RequestContext, _req: CallToolRequest, input: PacedInput| {
                let permits = permits.clone();
                async move {
                    let total = f64::from(input.steps);
                    for step in 1..=input.steps {
                        permits
                            .acquire()
                            .await
                            .map_err(|e| HandlerError::failed(e.to_string()))?
                            .forget();
                        ctx.notify_progress(f64::from(step), Some(total), None)
                            .await
                            .map_err(HandlerError::from)?;
                    }
                    Ok::<_, HandlerError>(CallToolResult::text("paced done"))
                }
            },
        )
        .expect("paced registers");

    server
        .add_tool(
            Tool::new("ping_client", "Pings the client"),
            |ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                ctx.send_request::<_, serde_json::Value>(
                    "ping",
                    &json!({}),
                    Duration::from_secs(60),
                )
                .await
                .map_err(|e| HandlerError::failed(format!("ping failed: {e}")))?;
                Ok::<_, HandlerError>(CallToolResult::text("pong"))
            },
        )
        .expect("ping_client registers");

    let gate = resume.clone();
    server
        .add_tool(
            Tool::new("close_stream", "Ends its SSE response, then finishes later"),
            move |ctx: RequestContext, _req: CallToolRequest, input: CloseStreamInput| {
                let gate = gate.clone();
                async move {
                    ctx.notify_progress(1.0, Some(2.0), Some("before close".into()))
                        .await
                        .map_err(HandlerError::from)?;
                    ctx.close_sse_stream(Duration::from_millis(input.retry_ms));
                    gate.entered.add_permits(1);
                    gate.release.cancelled().await;
                    ctx.notify_progress(2.0, Some(2.0), Some("after close".into()))
                        .await
                        .map_err(HandlerError::from)?;
                    Ok::<_, HandlerError>(CallToolResult::text("resumed"))
                }
            },
        )
        .expect("close_stream registers");

    HttpFixture {
        server,
        slow,
        resume,
        pace,
    }
}
