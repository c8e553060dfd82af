//! What a [`Redis`](super::Redis) handle talks to: one node (`redis://`, `rediss://`) or a
//! Redis Cluster (`redis-cluster://HOST:PORT[,HOST:PORT...]`), behind one connection type,
//! [`Conn`], so the stores and their scripts are the same on both.
//!
//! On a cluster every command is routed by its first key, so each script names a key of the
//! session's hash slot (see [`Call`](super::Call)), and the bus uses sharded pub/sub
//! (`SPUBLISH`/`SSUBSCRIBE`): its one channel lives on the shard owning the channel's slot, so
//! the messages are not broadcast over the whole cluster bus, and the cluster client
//! resubscribes by itself when that slot moves or its node reconnects.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// The scheme of a Redis Cluster URL: `redis-cluster://HOST:PORT[,HOST:PORT...]`.
pub const CLUSTER_SCHEME: &str = "redis-cluster://";

/// Whether `url` names Redis (one node or a cluster): what the store flags accept.
pub fn is_redis_url(url: &str) -> bool {
    url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with(CLUSTER_SCHEME)
}

/// The seed nodes of a cluster URL, each as `redis://HOST:PORT` (anything after the host
/// list, such as `/`, is ignored); `None` when `url` is not a cluster URL.
pub(super) fn cluster_nodes(url: &str) -> Option<Result<Vec<String>, String>> {
    let rest = url.strip_prefix(CLUSTER_SCHEME)?;
    let hosts = rest.split(['/', '?']).next().unwrap_or_default();
    let (auth, hosts) = match hosts.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, hosts),
    };
    let nodes: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| match auth {
            Some(a) => format!("redis://{a}@{h}"),
            None => format!("redis://{h}"),
        })
        .collect();
    if nodes.is_empty() {
        return Some(Err("no HOST:PORT after redis-cluster://".into()));
    }
    if let Some(bad) = hosts.split(',').map(str::trim).find(|h| {
        !h.is_empty()
            && h.rsplit_once(':')
                .is_none_or(|(_, p)| p.parse::<u16>().is_err())
    }) {
        return Some(Err(format!("{bad:?} is not HOST:PORT")));
    }
    Some(Ok(nodes))
}

/// The command connection: a reconnecting connection to one node, or a cluster connection
/// (which keeps one connection per node and follows the slot map). Cheap to clone.
#[derive(Clone)]
pub(in crate::store) enum Conn {
    /// One node.
    Node(ConnectionManager),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
    /// A connection of its own to one node, without a response timeout (blocking reads).
    Plain(redis::aio::MultiplexedConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Node(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Plain(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Node(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Plain(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Node(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Plain(c) => c.get_db(),
        }
    }
}

/// The client behind a [`Redis`](super::Redis) handle: it opens the shared connection and
/// the dedicated ones (blocking reads, the bus).
#[derive(Clone)]
pub(in crate::store) enum Target {
    /// One node.
    Node(redis::Client),
    /// A cluster, by its seed nodes.
    Cluster(Vec<String>),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Node(_) => f.write_str("node"),
            Target::Cluster(n) => write!(f, "cluster of {} seed nodes", n.len()),
        }
    }
}

impl Target {
    /// Parses `url` (one node or a cluster); the error says what is wrong.
    pub(super) fn parse(url: &str) -> Result<Target, String> {
        match cluster_nodes(url) {
            Some(nodes) => {
                let nodes = nodes?;
                // Checked here so that a bad seed fails at start-up, not at first use.
                ClusterClient::new(nodes.clone()).map_err(|e| e.to_string())?;
                Ok(Target::Cluster(nodes))
            }
            None => redis::Client::open(url)
                .map(Target::Node)
                .map_err(|e| e.to_string()),
        }
    }

    /// Whether this is a cluster (the bus then uses sharded pub/sub).
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Target::Cluster(_))
    }

    fn cluster(nodes: &[String], response_timeout: Duration) -> redis::RedisResult<ClusterClient> {
        ClusterClientBuilder::new(nodes.to_vec())
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(response_timeout)
            .retries(3)
            .max_retry_wait(500)
            .build()
    }

    /// The shared command connection: each command may take `timeout`, and is retried
    /// over a reconnect.
    pub(super) async fn shared(&self, timeout: Duration) -> redis::RedisResult<Conn> {
        match self {
            Target::Node(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_millis(500));
                ConnectionManager::new_with_config(client.clone(), config)
                    .await
                    .map(Conn::Node)
            }
            Target::Cluster(nodes) => Self::cluster(nodes, timeout)?
                .get_async_connection()
                .await
                .map(Conn::Cluster),
        }
    }

    /// A connection of its own for blocking reads (`XREAD BLOCK`), which must not stall
    /// the shared one: `block` is the longest block it issues.
    pub(in crate::store) async fn dedicated(&self, block: Duration) -> redis::RedisResult<Conn> {
        match self {
            Target::Node(client) => {
                let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map(Conn::Plain)
            }
            Target::Cluster(nodes) => {
                let config = ClusterConfig::new()
                    .set_connection_timeout(Duration::from_secs(2))
                    .set_response_timeout(block + Duration::from_secs(5));
                Self::cluster(nodes, block + Duration::from_secs(5))?
                    .get_async_connection_with_config(config)
                    .await
                    .map(Conn::Cluster)
            }
        }
    }

    /// Subscribes to `channel` (sharded on a cluster): each payload goes to `deliver` until
    /// the subscription ends (the connection is lost); the caller then subscribes again.
    pub(super) async fn listen(
        &self,
        channel: &str,
        deliver: impl Fn(Vec<u8>) + Send + Sync + 'static,
    ) -> redis::RedisResult<()> {
        use futures_util::StreamExt as _;
        match self {
            Target::Node(client) => {
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(channel).await?;
                let mut messages = pubsub.on_message();
                while let Some(msg) = messages.next().await {
                    deliver(msg.get_payload_bytes().to_vec());
                }
                Ok(())
            }
            Target::Cluster(nodes) => {
                let sender = move |push: redis::PushInfo| -> Result<(), std::convert::Infallible> {
                    if push.kind == redis::PushKind::SMessage
                        && let Some(Value::BulkString(payload)) = push.data.into_iter().nth(1)
                    {
                        deliver(payload);
                    }
                    Ok(())
                };
                let client = ClusterClientBuilder::new(nodes.clone())
                    .connection_timeout(Duration::from_secs(2))
                    .use_protocol(redis::ProtocolVersion::RESP3)
                    .push_sender(sender)
                    .build()?;
                let mut conn = client.get_async_connection().await?;
                conn.ssubscribe(channel).await?;
                // The cluster connection resubscribes by itself after a reconnect or a slot
                // move; this task keeps it alive and returns (to subscribe afresh) only
                // when the cluster stays unreachable.
                let mut failures = 0u32;
                loop {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    let ok = redis::cmd("PING")
                        .query_async::<String>(&mut conn)
                        .await
                        .is_ok();
                    failures = if ok { 0 } else { failures + 1 };
                    if failures >= 3 {
                        return Ok(());
                    }
                }
            }
        }
    }
}
