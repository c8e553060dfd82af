//! How a server frames its SSE answers on the wire.
//!
//! A session is opened as usual; then `--chunk-calls` `stream` calls (10 progress
//! notifications `--chunk-interval-ms` apart, so that each is ready on its own, and the result
//! each) and one `hello_world` call are written by hand on a raw
//! TCP connection and their answers read byte for byte: the HTTP/1.1 chunks of each body
//! (`Transfer-Encoding: chunked`; a `Content-Length` body counts as one chunk) and the SSE
//! events with data in it. With `--trace`, `strace -f -c` is attached to the server for the
//! `stream` calls and its write-family syscalls (write, writev, sendto, sendmsg, sendmmsg) are
//! divided by the events sent. Every answer is also checked like any other.

use std::fmt::Write as _;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::BodyExt;
use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::secs;
use crate::check::{self, Answer, Expect};
use crate::cli::RunArgs;
use crate::proto::Proto;
use crate::record::Record;
use crate::{client, session, sse};

/// Syscalls that put bytes on a socket.
const WRITES: [&str; 5] = ["write", "writev", "sendto", "sendmsg", "sendmmsg"];

/// How long strace may take to attach to every thread of the server.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);

/// One answer as read from the wire.
struct Wire {
    answer: Answer,
    chunks: Vec<usize>,
}

/// Runs `chunks` and fills `rec`.
pub(super) async fn run(args: &RunArgs, proto: &Proto, rec: &mut Record) -> anyhow::Result<()> {
    let timeout = secs(args.request_timeout);
    let mut conn = client::connect(args.addr).await?;
    let s = session::open(&mut conn, proto, timeout).await?;
    let count = args.stream_count;
    // 2 ms between notifications: each event is ready on its own, so the framing shows
    // what one event costs rather than what a burst costs.
    let stream = proto.tool(
        "stream",
        &format!(
            r#"{{"count":{count},"interval_ms":{}}}"#,
            args.chunk_interval_ms
        ),
        true,
    )?;
    let tcp = TcpStream::connect(args.addr)
        .await
        .with_context(|| format!("connect {}", args.addr))?;
    tcp.set_nodelay(true)?;
    let mut tcp = BufReader::new(tcp);

    // The hello_world answer first, untraced.
    let hello = exchange(&mut tcp, proto.call(1, &s), timeout).await?;
    check::tool_call(&hello.answer, 1).context("hello_world")?;
    rec.chunks_per_hello = Some(hello.chunks.len() as f64);

    let tracer = match (args.trace, args.server_pid) {
        (true, Some(pid)) => Some(Tracer::attach(pid).await?),
        _ => None,
    };
    let (mut chunks, mut events) = (0usize, 0u64);
    let mut framing = None;
    for i in 0..args.chunk_calls {
        let id = 100 + u64::from(i);
        let wire = exchange(&mut tcp, proto.request(&stream, id, &s), timeout).await?;
        let n = check::tool_answer(&wire.answer, id, Expect::Stream(count))?;
        chunks += wire.chunks.len();
        events += n;
        if framing.is_none() {
            framing = Some(describe(&wire));
        }
    }
    let writes = match tracer {
        Some(t) => Some(t.finish().await?),
        None => None,
    };
    let calls = f64::from(args.chunk_calls.max(1));
    rec.ok = u64::from(args.chunk_calls) + 1;
    rec.chunks_per_answer = Some(chunks as f64 / calls);
    rec.events_per_answer = Some(events as f64 / calls);
    if events > 0 {
        rec.chunks_per_event = Some(chunks as f64 / events as f64);
        rec.writes_per_event = writes.map(|w| w as f64 / events as f64);
    }
    rec.framing = framing;
    Ok(())
}

/// Chunk sizes of one answer, `|` after a chunk in which an SSE event ends.
fn describe(w: &Wire) -> String {
    let mut ends = Vec::new();
    let mut it = sse::events(&w.answer.body);
    while it.next().is_some() {
        ends.push(it.boundary());
    }
    let mut out = format!("{} chunks for {} events:", w.chunks.len(), ends.len());
    let mut at = 0;
    for &size in &w.chunks {
        let end = at + size;
        let n = ends.iter().filter(|&&e| e > at && e <= end).count();
        let _ = write!(out, " {size}{}", "|".repeat(n));
        at = end;
    }
    out
}

/// Writes `req` on the raw connection and reads its whole answer, noting each chunk's size.
async fn exchange(
    tcp: &mut BufReader<TcpStream>,
    req: http::Request<http_body_util::Full<Bytes>>,
    timeout: Duration,
) -> anyhow::Result<Wire> {
    tokio::time::timeout(timeout, async {
        let (parts, body) = req.into_parts();
        let body = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let mut head = format!("{} {} HTTP/1.1\r\n", parts.method, parts.uri);
        for (name, value) in &parts.headers {
            let _ = write!(head, "{name}: {}\r\n", value.to_str().unwrap_or_default());
        }
        let _ = write!(head, "content-length: {}\r\n\r\n", body.len());
        tcp.get_mut().write_all(head.as_bytes()).await?;
        tcp.get_mut().write_all(&body).await?;
        read_answer(tcp).await
    })
    .await
    .map_err(|_| anyhow::anyhow!("no complete answer within {timeout:?}"))?
}

async fn read_answer(tcp: &mut BufReader<TcpStream>) -> anyhow::Result<Wire> {
    let mut line = String::new();
    tcp.read_line(&mut line).await?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("bad status line {line:?}"))?;
    let mut headers = http::HeaderMap::new();
    loop {
        line.clear();
        if tcp.read_line(&mut line).await? == 0 {
            bail!("connection closed in the answer's head");
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.append(
                http::HeaderName::from_bytes(k.trim().as_bytes())?,
                http::HeaderValue::from_str(v.trim())?,
            );
        }
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
    };
    let mut body = Vec::new();
    let mut chunks = Vec::new();
    if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            line.clear();
            tcp.read_line(&mut line).await?;
            let size_hex = line.trim_end().split(';').next().unwrap_or_default();
            let size = usize::from_str_radix(size_hex.trim(), 16)
                .with_context(|| format!("bad chunk size line {line:?}"))?;
            if size == 0 {
                // Trailers (none expected) up to the blank line.
                loop {
                    line.clear();
                    if tcp.read_line(&mut line).await? == 0 || line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            tcp.read_exact(&mut body[start..]).await?;
            let mut crlf = [0u8; 2];
            tcp.read_exact(&mut crlf).await?;
            chunks.push(size);
        }
    } else {
        let len: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .context("answer with neither chunks nor Content-Length")?;
        body.resize(len, 0);
        tcp.read_exact(&mut body).await?;
        chunks.push(len);
    }
    Ok(Wire {
        answer: Answer {
            status: http::StatusCode::from_u16(status)?,
            headers,
            body: Bytes::from(body),
        },
        chunks,
    })
}

/// `strace -f -c` attached to the server.
struct Tracer {
    child: tokio::process::Child,
    out: std::path::PathBuf,
}

impl Tracer {
    async fn attach(pid: u32) -> anyhow::Result<Tracer> {
        let out =
            std::env::temp_dir().join(format!("mcpbench-strace-{}-{pid}", std::process::id()));
        let child = tokio::process::Command::new("strace")
            .args(["-f", "-qq", "-c", "-e"])
            .arg(format!("trace={}", WRITES.join(",")))
            .arg("-o")
            .arg(&out)
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting strace (is it installed?)")?;
        // Wait until every thread of the server has a tracer.
        let deadline = Instant::now() + ATTACH_TIMEOUT;
        while !traced(pid) {
            if Instant::now() > deadline {
                bail!("strace did not attach to {pid} within {ATTACH_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(Tracer { child, out })
    }

    /// Detaches and returns the write-family syscalls counted.
    async fn finish(mut self) -> anyhow::Result<u64> {
        if let Some(p) = self.child.id().and_then(|id| Pid::from_raw(id as i32)) {
            let _ = kill_process(p, Signal::INT);
        }
        self.child.wait().await.context("waiting for strace")?;
        let text = std::fs::read_to_string(&self.out)
            .with_context(|| format!("reading {}", self.out.display()))?;
        let _ = std::fs::remove_file(&self.out);
        Ok(count_writes(&text))
    }
}

/// Whether every thread of `pid` is traced.
fn traced(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|t| {
        std::fs::read_to_string(t.path().join("status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("TracerPid:"))
                    .map(|v| v.trim() != "0")
            })
            .unwrap_or(false)
    })
}

/// Sum of the `calls` column of strace's `-c` summary over the write-family syscalls.
fn count_writes(summary: &str) -> u64 {
    summary
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = *f.last()?;
            if f.len() >= 5 && WRITES.contains(&name) {
                f.get(3)?.parse::<u64>().ok()
            } else {
                None
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_strace_summaries() {
        let summary = "% time     seconds  usecs/call     calls    errors syscall\n\
            ------ ----------- ----------- --------- --------- ----------------\n\
            \x2061.20    0.000300          12        25           writev\n\
            \x2038.80    0.000190           9        20         2 write\n\
            ------ ----------- ----------- --------- --------- ----------------\n\
            100.00    0.000490          10        45         2 total\n";
        assert_eq!(count_writes(summary), 45);
    }

    #[test]
    fn describes_framing() {
        let body = "data: a\n\ndata: b\n\n";
        let w = Wire {
            answer: Answer {
                status: http::StatusCode::OK,
                headers: http::HeaderMap::new(),
                body: Bytes::from_static(body.as_bytes()),
            },
            chunks: vec![7, 2, 9],
        };
        assert_eq!(describe(&w), "3 chunks for 2 events: 7 2| 9|");
    }
}
