//! What the CLI's process tests share: a server process that announces its URL on stderr.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The start line `vellum serve` and the interop servers print on stderr.
pub(crate) const START_PREFIX: &str = "streamable HTTP MCP: ";

/// How long a server may take to announce itself.
pub(crate) const START_DEADLINE: Duration = Duration::from_secs(60);

/// A server process; killed on drop.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    /// The URL from its start line.
    pub(crate) url: String,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` and waits (with a deadline) for its start line; later stderr lines are
/// forwarded to the test's stderr.
pub(crate) fn spawn_server(mut command: Command) -> Spawned {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            match line.strip_prefix(START_PREFIX) {
                Some(url) => {
                    let _ = tx.send(url.to_owned());
                }
                None => eprintln!("[server] {line}"),
            }
        }
    });
    let url = rx
        .recv_timeout(START_DEADLINE)
        .unwrap_or_else(|_| panic!("{command:?} did not announce its URL"));
    Spawned { child, url }
}

/// `vellum serve` on an ephemeral loopback port, with extra flags.
pub(crate) fn vellum_serve(extra: &[&str]) -> Spawned {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vellum"));
    c.args(["serve", "--addr", "127.0.0.1:0"]).args(extra);
    spawn_server(c)
}
