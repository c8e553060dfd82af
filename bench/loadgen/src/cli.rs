//! Command line of `mcpbench`: the `run`, `report` and `wait-port` subcommands.
//!
//! Only argument definitions live here; what each scenario does is in `scenario/`, and the
//! report in `report/`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Streamable HTTP load generator and report writer for MCP servers.
#[derive(Parser, Debug)]
#[command(name = "mcpbench", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// What `mcpbench` does.
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run one scenario against one server and append one JSON line of results.
    Run(RunArgs),
    /// Turn JSON lines of results into a Markdown report and an SVG chart.
    Report(ReportArgs),
    /// Wait until a TCP port accepts connections (poll every 2 ms), or check it is free.
    WaitPort(WaitPortArgs),
    /// Wait until a process has exited (poll every 2 ms); non-zero exit on timeout.
    WaitExit(WaitExitArgs),
    /// Check result lines: no errors, and every run measured something (the CI smoke).
    Check(CheckArgs),
}

/// The measurement scenarios; each names a fixed set of parameters (see the README).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// 1 session, 1 request in flight: latency.
    Latency,
    /// 1 session, 32 requests in flight: throughput and server CPU per request.
    Throughput,
    /// 32 sessions, 64 requests in flight.
    Sessions,
    /// Hold N sessions (initialize + initialized + one call each): RSS per held session.
    Hold,
    /// Hold N sessions, each with an open GET SSE stream.
    Streams,
    /// New connection + initialize + initialized + first call, one session after another.
    Setup,
    /// Spawn the server and time the first correct answer.
    Cold,
}

impl Scenario {
    /// The name written into results (the `ValueEnum` spelling).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Latency => "latency",
            Scenario::Throughput => "throughput",
            Scenario::Sessions => "sessions",
            Scenario::Hold => "hold",
            Scenario::Streams => "streams",
            Scenario::Setup => "setup",
            Scenario::Cold => "cold",
        }
    }
}

/// Arguments of `mcpbench run`.
#[derive(Args, Debug, Clone)]
pub(crate) struct RunArgs {
    /// Scenario to run.
    #[arg(long, value_enum)]
    pub(crate) scenario: Scenario,
    /// Server address (loopback).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub(crate) addr: SocketAddr,
    /// Path of the MCP endpoint.
    #[arg(long, default_value = "/mcp")]
    pub(crate) path: String,
    /// Protocol version to speak. 2026-07-28 and later send no initialize and put
    /// protocolVersion, clientCapabilities and clientInfo in each request's `_meta`.
    #[arg(long, default_value = "2025-11-25")]
    pub(crate) protocol_version: String,
    /// Legacy stateless server: no initialize, no session id.
    #[arg(long)]
    pub(crate) stateless: bool,
    /// PID of the server, for CPU and memory (summed over its process tree).
    #[arg(long)]
    pub(crate) server_pid: Option<u32>,
    /// Cold start: shell command that starts the server (run as `sh -c "exec CMD"`).
    #[arg(long)]
    pub(crate) spawn: Option<String>,
    /// Server name written into the results.
    #[arg(long, default_value = "server")]
    pub(crate) label: String,
    /// Repetition number written into the results.
    #[arg(long, default_value_t = 1)]
    pub(crate) rep: u32,
    /// Append the result line to this file (stdout if absent).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Sessions (default from the scenario: 1, or 32 for `sessions`).
    #[arg(long)]
    pub(crate) sessions: Option<usize>,
    /// Requests in flight, one keep-alive connection each (default from the scenario).
    #[arg(long)]
    pub(crate) concurrency: Option<usize>,
    /// Unmeasured warm-up before the window, seconds.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) warmup: f64,
    /// Measured window, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) duration: f64,
    /// Sessions to hold (`hold`, `streams`).
    #[arg(long, default_value_t = 1000)]
    pub(crate) hold: usize,
    /// Sessions opened at a time while holding.
    #[arg(long, default_value_t = 4)]
    pub(crate) hold_parallel: usize,
    /// Settle interval before each RSS reading of `hold`/`streams`, seconds.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) settle: f64,
    /// Measured sessions of `setup` (after 10 unmeasured ones).
    #[arg(long, default_value_t = 200)]
    pub(crate) setup_count: usize,
    /// Give up on one request after this many seconds (counted as an error).
    #[arg(long, default_value_t = 10.0)]
    pub(crate) request_timeout: f64,
    /// Give up on a cold start after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) start_timeout: f64,
}

/// Arguments of `mcpbench report`.
#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// JSON-lines result files written by `mcpbench run`.
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// Markdown file to write.
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub(crate) markdown: PathBuf,
    /// Folder for the SVG chart; the Markdown links to it relative to the Markdown file.
    #[arg(long, default_value = "docs/bench")]
    pub(crate) svg_dir: PathBuf,
    /// File of `name: version` lines to list under "Versions".
    #[arg(long)]
    pub(crate) versions: Option<PathBuf>,
    /// The command that produced the results, quoted in the report.
    #[arg(long, default_value = "bench/run.sh")]
    pub(crate) command: String,
}

/// Arguments of `mcpbench wait-port`.
#[derive(Args, Debug)]
pub(crate) struct WaitPortArgs {
    /// Address to poll.
    #[arg(long)]
    pub(crate) addr: SocketAddr,
    /// Give up when this process is gone (the server that should open the port).
    #[arg(long)]
    pub(crate) pid: Option<u32>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) timeout: f64,
    /// Succeed only if nothing accepts on the address right now.
    #[arg(long)]
    pub(crate) free: bool,
}

/// Arguments of `mcpbench wait-exit`.
#[derive(Args, Debug)]
pub(crate) struct WaitExitArgs {
    /// The process to wait for (a zombie counts as exited).
    #[arg(long)]
    pub(crate) pid: u32,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) timeout: f64,
}

/// Arguments of `mcpbench check`.
#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// JSON-lines result files written by `mcpbench run`.
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// Servers that must have results (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) expect: Vec<String>,
}
