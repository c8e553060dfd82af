//! `tools/list` grows linearly with the number of tools: a whole walk (every page, following
//! `nextCursor`) of 10,000 tools costs at most a small multiple of ten walks of 1,000, per
//! listed tool. Judged by the ratio of two timings taken the same way on the same machine
//! (the fastest of several walks, which load on a shared machine can only slow down), never
//! by an absolute time.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use vellum::protocol::{Implementation, Tool};
use vellum::server::{CallToolRequest, HandlerError, RequestContext, Server, ServerOptions};
use vellum::transport::Connection;

use vellum_testkit::within;

/// A server with `n` tools, each with a small input schema (as real tools have).
fn server_with(n: usize) -> Server {
    // Built off the runtime, so no list-change announcement is scheduled.
    std::thread::spawn(move || {
        let server = Server::new(
            Implementation::new("lists-scaling", "0.0.0"),
            ServerOptions::default(),
        );
        for i in 0..n {
            let mut tool = Tool::new(format!("tool_{i:05}"), "A tool among many, to list");
            tool.input_schema = serde_json::from_value(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to echo"}},
                "required": ["text"]
            }))
            .unwrap();
            server
                .add_raw_tool(tool, |_ctx: RequestContext, _req: CallToolRequest| async {
                    Ok::<_, HandlerError>("ok")
                })
                .unwrap();
        }
        server
    })
    .join()
    .unwrap()
}

struct Client {
    conn: Connection,
    rx: mpsc::Receiver<Bytes>,
    id: i64,
}

impl Client {
    async fn new(server: Server, version: &str) -> Client {
        let (conn, rx) = Connection::new(server);
        let mut c = Client { conn, rx, id: 0 };
        if version == "2026-07-28" {
            return c;
        }
        c.call(
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}
            }),
            "initialize",
            version,
        )
        .await;
        c.conn
            .handle_bytes(Bytes::from_static(
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ))
            .await;
        c
    }

    /// One request; the raw answer.
    async fn call(&mut self, mut params: Value, method: &str, version: &str) -> Bytes {
        self.id += 1;
        if version == "2026-07-28" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        self.conn.handle_bytes(Bytes::from(body.to_string())).await;
        within("the answer", self.rx.recv()).await.unwrap()
    }

    /// A walk of `tools/list`, parsed: the cursors of its pages and the tools listed.
    async fn walk(&mut self, version: &str) -> (Vec<Option<String>>, usize) {
        let mut cursors = vec![None::<String>];
        let mut listed = 0;
        loop {
            let params = match cursors.last().unwrap() {
                None => json!({}),
                Some(c) => json!({"cursor": c}),
            };
            let answer: Value =
                serde_json::from_slice(&self.call(params, "tools/list", version).await).unwrap();
            let result = &answer["result"];
            listed += result["tools"].as_array().expect("a page of tools").len();
            match result["nextCursor"].as_str() {
                Some(c) => cursors.push(Some(c.to_owned())),
                None => return (cursors, listed),
            }
        }
    }

    /// The fastest of `rounds` walks along `cursors` (answers not parsed).
    async fn fastest_walk(
        &mut self,
        cursors: &[Option<String>],
        version: &str,
        rounds: usize,
    ) -> Duration {
        let mut best = Duration::MAX;
        for _ in 0..rounds {
            let start = Instant::now();
            for c in cursors {
                let params = match c {
                    None => json!({}),
                    Some(c) => json!({"cursor": c}),
                };
                let answer = self.call(params, "tools/list", version).await;
                assert!(answer.len() > 100, "a page");
            }
            best = best.min(start.elapsed());
        }
        best
    }
}

#[tokio::test]
async fn a_walk_of_tools_list_costs_the_same_per_listed_tool_at_any_size() {
    for version in ["2025-11-25", "2026-07-28"] {
        let mut per_tool = Vec::new();
        for n in [1_000usize, 10_000] {
            let mut c = Client::new(server_with(n), version).await;
            let (cursors, listed) = c.walk(version).await;
            assert_eq!(listed, n, "{version}: every tool listed once");
            // More rounds of the short walk, so that both minimums are as well sampled.
            let rounds = if n < 10_000 { 20 } else { 5 };
            let best = c.fastest_walk(&cursors, version, rounds).await;
            per_tool.push(best.as_secs_f64() / n as f64);
        }
        let ratio = per_tool[1] / per_tool[0];
        // Shown with --nocapture: the figure docs/benchmarks.md quotes.
        println!(
            "{version}: per listed tool {:.3} µs at 1,000 tools, {:.3} µs at 10,000: {ratio:.2}x",
            per_tool[0] * 1e6,
            per_tool[1] * 1e6
        );
        // Linear is 1; a walk that recomputes its pages grows ~10x here (each page's tools
        // cloned and encoded again, against a copy of cached bytes).
        assert!(
            ratio < 3.0,
            "{version}: per listed tool, a walk of 10,000 tools costs {ratio:.1}x a walk of 1,000 \
             ({:.2} µs against {:.2} µs)",
            per_tool[1] * 1e6,
            per_tool[0] * 1e6
        );
    }
}
