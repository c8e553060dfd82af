//! [`Partition`]: a `redis-server` in a network namespace of its own, reached from the host
//! over veth pairs ("paths"), whose packets a test drops (`iptables … -j DROP` inside the
//! namespace: nothing is refused or reset, they just vanish, as in a real partition) and
//! lets through again. Each path is its own address of the server, so one instance can be
//! cut off while another, on another path, still reaches it.
//!
//! Needs root (CI runs as root) and `ip`, `iptables`; [`Partition::start`] says what is
//! missing. Everything is undone on drop (deleting the namespace deletes its veths).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` behind `paths` veth pairs (see the module).
pub struct Partition {
    ns: String,
    links: Vec<String>,
    subnet: u8,
    port: u16,
    redis: Option<Child>,
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether this process may create network namespaces (it runs as root).
pub fn can_partition() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Partition {
    /// Creates the namespace, `paths` veth pairs and the server in it; the error says what
    /// failed (not root, `ip` or `iptables` missing).
    pub fn start(paths: u8) -> Result<Partition, String> {
        let id = std::process::id();
        let used = Command::new("ip")
            .args(["-o", "addr"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .map_err(|e| format!("ip: {e} (apt-get install iproute2)"))?;
        let subnet = (0..50u32)
            .map(|k| 200 + ((id + k) % 50) as u8)
            .find(|s| !used.contains(&format!("10.{s}.")))
            .ok_or("no free 10.x subnet")?;
        let mut p = Partition {
            ns: format!("vellum-part-{id}"),
            links: Vec::new(),
            subnet,
            port: 6379,
            redis: None,
        };
        let ns = p.ns.clone();
        run(&["ip", "netns", "add", &ns])?;
        run(&["ip", "netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        for i in 0..paths {
            let (host, inner) = (format!("vp{}h{i}", id % 100_000), format!("vp{i}"));
            run(&[
                "ip", "link", "add", &host, "type", "veth", "peer", "name", &inner,
            ])?;
            p.links.push(host.clone());
            run(&["ip", "link", "set", &inner, "netns", &ns])?;
            run(&[
                "ip",
                "addr",
                "add",
                &format!("10.{subnet}.{i}.1/30"),
                "dev",
                &host,
            ])?;
            run(&["ip", "link", "set", &host, "up"])?;
            let inside = ["ip", "netns", "exec", &ns, "ip"];
            let addr = format!("10.{subnet}.{i}.2/30");
            run(&[&inside[..], &["addr", "add", &addr, "dev", &inner]].concat())?;
            run(&[&inside[..], &["link", "set", &inner, "up"]].concat())?;
        }
        run(&["ip", "netns", "exec", &ns, "iptables", "-L", "-n"])
            .map_err(|e| format!("{e} (apt-get install iptables)"))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &ns, "redis-server"])
            .args(["--port", &p.port.to_string(), "--bind", "0.0.0.0"])
            .args(["--protected-mode", "no", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("redis-server in {ns}: {e}"))?;
        p.redis = Some(child);
        let end = Instant::now() + Duration::from_secs(10);
        let addr = format!("10.{subnet}.0.2:{}", p.port);
        while std::net::TcpStream::connect(&addr).is_err() {
            if Instant::now() > end {
                return Err(format!("redis-server in {ns} does not answer on {addr}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(p)
    }

    /// The server's URL on `path`.
    pub fn url(&self, path: u8) -> String {
        format!("redis://10.{}.{path}.2:{}", self.subnet, self.port)
    }

    fn rules(&self, path: u8, verb: &str) -> Result<(), String> {
        let dev = format!("vp{path}");
        let ns = self.ns.as_str();
        run(&[
            "ip", "netns", "exec", ns, "iptables", verb, "INPUT", "-i", &dev, "-j", "DROP",
        ])?;
        run(&[
            "ip", "netns", "exec", ns, "iptables", verb, "OUTPUT", "-o", &dev, "-j", "DROP",
        ])
    }

    /// From now on every packet on `path` is dropped, both ways.
    pub fn cut(&self, path: u8) {
        self.rules(path, "-I").expect("iptables: drop the path");
    }

    /// Packets on `path` flow again.
    pub fn heal(&self, path: u8) {
        self.rules(path, "-D")
            .expect("iptables: let the path through");
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        if let Some(mut c) = self.redis.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = run(&["ip", "netns", "del", &self.ns]);
        for l in &self.links {
            let _ = run(&["ip", "link", "del", l]);
        }
    }
}
