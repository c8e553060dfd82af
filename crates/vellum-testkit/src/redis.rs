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

/// The environment variable naming a running Redis Cluster for the cluster tests
/// (`redis-cluster://HOST:PORT[,HOST:PORT...]`); `scripts/test.sh` starts one and sets it.
pub const CLUSTER_ENV: &str = "VELLUM_TEST_REDIS_CLUSTER";

/// A Redis Cluster for a test: the one named by [`CLUSTER_ENV`], or (outside CI) three
/// masters started here on free loopback ports, killed on drop. Under `CI=true` a missing
/// [`CLUSTER_ENV`] fails the test: the cluster runs must not be skipped silently.
pub struct RedisCluster {
    url: String,
    nodes: Vec<u16>,
    children: Vec<Child>,
    dir: Option<PathBuf>,
}

impl RedisCluster {
    /// The cluster of [`CLUSTER_ENV`], or a fresh one (see the type).
    pub fn get() -> RedisCluster {
        if let Ok(url) = std::env::var(CLUSTER_ENV)
            && !url.is_empty()
        {
            let nodes = url
                .trim_start_matches("redis-cluster://")
                .split(',')
                .filter_map(|h| h.rsplit_once(':').and_then(|(_, p)| p.parse().ok()))
                .collect();
            return RedisCluster {
                url,
                nodes,
                children: Vec::new(),
                dir: None,
            };
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{CLUSTER_ENV} is not set: under CI the Redis Cluster runs are required (scripts/test.sh starts one)"
        );
        Self::start()
    }

    /// Starts three masters (`--cluster-enabled yes`), joins them with
    /// `redis-cli --cluster create`, and waits (with a deadline) for `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let dir = std::env::temp_dir().join(format!(
            "vellum-redis-cluster-{}-{}",
            std::process::id(),
            ports[0]
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let mut children = Vec::new();
        for p in &ports {
            let node_dir = dir.join(p.to_string());
            std::fs::create_dir_all(&node_dir).expect("a node folder");
            let child = Command::new("redis-server")
                .args([
                    "--port",
                    &p.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                ])
                .args(["--cluster-enabled", "yes", "--appendonly", "no"])
                .args(["--cluster-node-timeout", "2000"])
                .arg("--dir")
                .arg(&node_dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot start redis-server ({e}): install it (apt-get install redis-server)"
                    )
                });
            children.push(child);
        }
        let mut cluster = RedisCluster {
            url: format!(
                "redis-cluster://{}",
                ports
                    .iter()
                    .map(|p| format!("127.0.0.1:{p}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            nodes: ports.clone(),
            children: Vec::new(),
            dir: Some(dir),
        };
        cluster.children = children;
        let deadline = Instant::now() + Duration::from_secs(10);
        for p in &ports {
            while std::net::TcpStream::connect(("127.0.0.1", *p)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "redis-server did not start on {p}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(ports.iter().map(|p| format!("127.0.0.1:{p}")))
            .arg("--cluster-yes")
            .output()
            .expect("redis-cli");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        cluster.wait_ok(Duration::from_secs(20));
        cluster
    }

    /// Waits until every node reports `cluster_state:ok`, failing the test after `within`.
    pub fn wait_ok(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let ok = self.nodes.iter().all(|p| {
                Command::new("redis-cli")
                    .args(["-p", &p.to_string(), "cluster", "info"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
                    .unwrap_or(false)
            });
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the Redis Cluster did not reach cluster_state:ok"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `redis-cluster://127.0.0.1:P1,127.0.0.1:P2,...`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The nodes' ports (of the seeds, for a cluster from [`CLUSTER_ENV`]).
    pub fn ports(&self) -> &[u16] {
        &self.nodes
    }

    /// The keys matching `pattern` on every node (through `redis-cli`; each node is asked,
    /// a replica's copies counted once).
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut all: Vec<String> = self
            .nodes
            .iter()
            .flat_map(|p| {
                let out = Command::new("redis-cli")
                    .args(["-p", &p.to_string(), "--raw", "keys", pattern])
                    .output()
                    .expect("redis-cli");
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort();
        all.dedup();
        all
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Where a test's server instances keep their data: one [`RedisServer`] of the test's own, or
/// a [`RedisCluster`] (from [`CLUSTER_ENV`], shared with other tests: look only at the test's
/// own keys there).
pub enum Backend {
    /// One `redis-server`, the test's own.
    Node(RedisServer),
    /// A Redis Cluster ([`RedisCluster::get`]).
    Cluster(RedisCluster),
}

impl Backend {
    /// A fresh `redis-server`.
    pub fn node() -> Backend {
        Backend::Node(RedisServer::start())
    }

    /// The cluster of [`CLUSTER_ENV`], or one started here (see [`RedisCluster::get`]).
    pub fn cluster() -> Backend {
        Backend::Cluster(RedisCluster::get())
    }

    /// The URL the stores take (`redis://…` or `redis-cluster://…`).
    pub fn url(&self) -> String {
        match self {
            Backend::Node(r) => r.url(),
            Backend::Cluster(c) => c.url(),
        }
    }

    /// The keys matching `pattern` (on every node of a cluster).
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        match self {
            Backend::Node(r) => r.keys(pattern),
            Backend::Cluster(c) => c.keys(pattern),
        }
    }
}

/// A test's store that [`on_both!`](crate::on_both) makes both ways: on one node and on a
/// cluster. `test` is the test's name, for stores that keep each test's keys apart by it.
pub trait OnBoth {
    /// The store on one `redis-server`.
    fn node() -> Self;
    /// The store on a Redis Cluster, for the test named `test`.
    fn cluster(test: &'static str) -> Self;
}

impl OnBoth for Backend {
    fn node() -> Backend {
        Backend::node()
    }

    fn cluster(_test: &'static str) -> Backend {
        Backend::cluster()
    }
}

/// Runs the async test body `$name(store)` twice, as `$name::node` on one node and as
/// `$name::cluster` on a cluster, where `store` is the test's `Store` type (in scope where the
/// macro is called), an [`OnBoth`].
#[macro_export]
macro_rules! on_both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn node() {
                super::$name(<super::Store as $crate::redis::OnBoth>::node()).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster() {
                super::$name(<super::Store as $crate::redis::OnBoth>::cluster(
                    stringify!($name),
                ))
                .await
            }
        }
    };
}
