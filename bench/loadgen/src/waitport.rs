//! `mcpbench wait-port`: lets the runner script wait for a server without sleeping blindly.
//!
//! Polls a TCP connect every 2 ms until the port accepts (exit 0), the given PID is gone or the
//! timeout passes (exit non-zero). With `--free`, checks instead that nothing accepts now.

use std::time::Duration;

use anyhow::bail;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::cli::WaitPortArgs;

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
    let deadline =
        Instant::now() + Duration::try_from_secs_f64(args.timeout).unwrap_or(Duration::ZERO);
    loop {
        if TcpStream::connect(args.addr).await.is_ok() {
            return Ok(());
        }
        if let Some(pid) = args.pid
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
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
