//! The benchmark's demo server (`vellum serve --server bench`, bench/README.md): the fixtures every server of
//! the benchmark carries, written against the SDK's public API only, as a user would.
//!
//! Tools (the same names, arguments and answers on every peer of `bench/peers/`):
//! - `hello_world {user_name}`: the seed's tool, answers `Hello World, <user_name>`;
//! - `stream {count?, interval_ms?}`: sends `count` (default 10) `notifications/progress` for
//!   the request's progress token, `interval_ms` apart (default 0: back to back), then answers
//!   `streamed <count>`;
//! - `blob {bytes}`: answers one text item of exactly `bytes` bytes (at most 16 MiB);
//! - `touch {}`: adds or removes the tool `bench_toggle`, so that every session's GET stream
//!   and every `subscriptions/listen` stream gets `notifications/tools/list_changed`;
//! - with `vellum serve --bench-tools N`, N more tools, `filler_00000` …, to list (they answer `filler`);
//! - with `vellum serve --bench-wait-redis URL --bench-wait-http URL` (feature `bench-wait`),
//!   `hello_wait {user_name}`: a tool that waits on Redis and an HTTP call (`bench_wait`).
//!
//! As a program (`cargo build --release -p vellum-demos --example bench`), it is the same
//! server on the library's default features (HTTP/1.1 only, no TLS, no client) with the
//! handler's default options: the benchmark's `vellum-default` row, a server as a library
//! user builds it, beside `vellum serve` (every feature).

use schemars::JsonSchema;
use serde::Deserialize;
use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::transport::http::serve;

/// The most bytes `blob` answers with: large enough for the 1 MiB point, small enough that no
/// request can make the server allocate without bound.
const MAX_BLOB_BYTES: usize = 16 * 1024 * 1024;

/// The most progress notifications one `stream` call sends.
const MAX_STREAM_COUNT: u32 = 10_000;

/// Input of `hello_world`.
#[derive(Deserialize, JsonSchema)]
struct HelloInput {
    /// Who to greet.
    user_name: String,
}

/// Input of `stream`.
#[derive(Deserialize, JsonSchema)]
struct StreamInput {
    /// How many progress notifications to send before the result (default 10).
    count: Option<u32>,
    /// Milliseconds to wait after each notification (default 0), so that each is written on
    /// its own rather than together with the next.
    interval_ms: Option<u64>,
}

/// Input of `blob`.
#[derive(Deserialize, JsonSchema)]
struct BlobInput {
    /// Size of the text to answer with, in bytes.
    bytes: usize,
}

/// The bench server with `filler` extra tools (`vellum serve --server bench --bench-tools N`).
pub fn bench_server_with(filler: usize) -> Result<Server, ConfigError> {
    let server = Server::new(
        Implementation::new("vellum-bench", env!("CARGO_PKG_VERSION")),
        ServerOptions::default(),
    );
    server.add_tool(
        Tool::new("hello_world", "Say hello to a user"),
        |_ctx: RequestContext, _req: CallToolRequest, input: HelloInput| async move {
            Ok::<_, HandlerError>(CallToolResult::text(format!(
                "Hello World, {}",
                input.user_name
            )))
        },
    )?;
    server.add_tool(
        Tool::new(
            "stream",
            "Send `count` progress notifications (default 10), then the result",
        ),
        |ctx: RequestContext, _req: CallToolRequest, input: StreamInput| async move {
            let count = input.count.unwrap_or(10).min(MAX_STREAM_COUNT);
            let total = f64::from(count);
            let interval =
                std::time::Duration::from_millis(input.interval_ms.unwrap_or(0).min(1000));
            for i in 1..=count {
                ctx.notify_progress(f64::from(i), Some(total), None).await?;
                if !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
            }
            Ok::<_, HandlerError>(CallToolResult::text(format!("streamed {count}")))
        },
    )?;
    server.add_tool(
        Tool::new("blob", "Answer with a text of exactly `bytes` bytes"),
        |_ctx: RequestContext, _req: CallToolRequest, input: BlobInput| async move {
            if input.bytes > MAX_BLOB_BYTES {
                return Err(HandlerError::failed(format!(
                    "at most {MAX_BLOB_BYTES} bytes"
                )));
            }
            Ok(CallToolResult::text("x".repeat(input.bytes)))
        },
    )?;
    let toggler = server.clone();
    server.add_tool(
        Tool::new(
            "touch",
            "Add or remove the tool bench_toggle (a tools/list_changed for every listener)",
        ),
        move |_ctx: RequestContext, _req: CallToolRequest, _input: NoArgs| {
            let server = toggler.clone();
            async move {
                let added = !server.remove_tool("bench_toggle");
                if added {
                    server.add_tool(
                        Tool::new("bench_toggle", "Comes and goes with touch"),
                        |_ctx: RequestContext, _req: CallToolRequest, _input: NoArgs| async {
                            Ok::<_, HandlerError>(CallToolResult::text("toggle"))
                        },
                    )?;
                }
                Ok::<_, HandlerError>(CallToolResult::text(if added {
                    "added"
                } else {
                    "removed"
                }))
            }
        },
    )?;
    for i in 0..filler {
        server.add_tool(
            Tool::new(format!("filler_{i:05}"), "A tool that is only listed"),
            |_ctx: RequestContext, _req: CallToolRequest, _input: NoArgs| async {
                Ok::<_, HandlerError>(CallToolResult::text("filler"))
            },
        )?;
    }
    Ok(server)
}

/// The bench server with no extra tools (the `bench` entry of [`DEMOS`](crate::DEMOS)).
pub fn bench_server() -> Result<Server, ConfigError> {
    bench_server_with(0)
}

/// `bench [--addr 127.0.0.1:8000] [--bench-tools N]`: the bench server with default options.
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut addr = String::from("127.0.0.1:8000");
    let mut filler = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{arg} needs a value"))
        };
        match arg.as_str() {
            "--addr" => addr = value()?,
            "--bench-tools" => filler = value()?.parse()?,
            other => anyhow::bail!(
                "unknown argument {other} (usage: bench [--addr A] [--bench-tools N])"
            ),
        }
    }
    let server = bench_server_with(filler)?;
    let handler = StreamableHttpHandler::new(
        move |_req: &http::request::Parts| Some(server.clone()),
        StreamableHttpOptions::default(),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("streamable HTTP MCP: http://{addr}/mcp (bench, default features)");
    serve(listener, handler).await?;
    Ok(())
}
