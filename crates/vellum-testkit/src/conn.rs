//! A [`Connection`] driven message by message: the server without HTTP, for tests that look
//! at exactly what the server sends.

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use vellum::server::Server;
use vellum::transport::Connection;

use crate::within;

/// One connection to a server, and everything it sends.
pub struct Conn {
    /// The connection (feed it with [`Conn::send`] / [`Conn::send_raw`]).
    pub conn: Connection,
    rx: mpsc::Receiver<Bytes>,
}

impl Conn {
    /// A new connection (one legacy session, and modern requests alike).
    pub fn new(server: Server) -> Self {
        let (conn, rx) = Connection::new(server);
        Conn { conn, rx }
    }

    /// Feeds the exact bytes of one message (or batch).
    pub async fn send_raw(&self, text: &str) {
        self.conn
            .handle_bytes(Bytes::copy_from_slice(text.as_bytes()))
            .await;
    }

    /// Feeds one JSON message.
    pub async fn send(&self, message: &Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// The next message the server sends, as JSON (fails after [`crate::DEADLINE`]).
    pub async fn recv(&mut self) -> Value {
        let bytes = within("the next server message", self.rx.recv())
            .await
            .expect("the connection's output closed");
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "the server sent invalid JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        })
    }

    /// The next message, or an error if none comes within `deadline` (for runners that
    /// report every failure instead of stopping at the first).
    pub async fn recv_within(&mut self, deadline: std::time::Duration) -> Result<Value, String> {
        match tokio::time::timeout(deadline, self.rx.recv()).await {
            Err(_) => Err(format!("no message from the server within {deadline:?}")),
            Ok(None) => Err("the connection's output closed".into()),
            Ok(Some(bytes)) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "the server sent invalid JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            }),
        }
    }

    /// Waits until no request is running, then returns whatever was sent and not yet read.
    pub async fn settle(&mut self) -> Vec<Value> {
        within("the connection to become idle", self.conn.idle()).await;
        let mut out = Vec::new();
        while let Ok(bytes) = self.rx.try_recv() {
            out.push(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "the server sent invalid JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            }));
        }
        out
    }

    /// Sends a request and returns every message up to and including its response.
    pub async fn exchange(&mut self, request: &Value) -> Vec<Value> {
        let id = request["id"].clone();
        self.send(request).await;
        let mut seen = Vec::new();
        loop {
            let m = self.recv().await;
            let done =
                m.get("id") == Some(&id) && (m.get("result").is_some() || m.get("error").is_some());
            seen.push(m);
            if done {
                return seen;
            }
            assert!(
                seen.len() < 1000,
                "no response to {request} among {} messages",
                seen.len()
            );
        }
    }

    /// Sends a request and returns only its response (other messages are dropped).
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        let msgs = self
            .exchange(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        msgs.into_iter()
            .last()
            .expect("exchange returns the response")
    }

    /// `initialize` with `version`, then `notifications/initialized`; returns the
    /// `initialize` response.
    pub async fn initialize(&mut self, version: &str) -> Value {
        let response = self
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "vellum-tests", "version": "0.0.0"}
                }),
            )
            .await;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        response
    }
}
