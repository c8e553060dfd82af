//! `vellum`: serve the demo MCP servers over Streamable HTTP (and, later, talk to any MCP
//! server from the command line).

mod serve;

use clap::{Parser, Subcommand};

/// Vellum: a Model Context Protocol toolkit.
#[derive(Parser, Debug)]
#[command(name = "vellum", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a demo MCP server over Streamable HTTP.
    Serve(serve::ServeArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
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
    let result = rt.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
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
