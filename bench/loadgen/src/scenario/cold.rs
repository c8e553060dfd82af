//! Cold start: from spawning the server to its first correct answer.
//!
//! The server command runs as `sh -c "exec CMD"` (so CMD can pin it with `taskset` and raise
//! its limits with `prlimit`). The port is polled with a connect every 2 ms (the documented poll
//! interval); once it accepts, a session is opened (if the era has one) and `hello_world` called,
//! again every 2 ms until an answer passes the checks. The server is then stopped with SIGTERM
//! (SIGKILL after 5 s).

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use rustix::process::{Pid, Signal, kill_process};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use super::secs;
use crate::cli::RunArgs;
use crate::proto::Proto;
use crate::record::{Errors, Record};
use crate::{client, procfs, session};

/// Poll interval of the port and of the first call.
const POLL: Duration = Duration::from_millis(2);

/// How long the stopped server may take to exit before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Runs `cold` and fills `rec`.
pub(super) async fn run(args: &RunArgs, proto: &Proto, rec: &mut Record) -> anyhow::Result<()> {
    let cmd = args
        .spawn
        .as_deref()
        .context("cold start needs --spawn CMD")?;
    let timeout = secs(args.request_timeout);
    let deadline = secs(args.start_timeout);
    let t0 = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec {cmd}"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning {cmd}"))?;
    let pid = child.id().context("spawned server has no PID")?;
    let mut errors = Errors::default();
    let outcome = async {
        loop {
            if t0.elapsed() > deadline {
                bail!("no correct answer within {deadline:?}");
            }
            if let Some(status) = child.try_wait()? {
                bail!("server exited during start-up: {status}");
            }
            let attempt = async {
                let mut conn = client::connect(args.addr).await?;
                let s = session::open(&mut conn, proto, timeout).await?;
                session::call(&mut conn, proto, &s, 1, timeout).await
            };
            match attempt.await {
                Ok(()) => return anyhow::Ok(t0.elapsed()),
                Err(e) => {
                    // Refused connections are the expected wait; other failures are noted.
                    if !is_refused(&e) {
                        errors.add(format!("during start-up: {e:#}"));
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }
    .await;
    let mem = procfs::tree_memory(pid).ok();
    stop(&mut child, pid).await;
    let took = outcome?;
    rec.ok = 1;
    // Failures before the first correct answer are reported but do not make the run wrong.
    rec.error_samples = errors.samples;
    rec.cold_ms = Some(took.as_secs_f64() * 1e3);
    if let Some(m) = mem {
        rec.rss_kib = Some(m.rss_kib);
        rec.hwm_kib = Some(m.hwm_kib);
    }
    Ok(())
}

fn is_refused(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// SIGTERM, then SIGKILL if the server is still there after the grace period.
async fn stop(child: &mut Child, pid: u32) {
    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(p, Signal::TERM);
    }
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}
