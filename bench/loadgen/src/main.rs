//! `mcpbench`: the Vellum benchmark harness.
//!
//! A Streamable HTTP load generator for MCP servers (`run`), the report writer that turns its
//! JSON-lines results into `docs/benchmarks.md` and an SVG chart (`report`), a before/after
//! table of one interleaved run against another revision (`compare`), and a port poller
//! for the runner script (`wait-port`), and the slow HTTP service the `wait` scenario's tool
//! calls (`stub`). See `bench/README.md` for the method.
//!
//! Layout: `cli` (arguments), `proto` (request framing per protocol era), `client` (client
//! connections), `sse` + `check` (answer verification), `session` (initialize / call / delete),
//! `procfs` (server CPU and memory), `limits` (RLIMIT_NOFILE), `record` (result lines),
//! `scenario/` (the measurements), `report/` (tables and chart), `waitport`, `verdict` (the
//! smoke's pass/fail), `stub`.

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
mod stats;
mod stub;
mod verdict;
mod waitport;

use anyhow::Context as _;
use clap::Parser;

fn main() -> std::process::ExitCode {
    match run(cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpbench: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: cli::Cli) -> anyhow::Result<()> {
    match cli.command {
        cli::Command::Report(args) => report::write(&args),
        cli::Command::Compare(args) => report::compare::write(&args),
        cli::Command::Run(args) => {
            limits::raise_nofile(limits::WANT_NOFILE);
            runtime()?.block_on(scenario::run(args))
        }
        cli::Command::WaitPort(args) => runtime()?.block_on(waitport::run(&args)),
        cli::Command::WaitExit(args) => runtime()?.block_on(waitport::wait_exit(&args)),
        cli::Command::Check(args) => verdict::run(&args),
        cli::Command::Stub(args) => runtime()?.block_on(stub::run(&args)),
    }
}

/// One thread: the runner pins the load generator to one core.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")
}
