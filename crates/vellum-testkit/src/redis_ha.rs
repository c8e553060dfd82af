//! Redis set up for failover tests: [`HaCluster`] (a Redis Cluster of three masters with a
//! replica each) and [`SentinelSet`] (a master, its replica, three Sentinels). Both are
//! started by the scripts CI uses (`scripts/redis-cluster.sh --replicas 1`,
//! `scripts/redis-sentinel.sh`), which leave each node's settings in `DIR/PORT.conf` and
//! its pid in `DIR/PORT.pid`: a test kills a node ([`Nodes::kill`]) and starts it again
//! ([`Nodes::restart`]), and waits until everything is whole again before it ends.
//!
//! Under CI the sets come from `scripts/test.sh` ([`HA_CLUSTER_ENV`], [`SENTINEL_ENV`] name
//! their folders) and are shared by the tests of one binary, which take turns
//! ([`exclusive`]); elsewhere each test starts its own and stops it when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The folder of a running [`HaCluster`] (`scripts/redis-cluster.sh start DIR --replicas 1`).
pub const HA_CLUSTER_ENV: &str = "VELLUM_TEST_REDIS_HA_CLUSTER";
/// The folder of a running [`SentinelSet`] (`scripts/redis-sentinel.sh start DIR …`).
pub const SENTINEL_ENV: &str = "VELLUM_TEST_REDIS_SENTINEL";

/// The failover tests of one binary take turns: they kill nodes of shared sets, and their
/// timing bounds must not be measured on a machine the others load.
pub async fn exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// Free loopback ports whose port + 10000 is free too (a cluster node's bus), both below the
/// kernel's ephemeral ports (32768 and up), which outgoing connections may take meanwhile.
fn free_ports(n: usize) -> Vec<u16> {
    let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
    let mut p = 12_000 + (std::process::id() % 400) as u16 * 25;
    let mut out = Vec::new();
    while out.len() < n {
        p = if p >= 22_700 { 12_000 } else { p + 1 };
        if free(p) && free(p + 10_000) {
            out.push(p);
        }
    }
    out
}

/// One `redis-cli` command against `port`: its output, or `None` when the node does not
/// answer.
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
}

/// The nodes of a set, by their files in its folder.
pub struct Nodes {
    dir: PathBuf,
    /// Started here: stopped (and the folder removed) on drop.
    owned: bool,
}

impl Nodes {
    fn pid(&self, port: u16) -> Option<String> {
        std::fs::read_to_string(self.dir.join(format!("{port}.pid")))
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// SIGKILL to the node on `port` (no goodbye to its peers: a crash).
    pub fn kill(&self, port: u16) {
        if let Some(pid) = self.pid(port) {
            let _ = Command::new("kill").args(["-9", &pid]).status();
        }
        let _ = std::fs::remove_file(self.dir.join(format!("{port}.pid")));
        let end = Instant::now() + Duration::from_secs(10);
        while cli(port, &["ping"]).is_some() {
            assert!(
                Instant::now() < end,
                "node {port} still answers after SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGSTOP or SIGCONT to the node on `port`.
    pub fn signal(&self, port: u16, signal: &str) {
        if let Some(pid) = self.pid(port) {
            let _ = Command::new("kill").args([signal, &pid]).status();
        }
    }

    /// Starts the node on `port` again with its settings, and waits until it answers.
    pub fn restart(&self, port: u16) {
        let conf = self.dir.join(format!("{port}.conf"));
        let sentinel = std::fs::read_to_string(&conf)
            .map(|c| c.contains("sentinel monitor"))
            .unwrap_or(false);
        let bin = if sentinel {
            "redis-sentinel"
        } else {
            "redis-server"
        };
        let ok = Command::new(bin).arg(&conf).status();
        assert!(
            ok.is_ok_and(|s| s.success()),
            "cannot restart {port} ({conf:?})"
        );
        let end = Instant::now() + Duration::from_secs(10);
        while cli(port, &["ping"]).is_none() {
            assert!(Instant::now() < end, "node {port} did not start again");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn start(script: &str, args: &[String]) -> (Nodes, String) {
        let dir = std::env::temp_dir().join(format!(
            "vellum-{}-{}-{}",
            script.trim_end_matches(".sh"),
            std::process::id(),
            args.last().map(String::as_str).unwrap_or("")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new("bash")
            .arg(scripts().join(script))
            .arg("start")
            .arg(&dir)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("bash {script}: {e}"));
        assert!(
            out.status.success(),
            "{script} failed (are redis-server and redis-sentinel installed? apt-get install redis-server redis-sentinel): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (Nodes { dir, owned: true }, url)
    }

    fn shared(env: &str) -> Option<(Nodes, String)> {
        let dir = PathBuf::from(std::env::var(env).ok().filter(|d| !d.is_empty())?);
        let url = std::fs::read_to_string(dir.join("url"))
            .unwrap_or_else(|e| panic!("{env}: no url file in {dir:?}: {e}"));
        Some((Nodes { dir, owned: false }, url.trim().to_owned()))
    }

    fn get(env: &str, script: &str, ports: usize, args: &[&str]) -> (Nodes, String, Vec<u16>) {
        if let Some((n, url)) = Self::shared(env) {
            let ports = ports_of(&n.dir);
            return (n, url, ports);
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{env} is not set: under CI the failover tests need it (scripts/test.sh starts one)"
        );
        let ports = free_ports(ports);
        let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        all.extend(ports.iter().map(u16::to_string));
        let (n, url) = Self::start(script, &all);
        (n, url, ports)
    }
}

/// The ports of a set's folder, in the order the script was given them (its `ports` file).
fn ports_of(dir: &Path) -> Vec<u16> {
    std::fs::read_to_string(dir.join("ports"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

impl Drop for Nodes {
    fn drop(&mut self) {
        if self.owned {
            for p in ports_of(&self.dir) {
                if let Some(pid) = self.pid(p) {
                    let _ = Command::new("kill").args(["-9", &pid]).status();
                }
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Polls `f` every 50 ms until it holds, failing the test with `what` after `within`.
pub fn wait_for(within: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Redis Cluster of three masters, each with one replica (see the module).
pub struct HaCluster {
    /// Its nodes.
    pub nodes: Nodes,
    url: String,
    ports: Vec<u16>,
}

impl HaCluster {
    /// The cluster of [`HA_CLUSTER_ENV`], or (outside CI) a fresh one.
    pub fn get() -> HaCluster {
        let (nodes, url, ports) =
            Nodes::get(HA_CLUSTER_ENV, "redis-cluster.sh", 6, &["--replicas", "1"]);
        HaCluster { nodes, url, ports }
    }

    /// `redis-cluster://…` (every node a seed).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Every node's port.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// A node's role (`master`, `slave`), or `None` when it does not answer.
    pub fn role(&self, port: u16) -> Option<String> {
        cli(port, &["role"]).and_then(|r| r.lines().next().map(str::to_owned))
    }

    fn any_live(&self) -> u16 {
        *self
            .ports
            .iter()
            .find(|p| cli(**p, &["ping"]).is_some())
            .expect("a live cluster node")
    }

    /// The hash slot of `key`.
    pub fn slot(&self, key: &str) -> u16 {
        cli(self.any_live(), &["cluster", "keyslot", key])
            .and_then(|s| s.trim().parse().ok())
            .expect("CLUSTER KEYSLOT")
    }

    /// The master serving `slot`, as that master itself says (its own `myself` line).
    pub fn master_of(&self, slot: u16) -> u16 {
        for p in &self.ports {
            let Some(nodes) = cli(*p, &["cluster", "nodes"]) else {
                continue;
            };
            let Some(me) = nodes.lines().find(|l| l.contains("myself")) else {
                continue;
            };
            let f: Vec<&str> = me.split_whitespace().collect();
            if f.len() < 9 || !f[2].contains("master") {
                continue;
            }
            for range in &f[8..] {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>())
                    && (a..=b).contains(&slot)
                {
                    return *p;
                }
            }
        }
        panic!("no master serves slot {slot}")
    }

    /// The replica of the master on `port`, as the replica itself says.
    pub fn replica_of(&self, master: u16) -> u16 {
        let want = format!("master_port:{master}");
        *self
            .ports
            .iter()
            .find(|p| {
                cli(**p, &["info", "replication"]).is_some_and(|r| {
                    r.contains("role:slave") && r.lines().any(|l| l.trim() == want)
                })
            })
            .unwrap_or_else(|| panic!("master {master} has no replica"))
    }

    /// Waits until every node answers, every node says `cluster_state:ok`, and each of the
    /// three masters has a replica in sync: ready for the next failover.
    pub fn wait_whole(&self, within: Duration) {
        wait_for(within, "the cluster whole again", || {
            self.ports.iter().all(|p| {
                let (Some(info), Some(repl)) = (
                    cli(*p, &["cluster", "info"]),
                    cli(*p, &["info", "replication"]),
                ) else {
                    return false;
                };
                info.contains("cluster_state:ok")
                    && (repl.contains("role:master") && repl.contains("connected_slaves:1")
                        || repl.contains("master_link_status:up"))
            })
        });
    }
}

/// A master, its replica and three Sentinels watching it as `vellum` (see the module).
pub struct SentinelSet {
    /// Its processes.
    pub nodes: Nodes,
    url: String,
    /// The two Redis nodes.
    pub redis: [u16; 2],
    /// The Sentinels.
    pub sentinels: [u16; 3],
}

impl SentinelSet {
    /// The set of [`SENTINEL_ENV`], or (outside CI) a fresh one.
    pub fn get() -> SentinelSet {
        let (nodes, url, ports) = Nodes::get(SENTINEL_ENV, "redis-sentinel.sh", 5, &[]);
        // The script's arguments: the master, the replica, the Sentinels.
        let [a, b, s1, s2, s3] = ports[..] else {
            panic!("a Sentinel set has five ports, found {ports:?}");
        };
        SentinelSet {
            nodes,
            url,
            redis: [a, b],
            sentinels: [s1, s2, s3],
        }
    }

    /// `redis-sentinel://S1,S2,S3/vellum`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The master's port, as the first Sentinel that answers names it.
    pub fn master(&self) -> u16 {
        self.sentinels
            .iter()
            .find_map(|s| cli(*s, &["sentinel", "get-master-addr-by-name", "vellum"]))
            .and_then(|a| a.lines().nth(1).and_then(|p| p.trim().parse().ok()))
            .expect("a Sentinel naming the master")
    }

    /// The Redis node that is not `port`.
    pub fn other(&self, port: u16) -> u16 {
        if self.redis[0] == port {
            self.redis[1]
        } else {
            self.redis[0]
        }
    }

    /// A node's role (`master`, `slave`, `sentinel`), or `None` when it does not answer.
    pub fn role(&self, port: u16) -> Option<String> {
        cli(port, &["role"]).and_then(|r| r.lines().next().map(str::to_owned))
    }

    /// Waits until both Redis nodes answer, the replica is in sync, and every Sentinel
    /// names the master and sees it up: ready for the next failover.
    pub fn wait_whole(&self, within: Duration) {
        wait_for(within, "the Sentinel set whole again", || {
            let master = self.master();
            let replica = self.other(master);
            let synced = cli(replica, &["info", "replication"])
                .is_some_and(|r| r.contains("master_link_status:up"));
            synced
                && self.sentinels.iter().all(|s| {
                    cli(*s, &["sentinel", "master", "vellum"]).is_some_and(|m| {
                        let l: Vec<&str> = m.lines().collect();
                        let field = |k: &str| {
                            l.iter()
                                .position(|x| *x == k)
                                .and_then(|i| l.get(i + 1))
                                .copied()
                        };
                        field("port") == Some(master.to_string().as_str())
                            && field("flags") == Some("master")
                    })
                })
        });
    }
}
