//! `stdio`: a stdio server called directly, one request in flight: the baseline a gateway's
//! added latency is measured against (the same child, without the gateway in front).
//!
//! The server command runs as `sh -c "exec CMD"` (`--spawn`, so CMD can pin it with
//! `taskset`) with piped stdin and stdout. After `initialize` (at `--protocol-version`) and
//! `notifications/initialized`, `hello_world` is called one request at a time: unmeasured
//! during the warm-up, then measured over the window. Latency runs from just before the
//! request line is written to the end of its response line; an answer that is not the
//! greeting counts as an error. CPU is the child's, from `/proc` at both edges of the window.

use std::process::Stdio;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use super::{fill_latency, histogram, micros, secs};
use crate::cli::RunArgs;
use crate::procfs;
use crate::record::{Errors, Record};

/// The child's two pipes.
struct Pipes {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Pipes {
    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await?;
        Ok(())
    }

    /// The next message that answers `id` (other lines are skipped).
    async fn answer(&mut self, id: u64) -> anyhow::Result<Value> {
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line).await? == 0 {
                bail!("the server closed its stdout");
            }
            let m: Value = serde_json::from_str(&self.line).context("a JSON-RPC line")?;
            if m.get("method").is_none() && m["id"] == id {
                return Ok(m);
            }
        }
    }

    /// One `hello_world`, checked.
    async fn call(&mut self, id: u64) -> anyhow::Result<()> {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "hello_world", "arguments": {"user_name": "bench"}}});
        self.send(&call).await?;
        let m = self.answer(id).await?;
        let text = m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        if text != "Hello World, bench" {
            bail!("unexpected answer {m}");
        }
        Ok(())
    }
}

/// Runs `stdio` and fills `rec`.
pub(super) async fn run(args: &RunArgs, rec: &mut Record) -> anyhow::Result<()> {
    let cmd = args.spawn.as_deref().context("stdio needs --spawn CMD")?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec {cmd}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning {cmd}"))?;
    let pid = child.id().context("spawned server has no PID")?;
    let mut p = Pipes {
        stdin: child.stdin.take().context("stdin")?,
        stdout: BufReader::new(child.stdout.take().context("stdout")?),
        line: String::new(),
    };
    p.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": args.protocol_version, "capabilities": {},
        "clientInfo": {"name": "mcpbench", "version": "1"}}}),
    )
    .await?;
    p.answer(0).await.context("initialize")?;
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    let (warmup, window_len) = (secs(args.warmup), secs(args.duration));
    let start = Instant::now() + warmup;
    let end = start + window_len;
    let mut id = 1;
    let mut errors = Errors::default();
    while Instant::now() < start {
        if let Err(e) = p.call(id).await {
            errors.add(format!("{e:#}"));
        }
        id += 1;
    }
    let mut h = histogram()?;
    let cpu0 = procfs::tree_cpu(pid)?;
    let mut ok = 0u64;
    while Instant::now() < end {
        let t = Instant::now();
        match p.call(id).await {
            Ok(()) => {
                ok += 1;
                h.record(micros(t.elapsed()))?;
            }
            Err(e) => errors.add(format!("{e:#}")),
        }
        id += 1;
    }
    let cpu1 = procfs::tree_cpu(pid)?;
    let window_s = window_len.as_secs_f64();
    rec.sessions = Some(1);
    rec.concurrency = Some(1);
    rec.window_s = Some(window_s);
    rec.ok = ok;
    rec.errors = errors.count;
    rec.error_samples = errors.samples;
    rec.rps = Some(ok as f64 / window_s);
    rec.server_cpu_pct = Some(100.0 * (cpu1 - cpu0) / window_s);
    if ok > 0 {
        rec.cpu_us_per_op = Some((cpu1 - cpu0) * 1e6 / ok as f64);
    }
    fill_latency(rec, &h);
    if let Ok(m) = procfs::tree_memory(pid) {
        rec.rss_kib = Some(m.rss_kib);
        rec.hwm_kib = Some(m.hwm_kib);
    }
    drop(p);
    let _ = tokio::time::timeout(secs(5.0), child.wait()).await;
    Ok(())
}
