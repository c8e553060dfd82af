//! `mcpbench wait-port` and `wait-exit`: let the runner script wait for a server to come up or
//! go away without sleeping blindly.
//!
//! `wait-port` polls a TCP connect every 2 ms until the port accepts (exit 0), the given PID is
//! gone or the timeout passes (exit non-zero); with `--free` it checks instead that nothing
//! accepts now. `wait-exit` polls `/proc/PID` every 2 ms until the process is gone or a zombie.

use std::time::Duration;

use anyhow::bail;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::cli::{WaitExitArgs, WaitPortArgs};
use crate::scenario::secs;

const POLL: Duration = Duration::from_millis(2);

/// Runs `wait-port`.
pub(crate) async fn run(args: &WaitPortArgs) -> anyhow::Result<()> {
    if args.free {
        if TcpStream::connect(args.addr).await.is_ok() {
            bail!(
                "{} already accepts connections (a server left over?)",
                args.addr
            );
        }
        return Ok(());
    }
    let deadline = Instant::now() + secs(args.timeout);
    loop {
        if TcpStream::connect(args.addr).await.is_ok() {
            return Ok(());
        }
        if let Some(pid) = args.pid
            && !alive(pid)
        {
            bail!(
                "process {pid} exited before {} accepted connections",
                args.addr
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "{} did not accept connections within {:?}",
                args.addr,
                args.timeout
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after `(comm)`.
        Ok(stat) => {
            stat.rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// Runs `wait-exit`.
pub(crate) async fn wait_exit(args: &WaitExitArgs) -> anyhow::Result<()> {
    let deadline = Instant::now() + secs(args.timeout);
    while alive(args.pid) {
        if Instant::now() >= deadline {
            bail!(
                "process {} still running after {:?} s",
                args.pid,
                args.timeout
            );
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}
