//! A rolling update under load: three `vellum serve --server bench` instances share one Redis
//! (sessions and stream events) behind a round-robin TCP proxy written here; clients keep
//! making calls and running a streaming tool while each instance in turn gets SIGTERM,
//! drains, exits and is started again on the same port.
//!
//! What must hold: every call ends with exactly one answer, after retrying only errors a
//! client may retry (the connection refused or cut before an answer, HTTP 503 with
//! `Retry-After`); every progress event of a streaming call arrives exactly once, in order,
//! though the client drops each POST stream halfway and resumes it with `Last-Event-ID` on
//! whichever instance the proxy picks; no session is ever unknown (404) and every session
//! still works on every new instance at the end.
//!
//! Runs on one `redis-server` (`…::node`) and on a Redis Cluster (`…::cluster`,
//! `VELLUM_TEST_REDIS_CLUSTER`; outside CI one is started when it is unset). The figures it
//! prints (`rolling update: …`) are the ones in docs/cluster.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vellum_testkit::http::SseReader;
use vellum_testkit::process::{ServerProcess, vellum_bin};
use vellum_testkit::proxy::Proxy;

/// Sessions making calls at once.
const CLIENTS: usize = 4;
/// Progress events of each streaming call (`stream`, 40 ms apart: about 0.4 s a call).
const STREAM_COUNT: u64 = 10;
/// Progress events of the call running detached on each instance as it gets SIGTERM (25,
/// 40 ms apart: it outlasts the drain and stream graces, not the request grace).
const PINNED_COUNT: u64 = 25;
/// After this many progress events the client drops the POST stream and resumes.
const DROP_AFTER: u64 = 3;
/// How long one attempt may wait for its next byte before the test fails.
const STALL: Duration = Duration::from_secs(10);

/// Where the instances keep their data.
use vellum_testkit::redis::Backend as Store;

/// One `vellum serve` instance on `addr` (port 0 for a free one) sharing `redis`. The graces
/// are a rollout's, shortened: 300 ms refusing new sessions while still serving (so the
/// proxy's clients see 503 + Retry-After), streams ended 200 ms after the listener closes,
/// requests given 5 s to finish.
fn instance(addr: &str, redis: &str) -> ServerProcess {
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["serve", "--server", "bench", "--addr", addr])
        .args(["--session-store", redis, "--event-store", redis])
        .args(["--drain-grace", "300ms", "--stream-grace", "200ms"])
        .args(["--request-grace", "5s"])
        .env_remove("RUST_LOG");
    ServerProcess::spawn(cmd)
}

/// What the clients counted.
#[derive(Default)]
struct Figures {
    calls: AtomicU64,
    streamed: AtomicU64,
    resumed: AtomicU64,
    retries: AtomicU64,
    retried_503: AtomicU64,
    /// The longest time from a call's first attempt to its answer, µs.
    max_call_us: AtomicU64,
    /// When the last answer to a quick-calls client came (µs after `start`), and the
    /// longest time with no such answer.
    last_answer_us: AtomicU64,
    max_gap_us: AtomicU64,
    start: std::sync::OnceLock<Instant>,
}

impl Figures {
    fn answered(&self, call: Duration, quick: bool) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.max_call_us
            .fetch_max(call.as_micros() as u64, Ordering::Relaxed);
        if !quick {
            return;
        }
        let now = self.start.get_or_init(Instant::now).elapsed().as_micros() as u64;
        let before = self.last_answer_us.swap(now, Ordering::Relaxed);
        if before > 0 {
            self.max_gap_us
                .fetch_max(now.saturating_sub(before), Ordering::Relaxed);
        }
    }
}

/// An attempt that did not get an answer, and may be retried.
#[derive(Debug)]
enum Retry {
    /// Refused or cut before the answer.
    Transport(#[allow(dead_code)] String),
    /// 503 (draining), with `Retry-After`.
    Unavailable,
}

/// A legacy (2025-11-25) session through the proxy. Pooling is off, so each request is a new
/// connection and the proxy spreads them over the instances.
struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.post_to(&self.url, body)
    }

    fn post_to(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(body)
    }

    /// A client for the proxy at `url`. Unpooled, each request is a new connection, which
    /// the proxy sends to the next instance; pooled (keep-alive, as most clients are), a
    /// client stays on one instance until that instance closes the connection.
    fn client(pooled: bool) -> reqwest::Client {
        vellum::transport::install_crypto_provider();
        let b = reqwest::Client::builder();
        let b = if pooled {
            b
        } else {
            b.pool_max_idle_per_host(0)
        };
        b.build().unwrap()
    }

    /// `initialize` and `notifications/initialized` through the proxy: a new session, or why
    /// to retry (a draining instance refuses new sessions with 503).
    async fn open(http: &reqwest::Client, url: &str) -> Result<Session, Retry> {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"rolling","version":"1"}}});
        let resp = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .map_err(|e| Retry::Transport(e.to_string()))?;
        match resp.status().as_u16() {
            200 => {}
            503 => return Err(Retry::Unavailable),
            other => panic!("initialize: HTTP {other}"),
        }
        let id = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let s = Session {
            http: http.clone(),
            url: url.to_owned(),
            id,
        };
        let text = resp
            .text()
            .await
            .map_err(|e| Retry::Transport(e.to_string()))?;
        assert!(text.contains("protocolVersion"), "{text}");
        // The notification may meet a stopping instance too; it is sent until accepted.
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        for _ in 0..50 {
            match s.post(&note).send().await {
                Ok(r) if r.status() == 202 => return Ok(s),
                Ok(r) => s.status(&r, "notifications/initialized").err(),
                Err(e) => Some(Retry::Transport(e.to_string())),
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("notifications/initialized never accepted")
    }

    /// Checks an HTTP status: 503 may be retried, 404 is a lost session (the test fails).
    fn status(&self, resp: &reqwest::Response, what: &str) -> Result<(), Retry> {
        match resp.status().as_u16() {
            200 => Ok(()),
            503 => {
                assert!(
                    resp.headers().contains_key("retry-after"),
                    "503 without Retry-After"
                );
                Err(Retry::Unavailable)
            }
            404 => panic!("session {} lost ({what}: 404)", self.id),
            other => panic!("{what}: HTTP {other}"),
        }
    }

    /// One `hello_world` call: the answer, or why it may be retried.
    async fn hello(&self, id: u64, name: &str) -> Result<Value, Retry> {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"hello_world","arguments":{"user_name":name}}});
        let resp = self
            .post(&body)
            .send()
            .await
            .map_err(|e| Retry::Transport(e.to_string()))?;
        self.status(&resp, "hello_world")?;
        let is_sse = resp
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let text = tokio::time::timeout(STALL, resp.text())
            .await
            .expect("hello_world stalled")
            .map_err(|e| Retry::Transport(e.to_string()))?;
        let messages: Vec<Value> = if is_sse {
            vellum_testkit::http::parse_sse(&text)
                .into_iter()
                .filter(|e| !e.data.is_empty())
                .map(|e| serde_json::from_str(&e.data).unwrap())
                .collect()
        } else {
            vec![serde_json::from_str(&text).unwrap()]
        };
        let answers: Vec<&Value> = messages.iter().filter(|m| m["id"] == json!(id)).collect();
        match answers.as_slice() {
            [one] => Ok((*one).clone()),
            // The body broke off before the answer: retry.
            [] => Err(Retry::Transport(format!("no answer in {text:?}"))),
            more => panic!("call {id} answered {} times: {more:?}", more.len()),
        }
    }

    /// One `stream` call: reads `DROP_AFTER` progress events from the POST stream, drops it,
    /// resumes with `Last-Event-ID` (a GET through the proxy: usually another instance) until
    /// the answer, resuming again whenever a stream ends early. Returns the progress values
    /// seen (each event once) and the answer. Only the POST itself may need a retry: once
    /// it has an event id, the call is followed by resuming, never sent again.
    async fn stream(&self, id: u64, figures: &Figures) -> Result<(Vec<u64>, Value), Retry> {
        self.stream_with(id, STREAM_COUNT, &self.url, None, figures)
            .await
    }

    /// [`Session::stream`] of `count` events, POSTed to `post_url`; `dropped` is notified
    /// once the POST stream is dropped (the call then runs on detached).
    async fn stream_with(
        &self,
        id: u64,
        count: u64,
        post_url: &str,
        dropped: Option<&tokio::sync::Notify>,
        figures: &Figures,
    ) -> Result<(Vec<u64>, Value), Retry> {
        let token = format!("p{id}");
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"stream","arguments":{"count":count,"interval_ms":40},
                      "_meta":{"progressToken":token}}});
        let resp = self
            .post_to(post_url, &body)
            .send()
            .await
            .map_err(|e| Retry::Transport(e.to_string()))?;
        self.status(&resp, "stream")?;
        let mut reader = SseReader::new(resp);
        let mut progress = Vec::new();
        let mut last_id: Option<String> = None;
        let mut resumes = 0;
        loop {
            let block = reader
                .next_block_within(STALL)
                .await
                .unwrap_or_else(|()| panic!("call {id}: stream stalled"));
            match block {
                Some(b) => {
                    if let Some(eid) = &b.id {
                        last_id = Some(eid.clone());
                    }
                    if !b.is_message() {
                        continue;
                    }
                    let m = b.json();
                    if m["id"] == json!(id) {
                        return Ok((progress, m));
                    }
                    assert_eq!(m["method"], "notifications/progress", "{m}");
                    assert_eq!(m["params"]["progressToken"], token.as_str(), "{m}");
                    progress.push(m["params"]["progress"].as_f64().unwrap() as u64);
                    if resumes == 0 && progress.len() as u64 == DROP_AFTER {
                        // Drop the POST stream (its connection closes) and resume.
                        reader = self.resume(id, last_id.as_deref(), figures).await;
                        resumes += 1;
                        if let Some(d) = dropped {
                            d.notify_one();
                        }
                    }
                }
                None => {
                    // Ended before the answer (an instance stopped): resume where it was.
                    let Some(eid) = last_id.as_deref() else {
                        return Err(Retry::Transport(format!(
                            "call {id}: stream ended before any event ({:?})",
                            reader.broken()
                        )));
                    };
                    assert!(resumes < 20, "call {id}: resumed 20 times");
                    reader = self.resume(id, Some(eid), figures).await;
                    resumes += 1;
                }
            }
        }
    }

    /// A GET with `Last-Event-ID` through the proxy, retried while it may be.
    async fn resume(&self, id: u64, last: Option<&str>, figures: &Figures) -> SseReader {
        let last = last.unwrap_or_else(|| panic!("call {id}: no event id to resume from"));
        figures.resumed.fetch_add(1, Ordering::Relaxed);
        let end = Instant::now() + STALL;
        loop {
            let sent = self
                .http
                .get(&self.url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &self.id)
                .header("mcp-protocol-version", "2025-11-25")
                .header("last-event-id", last)
                .send()
                .await;
            match sent {
                Ok(resp) if resp.status() == 200 => return SseReader::new(resp),
                // The dropped connection may reach the instance late through the proxy, or
                // never: the resume takes the stream over from it all the same.
                Ok(resp) if resp.status() == 409 => {
                    panic!(
                        "call {id}: a resume was refused with 409 instead of taking the stream over"
                    )
                }
                Ok(resp) => {
                    let _ = self.status(&resp, "resume");
                }
                Err(_) => {}
            }
            figures.retries.fetch_add(1, Ordering::Relaxed);
            assert!(Instant::now() < end, "call {id}: could not resume");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Waits before a retry: 503 says `Retry-After: 1`; the test waits less (every instance but
/// the draining one is ready), a transport error a moment.
async fn backoff(r: &Retry, figures: &Figures) {
    figures.retries.fetch_add(1, Ordering::Relaxed);
    let wait = match r {
        Retry::Unavailable => {
            figures.retried_503.fetch_add(1, Ordering::Relaxed);
            100
        }
        Retry::Transport(_) => 20,
    };
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

/// One client: calls until `stop`, every eighth call a new session, and in the second half
/// of the clients every third one a streaming call (the sessions stay in use: each is checked at the end). Every call is retried
/// until it is answered, and each answer is checked.
async fn client(
    n: usize,
    proxy: String,
    stop: Arc<AtomicBool>,
    figures: Arc<Figures>,
) -> Vec<Session> {
    let http = Session::client(n.is_multiple_of(2));
    let open = async || loop {
        match Session::open(&http, &proxy).await {
            Ok(s) => break s,
            Err(r) => backoff(&r, &figures).await,
        }
    };
    let mut sessions = vec![open().await];
    // Half the clients only make quick calls: their answers show any pause in service (the
    // others spend most of their time in streaming calls).
    let streams = n >= CLIENTS / 2;
    let mut id = 0u64;
    while !stop.load(Ordering::Acquire) {
        id += 1;
        let started = Instant::now();
        let mut attempts = 0;
        if id.is_multiple_of(8) {
            sessions.push(open().await);
        } else if streams && id.is_multiple_of(3) {
            let s = sessions.last().unwrap();
            let (progress, answer) = loop {
                attempts += 1;
                assert!(attempts < 50, "call {id} never answered");
                match s.stream(id, &figures).await {
                    Ok(done) => break done,
                    Err(r) => backoff(&r, &figures).await,
                }
            };
            let want: Vec<u64> = (1..=STREAM_COUNT).collect();
            assert_eq!(progress, want, "client {n} call {id}: progress events");
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("streamed {STREAM_COUNT}"),
                "{answer}"
            );
            figures.streamed.fetch_add(1, Ordering::Relaxed);
        } else {
            let s = sessions.last().unwrap();
            let name = format!("c{n}-{id}");
            let answer = loop {
                attempts += 1;
                assert!(attempts < 50, "call {id} never answered");
                match s.hello(id, &name).await {
                    Ok(a) => break a,
                    Err(r) => backoff(&r, &figures).await,
                }
            };
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("Hello World, {name}"),
                "{answer}"
            );
        }
        figures.answered(started.elapsed(), !streams);
    }
    sessions
}

/// Waits until `f` reaches `n`, failing after `limit`, or at once when a client stopped
/// (it failed: its panic is the message).
async fn until_at_least(
    clients: &mut [tokio::task::JoinHandle<Vec<Session>>],
    f: &AtomicU64,
    n: u64,
    limit: Duration,
    what: &str,
) {
    let end = Instant::now() + limit;
    while f.load(Ordering::Relaxed) < n {
        for c in clients.iter_mut() {
            if c.is_finished() {
                if let Err(e) = c.await {
                    std::panic::resume_unwind(e.into_panic());
                }
                panic!("a client stopped early");
            }
        }
        assert!(
            Instant::now() < end,
            "{what}: {} of {n}",
            f.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn rolling_update(store: Store) {
    let began = Instant::now();
    let redis = store.url();
    let mut fleet: Vec<Option<ServerProcess>> = (0..3)
        .map(|_| Some(instance("127.0.0.1:0", &redis)))
        .collect();
    let addrs: Vec<SocketAddr> = fleet.iter().flatten().map(ServerProcess::addr).collect();
    let proxy = Proxy::start(addrs.clone()).await;
    let url = format!("http://{}/mcp", proxy.addr);

    let stop = Arc::new(AtomicBool::new(false));
    let figures = Arc::new(Figures::default());
    figures.start.get_or_init(Instant::now);
    let mut clients: Vec<_> = (0..CLIENTS)
        .map(|n| tokio::spawn(client(n, url.clone(), stop.clone(), figures.clone())))
        .collect();
    until_at_least(
        &mut clients,
        &figures.streamed,
        3,
        Duration::from_secs(10),
        "warm-up",
    )
    .await;

    for (i, addr) in addrs.iter().enumerate() {
        let before = figures.calls.load(Ordering::Relaxed);
        let streamed = figures.streamed.load(Ordering::Relaxed);
        // A call on this very instance, its POST stream dropped (to be resumed through the
        // proxy) just before SIGTERM: it runs on detached and must still finish, every event
        // reaching the client on whichever instance it resumed.
        let dropped = Arc::new(tokio::sync::Notify::new());
        let pinned = {
            let (proxy, dropped, figures) = (url.clone(), dropped.clone(), figures.clone());
            let direct = format!("http://{addr}/mcp");
            tokio::spawn(async move {
                let http = Session::client(false);
                let s = match Session::open(&http, &direct).await {
                    Ok(s) => s,
                    Err(r) => panic!("no session on instance {i}: {r:?}"),
                };
                let s = Session { url: proxy, ..s };
                let id = 9_000 + i as u64;
                match s
                    .stream_with(id, PINNED_COUNT, &direct, Some(&dropped), &figures)
                    .await
                {
                    Ok(done) => done,
                    Err(r) => panic!("the detached call on instance {i}: {r:?}"),
                }
            })
        };
        dropped.notified().await;
        let old = fleet[i].take().expect("running");
        // Waiting for the exit and the new start line blocks: off the clients' threads.
        let (status, _) = tokio::task::block_in_place(|| old.finish("-TERM"));
        assert!(status.success(), "instance {i} exited with {status}");
        fleet[i] = Some(tokio::task::block_in_place(|| {
            instance(&addr.to_string(), &redis)
        }));
        let (progress, answer) = pinned.await.expect("the detached call");
        let want: Vec<u64> = (1..=PINNED_COUNT).collect();
        assert_eq!(
            progress, want,
            "the detached call on instance {i}: progress events"
        );
        assert_eq!(
            answer["result"]["content"][0]["text"],
            format!("streamed {PINNED_COUNT}"),
            "the detached call on instance {i}: {answer}"
        );
        // Serving goes on, and the new instance takes its share, before the next one stops.
        until_at_least(
            &mut clients,
            &figures.calls,
            before + 40,
            Duration::from_secs(10),
            "calls after the restart",
        )
        .await;
        until_at_least(
            &mut clients,
            &figures.streamed,
            streamed + 6,
            Duration::from_secs(10),
            "streaming calls after the restart",
        )
        .await;
    }

    stop.store(true, Ordering::Release);
    let mut sessions = Vec::new();
    for c in clients {
        sessions.extend(c.await.expect("a client failed"));
    }
    // No session was lost: each works on every new instance (straight, not through the proxy).
    for s in &sessions {
        for a in &addrs {
            let direct = Session {
                http: s.http.clone(),
                url: format!("http://{a}/mcp"),
                id: s.id.clone(),
            };
            let answer = direct.hello(1_000_000, "after").await.unwrap();
            assert_eq!(answer["result"]["content"][0]["text"], "Hello World, after");
        }
    }
    let f = &figures;
    eprintln!(
        "rolling update: {} sessions, {} calls ({} streaming, {} resumed streams), {} retries ({} of them 503), \
         {} connections the proxy moved to another instance, longest call {} ms, longest pause in quick answers {} ms, {:.1} s in all",
        sessions.len(),
        f.calls.load(Ordering::Relaxed),
        f.streamed.load(Ordering::Relaxed),
        f.resumed.load(Ordering::Relaxed),
        f.retries.load(Ordering::Relaxed),
        f.retried_503.load(Ordering::Relaxed),
        proxy.skipped.load(Ordering::Relaxed),
        f.max_call_us.load(Ordering::Relaxed) / 1000,
        f.max_gap_us.load(Ordering::Relaxed) / 1000,
        began.elapsed().as_secs_f64()
    );
}

mod rolling_update {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn node() {
        super::rolling_update(super::Store::node()).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cluster() {
        super::rolling_update(super::Store::cluster()).await
    }
}
