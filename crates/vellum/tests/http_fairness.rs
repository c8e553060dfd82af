//! Fairness, over real HTTP on loopback: large bodies posted by some clients must not stall
//! the small requests of the others. The server runs on a runtime of its own with two workers
//! (a small production box); the clients run on the test's runtime, so what a small request
//! waits for is the server alone.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::oneshot;
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{Legacy, TestHttpServer};
use vellum_testkit::within;

/// How many small requests each phase measures at least, and for how long at most.
const SMALL_REQUESTS: usize = 200;
const PHASE: Duration = Duration::from_secs(60);
/// How many large bodies must be decoded while the small requests of the attacked phase run
/// (on a loaded machine a debug-build decode of 4 MiB takes a second or more).
const BODIES_DURING: usize = 8;

/// A server on its own two-worker runtime, in its own thread, until `stop` is sent.
struct OwnRuntimeServer {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OwnRuntimeServer {
    async fn start() -> Self {
        let (url_tx, url_rx) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let srv =
                    TestHttpServer::start(test_server().server, StreamableHttpOptions::default())
                        .await;
                url_tx.send(srv.url.clone()).unwrap();
                let _ = stopped.await;
                drop(srv);
            });
        });
        let url = within("the server's address", url_rx).await.unwrap();
        Self {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for OwnRuntimeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A maximum-size (4 MiB, the default limit) JSON-RPC request of many small items: costly
/// to decode, cheap to answer (no session, so 400 once decoded).
fn big_body() -> bytes::Bytes {
    let limit = StreamableHttpOptions::DEFAULT_MAX_BODY_BYTES;
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"items":["#;
    let tail = "]}}";
    let item = r#"{"k":1,"v":"ab"},"#;
    let mut body = String::with_capacity(limit);
    body.push_str(head);
    while body.len() + item.len() + tail.len() < limit {
        body.push_str(item);
    }
    body.pop(); // the last comma
    body.push_str(tail);
    assert!(body.len() <= limit);
    serde_json::from_str::<serde_json::Value>(&body).expect("the big body is JSON");
    body.into()
}

/// Small `ping`s on an initialized session, one at a time: at least [`SMALL_REQUESTS`], and
/// on until `enough()` (for at most [`PHASE`] in all); their latencies, sorted.
async fn small_latencies(
    session: &Legacy,
    first_id: i64,
    enough: impl Fn() -> bool,
) -> Vec<Duration> {
    let mut out = Vec::new();
    let started = Instant::now();
    for i in 0.. {
        let done = out.len() >= SMALL_REQUESTS && enough();
        if done || started.elapsed() > PHASE {
            break;
        }
        let t = Instant::now();
        let reply = within(
            "a small ping",
            session.request(first_id + i, "ping", json!({})),
        )
        .await;
        out.push(t.elapsed());
        assert!(reply.result().is_object(), "ping failed");
    }
    out.sort();
    out
}

fn p99(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_bodies_do_not_stall_the_small_requests_of_other_clients() {
    let srv = OwnRuntimeServer::start().await;
    let session = Legacy::connect(&srv.url).await;
    // Warm up (connection, allocator), then the baseline without attackers.
    small_latencies(&session, 1_000, || true).await;
    let quiet = small_latencies(&session, 10_000, || true).await;

    // Four attackers (two per server worker), each on its own connection, posting maximum-size
    // bodies back to back until the measurement is over.
    let body = big_body();
    let stop = Arc::new(AtomicBool::new(false));
    let posted = Arc::new(AtomicUsize::new(0));
    let mut attackers = Vec::new();
    for _ in 0..4 {
        let (url, body, stop, posted) =
            (srv.url.clone(), body.clone(), stop.clone(), posted.clone());
        attackers.push(tokio::spawn(async move {
            vellum::transport::install_crypto_provider();
            let http = reqwest::Client::new();
            while !stop.load(Ordering::Relaxed) {
                let answer = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("an attacker's POST");
                // Decoded in full, then refused for want of a session.
                assert_eq!(answer.status(), 400);
                let _ = answer.bytes().await;
                posted.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // The attack is under way once every attacker has had a body decoded.
    vellum_testkit::eventually("the attackers' first bodies", || {
        posted.load(Ordering::Relaxed) >= 4
    })
    .await;
    let before = posted.load(Ordering::Relaxed);
    let attacked = small_latencies(&session, 20_000, || {
        posted.load(Ordering::Relaxed) - before >= BODIES_DURING
    })
    .await;
    let during = posted.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        within("an attacker to stop", a).await.unwrap();
    }

    let (q, a) = (p99(&quiet), p99(&attacked));
    let ratio = a.as_secs_f64() / q.as_secs_f64().max(1e-6);
    eprintln!(
        "small-request p99: {q:?} alone ({} requests), {a:?} beside 4 clients posting 4 MiB \
         bodies ({} requests, {during} bodies decoded meanwhile): ratio {ratio:.1}",
        quiet.len(),
        attacked.len()
    );
    assert!(
        during >= BODIES_DURING,
        "only {during} large bodies were decoded during the measurement"
    );
    // Generous for a loaded machine: with the bodies decoded on the runtime's workers, each
    // small request waits behind whole decodes (ratios in the hundreds); off the workers it
    // only shares the CPU.
    assert!(
        a <= q * 25 + Duration::from_millis(25),
        "small requests stalled by large bodies: p99 {a:?} against {q:?} alone (ratio {ratio:.1})"
    );
}
