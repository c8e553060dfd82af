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
    /// Before/after table of a `run.sh --compare` run (base servers labelled `base:NAME`).
    Compare(CompareArgs),
    /// Wait until a TCP port accepts connections (poll every 2 ms), or check it is free.
    WaitPort(WaitPortArgs),
    /// Wait until a process has exited (poll every 2 ms); non-zero exit on timeout.
    WaitExit(WaitExitArgs),
    /// Check result lines: no errors, and every run measured something (the CI smoke).
    Check(CheckArgs),
    /// The slow HTTP service of the `wait` scenario: answers every request after a delay.
    Stub(StubArgs),
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
    /// 1 session, 32 in flight of `stream` (10 progress notifications, then the result):
    /// events/s and server CPU per event.
    Stream,
    /// Sweep: `hello_world` throughput at each `--points` in flight (default 1,4,16,64,256).
    Conc,
    /// Sweep: `blob` of each `--points` bytes (default 100,10240,1048576), 16 in flight:
    /// MB/s, CPU per MB, peak RSS per in-flight answer.
    Size,
    /// Paged `tools/list` walks, 4 in flight, of a server started with `--points` N extra
    /// tools (one point per server start).
    Tools,
    /// Sweep: `--points` open GET streams (legacy) or `subscriptions/listen` streams
    /// (2026-07-28) (default 1000,10000); `touch` changes the tool list `--rounds` times:
    /// time until the last stream has `notifications/tools/list_changed`.
    Fanout,
    /// How the server frames SSE: HTTP chunks and SSE events per `stream` answer, read from
    /// the raw socket, and (with `--trace`) its write syscalls per event under strace.
    Chunks,
    /// A stdio server (`--spawn CMD`) called directly over its stdin and stdout, 1 request
    /// in flight: the latency a gateway in front of it adds to.
    Stdio,
    /// 1 session, 50 in flight of `hello_wait`, a tool that waits on a Redis `GET` and an
    /// HTTP call to a stub answering after 1 ms (`mcpbench stub`): tools that wait.
    Wait,
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
            Scenario::Stream => "stream",
            Scenario::Conc => "conc",
            Scenario::Size => "size",
            Scenario::Tools => "tools",
            Scenario::Fanout => "fanout",
            Scenario::Chunks => "chunks",
            Scenario::Stdio => "stdio",
            Scenario::Wait => "wait",
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
    /// Sessions to hold (`hold`, `streams`); `hold` also takes `--points` (cumulative steps).
    #[arg(long, default_value_t = 1000)]
    pub(crate) hold: usize,
    /// The x values of a sweep, comma-separated (see each scenario for its default).
    #[arg(long, value_delimiter = ',')]
    pub(crate) points: Vec<u64>,
    /// `hold` steps: new sessions timed while the others are held.
    #[arg(long, default_value_t = 20)]
    pub(crate) fresh: usize,
    /// `hold` steps: skip a step whose projected time (from the last step's rate) is longer.
    #[arg(long, default_value_t = 180.0)]
    pub(crate) step_budget: f64,
    /// `hold` steps: skip a step whose projected server RSS is larger, MiB.
    #[arg(long, default_value_t = 4096)]
    pub(crate) max_rss_mib: u64,
    /// `stream`: progress notifications per call.
    #[arg(long, default_value_t = 10)]
    pub(crate) stream_count: u32,
    /// `fanout`: list changes sent per point.
    #[arg(long, default_value_t = 5)]
    pub(crate) rounds: u32,
    /// `fanout`: how long the last stream may take to have a change, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub(crate) fanout_timeout: f64,
    /// `chunks`: `stream` calls read from the raw socket.
    #[arg(long, default_value_t = 20)]
    pub(crate) chunk_calls: u32,
    /// `chunks`: milliseconds the server waits after each progress notification.
    #[arg(long, default_value_t = 2)]
    pub(crate) chunk_interval_ms: u64,
    /// `chunks`: count the server's write syscalls with `strace -f -c` meanwhile.
    #[arg(long)]
    pub(crate) trace: bool,
    /// Read buffer limit of each client connection, bytes (hyper's minimum is 8 KiB;
    /// `size` uses 256 KiB unless given).
    #[arg(long)]
    pub(crate) read_buf: Option<usize>,
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
    /// Speak h2c with prior knowledge instead of HTTP/1.1; the in-flight slots share
    /// connections, `--h2-streams` to a connection (`chunks` reads HTTP/1.1 framing and ignores
    /// this).
    #[arg(long)]
    pub(crate) http2: bool,
    /// Under `--http2`: stream slots per h2 connection before the next one is dialled.
    #[arg(long, default_value_t = 100)]
    pub(crate) h2_streams: usize,
    /// Send `Authorization: Bearer TOKEN` on every request (a resource server under test).
    #[arg(long)]
    pub(crate) bearer: Option<String>,
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
    /// File of `server: why` lines for servers that could not run.
    #[arg(long)]
    pub(crate) skipped: Option<PathBuf>,
    /// The harness's README, linked from the report.
    #[arg(long, default_value = "bench/README.md")]
    pub(crate) readme: PathBuf,
    /// File of `key: value` lines about the run (mode, repetitions, duration_s).
    #[arg(long)]
    pub(crate) meta: Option<PathBuf>,
}

/// Arguments of `mcpbench compare`.
#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// JSON-lines result files written by `mcpbench run`.
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// Label prefix of the servers built from the base revision.
    #[arg(long, default_value = "base:")]
    pub(crate) base_prefix: String,
    /// Column heading of the base revision.
    #[arg(long, default_value = "base")]
    pub(crate) base_label: String,
    /// Column heading of the working tree.
    #[arg(long, default_value = "working tree")]
    pub(crate) new_label: String,
    /// Also write the table to this Markdown file.
    #[arg(long)]
    pub(crate) markdown: Option<PathBuf>,
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

/// Arguments of `mcpbench stub`.
#[derive(Args, Debug)]
pub(crate) struct StubArgs {
    /// Address to listen on (loopback).
    #[arg(long)]
    pub(crate) addr: SocketAddr,
    /// Milliseconds to wait before answering each request.
    #[arg(long, default_value_t = 1)]
    pub(crate) delay_ms: u64,
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
