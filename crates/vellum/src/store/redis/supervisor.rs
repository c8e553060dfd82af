//! The supervisor of the shared link: it watches where the target is (a cluster's slot map,
//! the master the Sentinels name) and replaces the link when that changes (a failover), or
//! when the link keeps failing while a fresh connection gets answers (a partition healed, a
//! client stuck in its own recovery). Each replacement wakes whoever waits for a fresh link
//! (store operations retrying, the bus listener, the heartbeats).
//!
//! It looks every `topology_interval` (a cluster or Sentinel), and at once when a command
//! fails, then every [`FAST`] while the link fails (one fixed node: only then). A look is
//! one `CLUSTER SLOTS` on a connection it keeps, or one Sentinel lookup, or one `PING` on a
//! fresh connection.

use std::time::{Duration, Instant};

use futures_util::FutureExt as _;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Value};

use super::link::Conn;
use super::target::{Kind, Target, connect_timeout, node_url, timed_out};

/// How often the supervisor looks while the link fails, and the least time between looks.
pub(super) const FAST: Duration = Duration::from_millis(200);

/// Where the target is: what routing depends on (compared between looks), and the masters
/// to open a cluster link on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Topology {
    routing: Vec<String>,
    masters: Vec<String>,
    /// A cluster's slot ranges, and whether each has a replica (to wait for).
    replicated: Vec<(u16, u16, bool)>,
}

/// What a probe keeps between looks: a connection to one cluster node.
#[derive(Default)]
struct Probe {
    conn: Option<MultiplexedConnection>,
}

fn probe_config(timeout: Duration) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(connect_timeout(timeout)))
        .set_response_timeout(Some(connect_timeout(timeout)))
}

/// `CLUSTER SLOTS` as a topology: each range's master (`host:port`), sorted.
async fn cluster_slots(
    conn: &mut MultiplexedConnection,
    auth: Option<&str>,
) -> redis::RedisResult<Topology> {
    let v: Value = redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await?;
    let bad = || redis::RedisError::from((redis::ErrorKind::Parse, "unexpected CLUSTER SLOTS"));
    let Value::Array(ranges) = v else {
        return Err(bad());
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let mut routing = Vec::new();
    let mut masters = Vec::new();
    let mut replicated = Vec::new();
    for r in ranges {
        let Value::Array(r) = r else {
            return Err(bad());
        };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(m))) =
            (r.first(), r.get(1), r.get(2))
        else {
            return Err(bad());
        };
        let (Some(host), Some(Value::Int(port))) = (m.first().and_then(text), m.get(1)) else {
            return Err(bad());
        };
        routing.push(format!("{start}-{end}@{host}:{port}"));
        replicated.push((*start as u16, *end as u16, r.len() > 3));
        let url = node_url(auth, &host, *port as u16);
        if !masters.contains(&url) {
            masters.push(url);
        }
    }
    if routing.is_empty() {
        return Err(bad());
    }
    routing.sort();
    masters.sort();
    Ok(Topology {
        routing,
        masters,
        replicated,
    })
}

impl Probe {
    /// Where the target is now, or why that cannot be told.
    async fn look(&mut self, target: &Target) -> redis::RedisResult<Topology> {
        let timeout = target.store_timeout();
        match &target.kind {
            Kind::Node(client) => {
                let mut c = client
                    .get_multiplexed_async_connection_with_config(&probe_config(timeout))
                    .await?;
                redis::cmd("PING").query_async::<Value>(&mut c).await?;
                Ok(Topology {
                    routing: Vec::new(),
                    masters: Vec::new(),
                    replicated: Vec::new(),
                })
            }
            Kind::Sentinel { .. } => {
                let master = target.resolve_master().await?;
                Ok(Topology {
                    routing: vec![master.get_connection_info().addr().to_string()],
                    masters: Vec::new(),
                    replicated: Vec::new(),
                })
            }
            Kind::Cluster { .. } => {
                let auth = target.cluster_auth();
                if let Some(c) = self.conn.as_mut() {
                    match cluster_slots(c, auth.as_deref()).await {
                        Ok(t) => return Ok(t),
                        Err(_) => self.conn = None,
                    }
                }
                // Every known node at once: the first to answer is kept for the next looks.
                let config = probe_config(timeout);
                let attempts: Vec<_> = target
                    .cluster_candidates()
                    .into_iter()
                    .map(|url| {
                        let (config, auth) = (config.clone(), auth.clone());
                        async move {
                            let client = redis::Client::open(url.as_str())?;
                            let mut c = client
                                .get_multiplexed_async_connection_with_config(&config)
                                .await?;
                            let t = cluster_slots(&mut c, auth.as_deref()).await?;
                            Ok::<_, redis::RedisError>((c, t))
                        }
                        .boxed()
                    })
                    .collect();
                if attempts.is_empty() {
                    return Err(timed_out("no cluster node to ask"));
                }
                let ((c, t), _) = futures_util::future::select_ok(attempts).await?;
                self.conn = Some(c);
                Ok(t)
            }
        }
    }
}

/// Whether every master of `t` answers a `PING` on a fresh connection (a cluster whose
/// link fails for a reason a new link would not fix, a master down, does not).
async fn masters_answer(t: &Topology, timeout: Duration) -> bool {
    let config = probe_config(timeout);
    let pings = t.masters.iter().map(|url| {
        let config = config.clone();
        async move {
            let client = redis::Client::open(url.as_str())?;
            let mut c = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("PING").query_async::<Value>(&mut c).await
        }
    });
    futures_util::future::join_all(pings)
        .await
        .iter()
        .all(Result::is_ok)
}

/// Watches the target and replaces `conn`'s link when needed (see the module); runs until
/// aborted. `interval` is how often a cluster or Sentinel target is looked at while all is
/// well.
pub(super) async fn supervise(target: std::sync::Arc<Target>, conn: Conn, interval: Duration) {
    let mut probe = Probe::default();
    let mut known: Option<Topology> = None;
    let mut last_look = Instant::now();
    let mut last_replace = Instant::now();
    let mut first = true;
    loop {
        if !first {
            let failing = conn.failing_for().is_some();
            if target.is_node() && !failing {
                conn.failed().await;
            } else {
                let wait = if failing { FAST } else { interval };
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = conn.failed() => {}
                }
            }
            let since = last_look.elapsed();
            if since < FAST {
                tokio::time::sleep(FAST - since).await;
            }
        }
        first = false;
        last_look = Instant::now();
        let budget = target.store_timeout();
        let looked = tokio::time::timeout(budget, probe.look(&target)).await;
        let Ok(Ok(found)) = looked else {
            continue; // Nothing answers: nothing better to connect to.
        };
        target.learn_masters(found.masters.clone());
        if target.is_cluster() {
            conn.set_replicated(found.replicated.clone());
        }
        let moved = known.as_ref().is_some_and(|k| k.routing != found.routing);
        // A link that still fails while fresh connections get answers (the look's own; on a
        // cluster, every master's) is replaced, not more than once a second: a rebuilt link
        // needs a moment to prove itself.
        let mut broken = conn.failing_for().is_some_and(|d| d >= FAST)
            && last_replace.elapsed() >= Duration::from_secs(1);
        if broken && target.is_cluster() {
            broken = tokio::time::timeout(budget, masters_answer(&found, budget))
                .await
                .unwrap_or(false);
        }
        if known.is_none() && !broken {
            known = Some(found);
            continue;
        }
        if !moved && !broken {
            continue;
        }
        let built = tokio::time::timeout(budget, target.shared()).await;
        if let Ok(Ok(link)) = built {
            conn.replace(link);
            last_replace = Instant::now();
            known = Some(found);
        }
    }
}
