//! Shared by the security_* and fault_* tests: a `vellum serve` child process on an
//! ephemeral loopback port, raw HTTP/1.1 over `std::net` (so a test controls every byte and
//! every stall), and the child's resource use read from /proc.

// Test support: failing loudly is the point.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `vellum serve`.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
}

impl Serve {
    /// Starts `vellum serve --addr 127.0.0.1:0 <args>` and waits for its start line.
    pub fn start(args: &[&str]) -> Serve {
        Self::start_with_env(args, &[])
    }

    /// Like [`Serve::start`], with extra environment variables.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vellum"));
        cmd.args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("vellum serve starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            let mut sent = false;
            while let Some(Ok(line)) = lines.next() {
                if !sent && let Some(rest) = line.strip_prefix("streamable HTTP MCP: http://") {
                    let addr = rest.split_whitespace().next().unwrap_or("").to_owned();
                    let _ = tx.send(Ok(addr));
                    sent = true;
                } else if !sent {
                    let _ = tx.send(Err(line));
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut errors = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Ok(addr)) => {
                    return Serve {
                        child,
                        addr: addr.parse().expect("the start line names an address"),
                    };
                }
                Ok(Err(line)) => errors.push(line),
                Err(_) => {
                    let _ = child.kill();
                    panic!("vellum serve {args:?} did not start: {errors:?}");
                }
            }
        }
    }

    /// Runs `vellum serve <args>` expecting it to exit with an error; returns its stderr.
    pub fn fails(args: &[&str]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_vellum"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("vellum runs");
        assert!(!out.status.success(), "vellum serve {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn status_field(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("/proc/PID/status is readable (Linux)");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/PID/status"))
    }

    /// Resident set size, KiB.
    pub fn rss_kib(&self) -> u64 {
        self.status_field("VmRSS:")
    }

    /// Threads of the process.
    pub fn threads(&self) -> u64 {
        self.status_field("Threads:")
    }

    /// Open file descriptors.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("/proc/PID/fd is readable")
            .count()
    }

    /// Waits until `f()` holds, polling every 50 ms, for at most `limit`.
    pub fn wait_until(&self, limit: Duration, what: &str, f: impl FnMut() -> bool) {
        self.wait_until_every(limit, Duration::from_millis(50), what, f);
    }

    /// Waits until `f()` holds, polling every `every`, for at most `limit`.
    pub fn wait_until_every(
        &self,
        limit: Duration,
        every: Duration,
        what: &str,
        mut f: impl FnMut() -> bool,
    ) {
        let deadline = Instant::now() + limit;
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(every);
        }
    }

    /// A connection to the server.
    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    /// `host:port`, for Host headers.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON of a JSON body, or of the last `data:` line of an SSE body.
    pub fn json(&self) -> serde_json::Value {
        let text = self.text();
        let json = if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .rfind(|d| !d.is_empty())
                .unwrap_or("null")
                .to_owned()
        } else {
            text
        };
        serde_json::from_str(&json).unwrap_or(serde_json::Value::Null)
    }
}

/// Builds a request: `method path`, headers, body (Content-Length added when a body is given).
pub fn build(method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        out.push_str(&format!("content-length: {}\r\n", b.len()));
    }
    out.push_str("\r\n");
    if let Some(b) = body {
        out.push_str(b);
    }
    out.into_bytes()
}

/// Reads one response (Content-Length or chunked body) from `stream`.
pub fn read_response(stream: &mut impl Read) -> Resp {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).expect("a status line");
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("a header line");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if let Some(len) = get("content-length") {
        let len: usize = len.parse().expect("a length");
        body.resize(len, 0);
        r.read_exact(&mut body).expect("the body");
    } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            line.clear();
            r.read_line(&mut line).expect("a chunk size");
            let size = usize::from_str_radix(line.trim(), 16).expect("a hex chunk size");
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).expect("a chunk");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Resp {
        status,
        headers,
        body,
    }
}

/// Sends one request on a new connection and reads the response.
pub fn send(serve: &Serve, raw: &[u8]) -> Resp {
    let mut s = serve.connect();
    s.write_all(raw).expect("the request is sent");
    read_response(&mut s)
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The headers of an MCP POST to `host`, plus `extra`.
pub fn post_headers<'a>(host: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("host", host),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    h.extend_from_slice(extra);
    h
}
