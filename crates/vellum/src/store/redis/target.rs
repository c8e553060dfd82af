//! What a [`Redis`](super::Redis) handle talks to, parsed from its URL (the one parser of
//! Redis URLs: every Redis flag and store option goes through [`Target::parse`]):
//!
//! - `redis://HOST:PORT` or `rediss://…`: one node;
//! - `redis-cluster://HOST:PORT[,HOST:PORT...]`: a Redis Cluster, any nodes as seeds;
//! - `redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME`: the master that these
//!   Sentinels name, followed through failovers.
//!
//! `USER:PASSWORD@` before the hosts authenticates to the Redis nodes (not to Sentinels).
//! Here too: opening each kind of [`Link`] (the shared one, one for blocking reads, a
//! subscription). Where the target is right now (a cluster's nodes, the current master) is
//! learnt by the supervisor (`supervisor.rs`) and kept here for the links opened later.
//!
//! On a cluster every command is routed by its first key, so each script names a key of the
//! session's hash slot (see [`Call`](super::Call)), and the bus uses sharded pub/sub
//! (`SPUBLISH`/`SSUBSCRIBE`): its one channel lives on the shard owning the channel's slot.

use std::sync::RwLock;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{AsyncConnectionConfig, ConnectionAddr, Value};

use super::link::Link;
use crate::sync::{read, write};

/// The scheme of a Redis Cluster URL: `redis-cluster://HOST:PORT[,HOST:PORT...]`.
pub const CLUSTER_SCHEME: &str = "redis-cluster://";

/// The scheme of a Sentinel URL: `redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME`.
pub const SENTINEL_SCHEME: &str = "redis-sentinel://";

/// The forms of Redis URL the store flags accept, for help texts and error messages.
pub const URL_FORMS: &str = "redis://HOST:PORT, redis-cluster://HOST:PORT[,HOST:PORT...] \
     or redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME";

/// Whether `url` names Redis (one node, a cluster or a Sentinel-managed master): what the
/// store flags accept.
pub fn is_redis_url(url: &str) -> bool {
    ["redis://", "rediss://", CLUSTER_SCHEME, SENTINEL_SCHEME]
        .iter()
        .any(|s| url.starts_with(s))
}

/// A host list URL taken apart: credentials, `HOST:PORT`s, and what follows the hosts.
struct HostList<'a> {
    auth: Option<&'a str>,
    hosts: Vec<(&'a str, u16)>,
    path: &'a str,
}

/// Parses `[AUTH@]HOST:PORT[,HOST:PORT...][/PATH]` (after the scheme).
fn host_list<'a>(rest: &'a str, scheme: &str) -> Result<HostList<'a>, String> {
    let (hosts, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (auth, hosts) = match hosts.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, hosts),
    };
    let mut out = Vec::new();
    for h in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let port = h
            .rsplit_once(':')
            .and_then(|(host, p)| Some((host, p.parse::<u16>().ok()?)))
            .filter(|(host, _)| !host.is_empty());
        match port {
            Some(hp) => out.push(hp),
            None => return Err(format!("{h:?} is not HOST:PORT")),
        }
    }
    if out.is_empty() {
        return Err(format!("no HOST:PORT after {scheme}"));
    }
    Ok(HostList {
        auth,
        hosts: out,
        path,
    })
}

/// The seed nodes of a cluster URL, each as `redis://[AUTH@]HOST:PORT` (anything after the
/// host list, such as `/`, is ignored); `None` when `url` is not a cluster URL.
pub(super) fn cluster_nodes(url: &str) -> Option<Result<Vec<String>, String>> {
    let rest = url.strip_prefix(CLUSTER_SCHEME)?;
    Some(host_list(rest, CLUSTER_SCHEME).map(|l| {
        l.hosts
            .iter()
            .map(|(h, p)| node_url(l.auth, h, *p))
            .collect()
    }))
}

pub(super) fn node_url(auth: Option<&str>, host: &str, port: u16) -> String {
    match auth {
        Some(a) => format!("redis://{a}@{host}:{port}"),
        None => format!("redis://{host}:{port}"),
    }
}

/// A Sentinel URL taken apart: the Sentinels, the master's name, the master's credentials.
struct SentinelUrl {
    sentinels: Vec<(String, u16)>,
    master: String,
    auth: Option<(String, String)>,
}

fn sentinel_url(rest: &str) -> Result<SentinelUrl, String> {
    let l = host_list(rest, SENTINEL_SCHEME)?;
    let master = l.path.trim_start_matches('/');
    let master = master.split('?').next().unwrap_or_default();
    if master.is_empty() || master.contains('/') {
        return Err("expected /MASTER_NAME after the Sentinels' HOST:PORT list".into());
    }
    let auth = l.auth.map(|a| match a.split_once(':') {
        Some((u, p)) => (u.to_owned(), p.to_owned()),
        None => (String::new(), a.to_owned()),
    });
    Ok(SentinelUrl {
        sentinels: l.hosts.iter().map(|(h, p)| ((*h).to_owned(), *p)).collect(),
        master: master.to_owned(),
        auth,
    })
}

/// How long opening a connection may take: half the store timeout, at most a second (a
/// connect that takes longer is to a host that is gone).
pub(super) fn connect_timeout(timeout: Duration) -> Duration {
    (timeout / 2).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

/// Where the handle's links go, and (for a cluster or Sentinel) where that is right now.
pub(in crate::store) struct Target {
    pub(super) kind: Kind,
    /// The store timeout (each command's response timeout on the shared link).
    timeout: Duration,
}

pub(super) enum Kind {
    Node(redis::Client),
    Cluster {
        seeds: Vec<String>,
        /// The masters the supervisor last saw (seeds until then).
        masters: RwLock<Vec<String>>,
    },
    Sentinel {
        master_name: String,
        client: Box<tokio::sync::Mutex<SentinelClient>>,
        /// The master the supervisor last resolved.
        master: RwLock<Option<redis::Client>>,
    },
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Node(_) => f.write_str("node"),
            Kind::Cluster { seeds, .. } => write!(f, "cluster of {} seed nodes", seeds.len()),
            Kind::Sentinel { master_name, .. } => write!(f, "Sentinel master {master_name:?}"),
        }
    }
}

impl Target {
    /// Parses `url` (see the module); the error says what is wrong.
    pub(super) fn parse(url: &str, timeout: Duration) -> Result<Target, String> {
        let kind = if let Some(nodes) = cluster_nodes(url) {
            let nodes = nodes?;
            // Checked here so that a bad seed fails at start-up, not at first use.
            ClusterClient::new(nodes.clone()).map_err(|e| e.to_string())?;
            Kind::Cluster {
                masters: RwLock::new(nodes.clone()),
                seeds: nodes,
            }
        } else if let Some(rest) = url.strip_prefix(SENTINEL_SCHEME) {
            let s = sentinel_url(rest)?;
            let addrs = s
                .sentinels
                .iter()
                .map(|(h, p)| ConnectionAddr::Tcp(h.clone(), *p));
            let mut b = SentinelClientBuilder::new(addrs, &s.master, SentinelServerType::Master)
                .map_err(|e| e.to_string())?;
            if let Some((user, password)) = &s.auth {
                if !user.is_empty() {
                    b = b.set_client_to_redis_username(user);
                }
                b = b.set_client_to_redis_password(password);
            }
            Kind::Sentinel {
                client: Box::new(tokio::sync::Mutex::new(
                    b.build().map_err(|e| e.to_string())?,
                )),
                master_name: s.master,
                master: RwLock::new(None),
            }
        } else {
            Kind::Node(redis::Client::open(url).map_err(|e| e.to_string())?)
        };
        Ok(Target { kind, timeout })
    }

    /// Whether this is a cluster (the bus then uses sharded pub/sub).
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster { .. })
    }

    /// Whether this is one fixed node (nothing to watch but the link itself).
    pub(super) fn is_node(&self) -> bool {
        matches!(self.kind, Kind::Node(_))
    }

    pub(super) fn store_timeout(&self) -> Duration {
        self.timeout
    }

    fn cluster_client(
        &self,
        nodes: Vec<String>,
        response_timeout: Duration,
    ) -> redis::RedisResult<ClusterClient> {
        ClusterClientBuilder::new(nodes)
            .connection_timeout(connect_timeout(self.timeout))
            .response_timeout(response_timeout)
            .retries(3)
            .max_retry_wait(200)
            .build()
    }

    fn masters(&self) -> Vec<String> {
        match &self.kind {
            Kind::Cluster { masters, .. } => read(masters).clone(),
            _ => Vec::new(),
        }
    }

    /// The cluster's seeds and the nodes it last reported (for probes).
    pub(super) fn cluster_candidates(&self) -> Vec<String> {
        let Kind::Cluster { seeds, masters } = &self.kind else {
            return Vec::new();
        };
        let mut all = read(masters).clone();
        all.extend(seeds.iter().cloned());
        all.dedup();
        all
    }

    /// Records the cluster's current masters (the supervisor's latest view).
    pub(super) fn learn_masters(&self, nodes: Vec<String>) {
        if let Kind::Cluster { masters, .. } = &self.kind
            && !nodes.is_empty()
        {
            *write(masters) = nodes;
        }
    }

    /// The credentials of the URL, for cluster nodes found by a probe.
    pub(super) fn cluster_auth(&self) -> Option<String> {
        let Kind::Cluster { seeds, .. } = &self.kind else {
            return None;
        };
        let first = seeds.first()?.strip_prefix("redis://")?;
        first.rsplit_once('@').map(|(a, _)| a.to_owned())
    }

    /// Asks the Sentinels for the current master (within the store timeout), and keeps it.
    pub(super) async fn resolve_master(&self) -> redis::RedisResult<redis::Client> {
        let Kind::Sentinel { client, master, .. } = &self.kind else {
            return Err(not_sentinel());
        };
        let found = tokio::time::timeout(self.timeout, async {
            client.lock().await.async_get_client().await
        })
        .await
        .map_err(|_| timed_out("the Sentinels did not name a master in time"))??;
        *write(master) = Some(found.clone());
        Ok(found)
    }

    /// The master last resolved, or a fresh answer of the Sentinels.
    async fn master(&self) -> redis::RedisResult<redis::Client> {
        if let Kind::Sentinel { master, .. } = &self.kind
            && let Some(c) = read(master).clone()
        {
            return Ok(c);
        }
        self.resolve_master().await
    }

    /// A new shared command link: each command may take the store timeout, and is retried
    /// over a reconnect.
    pub(super) async fn shared(&self) -> redis::RedisResult<Link> {
        let node = |client: redis::Client| async move {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(connect_timeout(self.timeout)))
                .set_response_timeout(Some(self.timeout))
                .set_number_of_retries(1)
                .set_max_delay(Duration::from_millis(200));
            ConnectionManager::new_with_config(client, config)
                .await
                .map(Link::Node)
        };
        match &self.kind {
            Kind::Node(client) => node(client.clone()).await,
            Kind::Cluster { .. } => self
                .cluster_client(self.masters(), self.timeout)?
                .get_async_connection()
                .await
                .map(Link::Cluster),
            Kind::Sentinel { .. } => node(self.master().await?).await,
        }
    }

    /// A connection of its own for blocking reads (`XREAD BLOCK`), which must not stall
    /// the shared one: `block` is the longest block it issues.
    pub(in crate::store) async fn dedicated(&self, block: Duration) -> redis::RedisResult<Link> {
        let plain = |client: redis::Client| async move {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(connect_timeout(self.timeout)))
                .set_response_timeout(Some(block + self.timeout));
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map(Link::Plain)
        };
        match &self.kind {
            Kind::Node(client) => plain(client.clone()).await,
            Kind::Cluster { .. } => self
                .cluster_client(self.masters(), block + self.timeout)?
                .get_async_connection()
                .await
                .map(Link::Cluster),
            Kind::Sentinel { .. } => plain(self.master().await?).await,
        }
    }

    /// Subscribes to `channel` (sharded on a cluster): each payload goes to `deliver`, and
    /// `subscribed` is called once the subscription stands. Returns when the connection is
    /// lost or stops answering pings; the caller then subscribes again.
    pub(super) async fn listen(
        &self,
        channel: &str,
        deliver: impl Fn(Vec<u8>) + Send + Sync + 'static,
        subscribed: impl FnOnce(),
    ) -> redis::RedisResult<()> {
        match &self.kind {
            Kind::Node(client) => listen_node(client, channel, deliver, subscribed).await,
            Kind::Sentinel { .. } => {
                listen_node(&self.master().await?, channel, deliver, subscribed).await
            }
            Kind::Cluster { .. } => self.listen_cluster(channel, deliver, subscribed).await,
        }
    }

    async fn listen_cluster(
        &self,
        channel: &str,
        deliver: impl Fn(Vec<u8>) + Send + Sync + 'static,
        subscribed: impl FnOnce(),
    ) -> redis::RedisResult<()> {
        let sender = move |push: redis::PushInfo| -> Result<(), std::convert::Infallible> {
            if push.kind == redis::PushKind::SMessage
                && let Some(Value::BulkString(payload)) = push.data.into_iter().nth(1)
            {
                deliver(payload);
            }
            Ok(())
        };
        let client = ClusterClientBuilder::new(self.masters())
            .connection_timeout(connect_timeout(self.timeout))
            .response_timeout(self.timeout)
            .use_protocol(redis::ProtocolVersion::RESP3)
            .push_sender(sender)
            .build()?;
        let mut conn = client.get_async_connection().await?;
        conn.ssubscribe(channel).await?;
        subscribed();
        // The cluster connection resubscribes by itself after a reconnect or a slot move;
        // a link replaced by the supervisor also makes the caller subscribe afresh. The
        // pings find a subscription whose node stopped answering.
        loop {
            tokio::time::sleep(PING_EVERY).await;
            redis::cmd("PING").query_async::<String>(&mut conn).await?;
        }
    }
}

/// How often an idle subscription is pinged.
const PING_EVERY: Duration = Duration::from_secs(1);

async fn listen_node(
    client: &redis::Client,
    channel: &str,
    deliver: impl Fn(Vec<u8>) + Send + Sync + 'static,
    subscribed: impl FnOnce(),
) -> redis::RedisResult<()> {
    use futures_util::StreamExt as _;
    let pubsub = client.get_async_pubsub().await?;
    let (mut sink, mut messages) = pubsub.split();
    sink.subscribe(channel).await?;
    subscribed();
    let mut tick = tokio::time::interval(PING_EVERY);
    loop {
        tokio::select! {
            msg = messages.next() => match msg {
                Some(m) => deliver(m.get_payload_bytes().to_vec()),
                None => return Ok(()),
            },
            _ = tick.tick() => {
                // Packets dropped on the way are only noticed by asking.
                match tokio::time::timeout(PING_EVERY * 2, sink.ping::<Value>()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Err(timed_out("the subscription stopped answering pings")),
                }
            }
        }
    }
}

pub(super) fn timed_out(what: &'static str) -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, what))
}

fn not_sentinel() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::InvalidClientConfig,
        "not a Sentinel target",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_urls() {
        let s = sentinel_url("10.0.0.1:26379,10.0.0.2:26380/mymaster").unwrap();
        assert_eq!(s.master, "mymaster");
        assert_eq!(
            s.sentinels,
            vec![("10.0.0.1".into(), 26379), ("10.0.0.2".into(), 26380)]
        );
        assert!(s.auth.is_none());
        let s = sentinel_url("u:p@h:1/m").unwrap();
        assert_eq!(s.auth, Some(("u".into(), "p".into())));
        assert!(sentinel_url("h:1").is_err(), "the master name is required");
        assert!(sentinel_url("h:1/").is_err());
        assert!(sentinel_url("h/m").is_err(), "a port is required");
        assert!(sentinel_url("/m").is_err());
        assert!(is_redis_url("redis-sentinel://h:1/m"));
        assert!(Target::parse("redis-sentinel://h:1/m", Duration::from_secs(1)).is_ok());
        assert!(Target::parse("redis-sentinel://h:1", Duration::from_secs(1)).is_err());
    }

    #[test]
    fn cluster_urls() {
        let n = cluster_nodes("redis-cluster://a:1,b:2/").unwrap().unwrap();
        assert_eq!(n, vec!["redis://a:1", "redis://b:2"]);
        let n = cluster_nodes("redis-cluster://u:p@a:1").unwrap().unwrap();
        assert_eq!(n, vec!["redis://u:p@a:1"]);
        assert!(cluster_nodes("redis-cluster://a").unwrap().is_err());
        assert!(cluster_nodes("redis-cluster://").unwrap().is_err());
        assert!(cluster_nodes("redis://a:1").is_none());
    }
}
