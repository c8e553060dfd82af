//! The seed: an MCP server with one typed tool, `hello_world`, over Streamable HTTP on
//! 127.0.0.1:8000.
//!
//! Run: `cargo run --example hello_world`, then point any MCP client at
//! `http://127.0.0.1:8000` (or `http://127.0.0.1:8000/mcp`: every path serves).
//! `vellum serve --server hello-world` serves the same server: this file is both the example
//! program and the `vellum_demos::hello_world` module. `hello_world_builder` serves the
//! identical tool written without the macro.

use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::transport::http::serve;

/// 根据 user_name 返回问候语
#[tool]
pub async fn hello_world(
    /// 调用方用户名
    user_name: String,
) -> String {
    format!("Hello World, {user_name}")
}

/// Registers the seed's `hello_world` tool on `server`.
pub fn add_hello_world(server: &Server) -> Result<(), ConfigError> {
    // 注册 hello_world 工具
    hello_world_tool().register(server)
}

/// The seed's server: `hello-world` 0.1.0 with the `hello_world` tool.
pub fn hello_world_server() -> Result<Server, ConfigError> {
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

    let server = hello_world_server()?;

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
