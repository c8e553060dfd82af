//! [`RedisServer`]: a throwaway `redis-server` on a free loopback port (append-only file in a
//! temporary folder, so a restart keeps its data), killed on drop.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .expect("a bound address")
        .port()
}

/// A `redis-server` on a free loopback port, killed on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts one in a fresh temporary folder; fails the test, saying what to install, when
    /// `redis-server` is missing.
    pub fn start() -> RedisServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("vellum-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        Self::start_in(dir, port)
    }

    /// Starts one on `port` with the data in `dir` (a restart of a stopped one).
    pub fn start_in(dir: PathBuf, port: u16) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): install it (apt-get install redis-server); scripts/test.sh does")
            });
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        RedisServer { child, port, dir }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops it; returns its folder and port for [`RedisServer::start_in`].
    pub fn stop(mut self) -> (PathBuf, u16) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.dir.clone(), self.port)
    }

    /// The keys matching `pattern` (through `redis-cli`).
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--raw", "keys", pattern])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
