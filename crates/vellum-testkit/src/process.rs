//! A server child process: `vellum serve`, an example binary, an official SDK's server. It is
//! started, its start line `streamable HTTP MCP: URL …` on stderr is waited for (with a
//! deadline), later stderr lines are kept for the test and echoed with a `[server]` prefix,
//! and the process is killed when the value is dropped. On Linux its resource use is read
//! from `/proc`.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What every server of the project prints on stderr once it listens, before its URL.
pub const START_PREFIX: &str = "streamable HTTP MCP: ";

/// How long a server may take to print its start line.
pub const START_DEADLINE: Duration = Duration::from_secs(60);

/// How long [`ServerProcess::finish`] waits for the process to close its stderr.
const FINISH_DEADLINE: Duration = Duration::from_secs(30);

/// A running server process; killed on drop.
pub struct ServerProcess {
    child: Child,
    /// What the start line announced: `http://ADDR`, `http://ADDR/mcp` or `unix:PATH` (the
    /// first word after [`START_PREFIX`]).
    pub url: String,
    /// The stderr lines printed before the start line.
    pub before: Vec<String>,
    /// The stderr lines after the start line, as they come.
    lines: mpsc::Receiver<String>,
}

impl ServerProcess {
    /// Starts `command` (stdin and stdout closed, stderr read) and waits for its start line.
    /// Fails the test when the process prints none within [`START_DEADLINE`], or exits first.
    pub fn spawn(mut command: Command) -> ServerProcess {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            // Drains stderr for the life of the process, so it never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[server] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let started = Instant::now();
        let mut before = Vec::new();
        loop {
            let left = START_DEADLINE.saturating_sub(started.elapsed());
            match lines.recv_timeout(left) {
                Ok(line) => match line.strip_prefix(START_PREFIX) {
                    Some(rest) => {
                        let url = rest.split_whitespace().next().unwrap_or("").to_owned();
                        return ServerProcess {
                            child,
                            url,
                            before,
                            lines,
                        };
                    }
                    None => before.push(line),
                },
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{command:?} printed no start line within {START_DEADLINE:?}: {before:?}"
                    )
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().ok();
                    panic!("{command:?} exited before its start line ({status:?}): {before:?}")
                }
            }
        }
    }

    /// `url` with the `/mcp` path clients commonly use (kept when it has one already).
    pub fn mcp_url(&self) -> String {
        if self.url.ends_with("/mcp") {
            self.url.clone()
        } else {
            format!("{}/mcp", self.url)
        }
    }

    /// The TCP address of an `http://` or `https://` URL.
    pub fn addr(&self) -> SocketAddr {
        self.url
            .strip_prefix("http://")
            .or_else(|| self.url.strip_prefix("https://"))
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("not an http://ADDR start line: {}", self.url))
    }

    /// `host:port`, for Host headers.
    pub fn host(&self) -> String {
        self.addr().to_string()
    }

    /// A new connection to the server (20 s read timeout, no Nagle).
    pub fn connect(&self) -> TcpStream {
        crate::raw::connect(self.addr())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process and waits for it (as dropping does).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The next stderr line after the start line, if one comes within `wait`.
    pub fn next_line(&self, wait: Duration) -> Option<String> {
        self.lines.recv_timeout(wait).ok()
    }

    /// Waits for the next stderr line containing `needle` (skipping others), failing the
    /// test after [`crate::DEADLINE`].
    pub fn line_with(&self, needle: &str) -> String {
        let deadline = Instant::now() + crate::DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left) {
                Some(l) if l.contains(needle) => return l,
                Some(_) => {}
                None => panic!(
                    "no stderr line with {needle:?} within {:?}",
                    crate::DEADLINE
                ),
            }
        }
    }

    /// Ends the process with `signal` (as `kill` takes it: `-TERM`, `-INT`) and returns its
    /// exit status and everything it wrote to stderr after its start line (read until the
    /// pipe closes, which is the event waited for).
    pub fn finish(mut self, signal: &str) -> (ExitStatus, Vec<String>) {
        // The shell's `kill` builtin: no extra package, no unsafe code.
        let status = Command::new("sh")
            .args(["-c", &format!("kill {signal} {}", self.child.id())])
            .status()
            .expect("sh runs");
        assert!(status.success(), "kill {signal} failed");
        let mut out = Vec::new();
        loop {
            match self.lines.recv_timeout(FINISH_DEADLINE) {
                Ok(l) => out.push(l),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("stderr stayed open: {out:?}"),
            }
        }
        let exit = self.child.wait().expect("an exit status");
        (exit, out)
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
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The directory of the running test's profile (`target/<profile>`): tests run from its
/// `deps/`, and the workspace's binaries and examples are built next to it.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary is in target/<profile>/deps")
        .to_path_buf()
}

/// The `vellum` binary of this build (cargo builds it for the CLI's integration tests).
pub fn vellum_bin() -> PathBuf {
    let bin = profile_dir().join(format!("vellum{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the vellum binary is not built at {} (`cargo test -p vellum-cli` builds it)",
        bin.display()
    );
    bin
}

/// An example binary of this build, by name.
pub fn example_bin(name: &str) -> PathBuf {
    let bin = profile_dir()
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "\n\nTHE EXAMPLE {name} IS NOT BUILT at {}.\nBuild it with `cargo build --workspace --examples \
         --all-features` (`cargo test --workspace --all-features` and scripts/test.sh do).\n\n",
        bin.display()
    );
    bin
}

/// `vellum serve ARGS` (on `--addr 127.0.0.1:0` unless ARGS choose `--unix`), with `env`
/// set and `RUST_LOG` unset, once it printed its start line.
pub fn vellum_serve_with_env(args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
    let mut cmd = Command::new(vellum_bin());
    cmd.arg("serve");
    if !args.contains(&"--unix") {
        cmd.args(["--addr", "127.0.0.1:0"]);
    }
    cmd.args(args)
        .env_remove("RUST_LOG")
        .envs(env.iter().copied());
    ServerProcess::spawn(cmd)
}

/// `vellum serve ARGS` on `127.0.0.1:0`, once it printed its start line.
pub fn vellum_serve(args: &[&str]) -> ServerProcess {
    vellum_serve_with_env(args, &[])
}

/// Runs `vellum serve --addr 127.0.0.1:0 ARGS` expecting it to exit with an error; returns
/// its stderr.
pub fn vellum_serve_fails(args: &[&str]) -> String {
    let out = Command::new(vellum_bin())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("vellum runs");
    assert!(!out.status.success(), "vellum serve {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
