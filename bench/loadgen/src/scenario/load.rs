//! Load scenarios: S sessions, C requests in flight, a warm-up, then a measured window.
//!
//! Each in-flight slot owns one keep-alive HTTP/1.1 connection and uses session `slot % S`
//! (wrk-style closed loop: a slot sends its next request when the previous answer is complete).
//! Latency runs from just before the request is handed to hyper to the end of the response
//! body. A correct answer counts toward throughput and latency if it completes inside the
//! window (throughput = correct answers per second of window); a wrong answer or a failed
//! request counts as an error whenever it happens, warm-up included. Server CPU is read from
//! `/proc` at both edges of the window.
//!
//! What one operation is comes from [`Work`]: one `tools/call` of a tool (hello_world,
//! stream, blob), checked against its [`Expect`]; or a whole paged `tools/list` walk.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use hdrhistogram::Histogram;
use tokio::time::Instant;

use super::{fill_latency, histogram, micros, secs};
use crate::check::{self, Expect};
use crate::cli::RunArgs;
use crate::client::{self, Conn};
use crate::proto::{CallTemplate, Proto, Session};
use crate::record::{Errors, Record};
use crate::{procfs, session};

/// What one operation of a load slot is.
#[derive(Clone, Debug)]
pub(crate) enum Work {
    /// One `tools/call`, checked against `expect`.
    Call {
        template: CallTemplate,
        expect: Expect,
    },
    /// `tools/list` from the first page to the last; at least `min_tools` tools in all.
    ListAll { min_tools: usize },
}

impl Work {
    /// `hello_world`.
    pub(crate) fn hello(proto: &Proto) -> anyhow::Result<Work> {
        Ok(Work::Call {
            template: proto.tool("hello_world", r#"{"user_name":"bench"}"#, false)?,
            expect: Expect::Hello,
        })
    }
}

/// What one slot counted inside the window.
struct SlotStats {
    latency: Histogram<u64>,
    ok: u64,
    messages: u64,
    bytes: u64,
    errors: Errors,
}

/// What one correct operation carried.
struct Done {
    messages: u64,
    bytes: u64,
}

/// The JSON-RPC ids of one slot: an arithmetic sequence disjoint from the other slots'.
#[derive(Clone, Copy)]
struct Ids {
    next: u64,
    step: u64,
}

impl Ids {
    fn take(&mut self) -> u64 {
        let id = self.next;
        self.next += self.step;
        id
    }
}

/// Window edges shared by the slots.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

/// The shape of one load run.
pub(super) struct Shape {
    pub(super) sessions: usize,
    pub(super) concurrency: usize,
}

impl Shape {
    /// `--sessions`/`--concurrency` when given, else the scenario's defaults.
    pub(super) fn from_args(args: &RunArgs, sessions: usize, concurrency: usize) -> Shape {
        Shape {
            sessions: args.sessions.unwrap_or(sessions).max(1),
            concurrency: args.concurrency.unwrap_or(concurrency).max(1),
        }
    }
}

/// Runs `shape.concurrency` slots of `work` over `shape.sessions` sessions and fills `rec`.
pub(super) async fn run(
    args: &RunArgs,
    proto: &Proto,
    rec: &mut Record,
    shape: Shape,
    work: &Work,
) -> anyhow::Result<()> {
    let Shape {
        sessions,
        concurrency,
    } = shape;
    if sessions > concurrency {
        bail!("{sessions} sessions need at least as many requests in flight");
    }
    let timeout = secs(args.request_timeout);
    let read_buf = args.read_buf.unwrap_or(client::MIN_BUF);
    let dialled0 = client::dialled();
    let mut conns = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        conns.push(client::connect_with(args.addr, read_buf).await?);
    }
    // HTTP/1.1: one per slot; h2: the slots share them (32 streams on one connection).
    rec.connections = Some(client::dialled() - dialled0);
    let mut opened: Vec<Session> = Vec::with_capacity(sessions);
    for (i, conn) in conns.iter_mut().take(sessions).enumerate() {
        opened.push(
            session::open(conn, proto, timeout)
                .await
                .with_context(|| format!("opening session {i}"))?,
        );
    }
    let pid = args.server_pid;
    let idle = pid.map(procfs::tree_memory).transpose()?;

    let proto = Arc::new(proto.clone());
    let work = Arc::new(work.clone());
    let warmup = secs(args.warmup);
    let window_len = secs(args.duration);
    let start = Instant::now() + warmup;
    let window = Window {
        start,
        end: start + window_len,
    };
    let mut slots = Vec::with_capacity(concurrency);
    for (i, conn) in conns.into_iter().enumerate() {
        let session = opened[i % sessions].clone();
        // JSON-RPC ids must be unique among a session's outstanding requests: slot i sends
        // i+1, i+1+C, i+1+2C, ...
        let ids = Ids {
            next: i as u64 + 1,
            step: concurrency as u64,
        };
        let slot = Slot {
            proto: Arc::clone(&proto),
            work: Arc::clone(&work),
            session,
            addr: args.addr,
            read_buf,
            timeout,
        };
        slots.push(tokio::spawn(slot.run(conn, ids, window)));
    }

    // Documented warm-up: the slots run unmeasured until the window opens.
    tokio::time::sleep_until(window.start).await;
    let peak_reset = pid.map(procfs::reset_peak);
    let cpu0 = pid.map(procfs::tree_cpu).transpose()?;
    let self0 = procfs::self_cpu();
    let machine0 = procfs::machine_cpu();
    tokio::time::sleep_until(window.end).await;
    let cpu1 = pid.map(procfs::tree_cpu).transpose()?;
    let self1 = procfs::self_cpu();
    let machine1 = procfs::machine_cpu();
    let mem = pid.map(procfs::tree_memory).transpose()?;

    let mut latency = histogram()?;
    let (mut ok, mut messages, mut bytes) = (0, 0, 0);
    let mut errors = Errors::default();
    for s in slots {
        let s = s.await.context("load slot panicked")??;
        latency.add(&s.latency).context("merging histograms")?;
        ok += s.ok;
        messages += s.messages;
        bytes += s.bytes;
        errors.merge(s.errors);
    }

    let window_s = window_len.as_secs_f64();
    rec.sessions = Some(sessions);
    rec.concurrency = Some(concurrency);
    rec.window_s = Some(window_s);
    rec.ok = ok;
    rec.errors = errors.count;
    rec.error_samples = errors.samples;
    rec.rps = Some(ok as f64 / window_s);
    rec.events_per_s = Some(messages as f64 / window_s);
    rec.mb_per_s = Some(bytes as f64 / 1e6 / window_s);
    if ok > 0 {
        rec.bytes_per_op = Some(bytes as f64 / ok as f64);
    }
    fill_latency(rec, &latency);
    if let (Some(c0), Some(c1)) = (cpu0, cpu1) {
        let used = c1 - c0;
        rec.server_cpu_pct = Some(100.0 * used / window_s);
        if ok > 0 {
            rec.cpu_us_per_op = Some(used * 1e6 / ok as f64);
        }
        if messages > 0 {
            rec.cpu_us_per_event = Some(used * 1e6 / messages as f64);
        }
        if bytes > 0 {
            rec.cpu_us_per_mb = Some(used * 1e6 / (bytes as f64 / 1e6));
        }
    }
    rec.loadgen_cpu_pct = Some(100.0 * (self1 - self0) / window_s);
    if let (Some((busy0, steal0)), Some((busy1, steal1)), Some(c0), Some(c1)) =
        (machine0, machine1, cpu0, cpu1)
    {
        let other = (busy1 - busy0) - (c1 - c0) - (self1 - self0);
        rec.other_cpu_pct = Some((100.0 * other / window_s).max(0.0));
        rec.steal_pct = Some(100.0 * (steal1 - steal0) / window_s);
    }
    if let Some(m) = mem {
        rec.rss_kib = Some(m.rss_kib);
        rec.hwm_kib = Some(m.hwm_kib);
        if let Some(idle) = idle {
            rec.rss_idle_kib = Some(idle.rss_kib);
            rec.peak_kib_per_inflight =
                Some((m.hwm_kib as f64 - idle.rss_kib as f64) / concurrency as f64);
        }
    }
    rec.peak_reset = peak_reset;
    Ok(())
}

/// What every slot shares.
struct Slot {
    proto: Arc<Proto>,
    work: Arc<Work>,
    session: Session,
    addr: std::net::SocketAddr,
    read_buf: usize,
    timeout: Duration,
}

impl Slot {
    /// One in-flight slot: operate, check, repeat until the window closes. A failed
    /// connection is replaced and the failure counted.
    async fn run(self, mut conn: Conn, mut ids: Ids, window: Window) -> anyhow::Result<SlotStats> {
        let mut stats = SlotStats {
            latency: histogram()?,
            ok: 0,
            messages: 0,
            bytes: 0,
            errors: Errors::default(),
        };
        loop {
            let sent = Instant::now();
            if sent >= window.end {
                break;
            }
            let (outcome, broken) = self.operate(&mut conn, &mut ids).await;
            let done = Instant::now();
            let counted = done >= window.start && done < window.end;
            match outcome {
                Ok(d) if counted => {
                    stats.ok += 1;
                    stats.messages += d.messages;
                    stats.bytes += d.bytes;
                    stats.latency.saturating_record(micros(done - sent));
                }
                Ok(_) => {}
                Err(e) => stats.errors.add(e),
            }
            if broken {
                // The connection is unusable: replace it, or stop this slot if the server
                // is gone.
                match client::connect_with(self.addr, self.read_buf).await {
                    Ok(c) => conn = c,
                    Err(e) => {
                        stats.errors.add(format!("reconnect: {e:#}"));
                        break;
                    }
                }
            }
        }
        Ok(stats)
    }

    /// One operation; the flag says whether the connection broke.
    async fn operate(&self, conn: &mut Conn, ids: &mut Ids) -> (anyhow::Result<Done>, bool) {
        match &*self.work {
            Work::Call { template, expect } => {
                let id = ids.take();
                let req = self.proto.request(template, id, &self.session);
                match conn.send(req, self.timeout).await {
                    Err(e) => (Err(e), true),
                    Ok(answer) => {
                        let bytes = answer.body.len() as u64;
                        let checked = check::tool_answer(&answer, id, *expect)
                            .map(|messages| Done { messages, bytes })
                            .map_err(anyhow::Error::new);
                        (checked, false)
                    }
                }
            }
            Work::ListAll { min_tools } => {
                let mut cursor: Option<String> = None;
                let mut done = Done {
                    messages: 0,
                    bytes: 0,
                };
                let mut tools = 0;
                loop {
                    let id = ids.take();
                    let req = match self.proto.list_tools(id, &self.session, cursor.as_deref()) {
                        Ok(r) => r,
                        Err(e) => return (Err(e), false),
                    };
                    let answer = match conn.send(req, self.timeout).await {
                        Ok(a) => a,
                        Err(e) => return (Err(e), true),
                    };
                    done.bytes += answer.body.len() as u64;
                    done.messages += 1;
                    match check::list_page(&answer, id) {
                        Ok((n, next)) => {
                            tools += n;
                            cursor = next;
                        }
                        Err(e) => return (Err(e.into()), false),
                    }
                    if cursor.is_none() {
                        break;
                    }
                    if done.messages > 100_000 {
                        return (Err(anyhow::anyhow!("tools/list: no last page")), false);
                    }
                }
                if tools < *min_tools {
                    let e = anyhow::anyhow!("tools/list: {tools} tools, {min_tools} expected");
                    return (Err(e), false);
                }
                (Ok(done), false)
            }
        }
    }
}
