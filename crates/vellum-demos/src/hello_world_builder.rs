//! The seed's server written with the closure API instead of `#[tool]`: the identical
//! `hello_world` tool (same name, description and schema; a test holds them equal), served
//! the same way on 127.0.0.1:8000.
//!
//! Run: `cargo run --example hello_world_builder`. For those who prefer registering a
//! closure with an explicit `Tool` to an attribute macro; both are the same public API
//! underneath.

use schemars::JsonSchema;
use serde::Deserialize;
use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::transport::http::serve;

/// The tool's input (the seed's `helloInput`).
#[derive(Deserialize, JsonSchema)]
pub struct HelloInput {
    /// 调用方用户名
    pub user_name: String,
}

/// The tool's handler (the seed's `helloWorldTool`).
pub async fn hello_world_tool(
    _ctx: RequestContext,
    _req: CallToolRequest,
    input: HelloInput,
) -> Result<CallToolResult, HandlerError> {
    let text = format!("Hello World, {}", input.user_name);
    Ok(CallToolResult::text(text))
}

/// Registers the seed's `hello_world` tool on `server`, with a closure.
pub fn add_hello_world(server: &Server) -> Result<(), ConfigError> {
    // 注册 hello_world 工具
    server.add_tool(
        Tool::new("hello_world", "根据 user_name 返回问候语"),
        hello_world_tool,
    )?;
    Ok(())
}

/// The seed's server (`hello-world` 0.1.0), built with the closure API.
pub fn hello_world_builder_server() -> Result<Server, ConfigError> {
    let server = Server::new(
        Implementation::new("hello-world", "0.1.0"),
        ServerOptions::default(),
    );
    add_hello_world(&server)?;
    Ok(server)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    const HOST: &str = "127.0.0.1";
    const PORT: u16 = 8000;

    let server = hello_world_builder_server()?;

    // http 的 handler
    let handler = StreamableHttpHandler::new(
        move |_req: &http::request::Parts| Some(server.clone()),
        StreamableHttpOptions::default(),
    );

    let addr = format!("{HOST}:{PORT}");
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("streamable HTTP MCP: http://{addr}");
    // 启动 http 服务，注册 http handler
    serve(listener, handler).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use vellum::server::Server;
    use vellum::transport::Connection;

    /// `tools/list` of a server, as JSON, over one in-process connection.
    async fn tools_list(server: Server) -> Value {
        let (connection, mut from_server) = Connection::new(server);
        let mut ask = async |message: Value| {
            connection.handle_bytes(message.to_string().into()).await;
            let bytes = from_server.recv().await.expect("the server answers");
            serde_json::from_slice::<Value>(&bytes).expect("JSON")
        };
        ask(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await;
        connection
            .handle_bytes(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
                    .to_string()
                    .into(),
            )
            .await;
        ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await["result"].clone()
    }

    #[tokio::test]
    async fn the_builder_serves_the_tool_the_macro_declares() {
        let by_builder = tools_list(super::hello_world_builder_server().unwrap()).await;
        let by_macro = tools_list(vellum_demos::hello_world::hello_world_server().unwrap()).await;
        assert_eq!(by_builder, by_macro);
        assert_eq!(
            by_macro["tools"][0]["description"],
            "根据 user_name 返回问候语"
        );
        assert_eq!(
            by_macro["tools"][0]["inputSchema"]["properties"]["user_name"]["description"],
            "调用方用户名"
        );
    }
}
