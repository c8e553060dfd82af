//! What the failover tests run and talk to: `vellum serve --server bench` instances, and
//! clients of both eras that see every status, header and event (so a test can tell a
//! lost session, a retryable refusal and an answer given twice apart).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vellum_testkit::http::SseReader;
use vellum_testkit::process::{ServerProcess, vellum_bin};

/// The store timeout the instances run with (`--redis-timeout`, the default).
pub(crate) const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// What HTTP, the test's own requests and a loaded 2-core machine may add to a bound.
pub(crate) const SLACK: Duration = Duration::from_millis(500);

/// How long an attempt may wait for its next byte before the test fails.
pub(crate) const STALL: Duration = Duration::from_secs(15);

/// One `vellum serve --server bench` on `addr` (port 0: a free one) with every store on
/// `redis`, and `extra` flags.
pub(crate) fn instance(addr: &str, redis: &str, extra: &[&str]) -> ServerProcess {
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["serve", "--server", "bench", "--addr", addr])
        .args(["--session-store", redis, "--event-store", redis])
        .args(["--task-store", redis])
        .args(["--redis-timeout", "2s"])
        .args(extra)
        .env_remove("RUST_LOG");
    ServerProcess::spawn(cmd)
}

/// A reqwest client; pooled, a client stays on one instance behind the proxy until that
/// instance closes the connection; unpooled, every request is a new connection.
pub(crate) fn http(pooled: bool) -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    let b = reqwest::Client::builder().no_proxy();
    let b = if pooled {
        b
    } else {
        b.pool_max_idle_per_host(0)
    };
    b.build().unwrap()
}

/// Why an attempt got no answer; each may be retried.
#[derive(Debug)]
pub(crate) enum Failure {
    /// HTTP 503 with `Retry-After` (checked): Redis unreachable, or an instance draining.
    Unavailable,
    /// Refused, or cut before the answer.
    Transport(#[allow(dead_code)] String),
    /// A JSON-RPC error answer (a clear error: the call failed).
    Error(#[allow(dead_code)] Value),
}

/// Checks a status: 200 and 202 are fine, 503 must carry `Retry-After`, 400 (a resume the
/// store cannot serve whole) is a clear error, 404 is a lost session (the test fails).
fn status(resp: &reqwest::Response, what: &str) -> Result<(), Failure> {
    match resp.status().as_u16() {
        200 | 202 => Ok(()),
        400 => Err(Failure::Error(json!({"status": 400, "what": what}))),
        503 => {
            assert!(
                resp.headers().contains_key("retry-after"),
                "{what}: 503 without Retry-After"
            );
            Err(Failure::Unavailable)
        }
        404 => panic!("{what}: 404, the session was lost"),
        other => panic!("{what}: HTTP {other}"),
    }
}

/// The messages of a whole answer (SSE or JSON).
async fn messages(resp: reqwest::Response) -> Result<Vec<Value>, Failure> {
    let sse = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let text = tokio::time::timeout(STALL, resp.text())
        .await
        .map_err(|_| Failure::Transport("the answer stalled".into()))?
        .map_err(|e| Failure::Transport(e.to_string()))?;
    Ok(if sse {
        vellum_testkit::http::parse_sse(&text)
            .into_iter()
            .filter(|e| !e.data.is_empty())
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect()
    } else if text.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&text).unwrap()]
    })
}

/// The one answer to `id` among `messages`: none is a broken-off body (retry), two fail
/// the test.
fn the_answer(messages: &[Value], id: u64, what: &str) -> Result<Value, Failure> {
    let answers: Vec<&Value> = messages.iter().filter(|m| m["id"] == json!(id)).collect();
    match answers.as_slice() {
        [one] if one.get("error").is_some() => Err(Failure::Error((*one).clone())),
        [one] => Ok((*one).clone()),
        [] => Err(Failure::Transport(format!("{what}: no answer"))),
        more => panic!("{what}: answered {} times: {more:?}", more.len()),
    }
}

/// A 2025-11-25 session.
#[derive(Clone)]
pub(crate) struct Legacy {
    pub(crate) http: reqwest::Client,
    pub(crate) id: String,
}

impl Legacy {
    /// `initialize` and `notifications/initialized` at `url`.
    pub(crate) async fn open(http: &reqwest::Client, url: &str) -> Result<Legacy, Failure> {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"redis-ha","version":"1"}}});
        let resp = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        status(&resp, "initialize")?;
        let id = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        the_answer(&messages(resp).await?, 0, "initialize")?;
        let s = Legacy {
            http: http.clone(),
            id,
        };
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let resp = s
            .post(url, &note)
            .send()
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        status(&resp, "notifications/initialized")?;
        Ok(s)
    }

    fn post(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(body)
    }

    /// `tools/call name(args)` as request `id`, read whole: its one answer.
    pub(crate) async fn call(
        &self,
        url: &str,
        id: u64,
        name: &str,
        args: Value,
    ) -> Result<Value, Failure> {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":name,"arguments":args,"_meta":{"progressToken":format!("p{id}")}}});
        let resp = self
            .post(url, &body)
            .send()
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        status(&resp, name)?;
        the_answer(&messages(resp).await?, id, name)
    }

    /// `stream {count, interval_ms}` as request `id`: the open SSE stream of its POST.
    pub(crate) async fn start_stream(
        &self,
        url: &str,
        id: u64,
        count: u64,
        interval_ms: u64,
    ) -> Result<SseReader, Failure> {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"stream","arguments":{"count":count,"interval_ms":interval_ms},
                      "_meta":{"progressToken":format!("p{id}")}}});
        let resp = self
            .post(url, &body)
            .send()
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        status(&resp, "stream")?;
        Ok(SseReader::new(resp))
    }

    /// A GET resuming after `last` at `url`.
    pub(crate) async fn resume(&self, url: &str, last: &str) -> Result<SseReader, Failure> {
        let resp = self
            .http
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .header("last-event-id", last)
            .send()
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        status(&resp, "resume")?;
        Ok(SseReader::new(resp))
    }
}

/// What one streaming call delivered: each progress event (its SSE id, if it had one, and
/// its progress value) and the answer.
#[derive(Debug, Default)]
pub(crate) struct Delivered {
    pub(crate) progress: Vec<(Option<String>, u64)>,
    pub(crate) answer: Option<Value>,
    /// The last SSE id seen (events and priming events).
    pub(crate) last_id: Option<String>,
}

impl Delivered {
    /// Reads `reader` until request `id` is answered, `stop` says so, or the stream ends.
    /// `Err` when nothing came for [`STALL`].
    pub(crate) async fn read(
        &mut self,
        reader: &mut SseReader,
        id: u64,
        stop: impl Fn(&Delivered) -> bool,
    ) -> Result<(), Failure> {
        while self.answer.is_none() && !stop(self) {
            let block = reader
                .next_block_within(STALL)
                .await
                .map_err(|()| Failure::Transport(format!("call {id}: stream stalled")))?;
            let Some(b) = block else {
                return Ok(()); // Ended before the answer.
            };
            if b.id.is_some() {
                self.last_id = b.id.clone();
            }
            if !b.is_message() {
                continue;
            }
            let m = b.json();
            if m["id"] == json!(id) {
                assert!(self.answer.is_none(), "call {id} answered twice: {m}");
                self.answer = Some(m);
            } else if m["method"] == "notifications/progress" {
                assert_eq!(m["params"]["progressToken"], format!("p{id}"), "{m}");
                let p = m["params"]["progress"].as_f64().unwrap() as u64;
                self.progress.push((b.id.clone(), p));
            }
        }
        Ok(())
    }

    /// The progress values, in the order they came.
    pub(crate) fn values(&self) -> Vec<u64> {
        self.progress.iter().map(|(_, p)| *p).collect()
    }
}

/// A 2026-07-28 `tools/call name(args)` at `url` as request `id`: its one answer.
pub(crate) async fn modern_call(
    http: &reqwest::Client,
    url: &str,
    id: u64,
    name: &str,
    args: Value,
) -> Result<Value, Failure> {
    let body = vellum_testkit::http::modern_body(
        json!(id),
        "tools/call",
        json!({"name":name,"arguments":args}),
    );
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", vellum_testkit::http::MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    status(&resp, name)?;
    the_answer(&messages(resp).await?, id, name)
}

/// A 2026-07-28 `subscriptions/listen` for tool list changes at `url`: the open stream.
pub(crate) async fn modern_listen(http: &reqwest::Client, url: &str, id: u64) -> SseReader {
    let body = vellum_testkit::http::modern_body(
        json!(id),
        "subscriptions/listen",
        json!({"notifications":{"toolsListChanged":true}}),
    );
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", vellum_testkit::http::MODERN)
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .expect("subscriptions/listen");
    assert_eq!(resp.status(), 200, "subscriptions/listen");
    SseReader::new(resp)
}

/// Waits (within `limit`) for a `notifications/tools/list_changed` on `listen`; its arrival
/// time.
pub(crate) async fn list_changed(listen: &mut SseReader, limit: Duration) -> Option<Instant> {
    let end = Instant::now() + limit;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match listen.next_block_within(left).await {
            Ok(Some(b)) if b.is_message() => {
                if b.json()["method"] == "notifications/tools/list_changed" {
                    return Some(Instant::now());
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(()) => return None,
        }
    }
}

/// `GET /readyz` at the instance `base` (`http://ADDR`): the status, or 0 without one.
pub(crate) async fn readyz(http: &reqwest::Client, base: &str) -> u16 {
    match http.get(format!("{base}/readyz")).send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}
