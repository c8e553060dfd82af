//! The chaos run: three instances on the cluster (3 masters, 3 replicas) behind the
//! testkit's round-robin proxy, clients of both eras calling tools the whole time (legacy
//! ones also streaming and resuming their streams through the proxy), while the run
//! SIGKILLs an instance and starts it again, fails a master over (SIGKILL, promotion, the
//! old master back as a replica), SIGKILLs another instance, and restarts the third with
//! SIGTERM. About a minute in all.
//!
//! What must hold: every call gets exactly one answer, or fails with a clear error (HTTP
//! 503 with `Retry-After`, a JSON-RPC error, a connection cut when its instance died) that
//! the client retries as a new call; a resumed stream never repeats or reorders an event;
//! no session is ever unknown (404), and every session works on every instance at the end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use vellum_testkit::process::ServerProcess;
use vellum_testkit::proxy::Proxy;
use vellum_testkit::redis_ha::HaCluster;

use super::blocking;
use super::client::{Delivered, Failure, Legacy, http, instance, modern_call};

/// What the clients counted.
#[derive(Default)]
struct Figures {
    calls: AtomicU64,
    streamed: AtomicU64,
    resumes: AtomicU64,
    refused: AtomicU64,
    cut: AtomicU64,
    errors: AtomicU64,
    /// Streaming calls whose resumed stream missed events that never got an id.
    gaps: AtomicU64,
    /// Events that came again on a resume (sent first without an id).
    repeated: AtomicU64,
    max_call_ms: AtomicU64,
}

impl Figures {
    /// Counts a failed attempt, which the client then retries as a new call.
    fn failed(&self, f: &Failure) {
        match f {
            Failure::Unavailable => &self.refused,
            Failure::Transport(_) => &self.cut,
            Failure::Error(_) => &self.errors,
        }
        .fetch_add(1, Ordering::Relaxed);
    }
}

/// Retries `$attempt` (a new call each time, numbered `$k`) until it answers, at most 100
/// times, counting what failed; the answer.
macro_rules! until_answered {
    ($f:expr, $what:expr, |$k:ident| $attempt:expr) => {{
        let started = Instant::now();
        let mut answer = None;
        for $k in 0..100u64 {
            match $attempt {
                Ok(v) => {
                    $f.calls.fetch_add(1, Ordering::Relaxed);
                    let ms = started.elapsed().as_millis() as u64;
                    $f.max_call_ms.fetch_max(ms, Ordering::Relaxed);
                    answer = Some(v);
                    break;
                }
                Err(e) => {
                    $f.failed(&e);
                    let ms = if matches!(e, Failure::Unavailable) {
                        100
                    } else {
                        20
                    };
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
            }
        }
        answer.unwrap_or_else(|| panic!("{}: never answered in 100 attempts", $what))
    }};
}

/// A streaming call through the proxy, its POST stream dropped after three events and
/// resumed (through the proxy) until the answer. `None`: the call failed with a clear
/// error (its instance died), and the caller makes a new one.
async fn streamed(s: &Legacy, url: &str, id: u64, figures: &Figures) -> Result<(), Failure> {
    let mut reader = s.start_stream(url, id, 10, 40).await?;
    let mut d = Delivered::default();
    d.read(&mut reader, id, |d| d.progress.len() >= 3).await?;
    let mut resumes = 0;
    while d.answer.is_none() {
        let Some(last) = d.last_id.clone() else {
            return Err(Failure::Transport(format!("call {id}: no event id")));
        };
        assert!(resumes < 40, "call {id}: resumed 40 times");
        resumes += 1;
        figures.resumes.fetch_add(1, Ordering::Relaxed);
        match s.resume(url, &last).await {
            Ok(mut r) => d.read(&mut r, id, |_| false).await?,
            Err(Failure::Transport(_) | Failure::Unavailable) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e),
        }
    }
    // Every event with an id came once, in order. One sent while the store did not answer
    // has none (docs/cluster.md: its write may have landed after all, so a resume from an
    // earlier id may carry it again).
    let with_ids: Vec<u64> = d
        .progress
        .iter()
        .filter(|(e, _)| e.is_some())
        .map(|(_, p)| *p)
        .collect();
    assert!(
        with_ids.windows(2).all(|w| w[0] < w[1]),
        "call {id}: events repeated or reordered: {:?}",
        d.progress
    );
    let mut values = d.values();
    values.sort_unstable();
    values.dedup();
    figures
        .repeated
        .fetch_add((d.progress.len() - values.len()) as u64, Ordering::Relaxed);
    let answer = d.answer.unwrap_or_default();
    if answer.get("error").is_some() {
        return Err(Failure::Error(answer));
    }
    if values.len() < 10 {
        figures.gaps.fetch_add(1, Ordering::Relaxed);
    }
    assert_eq!(answer["result"]["content"][0]["text"], "streamed 10");
    figures.streamed.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// One legacy client: a new session every eighth call, a streaming call every third when
/// `streams`, else `hello_world`.
async fn legacy(n: u64, url: String, stop: Arc<AtomicBool>, f: Arc<Figures>) -> Vec<Legacy> {
    let http = http(n.is_multiple_of(2));
    let mut sessions = vec![until_answered!(f, "initialize", |_k| Legacy::open(
        &http, &url
    )
    .await)];
    let mut id = n * 1_000_000;
    while !stop.load(Ordering::Acquire) {
        id += 1;
        let s = sessions.last().unwrap().clone();
        if id.is_multiple_of(8) {
            sessions.push(until_answered!(f, "initialize", |_k| Legacy::open(
                &http, &url
            )
            .await));
        } else if n < 2 && id.is_multiple_of(3) {
            until_answered!(f, "stream", |k| streamed(&s, &url, id * 100 + k, &f).await);
        } else {
            let name = format!("c{n}-{id}");
            let args = json!({"user_name":name});
            let a = until_answered!(f, "hello_world", |k| s
                .call(&url, id * 100 + k, "hello_world", args.clone())
                .await);
            assert_eq!(
                a["result"]["content"][0]["text"],
                format!("Hello World, {name}")
            );
        }
    }
    sessions
}

/// One 2026-07-28 client: `hello_world`, and every third call a short `stream` read whole.
async fn modern(n: u64, url: String, stop: Arc<AtomicBool>, f: Arc<Figures>) {
    let http = http(true);
    let mut id = n * 1_000_000;
    while !stop.load(Ordering::Acquire) {
        id += 1;
        if id.is_multiple_of(3) {
            let args = json!({"count":5,"interval_ms":20});
            let a = until_answered!(f, "modern stream", |k| modern_call(
                &http,
                &url,
                id * 100 + k,
                "stream",
                args.clone()
            )
            .await);
            assert_eq!(a["result"]["content"][0]["text"], "streamed 5", "{a}");
        } else {
            let name = format!("m{n}-{id}");
            let args = json!({"user_name":name});
            let a = until_answered!(f, "modern hello_world", |k| modern_call(
                &http,
                &url,
                id * 100 + k,
                "hello_world",
                args.clone()
            )
            .await);
            assert_eq!(
                a["result"]["content"][0]["text"],
                format!("Hello World, {name}")
            );
        }
    }
}

/// Waits until the clients made [`PHASE_CALLS`] calls and [`PHASE_STREAMS`] streaming calls
/// past `from` (calls, streaming calls), failing after 30 s.
async fn calls_after(f: &Figures, from: (u64, u64), what: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while f.calls.load(Ordering::Relaxed) < from.0 + PHASE_CALLS
        || f.streamed.load(Ordering::Relaxed) < from.1 + PHASE_STREAMS
    {
        assert!(Instant::now() < end, "{what}: the clients stalled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls, and streaming calls, the clients must make between two blows.
const PHASE_CALLS: u64 = 200;
const PHASE_STREAMS: u64 = 6;

fn counts(f: &Figures) -> (u64, u64) {
    (
        f.calls.load(Ordering::Relaxed),
        f.streamed.load(Ordering::Relaxed),
    )
}

pub(crate) async fn run(cluster: &HaCluster) {
    let started = Instant::now();
    let redis = cluster.url();
    let flags = ["--redis-wait-replicas", "1", "--drain-grace", "300ms"];
    let mut fleet: Vec<Option<ServerProcess>> = (0..3)
        .map(|_| Some(instance("127.0.0.1:0", &redis, &flags)))
        .collect();
    let addrs: Vec<SocketAddr> = fleet.iter().flatten().map(ServerProcess::addr).collect();
    let proxy = Proxy::start(addrs.clone()).await;
    let url = proxy.mcp_url();
    let stop = Arc::new(AtomicBool::new(false));
    let f = Arc::new(Figures::default());
    let legacies: Vec<_> = (0..3)
        .map(|n| tokio::spawn(legacy(n, url.clone(), stop.clone(), f.clone())))
        .collect();
    let moderns: Vec<_> = (10..12)
        .map(|n| tokio::spawn(modern(n, url.clone(), stop.clone(), f.clone())))
        .collect();
    calls_after(&f, (0, 0), "warm-up").await;

    let mut restart = |i: usize, signal: &str| {
        let old = fleet[i].take().expect("running");
        if signal == "-KILL" {
            let mut old = old;
            old.kill();
        } else {
            let (status, _) = old.finish(signal);
            assert!(status.success(), "instance {i} exited with {status}");
        }
        fleet[i] = Some(instance(&addrs[i].to_string(), &redis, &flags));
    };
    // 1. An instance dies and comes back.
    let n = counts(&f);
    blocking(|| restart(1, "-KILL"));
    calls_after(&f, n, "after SIGKILL of instance 1").await;
    // 2. A master fails over; the old one comes back as a replica.
    let n = counts(&f);
    let victim = blocking(|| cluster.master_of(0));
    let replica = blocking(|| cluster.replica_of(victim));
    blocking(|| cluster.nodes.kill(victim));
    let end = Instant::now() + Duration::from_secs(30);
    while blocking(|| cluster.role(replica)).as_deref() != Some("master") {
        assert!(Instant::now() < end, "no promotion within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    calls_after(&f, n, "after the failover").await;
    blocking(|| {
        cluster.nodes.restart(victim);
        cluster.wait_whole(Duration::from_secs(30));
    });
    // 3. Another instance dies and comes back; 4. the third restarts gracefully.
    let n = counts(&f);
    blocking(|| restart(2, "-KILL"));
    calls_after(&f, n, "after SIGKILL of instance 2").await;
    let n = counts(&f);
    blocking(|| restart(0, "-TERM"));
    calls_after(&f, n, "after SIGTERM of instance 0").await;

    stop.store(true, Ordering::Release);
    let mut sessions = Vec::new();
    for c in legacies {
        sessions.extend(c.await.expect("a legacy client failed"));
    }
    for c in moderns {
        c.await.expect("a modern client failed");
    }
    // No session was lost: each works on every instance.
    for (k, s) in sessions.iter().enumerate() {
        for a in &addrs {
            let u = format!("http://{a}/mcp");
            let r = s
                .call(
                    &u,
                    9_000_000 + k as u64,
                    "hello_world",
                    json!({"user_name":"end"}),
                )
                .await;
            assert!(r.is_ok(), "session {k} at the end on {a}: {r:?}");
        }
    }
    let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
    eprintln!(
        "redis ha: chaos: {} sessions, {} calls ({} streaming, {} resumes, {} with events missed and {} events repeated around the failover); \
         failed attempts retried: {} refused with 503, {} cut, {} JSON-RPC errors; longest call {} ms; \
         the proxy moved {} connections; {:.1} s in all",
        sessions.len(),
        c(&f.calls),
        c(&f.streamed),
        c(&f.resumes),
        c(&f.gaps),
        c(&f.repeated),
        c(&f.refused),
        c(&f.cut),
        c(&f.errors),
        c(&f.max_call_ms),
        c(&proxy.skipped),
        started.elapsed().as_secs_f64()
    );
}
