//! Faults and load against a real `vellum serve` (loopback only, bounded): clients that
//! open thousands of sessions and walk away, break off mid-request or mid-stream, or stop
//! reading. Afterwards the server's file descriptors return to their baseline and its
//! resident memory stops growing from round to round; meanwhile other clients are served.
//!
//! Figures are printed (`--nocapture`) for docs/security.md.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use vellum_testkit::process::{ServerProcess, vellum_serve};
use vellum_testkit::raw::{INIT, INITIALIZED, build, post_headers, read_response, send};

const ARGS: &[&str] = &[
    "--event-store",
    "memory",
    "--session-timeout",
    "2s",
    "--initialize-timeout",
    "1s",
];

fn init_on(s: &ServerProcess, conn: &mut TcpStream) -> String {
    let host = s.host();
    conn.write_all(&build(
        "POST",
        "/mcp",
        &post_headers(&host, &[]),
        Some(INIT),
    ))
    .unwrap();
    let r = read_response(conn);
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("mcp-session-id").expect("a session id").to_owned()
}

fn on_session(s: &ServerProcess, conn: &mut TcpStream, sid: &str, body: &str) -> u16 {
    let host = s.host();
    let h = post_headers(
        &host,
        &[
            ("mcp-session-id", sid),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    );
    conn.write_all(&build("POST", "/mcp", &h, Some(body)))
        .unwrap();
    read_response(conn).status
}

fn session_status(s: &ServerProcess, sid: &str) -> u16 {
    let mut c = s.connect();
    on_session(
        s,
        &mut c,
        sid,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    )
}

/// A client that still works, answered quickly.
fn assert_served(s: &ServerProcess, within: Duration) {
    let start = Instant::now();
    let host = s.host();
    let r = send(
        s,
        &build("POST", "/mcp", &post_headers(&host, &[]), Some(INIT)),
    );
    assert_eq!(r.status, 200);
    assert!(
        start.elapsed() < within,
        "a fresh client waited {:?}",
        start.elapsed()
    );
}

fn settle_fds(s: &ServerProcess, baseline: usize, what: &str) {
    s.wait_until(Duration::from_secs(20), what, || s.fds() <= baseline);
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello_world","arguments":{"user_name":"walker"}}}"#;

#[test]
fn thousands_of_abandoned_sessions_are_reaped_and_memory_stops_growing() {
    let s = vellum_serve(ARGS);
    // Warm up allocator arenas and lazy statics, then take the baseline.
    {
        let mut c = s.connect();
        for _ in 0..50 {
            let sid = init_on(&s, &mut c);
            assert_eq!(on_session(&s, &mut c, &sid, INITIALIZED), 202);
        }
    }
    let fds0 = {
        std::thread::sleep(Duration::from_millis(200));
        s.fds()
    };
    let rss0 = s.rss_kib();
    let per_round = 2000;
    let mut after = Vec::new();
    for round in 0..3 {
        let start = Instant::now();
        let mut first_half_open = None;
        let mut last_initialized = None;
        // Four connections, each carrying a quarter of the sessions, then dropped.
        let mut conns: Vec<TcpStream> = (0..4).map(|_| s.connect()).collect();
        for i in 0..per_round {
            let c = &mut conns[i % 4];
            let sid = init_on(&s, c);
            if i % 2 == 0 {
                // Walks away mid-handshake.
                first_half_open.get_or_insert(sid);
            } else {
                assert_eq!(on_session(&s, c, &sid, INITIALIZED), 202);
                assert_eq!(on_session(&s, c, &sid, CALL), 200);
                last_initialized = Some(sid);
            }
        }
        let opened = start.elapsed();
        let peak = s.rss_kib();
        drop(conns);
        let half_open = first_half_open.unwrap();
        let initialized = last_initialized.unwrap();
        // A probe is a request, which keeps an idle session alive: probe less often than
        // the 2 s idle timeout.
        s.wait_until_every(
            Duration::from_secs(30),
            Duration::from_millis(2500),
            "abandoned sessions to be reaped",
            || session_status(&s, &half_open) == 404 && session_status(&s, &initialized) == 404,
        );
        settle_fds(&s, fds0, "connections to close");
        let rss = s.rss_kib();
        println!(
            "round {round}: {per_round} sessions in {opened:?}, RSS baseline {rss0} KiB, peak {peak} KiB, after reaping {rss} KiB, fds {}",
            s.fds()
        );
        after.push(rss);
    }
    // No leak: what a round leaves behind does not accumulate.
    assert!(
        after[2] <= after[0] + 4 * 1024,
        "RSS keeps growing across rounds: {after:?} KiB"
    );
    assert!(
        after[2] <= rss0 + 32 * 1024,
        "RSS did not come back near the baseline {rss0} KiB: {after:?}"
    );
    assert_served(&s, Duration::from_secs(2));
}

#[test]
fn clients_that_break_off_leave_no_descriptors_behind() {
    let s = vellum_serve(ARGS);
    assert_served(&s, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    let fds0 = s.fds();
    let host = s.host();
    let mut held = Vec::new();
    // Half a request line and headers, never finished.
    for _ in 0..150 {
        let mut c = s.connect();
        c.write_all(format!("POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-ty").as_bytes())
            .unwrap();
        held.push(c);
    }
    // Complete headers, half the body.
    for _ in 0..150 {
        let mut c = s.connect();
        let mut h = post_headers(&host, &[]);
        h.push(("content-length", "1000"));
        let mut raw = build("POST", "/mcp", &h, None);
        raw.extend_from_slice(br#"{"jsonrpc":"2.0","#);
        c.write_all(&raw).unwrap();
        held.push(c);
    }
    // Open SSE streams (GET on a session), read the first bytes, then vanish.
    for _ in 0..100 {
        let mut c = s.connect();
        let sid = init_on(&s, &mut c);
        assert_eq!(on_session(&s, &mut c, &sid, INITIALIZED), 202);
        let h = [
            ("host", host.as_str()),
            ("accept", "text/event-stream"),
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        c.write_all(&build("GET", "/mcp", &h, None)).unwrap();
        let mut first = [0u8; 64];
        let n = std::io::Read::read(&mut c, &mut first).unwrap();
        assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
        held.push(c);
    }
    // Requests whose answers are never read.
    for _ in 0..100 {
        let mut c = s.connect();
        c.write_all(&build(
            "POST",
            "/mcp",
            &post_headers(&host, &[]),
            Some(INIT),
        ))
        .unwrap();
        let _ = c.shutdown(Shutdown::Read);
        held.push(c);
    }
    println!(
        "holding {} broken-off connections: fds {} (baseline {fds0})",
        held.len(),
        s.fds()
    );
    // Meanwhile the server serves others.
    assert_served(&s, Duration::from_secs(2));
    // Abrupt resets for half, orderly closes for the rest.
    for (i, c) in held.into_iter().enumerate() {
        if i % 2 == 0 {
            let _ = c.shutdown(Shutdown::Both);
        }
        drop(c);
    }
    settle_fds(&s, fds0, "broken-off connections to be closed");
    println!("after the clients left: fds {} (baseline {fds0})", s.fds());
    assert_served(&s, Duration::from_secs(2));
}

#[test]
fn a_finished_request_releases_its_id() {
    // A finished request must leave the session's in-flight table (else every request of a
    // long session leaks an entry, and its id stays "in progress" forever).
    let s = vellum_serve(ARGS);
    let mut c = s.connect();
    let sid = init_on(&s, &mut c);
    assert_eq!(on_session(&s, &mut c, &sid, INITIALIZED), 202);
    let host = s.host();
    let h = post_headers(
        &host,
        &[
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    );
    for _ in 0..3 {
        c.write_all(&build("POST", "/mcp", &h, Some(CALL))).unwrap();
        let r = read_response(&mut c);
        assert_eq!(r.status, 200);
        assert_eq!(
            r.json()["result"]["content"][0]["text"],
            "Hello World, walker",
            "{}",
            r.text()
        );
    }
}

#[test]
fn a_reader_that_stalls_does_not_make_the_server_buffer() {
    let s = vellum_serve(ARGS);
    let host = s.host();
    let mut c = s.connect();
    let sid = init_on(&s, &mut c);
    assert_eq!(on_session(&s, &mut c, &sid, INITIALIZED), 202);
    std::thread::sleep(Duration::from_millis(200));
    let rss0 = s.rss_kib();
    // Pipeline 1024 calls answering 256 KiB each (256 MiB in all, more than the loopback
    // socket buffers hold) and never read.
    let name = "x".repeat(256 * 1024);
    let h: Vec<(String, String)> = post_headers(
        &host,
        &[
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    )
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let mut writer = c.try_clone().unwrap();
    writer
        .set_write_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let pusher = std::thread::spawn(move || {
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut sent = 0usize;
        let mut total = 0usize;
        let mut blocked = false;
        for id in 0..CALLS {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"hello_world","arguments":{{"user_name":"{name}"}}}}}}"#,
                id + 10
            );
            let one = build("POST", "/mcp", &h, Some(&body));
            total += one.len();
            if !blocked && writer.write_all(&one).is_ok() {
                sent += one.len();
            } else {
                blocked = true; // The server stopped reading, as it should.
            }
        }
        (sent, total)
    });
    let (sent, total) = pusher.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let rss = s.rss_kib();
    println!(
        "stalled reader: client pushed {} KiB before blocking; server RSS {rss0} -> {rss} KiB",
        sent / 1024
    );
    assert!(
        sent < total,
        "the server kept reading requests whose answers could not be written"
    );
    assert!(
        // The event store keeps up to 10 MiB of answers for resumption; the rest must not pile up.
        rss <= rss0 + 32 * 1024,
        "the server buffered for a stalled reader: {rss0} -> {rss} KiB"
    );
    assert_served(&s, Duration::from_secs(2));
    let _ = c.shutdown(Shutdown::Both);
}

const CALLS: usize = 1024;
