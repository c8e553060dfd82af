//! Shared by the fuzz targets that drive the HTTP handler: a current-thread runtime and a
//! server with one `echo` tool (which also reports its text as a progress message).

use vellum::prelude::*;

/// A current-thread runtime with timers (the handler's sweeper and keep-alives need them).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

/// A server with the `echo` tool.
pub fn echo_server() -> Server {
    let server = Server::new(Implementation::new("fuzz", "1.0"), ServerOptions::default());
    server
        .add_raw_tool(
            Tool::new("echo", "Echoes its text"),
            |ctx: RequestContext, req: CallToolRequest| async move {
                let text = req
                    .arguments
                    .get("text")
                    .and_then(|t| t.as_str())
                    .unwrap_or("");
                // A notification first (when asked for), so answers can be multi-event streams.
                let _ = ctx.notify_progress(1.0, None, Some(text.to_owned())).await;
                Ok::<_, HandlerError>(CallToolResult::text(text.to_owned()))
            },
        )
        .expect("the tool registers");
    server
}
