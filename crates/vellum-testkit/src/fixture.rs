//! The fixture server every test that needs "a server with a bit of everything" runs against:
//! the seed's identity and its `hello_world` tool (unchanged, from `vellum_demos`), plus named
//! tools, a resource, a template, a prompt and completions, so tests can reach every kind of
//! message the server emits, in both eras, over any transport.
//!
//! | tool | does |
//! |---|---|
//! | `add` | structured output `{"sum": a + b}` (with an `outputSchema`) |
//! | `ask` | asks the user for a name (elicitation), answers `Hello, <name>` (or `no name given`) |
//! | `close_stream` | progress 1, ends its SSE response (`close_sse_stream(retry_ms)`), waits for the [`Fixture::resume`] gate, progress 2, then `resumed` |
//! | `fail` | fails: a result with `isError: true` |
//! | `hello_world` | the seed: `Hello World, <user_name>` |
//! | `log` | logs `message` at `level` (default `info`; sent when the client's level allows), then `logged` |
//! | `paced` | sends `steps` progress notifications, each once the test allows it ([`Fixture::pace`]), then `paced done` |
//! | `ping_client` | sends `ping` to the client (60 s timeout), answers `pong` or fails with the error |
//! | `progress` | sends `steps` progress notifications (when asked for), then `done` |
//! | `roots` | asks the client for its roots, answers `<n> roots` |
//! | `sample` | asks the client's model (`2+2?`), answers `model <model> said <content>` |
//! | `slow` | waits until the test releases its [`SlowGate`] ([`Fixture::slow`]); a call dropped first is counted |
//!
//! Also: the resource `test://greeting`, the template `test://items/{id}` (`item <id>`), the
//! prompt `greet` (argument `name`: `Please greet <name>`), and completions from `Alice`,
//! `Bob`, `Carol`.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use vellum::prelude::*;
use vellum::protocol::{
    CompleteResult, Completion, CreateMessageParams, ElicitAction, ElicitFormParams, ElicitParams,
    GetPromptResult, JsonObject, LoggingLevel, ReadResourceResult, ResourceContents,
    SamplingMessage,
};
use vellum::server::NoArgs;
use vellum_demos::hello_world::{add_hello_world, hello_world_server};

/// Lets a test hold calls of a tool (`slow`, `close_stream`) until it chooses to release them.
#[derive(Clone)]
pub struct SlowGate {
    entered: Arc<Semaphore>,
    release: CancellationToken,
    dropped: Arc<Semaphore>,
}

impl SlowGate {
    fn new() -> Self {
        SlowGate {
            entered: Arc::new(Semaphore::new(0)),
            release: CancellationToken::new(),
            dropped: Arc::new(Semaphore::new(0)),
        }
    }

    /// Waits until a held call is running (each call is counted once).
    pub async fn entered(&self) {
        let permit = crate::within("the held tool to start", self.entered.acquire())
            .await
            .expect("the gate's semaphore is never closed");
        permit.forget();
    }

    /// Lets every held call (running or future) finish.
    pub fn release(&self) {
        self.release.cancel();
    }

    /// Waits until a held call was dropped before it was released (the server cancelled it);
    /// each dropped call is counted once.
    pub async fn dropped(&self) {
        let permit = crate::within("the held call to be dropped", self.dropped.acquire())
            .await
            .expect("the gate's semaphore is never closed");
        permit.forget();
    }

    /// Held calls dropped before their release and not yet waited for with [`SlowGate::dropped`].
    pub fn dropped_count(&self) -> usize {
        self.dropped.available_permits()
    }

    /// Holds the calling tool until [`SlowGate::release`]; counts it as dropped if its
    /// future goes first.
    async fn hold(&self) {
        /// Counts the call as dropped unless it got through.
        struct Unfinished(Option<Arc<Semaphore>>);
        impl Drop for Unfinished {
            fn drop(&mut self) {
                if let Some(dropped) = self.0.take() {
                    dropped.add_permits(1);
                }
            }
        }
        let mut unfinished = Unfinished(Some(self.dropped.clone()));
        self.entered.add_permits(1);
        self.release.cancelled().await;
        unfinished.0 = None;
    }
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

/// The fixture server and the handles of its gated tools.
pub struct Fixture {
    /// The server.
    pub server: Server,
    /// Holds `slow` calls.
    pub slow: SlowGate,
    /// Holds `close_stream` calls after they ended their SSE response.
    pub resume: SlowGate,
    /// Paces `paced` calls.
    pub pace: Pacer,
}

/// Builds the fixture server with the default server options.
///
/// Registration announces list changes to live sessions after a short debounce; building
/// on a thread without a Tokio runtime makes sure no stray `list_changed` notification
/// reaches a session the test opens right after.
pub fn test_server() -> Fixture {
    test_server_with(ServerOptions::default())
}

/// [`test_server`] with these server options (instructions, page size, ...).
pub fn test_server_with(options: ServerOptions) -> Fixture {
    std::thread::spawn(move || build(options))
        .join()
        .expect("building the fixture server panicked")
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
    /// The level to log it at (`debug`, `info`, `warning`, …; default `info`).
    level: Option<String>,
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

fn build(options: ServerOptions) -> Fixture {
    // The seed's identity and tool, whatever the options.
    let seed = hello_world_server().expect("the seed's server registers");
    let server = Server::new(seed.info().clone(), options);
    add_hello_world(&server).expect("the seed's tool registers");
    let fixture = Fixture {
        server,
        slow: SlowGate::new(),
        resume: SlowGate::new(),
        pace: Pacer(Arc::new(Semaphore::new(0))),
    };
    add_tools(&fixture);
    add_client_tools(&fixture.server);
    add_stream_tools(&fixture);
    add_catalog(&fixture.server);
    fixture
}

/// The tools that only compute, report or wait.
fn add_tools(f: &Fixture) {
    let server = &f.server;
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
            Tool::new("log", "Logs a message (at info level unless told)"),
            |ctx: RequestContext, _req: CallToolRequest, input: LogInput| async move {
                let level = match input.level {
                    None => LoggingLevel::Info,
                    Some(l) => serde_json::from_value(json!(l)).map_err(HandlerError::failed)?,
                };
                ctx.log(level, Some("fixtures"), input.message)
                    .await
                    .map_err(HandlerError::from)?;
                Ok::<_, HandlerError>(CallToolResult::text("logged"))
            },
        )
        .expect("log registers");

    let gate = f.slow.clone();
    server
        .add_tool(
            Tool::new("slow", "Waits until the test releases it"),
            move |_ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| {
                let gate = gate.clone();
                async move {
                    gate.hold().await;
                    Ok::<_, HandlerError>(CallToolResult::text("slow done"))
                }
            },
        )
        .expect("slow registers");
}

/// The tools that ask the client something: elicitation, sampling, roots, ping.
fn add_client_tools(server: &Server) {
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

    server
        .add_tool(
            Tool::new("sample", "Asks the client's model"),
            |ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                let answer = ctx
                    .create_message(CreateMessageParams {
                        messages: vec![SamplingMessage::user("2+2?")],
                        max_tokens: 10,
                        ..Default::default()
                    })
                    .await?;
                Ok::<_, HandlerError>(CallToolResult::text(format!(
                    "model {} said {}",
                    answer.model,
                    serde_json::to_string(&answer.content).unwrap_or_default()
                )))
            },
        )
        .expect("sample registers");

    server
        .add_tool(
            Tool::new("roots", "Counts the client's roots"),
            |ctx: RequestContext, _req: CallToolRequest, _in: NoArgs| async move {
                let roots = ctx.list_roots().await?;
                Ok::<_, HandlerError>(CallToolResult::text(format!("{} roots", roots.roots.len())))
            },
        )
        .expect("roots registers");

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
}

/// The tools whose stream the test shapes: `paced` and `close_stream`.
fn add_stream_tools(f: &Fixture) {
    let permits = f.pace.0.clone();
    f.server
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

    let gate = f.resume.clone();
    f.server
        .add_tool(
            Tool::new("close_stream", "Ends its SSE response, then finishes later"),
            move |ctx: RequestContext, _req: CallToolRequest, input: CloseStreamInput| {
                let gate = gate.clone();
                async move {
                    ctx.notify_progress(1.0, Some(2.0), Some("before close".into()))
                        .await
                        .map_err(HandlerError::from)?;
                    ctx.close_sse_stream(Duration::from_millis(input.retry_ms));
                    gate.hold().await;
                    ctx.notify_progress(2.0, Some(2.0), Some("after close".into()))
                        .await
                        .map_err(HandlerError::from)?;
                    Ok::<_, HandlerError>(CallToolResult::text("resumed"))
                }
            },
        )
        .expect("close_stream registers");
}

/// The resource, the template, the prompt and the completions.
fn add_catalog(server: &Server) {
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
}
