//! One instance of a deployment whose sessions live in Redis: run several, put any
//! round-robin proxy in front (no sticky sessions), and a session works wherever its
//! requests land. See `docs/cluster.md`.
//!
//! Run: `cargo run -p vellum --example cluster --features redis -- --addr 127.0.0.1:8001 --redis redis://127.0.0.1:6379`
//!
//! Besides the seed's `hello_world`, it serves tools that show what crosses instances:
//! `ask_name` (asks the user through elicitation), `slow` (runs long, reports progress,
//! stops when cancelled), `add_tool` (registers a tool at run time: every client listening
//! on a GET stream hears `tools/list_changed`), `ticker` (a stream of log messages),
//! `touch_note` (announces that the resource `note://shared` changed: every stream
//! subscribed to it hears `notifications/resources/updated`, on whichever instance it is).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use vellum::prelude::*;
use vellum::protocol::{ElicitAction, ElicitFormParams, ElicitParams, LoggingLevel};
use vellum::store::redis::{Redis, RedisOptions};
use vellum::transport::http::serve;
use vellum_demos::hello_world;

/// Input of `slow`.
#[derive(Deserialize, JsonSchema)]
struct SlowInput {
    /// How long to run, in milliseconds.
    ms: u64,
}

/// Input of `add_tool`.
#[derive(Deserialize, JsonSchema)]
struct AddToolInput {
    /// The new tool's name.
    name: String,
}

/// Input of `ticker`.
#[derive(Deserialize, JsonSchema)]
struct TickerInput {
    /// How many log messages to send.
    count: u32,
    /// Milliseconds between them.
    interval_ms: u64,
}

/// The instance's server: the seed's tool plus the cross-instance demonstrations.
fn cluster_server() -> anyhow::Result<Server> {
    let server = hello_world::hello_world_server()?;
    server.add_tool(
        Tool::new(
            "ask_name",
            "Asks the user for a name (elicitation) and greets it",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _in: vellum::server::NoArgs| async move {
            let schema = serde_json::json!({
                "type": "object",
                "properties": { "name": { "type": "string", "description": "Your name" } },
                "required": ["name"]
            });
            let schema = match schema {
                serde_json::Value::Object(m) => m,
                _ => Default::default(),
            };
            let answer = ctx
                .elicit(ElicitParams::Form(ElicitFormParams::new(
                    "What is your name?",
                    schema,
                )))
                .await?;
            let name = match (answer.action, answer.content) {
                (ElicitAction::Accept, Some(c)) => c
                    .get("name")
                    .and_then(|v| v.as_str())
                    .unwrap_or("stranger")
                    .to_owned(),
                _ => return Ok::<_, HandlerError>(CallToolResult::text("No name given")),
            };
            Ok(CallToolResult::text(format!("Hello, {name}")))
        },
    )?;
    server.add_tool(
        Tool::new(
            "slow",
            "Runs for `ms` milliseconds, reporting progress every 100 ms",
        ),
        |ctx: RequestContext, _req: CallToolRequest, input: SlowInput| async move {
            let steps = (input.ms / 100).max(1);
            for i in 1..=steps {
                tokio::time::sleep(Duration::from_millis(input.ms / steps)).await;
                ctx.notify_progress(i as f64, Some(steps as f64), None)
                    .await?;
            }
            Ok::<_, HandlerError>(CallToolResult::text(format!("slept {} ms", input.ms)))
        },
    )?;
    server.add_tool(
        Tool::new("add_tool", "Registers a new tool at run time"),
        |ctx: RequestContext, _req: CallToolRequest, input: AddToolInput| async move {
            let name = input.name.clone();
            ctx.server().add_raw_tool(
                Tool::new(&input.name, "A tool added at run time"),
                move |_ctx: RequestContext, _req: CallToolRequest| {
                    let name = name.clone();
                    async move { Ok::<_, HandlerError>(CallToolResult::text(format!("I am {name}"))) }
                },
            )?;
            Ok::<_, HandlerError>(CallToolResult::text(format!("added {}", input.name)))
        },
    )?;
    server.add_tool(
        Tool::new("ticker", "Sends `count` log messages, `interval_ms` apart"),
        |ctx: RequestContext, _req: CallToolRequest, input: TickerInput| async move {
            for i in 1..=input.count {
                ctx.log(LoggingLevel::Info, Some("ticker"), format!("tick {i}"))
                    .await?;
                tokio::time::sleep(Duration::from_millis(input.interval_ms)).await;
            }
            Ok::<_, HandlerError>(CallToolResult::text(format!("{} ticks", input.count)))
        },
    )?;
    server.add_resource(
        Resource::new(NOTE, "shared note").with_mime_type("text/plain"),
        |_ctx: RequestContext, req: ReadResourceRequest| async move {
            Ok::<_, HandlerError>(ReadResourceResult::text(req.uri, "text/plain", "a note"))
        },
    )?;
    server.add_raw_tool(
        Tool::new("touch_note", "Announces that note://shared changed"),
        |ctx: RequestContext, _req: CallToolRequest| async move {
            ctx.server().notify_resource_updated(NOTE);
            Ok::<_, HandlerError>(CallToolResult::text(format!("touched {NOTE}")))
        },
    )?;
    Ok(server)
}

/// The resource `touch_note` announces as updated.
const NOTE: &str = "note://shared";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut addr = "127.0.0.1:8001".to_owned();
    let mut url = "redis://127.0.0.1:6379".to_owned();
    let mut timeout = None;
    let mut prefix = None;
    let mut key_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--addr", Some(v)) => addr = v,
            ("--redis", Some(v)) => url = v,
            ("--session-timeout-ms", Some(v)) => timeout = Some(Duration::from_millis(v.parse()?)),
            ("--redis-prefix", Some(v)) => prefix = Some(v),
            ("--request-state-key-file", Some(v)) => key_file = Some(v),
            _ => anyhow::bail!(
                "usage: cluster [--addr HOST:PORT] [--redis redis://HOST:PORT|redis-cluster://HOST:PORT,...|redis-sentinel://HOST:PORT,.../MASTER] [--session-timeout-ms MS] [--redis-prefix P] [--request-state-key-file PATH]"
            ),
        }
    }
    let mut redis_options = RedisOptions::default();
    if let Some(p) = prefix {
        redis_options.prefix = p;
    }
    if let Some(t) = timeout {
        redis_options.event_ttl = t;
    }
    let redis = Redis::connect(&url, redis_options).await?;
    let server = cluster_server()?;
    if let Some(path) = key_file {
        // The same key file on every instance: a retry's requestState verifies anywhere.
        server.set_request_state_key(vellum::server::RequestStateKey::from_key_file(path)?);
    }
    let mut options = StreamableHttpOptions::default();
    options.event_store = Some(std::sync::Arc::new(redis.event_store()));
    options.session_store = Some(std::sync::Arc::new(redis.session_store()));
    options.bus = Some(std::sync::Arc::new(redis.bus()));
    options.session_timeout = timeout;
    let handler = StreamableHttpHandler::for_server(server, options);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!(
        "streamable HTTP MCP: http://{} (instance {})",
        listener.local_addr()?,
        redis.instance_id()
    );
    serve(listener, handler)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
