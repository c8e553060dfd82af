//! HTTP/1.1 written and read byte by byte over `std::net`, so a test controls every byte
//! and every stall (slow headers, half-sent bodies, many idle connections), and reads exactly
//! what came back.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::process::ServerProcess;

/// A new connection to `addr` (20 s read timeout, no Nagle).
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// A parsed response.
#[derive(Debug)]
pub struct Resp {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

impl Resp {
    /// A header's value (the first of that name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
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
pub fn send(serve: &ServerProcess, raw: &[u8]) -> Resp {
    let mut s = serve.connect();
    s.write_all(raw).expect("the request is sent");
    read_response(&mut s)
}

/// A 2025-11-25 `initialize` request.
pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
/// The `notifications/initialized` notification.
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
