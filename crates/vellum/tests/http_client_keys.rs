//! Limits counted per client address, over real loopback sockets (issue 27, items 6 and 7):
//! the rate-limit buckets of 60,000 client addresses stay within the limiter's cap;
//! `X-Forwarded-For` is believed only from a trusted proxy (the rightmost untrusted hop);
//! IPv6 clients are keyed by their /64; sessions without authentication are capped per
//! address, with a `Retry-After` that says when the soonest of them expires, and the
//! `initialize` still being answered count against that cap.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use vellum::store::{MemoryRateLimiter, RateLimit};
use vellum::transport::http::{ClientAddresses, StreamableHttpOptions};
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::{McpHttp, TestHttpServer, assert_rejected};

/// A client of `url` whose connections come from `from` (any 127.x address is loopback).
fn client_from(url: &str, from: [u8; 4]) -> McpHttp {
    McpHttp::from_address(url, from)
}

/// One token an hour per client: a client's second request is refused.
fn one_an_hour(trusted: bool) -> StreamableHttpOptions {
    let mut o = StreamableHttpOptions::default();
    o.rate_limit = Some(RateLimit::new(1.0 / 3600.0, 1));
    if trusted {
        o.client_addresses =
            ClientAddresses::default().trust_proxy("127.0.0.1/32".parse().unwrap());
    }
    o
}

/// A GET as `forwarded_for` says (the rate limit runs before the method: a GET without a
/// session is refused after it, with 400, when it had a token).
async fn get_as(c: &McpHttp, forwarded_for: &str) -> StatusCode {
    c.http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("x-forwarded-for", forwarded_for)
        .send()
        .await
        .unwrap()
        .status()
}

/// The status of the next response on `r` (its body read past, by `Content-Length`).
fn next_status(r: &mut BufReader<TcpStream>) -> u16 {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
    }
    r.read_exact(&mut vec![0; length]).unwrap();
    status
}

/// GETs of `url` from a trusted proxy forwarding each of `clients`, pipelined on one
/// HTTP/1.1 connection (so that what each costs is the server's handling, not a client's);
/// their statuses.
fn pipelined_gets(url: &str, clients: Vec<String>) -> Vec<u16> {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let path = &url[url.find(authority).unwrap() + authority.len()..];
    let stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut requests = Vec::new();
    for client in &clients {
        write!(
            requests,
            "GET {path} HTTP/1.1\r\nhost: {authority}\r\naccept: text/event-stream\r\n\
             x-forwarded-for: {client}\r\n\r\n"
        )
        .unwrap();
    }
    // Written while the answers are read: neither side waits for the other's buffer.
    let mut writer = stream.try_clone().unwrap();
    let written = std::thread::spawn(move || writer.write_all(&requests).unwrap());
    let mut r = BufReader::new(stream);
    let statuses = clients.iter().map(|_| next_status(&mut r)).collect();
    written.join().unwrap();
    statuses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_thousand_addresses_keep_the_limiter_within_its_cap() {
    let limiter = Arc::new(MemoryRateLimiter::with_max_keys(10_000));
    let mut o = one_an_hour(true);
    o.rate_limiter = Some(limiter.clone());
    let s = TestHttpServer::start(test_server().server, o).await;
    let c = McpHttp::new(&s.url);
    // A client that is limited all along, seen between the flood's addresses (every 2,000:
    // the least recently used keys are forgotten, not a client seen lately).
    assert_ne!(get_as(&c, "192.0.2.1").await, StatusCode::TOO_MANY_REQUESTS);
    let mut batch_times = Vec::new();
    let mut most = 0;
    for batch in 0..30u32 {
        let started = Instant::now();
        // Four connections of 500 addresses each.
        let connections: Vec<_> = (0..4u32)
            .map(|k| {
                let url = s.url.clone();
                let clients = (0..500u32)
                    .map(|i| {
                        let n = batch * 2_000 + k * 500 + i;
                        format!("10.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255)
                    })
                    .collect();
                tokio::task::spawn_blocking(move || pipelined_gets(&url, clients))
            })
            .collect();
        let mut statuses = Vec::new();
        for c in connections {
            statuses.extend(c.await.unwrap());
        }
        batch_times.push(started.elapsed());
        // Every address is new: each got its token (and then a 400: a GET needs a session).
        assert_eq!(statuses.len(), 2_000);
        assert!(statuses.iter().all(|s| *s == 400), "{statuses:?}");
        assert_eq!(
            get_as(&c, "192.0.2.1").await,
            StatusCode::TOO_MANY_REQUESTS,
            "batch {batch}"
        );
        most = most.max(limiter.len());
    }
    eprintln!(
        "60,000 addresses: at most {most} keys held (cap {}); per batch of 2,000: {batch_times:?}",
        limiter.max_keys()
    );
    assert!(most <= 10_000, "{most} keys held");
    // The cost does not grow with the keys seen: the last batch is not much slower than
    // the first (generous: the machine is shared).
    let first: Duration = batch_times[..5].iter().sum();
    let last: Duration = batch_times[25..].iter().sum();
    assert!(
        last < first * 3,
        "first 10,000: {first:?}, last 10,000: {last:?}"
    );
}

#[tokio::test]
async fn x_forwarded_for_is_ignored_from_an_untrusted_peer() {
    let s = TestHttpServer::start(test_server().server, one_an_hour(false)).await;
    let c = McpHttp::new(&s.url);
    assert_ne!(
        get_as(&c, "203.0.113.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another forwarded address from the same peer is the same client: 127.0.0.1.
    assert_eq!(
        get_as(&c, "203.0.113.2").await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn x_forwarded_for_is_honoured_from_a_trusted_proxy_and_ipv6_is_keyed_by_its_64() {
    let s = TestHttpServer::start(test_server().server, one_an_hour(true)).await;
    let c = McpHttp::new(&s.url);
    assert_ne!(
        get_as(&c, "203.0.113.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_ne!(
        get_as(&c, "203.0.113.2").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        get_as(&c, "203.0.113.1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // The rightmost untrusted hop counts: a forged first hop changes nothing.
    assert_eq!(
        get_as(&c, "198.51.100.7, 203.0.113.2").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // One /64 is one client; the next /64 is another.
    assert_ne!(
        get_as(&c, "2001:db8::1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        get_as(&c, "2001:db8::ffff:2").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_ne!(
        get_as(&c, "2001:db8:0:1::1").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another peer, not trusted: its header is not read, the peer is the client.
    let other = client_from(&s.url, [127, 0, 0, 2]);
    assert_ne!(
        get_as(&other, "203.0.113.9").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        get_as(&other, "203.0.113.10").await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// `initialize` alone (no `notifications/initialized`): the answer's status, `Retry-After`.
async fn initialize(c: &mut McpHttp) -> vellum_testkit::http::Answer {
    c.initialize("2025-11-25").await
}

#[tokio::test]
async fn sessions_per_address_are_capped_with_the_real_wait() {
    let mut o = StreamableHttpOptions::default();
    o.max_sessions_per_address = Some(3);
    o.initialize_timeout = Some(Duration::from_secs(60));
    o.session_timeout = Some(Duration::from_secs(1800));
    let s = TestHttpServer::start(test_server().server, o).await;
    // 127.0.0.1 holds three initialized sessions: the wait is the idle timeout.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = McpHttp::new(&s.url);
        c.connect("2025-11-25").await;
        held.push(c);
    }
    let refused = initialize(&mut McpHttp::new(&s.url)).await;
    let body = assert_rejected(&refused, StatusCode::SERVICE_UNAVAILABLE, -32603);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many sessions"),
        "{body}"
    );
    let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1790..=1800).contains(&wait), "{wait}");
    // 127.0.0.2 holds three sessions that never sent `initialized`: the wait is the
    // handshake's timeout.
    for _ in 0..3 {
        let mut c = client_from(&s.url, [127, 0, 0, 2]);
        assert_eq!(initialize(&mut c).await.status, StatusCode::OK);
    }
    let refused = initialize(&mut client_from(&s.url, [127, 0, 0, 2])).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((50..=60).contains(&wait), "{wait}");
    // Another address is served, initialize and a tool call.
    let mut fresh = client_from(&s.url, [127, 0, 0, 3]);
    fresh.connect("2025-11-25").await;
    let call = fresh.call_tool("hello_world", json!({"user_name": "A"}), None);
    assert_eq!(fresh.post(&call).await.status, StatusCode::OK);
    // A session that ends makes room at once.
    assert_eq!(held[0].delete().await, StatusCode::NO_CONTENT);
    McpHttp::new(&s.url).connect("2025-11-25").await;
}

/// A session store whose `create` waits for the gate: a new session stays between its
/// routing and the table for as long as the test wants.
struct GatedStore {
    inner: vellum::store::MemorySessionStore,
    gate: tokio::sync::watch::Receiver<bool>,
    creating: Arc<std::sync::atomic::AtomicUsize>,
    changed: Arc<tokio::sync::Notify>,
}

impl vellum::store::SessionStore for GatedStore {
    fn create(
        &self,
        id: &str,
        record: &vellum::store::SessionRecord,
        ttl: Duration,
    ) -> futures_util::future::BoxFuture<'static, Result<(), vellum::store::StoreError>> {
        let (done, mut gate) = (self.inner.create(id, record, ttl), self.gate.clone());
        self.creating
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.changed.notify_one();
        Box::pin(async move {
            let _ = gate.wait_for(|open| *open).await;
            done.await
        })
    }
    fn load(
        &self,
        id: &str,
    ) -> futures_util::future::BoxFuture<
        'static,
        Result<Option<vellum::store::SessionRecord>, vellum::store::StoreError>,
    > {
        self.inner.load(id)
    }
    fn save(
        &self,
        id: &str,
        record: &vellum::store::SessionRecord,
    ) -> futures_util::future::BoxFuture<'static, Result<bool, vellum::store::StoreError>> {
        self.inner.save(id, record)
    }
    fn touch(
        &self,
        id: &str,
        ttl: Duration,
    ) -> futures_util::future::BoxFuture<'static, Result<bool, vellum::store::StoreError>> {
        self.inner.touch(id, ttl)
    }
    fn delete(
        &self,
        id: &str,
    ) -> futures_util::future::BoxFuture<'static, Result<bool, vellum::store::StoreError>> {
        self.inner.delete(id)
    }
}

#[tokio::test]
async fn initializes_under_way_count_against_the_per_address_cap() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const CAP: usize = 3;
    const SENT: usize = 24;
    let (open, gate) = tokio::sync::watch::channel(false);
    let creating = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let changed = Arc::new(tokio::sync::Notify::new());
    let store = Arc::new(GatedStore {
        inner: vellum::store::MemorySessionStore::new(),
        gate,
        creating: creating.clone(),
        changed: changed.clone(),
    });
    let bus = vellum::store::MemoryBus::new();
    let mut o =
        StreamableHttpOptions::default().shared_sessions(store, Arc::new(bus.endpoint("a")));
    o.max_sessions_per_address = Some(CAP);
    let s = TestHttpServer::start(test_server().server, o).await;
    // SENT initialize at once from one address, each on its own connection; none of them
    // enters the table until the gate opens.
    let tasks: Vec<_> = (0..SENT)
        .map(|_| {
            let (url, refused, changed) = (s.url.clone(), refused.clone(), changed.clone());
            tokio::spawn(async move {
                let status = initialize(&mut McpHttp::new(&url)).await.status;
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    refused.fetch_add(1, Ordering::SeqCst);
                    changed.notify_one();
                }
                status
            })
        })
        .collect();
    // Every request was either refused or is creating its session.
    let deadline = Instant::now() + Duration::from_secs(20);
    while creating.load(Ordering::SeqCst) + refused.load(Ordering::SeqCst) < SENT {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            tokio::time::timeout(left, changed.notified()).await.is_ok(),
            "creating {}, refused {}",
            creating.load(Ordering::SeqCst),
            refused.load(Ordering::SeqCst)
        );
    }
    open.send_replace(true);
    let mut ok = 0;
    for t in tasks {
        ok += usize::from(t.await.unwrap() == StatusCode::OK);
    }
    assert_eq!(ok, CAP, "sessions given to one address");
    assert_eq!(creating.load(Ordering::SeqCst), CAP);
}
