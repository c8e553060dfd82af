//! Soak: many sessions doing mixed calls over real loopback HTTP with resumable streams (a
//! memory event store), and clients that drop their connection at random points of a
//! stream and resume it with `Last-Event-ID`. Every request must be answered exactly once,
//! and every progress notification must arrive exactly once and in order, across drops.
//!
//! Bounded: `VELLUM_SOAK_SECS` seconds (default 20; the long run is in docs/security.md),
//! `VELLUM_SOAK_SESSIONS` sessions (default 16), loopback only.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use vellum::prelude::*;
use vellum::store::MemoryEventStore;
use vellum::transport::http::serve;
use vellum_testkit::http::{McpHttp, SseReader};

const VERSION: &str = "2025-11-25";

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct StepsInput {
    steps: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoInput {
    text: String,
}

fn server() -> Server {
    let server = Server::new(Implementation::new("soak", "1.0"), ServerOptions::default());
    server
        .add_tool(
            Tool::new("echo", "Echoes"),
            |_ctx: RequestContext, _req: CallToolRequest, input: EchoInput| async move {
                Ok::<_, HandlerError>(CallToolResult::text(input.text))
            },
        )
        .unwrap();
    server
        .add_tool(
            Tool::new("steps", "Reports progress `steps` times, then answers"),
            |ctx: RequestContext, _req: CallToolRequest, input: StepsInput| async move {
                for i in 1..=input.steps {
                    // The tool's own pace (work in progress), not test synchronisation.
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    ctx.notify_progress(f64::from(i), Some(f64::from(input.steps)), None)
                        .await
                        .map_err(|e| HandlerError::failed(e.to_string()))?;
                }
                Ok::<_, HandlerError>(CallToolResult::text(format!("done:{}", input.steps)))
            },
        )
        .unwrap();
    server
}

/// A tiny deterministic generator (xorshift64*), so a failing run can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// How long the client waits for the next block of a stream.
const BLOCK_WAIT: Duration = Duration::from_secs(15);

/// Reads blocks of `reader` until `on_block` says stop or the stream ends. Returns false
/// when the stream ended.
async fn read_events(
    mut reader: SseReader,
    mut on_block: impl FnMut(Option<&str>, Option<&str>) -> bool,
) -> Result<bool, String> {
    loop {
        match reader.next_block_within(BLOCK_WAIT).await {
            Err(()) => return Err(format!("no event for {} s", BLOCK_WAIT.as_secs())),
            Ok(None) => {
                return match reader.broken() {
                    Some(e) => Err(format!("body error: {e}")),
                    None => Ok(false),
                };
            }
            Ok(Some(b)) => {
                if !on_block(b.id.as_deref(), b.data.as_deref()) {
                    return Ok(true); // Dropped by us: the body goes, the connection closes.
                }
            }
        }
    }
}

#[derive(Default, Debug)]
struct Tally {
    requests: u64,
    answered: u64,
    drops: u64,
    resumes: u64,
    progress: u64,
}

struct Client {
    mcp: McpHttp,
    last_id: i64,
}

impl Client {
    /// Runs one call, dropping its stream at random and resuming it, and checks that its
    /// answer and every progress notification arrive exactly once and in order.
    async fn call(
        &mut self,
        rng: &mut Rng,
        tally: &mut Tally,
        name: &str,
        args: Value,
        expect: &str,
        steps: u32,
    ) -> Result<(), String> {
        let id = self.mcp.next_id();
        self.last_id = id;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": {"progressToken": id}}});
        tally.requests += 1;
        let resp = self
            .mcp
            .builder(Method::POST)
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if resp.status() != 200 {
            return Err(format!("call {id}: HTTP {}", resp.status()));
        }
        let mut answers = 0u32;
        let mut progress: Vec<u64> = Vec::new();
        let mut last_id: Option<String> = None;
        let mut resp = SseReader::new(resp);
        let mut attempt = 0;
        loop {
            // Drop after a random number of events (or never).
            let mut budget = if rng.below(3) == 0 {
                Some(rng.below(u64::from(steps) + 2))
            } else {
                None
            };
            let mut error = None;
            let dropped = read_events(resp, |eid, data| {
                if let Some(eid) = eid {
                    last_id = Some(eid.to_owned());
                }
                if let Some(data) = data.filter(|d| !d.is_empty()) {
                    match serde_json::from_str::<Value>(data) {
                        Ok(v) if v["method"] == "notifications/progress" => {
                            progress.push(v["params"]["progress"].as_f64().unwrap_or(-1.0) as u64);
                        }
                        Ok(v) if v["id"] == id => {
                            answers += 1;
                            if v["result"]["content"][0]["text"] != expect {
                                error = Some(format!("call {id}: wrong answer {v}"));
                            }
                        }
                        Ok(v) => error = Some(format!("call {id}: stray message {v}")),
                        Err(e) => error = Some(format!("call {id}: bad data {e}")),
                    }
                }
                match &mut budget {
                    Some(0) => false,
                    Some(n) => {
                        *n -= 1;
                        true
                    }
                    None => true,
                }
            })
            .await?;
            if let Some(e) = error {
                return Err(e);
            }
            if !dropped || answers > 0 {
                break;
            }
            // Dropped before the answer: resume where we were.
            tally.drops += 1;
            attempt += 1;
            if attempt > 50 {
                return Err(format!("call {id}: too many resumes"));
            }
            let Some(last) = &last_id else {
                return Err(format!("call {id}: dropped before any event id"));
            };
            tally.resumes += 1;
            // The server waits (briefly) for the dropped response to notice its broken
            // connection, so a resume right after a drop succeeds without client retries.
            let resumed = self
                .mcp
                .get(Some(last))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if resumed.status() != 200 {
                return Err(format!("call {id}: resume HTTP {}", resumed.status()));
            }
            resp = SseReader::new(resumed);
        }
        if answers != 1 {
            return Err(format!("call {id}: answered {answers} times"));
        }
        let want: Vec<u64> = (1..=u64::from(steps)).collect();
        if progress != want {
            return Err(format!("call {id}: progress {progress:?}, want {want:?}"));
        }
        tally.answered += 1;
        tally.progress += progress.len() as u64;
        Ok(())
    }
}

async fn open(http: &reqwest::Client, url: &str) -> Client {
    let mut mcp = McpHttp::with_client(url, http.clone());
    mcp.connect(VERSION).await;
    Client { mcp, last_id: 0 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_with_random_drops_lose_and_duplicate_nothing() {
    let secs = env_num("VELLUM_SOAK_SECS", 20);
    let sessions = env_num("VELLUM_SOAK_SESSIONS", 16);
    let seed = env_num("VELLUM_SOAK_SEED", 0x5eed);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = StreamableHttpOptions::default()
        .event_store(Arc::new(MemoryEventStore::new(64 << 20)))
        .session_timeout(Duration::from_secs(60));
    let handler = StreamableHttpHandler::for_server(server(), options);
    let stop = CancellationToken::new();
    let server_task = tokio::spawn(
        serve(listener, handler.clone())
            .with_graceful_shutdown(stop.clone().cancelled_owned())
            .into_future(),
    );

    vellum::transport::install_crypto_provider();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for s in 0..sessions {
        let http = http.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(seed.wrapping_add(s.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
            let mut client = open(&http, &url).await;
            let mut tally = Tally::default();
            let mut seen = HashSet::new();
            while Instant::now() < deadline {
                let op = rng.below(10);
                let result = if op < 6 {
                    let steps = 1 + rng.below(12) as u32;
                    client
                        .call(
                            &mut rng,
                            &mut tally,
                            "steps",
                            json!({"steps": steps}),
                            &format!("done:{steps}"),
                            steps,
                        )
                        .await
                } else {
                    let text = format!("{s}-{}", rng.next());
                    client
                        .call(
                            &mut rng,
                            &mut tally,
                            "echo",
                            json!({"text": text}),
                            &text,
                            0,
                        )
                        .await
                };
                if let Err(e) = result {
                    return Err(format!("session {s} (seed {seed}): {e}"));
                }
                assert!(seen.insert(client.last_id), "ids are unique");
            }
            Ok(tally)
        }));
    }
    let mut total = Tally::default();
    let mut errors = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(t) => {
                total.requests += t.requests;
                total.answered += t.answered;
                total.drops += t.drops;
                total.resumes += t.resumes;
                total.progress += t.progress;
            }
            Err(e) => errors.push(e),
        }
    }
    stop.cancel();
    let _ = server_task.await;
    println!(
        "soak: {sessions} sessions, {secs} s: {} requests, {} answered once, {} drops resumed, {} progress notifications",
        total.requests, total.answered, total.resumes, total.progress
    );
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(total.requests, total.answered, "lost or duplicated answers");
    assert!(
        total.drops > 0 && total.requests > 0,
        "the soak exercised nothing"
    );
}
