//! `mcpbench`: the Vellum benchmark harness.
//!
//! A Streamable HTTP load generator for MCP servers (`run`), the report writer that turns its
//! JSON-lines results into `docs/benchmarks.md` and an SVG chart (`report`), and a port poller
//! for the runner script (`wait-port`). See `bench/README.md` for the method.
//!
//! Layout: `cli` (arguments), `proto` (request framing per protocol era), `client` (client
//! connections), `sse` + `check` (answer verification), `session` (initialize / call / delete),
//! `procfs` (server CPU and memory), `limits` (RLIMIT_NOFILE), `record` (result lines),
//! `scenario/` (the measurements), `report/` (tables and chart), `waitport`.

mod check;
mod cli;
mod client;
mod limits;
mod procfs;
mod proto;
mod record;
mod report;
mod scenario;
mod session;
mod sse;
mod waitport;

use anyhow::Context as _;
use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Report(args) => report::write(&args),
        cli::Command::Run(args) => {
            limits::raise_nofile(limits::WANT_NOFILE);
            runtime()?.block_on(scenario::run(args))
        }
        cli::Command::WaitPort(args) => runtime()?.block_on(waitport::run(&args)),
    }
}

/// One thread: the runner pins the load generator to one core.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")
}
