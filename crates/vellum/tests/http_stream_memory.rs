//! What an open HTTP/1.1 GET stream costs the server in resident memory (issue 29, target 2):
//! `serve` on 127.0.0.1, then sessions opened one after another, each with its standalone
//! GET SSE stream on a connection of its own (as HTTP/1.1 needs), all held open; the
//! process's VmRSS (`/proc/self/status`) before and after, per session and stream.
//!
//! The clients live in the same process but hold nothing beyond their sockets (a blocking
//! `TcpStream` has no user-space buffer, and each response head is read into the stack), so
//! the growth is the server's. Figures are printed (`--nocapture`) for docs/benchmarks.md.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions, serve};
use vellum_demos::hello_world::hello_world_server;
use vellum_testkit::raw::{INIT, INITIALIZED, build, post_headers, read_response};

/// Sessions opened (and dropped from the figure) before the first reading: the runtime's
/// workers, the allocator's arenas and the tables' first growth are paid by then.
const WARM_UP: usize = 100;

/// Sessions with streams measured.
const STREAMS: usize = 1_500;

/// The bound per session and open GET stream, in KiB of resident memory. Measured (debug
/// build, 6 December 2026): 17.0–17.3 KiB with and without the feature `http2`: hyper's two
/// 8 KiB connection buffers (the pages touched), the connection's task, the session and its
/// stream (docs/benchmarks.md, "Light HTTP/1.1 streams"). With `http2`, before HTTP/1.1
/// connections skipped hyper-util's version detection (which hands hyper the 24 bytes it
/// read on their own, so that hyper's read buffer doubles to 16 KiB), it was 24.1 KiB. The
/// bound leaves room for the allocator's moods and still fails on that 8 KiB.
const BOUND_KIB: f64 = 20.0;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Reads an HTTP response head (through its blank line) and nothing after it; returns the
/// status line.
fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::with_capacity(512);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert!(head.len() < 8192, "an endless response head");
        s.read_exact(&mut byte).expect("a response head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    head.lines().next().unwrap().to_owned()
}

/// A new session (initialize + initialized on `post`) with its GET stream open on a new
/// connection, which is returned (the stream stays open while it is held).
fn session_with_stream(addr: SocketAddr, post: &mut TcpStream) -> TcpStream {
    let host = addr.to_string();
    post.write_all(&build(
        "POST",
        "/mcp",
        &post_headers(&host, &[]),
        Some(INIT),
    ))
    .unwrap();
    let r = read_response(post);
    assert_eq!(r.status, 200, "initialize");
    let sid = r.header("mcp-session-id").expect("a session id").to_owned();
    let extra = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post.write_all(&build(
        "POST",
        "/mcp",
        &post_headers(&host, &extra),
        Some(INITIALIZED),
    ))
    .unwrap();
    assert_eq!(read_response(post).status, 202, "initialized");
    let mut get = TcpStream::connect(addr).unwrap();
    let headers = [
        ("host", host.as_str()),
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    get.write_all(&build("GET", "/mcp", &headers, None))
        .unwrap();
    let status = read_head(&mut get);
    assert!(status.contains(" 200 "), "the GET stream: {status}");
    get
}

#[test]
fn http1_get_streams_stay_light() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let handler = StreamableHttpHandler::for_server(
        hello_world_server().expect("the demo server"),
        StreamableHttpOptions::default(),
    );
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, handler).into_future());
        addr
    });

    let mut post = TcpStream::connect(addr).unwrap();
    let mut held = Vec::with_capacity(WARM_UP + STREAMS);
    for _ in 0..WARM_UP {
        held.push(session_with_stream(addr, &mut post));
    }
    let before = rss_kib();
    for _ in 0..STREAMS {
        held.push(session_with_stream(addr, &mut post));
    }
    let after = rss_kib();
    let per_stream = (after.saturating_sub(before)) as f64 / STREAMS as f64;
    println!(
        "{STREAMS} sessions with GET streams (http2 feature: {}): RSS {before} -> {after} KiB, \
         {per_stream:.2} KiB per session and stream",
        cfg!(feature = "http2")
    );
    assert!(
        per_stream <= BOUND_KIB,
        "{per_stream:.2} KiB per session and open GET stream (bound {BOUND_KIB})"
    );
    drop(held);
    drop(runtime);
}
