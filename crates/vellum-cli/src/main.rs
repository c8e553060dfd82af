//! `vellum`: serve the demo MCP servers (Streamable HTTP or stdio), and talk to any MCP
//! server from the command line.

mod auth_flags;
mod commands;
mod config;
mod connect;
mod connection_flags;
mod endpoint_flags;
mod http_args;
mod http_serve;
mod login;
mod metrics_endpoint;
mod output;
mod proxy;
mod redis_flags;
mod serve;
mod state_flags;
mod stores;
mod target;
mod telemetry;

use clap::{Parser, Subcommand};

/// Vellum: a Model Context Protocol toolkit.
#[derive(Parser, Debug)]
#[command(
    name = "vellum",
    version,
    about,
    long_about = None,
    after_help = "\
Talk to any MCP server, over Streamable HTTP (give its URL) or stdio (--stdio \"COMMAND\"):
  vellum tools list http://127.0.0.1:8000/mcp
  vellum tools call http://127.0.0.1:8000/mcp hello_world user_name=Alice
  vellum tools call URL my_tool --json-args '{\"n\": 3, \"tags\": [\"a\"]}'
  vellum tools list --stdio \"npx -y @modelcontextprotocol/server-everything\"
  vellum resources read URL test://static-text
  vellum prompts get URL greet who=Bob
  vellum ping URL -H \"Authorization: Bearer TOKEN\"
  vellum login URL               (OAuth: later commands use and refresh the tokens)
Add --json for the exact JSON answer. Progress bars and server logs go to stderr.

Serve a demo server:
  vellum serve                   (http://127.0.0.1:8000, the hello_world tool)
  vellum serve --stdio           (the same over stdin/stdout)

Put a stdio server online, or reach a remote one from a stdio-only host:
  vellum proxy --stdio \"npx -y @modelcontextprotocol/server-everything\" --addr 0.0.0.0:8000
  vellum proxy --upstream https://mcp.example.com/mcp --auth-jwks ...
  vellum connect https://mcp.example.com/mcp   (in a desktop host's server config)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a demo MCP server over Streamable HTTP (or stdio with --stdio).
    Serve(Box<serve::ServeArgs>),
    /// Serve a stdio MCP server (--stdio "COMMAND") or a remote one (--upstream URL) over
    /// Streamable HTTP, with every option of `vellum serve`.
    Proxy(Box<proxy::ProxyArgs>),
    /// Reach a remote MCP server from a host that only speaks stdio: newline-delimited
    /// JSON-RPC on stdin/stdout, Streamable HTTP (with OAuth) to URL.
    Connect(connect::ConnectArgs),
    /// List or call a server's tools.
    #[command(subcommand)]
    Tools(commands::ToolsCommand),
    /// List or read a server's resources and resource templates.
    #[command(subcommand)]
    Resources(commands::ResourcesCommand),
    /// List or get a server's prompts.
    #[command(subcommand)]
    Prompts(commands::PromptsCommand),
    /// Check that a server answers, and show its name and protocol version.
    Ping(commands::PingArgs),
    /// Authorize with an MCP server's OAuth authorization server (opens the browser, or
    /// prints the URL) and keep the tokens for the other commands.
    Login(login::LoginArgs),
    /// Forget (and revoke) the tokens kept for an MCP server.
    Logout(login::LogoutArgs),
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Proxy(args) => proxy::run(*args).await,
        Command::Connect(args) => connect::run(args).await,
        Command::Tools(c) => commands::tools(c).await,
        Command::Resources(c) => commands::resources(c).await,
        Command::Prompts(c) => commands::prompts(c).await,
        Command::Ping(a) => commands::ping(a).await,
        Command::Login(a) => login::login(a).await,
        Command::Logout(a) => login::logout(a).await,
    }
}

fn main() -> std::process::ExitCode {
    let cli = match config::parse::<Cli>(std::env::args_os().collect()) {
        Ok(config::Parsed {
            effective: Some(text),
            ..
        }) => {
            print!("{text}");
            return std::process::ExitCode::SUCCESS;
        }
        Ok(parsed) => parsed.cli,
        Err(config::ConfigError::Clap(e)) => e.exit(),
        Err(config::ConfigError::Other(e)) => {
            eprintln!("vellum: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("vellum: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The command runs on a worker of the runtime, not on this thread: the tasks it spawns
    // (a stdio server's requests, say) then run where it does, without a hand-off between
    // threads each time.
    let result = rt.block_on(async {
        match tokio::spawn(run(cli.command)).await {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the command stopped: {e}")),
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vellum: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
