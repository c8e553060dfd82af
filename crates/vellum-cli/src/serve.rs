//! `vellum serve`: the one place where command-line flags become handler options.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use tower_layer::{Identity, Stack};
use vellum::transport::http::{
    ConnectionLimits, CrossOriginProtection, Health, ServeLayer, StreamableHttpHandler,
    StreamableHttpOptions, TlsConfig,
};
use vellum_demos::{DEMOS, Demo};

use crate::redis_flags::RedisPool;
use crate::stores::StoreFlags;

/// Parses `--server NAME` into one of [`DEMOS`], listing them all in `--help`.
#[derive(Debug, Clone, Copy)]
struct DemoParser;

impl TypedValueParser for DemoParser {
    type Value = &'static Demo;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let names = PossibleValuesParser::new(DEMOS.iter().map(|d| d.name));
        let name = names.parse_ref(cmd, arg, value)?;
        // Only a listed name gets here, so the lookup finds it.
        vellum_demos::demo(&name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            DEMOS
                .iter()
                .map(|d| PossibleValue::new(d.name).help(d.about)),
        ))
    }
}

/// Flags of `vellum serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Read flags from this TOML file: each key is a flag without its `--` (`addr =
    /// "0.0.0.0:8000"`, `stateless = true`, `trusted-origin = ["https://a.example"]`). Flags
    /// on the command line and environment variables override it; an unknown key is an error.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Print the effective configuration (every key, its value and where it came from;
    /// secrets masked) in the format of `--config`, and exit.
    #[arg(long)]
    print_config: bool,
    /// Address to listen on (port 0 picks a free port; the start line shows it).
    #[arg(long, default_value = "127.0.0.1:8000")]
    addr: String,
    /// Serve on a Unix socket at this path instead of TCP.
    #[arg(long, value_name = "PATH", conflicts_with = "addr")]
    unix: Option<std::path::PathBuf>,
    /// Serve over stdin/stdout (newline-delimited JSON-RPC) instead of HTTP, as desktop hosts
    /// launch servers; logs go to stderr.
    #[arg(long, conflicts_with_all = ["addr", "unix"])]
    stdio: bool,
    /// The demo server.
    #[arg(long, value_parser = DemoParser, default_value = "hello-world")]
    server: &'static Demo,
    /// With `--server bench`: this many extra tools to list (`filler_00000`, …).
    #[arg(long, value_name = "N", default_value_t = 0)]
    bench_tools: usize,
    /// No sessions: every request stands alone (server→client requests fail at once).
    #[arg(long)]
    stateless: bool,
    /// Answer with one JSON body instead of an SSE stream (upgraded to SSE when a handler
    /// emits notifications first).
    #[arg(long)]
    json_response: bool,
    #[command(flatten)]
    endpoint: crate::endpoint_flags::EndpointArgs,
    /// Per-request logging of this handler to stderr: a level (error, warn, info, debug,
    /// trace) or `off`.
    #[arg(long, value_name = "LEVEL|off", default_value = "off")]
    log: String,
    /// Keep every store in this Redis: sessions and the bus, SSE events, tasks, rate-limit
    /// buckets and DPoP proofs (what several instances behind one load balancer share):
    /// one node (`redis://HOST:PORT`) or a Redis Cluster
    /// (`redis-cluster://HOST:PORT[,HOST:PORT...]`). Each store's own flag overrides it.
    #[arg(
        long = "redis",
        value_name = "redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]",
        value_parser = crate::stores::parse_redis_url
    )]
    redis_url: Option<String>,
    /// Keep SSE events for `Last-Event-ID` resumption: `memory`, `memory:BYTES`, or a
    /// Redis URL shared by several instances: one node (`redis://HOST:PORT`) or a Redis
    /// Cluster (`redis-cluster://HOST:PORT[,HOST:PORT...]`, any nodes of it as seeds).
    /// Default: `--redis`, else none.
    #[arg(
        long,
        value_name = "memory[:BYTES]|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    event_store: Option<String>,
    /// Share sessions with other instances (and survive restarts) through Redis:
    /// `redis://HOST:PORT` or `redis-cluster://HOST:PORT[,HOST:PORT...]` (the same URL as
    /// `--event-store` shares one connection); `memory` keeps them in this process.
    /// Default: `--redis`, else memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    session_store: Option<String>,
    /// Keep tasks where every instance finds them: `memory` (this process; the default) or
    /// `redis://HOST:PORT` or `redis-cluster://HOST:PORT[,HOST:PORT...]`, so any instance
    /// answers tasks/get, tasks/update, tasks/cancel, tasks/result and tasks/list (the same
    /// URL as the other stores shares one connection). Default: `--redis`, else memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    task_store: Option<String>,
    /// How Redis operations are bounded and failovers followed.
    #[command(flatten)]
    redis: crate::redis_flags::RedisArgs,
    /// With a Redis task store: a running task whose instance sent no heartbeat for this
    /// long is failed (the instance died).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "5s")]
    task_heartbeat_window: Duration,
    /// Close sessions idle for this long (e.g. `30s`, `5m`); open streams count as activity.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    session_timeout: Option<Duration>,
    /// Accept any Host header on loopback connections (turns off the DNS-rebinding defence).
    #[arg(long)]
    disable_localhost_protection: bool,
    /// Accept this Host on loopback connections besides loopback names: the public name a
    /// reverse proxy on this machine forwards with (e.g. `mcp.example.com`); repeatable.
    #[arg(long, value_name = "HOST")]
    allowed_host: Vec<String>,
    /// Trust cross-origin requests from this origin (`scheme://host[:port]`); repeatable.
    #[arg(long, value_name = "ORIGIN")]
    trusted_origin: Vec<String>,
    /// Cross-origin protection with the default policy (the default).
    #[arg(long, conflicts_with = "no_cross_origin_protection")]
    cross_origin_protection: bool,
    /// Turn cross-origin protection off (a present, foreign `Origin` still gets 403).
    #[arg(long)]
    no_cross_origin_protection: bool,
    /// The largest request body accepted (413 beyond it).
    #[arg(long, value_name = "BYTES", default_value_t = StreamableHttpOptions::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// The whole request body must arrive within this time after its headers (408 and the
    /// connection closed otherwise; `0s` turns it off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "30s")]
    body_timeout: Duration,
    /// The slowest a request body may arrive, in bytes per second on average after 5 s
    /// (408 and the connection closed otherwise; 0 = no minimum).
    #[arg(long, value_name = "BYTES_PER_SEC", default_value_t = StreamableHttpOptions::DEFAULT_MIN_BODY_RATE)]
    min_body_rate: u64,
    /// The most bytes buffered for request bodies across all connections (the first 64 KiB
    /// of each not counted); bodies past it get 503 with Retry-After (0 = no cap).
    #[arg(long, value_name = "BYTES", default_value_t = StreamableHttpOptions::DEFAULT_MAX_BUFFERED_BODY_BYTES)]
    max_buffered_body_bytes: usize,
    /// On a non-loopback address without --max-sessions and --session-timeout, do not apply
    /// the network defaults (at most 10,000 sessions, idle ones closed after 30 minutes).
    #[arg(long)]
    no_network_defaults: bool,
    /// The most live sessions (503 with Retry-After beyond it).
    #[arg(long, value_name = "N")]
    max_sessions: Option<usize>,
    /// Answer CORS requests (preflights, exposed `Mcp-Session-Id`) from the trusted origins.
    #[arg(long)]
    cors: bool,
    /// The most requests one session may have in flight (429 beyond it; 0 = no limit).
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_in_flight: usize,
    /// The most sessions one authenticated principal may hold (503 beyond it).
    #[arg(long, value_name = "N")]
    max_sessions_per_principal: Option<usize>,
    /// Close sessions that never send `notifications/initialized` within this time
    /// (`0s` turns it off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    initialize_timeout: Duration,
    /// Interval of SSE keep-alive comments (`0s` turns them off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "15s")]
    sse_keep_alive: Duration,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs `--tls-key`.
    /// `SIGHUP` reloads both files without dropping connections.
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        conflicts_with = "unix"
    )]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Serve the health probes under this prefix (`/ops` gives `/ops/healthz` and
    /// `/ops/readyz`).
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "",
        conflicts_with = "no_health"
    )]
    health_path: String,
    /// Serve no health probes (`/healthz` alive, `/readyz` ready) beside the endpoint.
    #[arg(long)]
    no_health: bool,
    /// On SIGTERM, answer `/readyz` with 503 and refuse new sessions (503 + Retry-After)
    /// for this long while still serving the open ones (so load balancers stop routing
    /// here), then close the listener.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "0s")]
    drain_grace: Duration,
    /// Once the listener has closed, how long requests still running get to finish before
    /// their sessions are closed.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "10s")]
    request_grace: Duration,
    /// Once the listener has closed, how long GET and listen streams stay open before they
    /// end with a `retry` hint (at most `--request-grace`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "0s")]
    stream_grace: Duration,
    /// Limit each caller (an authenticated principal, else a client IP address) to this
    /// rate: `N/s`, `N/m` or `N/h`; every request to the endpoint takes a token, 429 with
    /// Retry-After beyond it.
    #[arg(long, value_name = "N/s", value_parser = parse_rate)]
    rate_limit: Option<f64>,
    /// The burst a quiet caller may send at once under `--rate-limit` (default: one second's
    /// worth, at least 1).
    #[arg(long, value_name = "N", requires = "rate_limit")]
    rate_burst: Option<u32>,
    /// Limit each caller's requests of one JSON-RPC method (repeatable): `METHOD=N/s` (or
    /// `N/m`, `N/h`), bursts of one second's worth (at least 1); every request of a POST,
    /// batch entries each, takes a token, 429 with Retry-After beyond it.
    #[arg(long, value_name = "METHOD=N/s", value_parser = parse_named_rate)]
    rate_limit_method: Vec<(String, f64)>,
    /// Limit each caller's `tools/call` requests of one tool (repeatable): `NAME=N/s` (or
    /// `N/m`, `N/h`), bursts of one second's worth (at least 1), besides any
    /// `--rate-limit-method tools/call=...`.
    #[arg(long, value_name = "NAME=N/s", value_parser = parse_named_rate)]
    rate_limit_tool: Vec<(String, f64)>,
    /// Hold the rate limit across instances through Redis (`redis://HOST:PORT` or
    /// `redis-cluster://…`; the same URL as `--session-store` shares one connection);
    /// `memory`: each instance limits alone. Default: `--redis`, else memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    rate_limit_store: Option<String>,
    /// Serve Prometheus metrics (operation and session durations, sessions, GET streams,
    /// refusals, event-store appends) at `http://ADDR/metrics`, on a listener of its own.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<String>,
    /// Sign and verify 2026-07-28 `requestState` with the keys of this file: one secret per
    /// line, the first signs, every line verifies (rotate by adding a new first line on every
    /// instance, later dropping the old one). Give every instance behind one load balancer
    /// the same file; without it each instance has a random key of its own.
    #[arg(long, value_name = "PATH")]
    request_state_key_file: Option<std::path::PathBuf>,
    /// How long 2026-07-28 clients may keep the four lists (`ttlMs`, and `Cache-Control:
    /// max-age` on a JSON answer, with an `ETag` for `If-None-Match`). Default: 0s.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    list_ttl: Option<Duration>,
    /// How long 2026-07-28 clients may keep a `resources/read` result. Default: 0s.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    read_ttl: Option<Duration>,
    /// Who may reuse the lists and reads: `public` (shared caches too) or `private` (one
    /// authorization context; use it when answers differ per caller).
    /// Default: the server's own (`public` for the demos).
    #[arg(long, value_name = "SCOPE", value_parser = ["public", "private"])]
    cache_scope: Option<String>,
    /// Export each request's span over OTLP/HTTP (protobuf) to the collector at this base
    /// URL (`http://collector:4318`; spans go to `/v1/traces`), its parent the caller's W3C
    /// trace context; spans still queued are posted at shutdown.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// The `service.name` of the exported spans.
    #[arg(
        long,
        value_name = "NAME",
        env = "OTEL_SERVICE_NAME",
        default_value = "vellum"
    )]
    otlp_service_name: String,
    #[command(flatten)]
    connections: crate::connection_flags::ConnectionArgs,
    #[command(flatten)]
    auth: Box<crate::auth_flags::AuthArgs>,
}

/// Builds the chosen demo server (`--bench-tools` only shapes the bench server).
fn build_server(args: &ServeArgs) -> anyhow::Result<vellum::server::Server> {
    let name = args.server.name;
    if args.bench_tools > 0 && name != "bench" {
        bail!("--bench-tools needs --server bench");
    }
    let server = if name == "bench" {
        vellum_demos::bench::bench_server_with(args.bench_tools)
    } else {
        (args.server.build)()
    };
    let server = server.with_context(|| format!("cannot build the {name} server"))?;
    if let Some(path) = &args.request_state_key_file {
        server.set_request_state_key(vellum::server::RequestStateKey::from_key_file(path)?);
    }
    set_cache_hints(args, &server);
    Ok(server)
}

/// `--list-ttl`, `--read-ttl` and `--cache-scope` as the server's cache hints (what a flag
/// does not name stays as the server has it).
fn set_cache_hints(args: &ServeArgs, server: &vellum::server::Server) {
    use vellum::protocol::{CacheHint, CacheScope};
    use vellum::server::Cached;
    let scope = args.cache_scope.as_deref().map(|s| match s {
        "private" => CacheScope::Private,
        _ => CacheScope::Public,
    });
    for result in Cached::ALL {
        let ttl = if result == Cached::ResourcesRead {
            args.read_ttl
        } else {
            args.list_ttl
        };
        if ttl.is_none() && scope.is_none() {
            continue;
        }
        let current = server.cache_hint(result);
        server.set_cache_hint(
            result,
            CacheHint {
                ttl_ms: ttl.map_or(current.ttl_ms, |t| {
                    u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
                }),
                scope: scope.unwrap_or(current.scope),
            },
        );
    }
}

/// `N/s`, `N/m`, `N/h` (or a bare `N`, per second) as tokens per second.
fn parse_rate(s: &str) -> Result<f64, String> {
    let (n, per) = s.split_once('/').unwrap_or((s, "s"));
    let n: f64 = n
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected N/s, N/m or N/h"))?;
    let secs = match per.trim() {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        other => return Err(format!("{s:?}: unknown unit {other:?} (s, m or h)")),
    };
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{s:?}: the rate must be above zero"));
    }
    Ok(n / secs)
}

/// `NAME=N/s` (or `N/m`, `N/h`): a method or tool name and its rate per second.
fn parse_named_rate(s: &str) -> Result<(String, f64), String> {
    // The rate has no `=`; a name might.
    let (name, rate) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=N/s"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{s:?}: the name before `=` is empty"));
    }
    Ok((name.to_owned(), parse_rate(rate)?))
}

/// A bucket of `rate` per second holding one second's worth (at least one token).
fn one_second_burst(rate: f64) -> vellum::store::RateLimit {
    vellum::store::RateLimit::new(rate, rate.ceil().max(1.0) as u32)
}

/// Maps the flags to handler options (the only place that does).
async fn options(
    args: &ServeArgs,
    server: &vellum::server::Server,
    logger: Option<tracing::Dispatch>,
    redis: &mut RedisPool,
) -> anyhow::Result<StreamableHttpOptions> {
    let mut o = StreamableHttpOptions::default();
    let stores = args.stores();
    o.stateless = args.stateless;
    o.json_response = args.json_response;
    args.endpoint.apply(&mut o);
    o.logger = logger;
    o.event_store = match stores.event_store() {
        Some(spec) => Some(crate::stores::event_store(spec, redis).await?),
        None => None,
    };
    if let Some(url) = stores.session_store()? {
        let r = redis.get(url).await?;
        o.session_store = Some(Arc::new(r.session_store()));
        o.bus = Some(Arc::new(r.bus()));
    }
    if let Some(url) = stores.task_store()? {
        let r = redis.get(url).await?;
        server.set_task_store(Arc::new(r.task_store(args.task_heartbeat_window)));
    }
    o.session_timeout = args.session_timeout;
    o.disable_localhost_protection = args.disable_localhost_protection;
    o.allowed_hosts = args.allowed_host.clone();
    let mut cop = if args.no_cross_origin_protection {
        CrossOriginProtection::disabled()
    } else {
        CrossOriginProtection::default()
    };
    for origin in &args.trusted_origin {
        cop.add_trusted_origin(origin)?;
    }
    o.cross_origin_protection = Some(cop);
    o.max_body_bytes = args.max_body_bytes;
    o.body_timeout = (!args.body_timeout.is_zero()).then_some(args.body_timeout);
    o.min_body_rate = (args.min_body_rate > 0).then_some(args.min_body_rate);
    o.max_buffered_body_bytes =
        (args.max_buffered_body_bytes > 0).then_some(args.max_buffered_body_bytes);
    o.max_sessions = args.max_sessions;
    o.sse_keep_alive = (!args.sse_keep_alive.is_zero()).then_some(args.sse_keep_alive);
    o.cors = args.cors;
    o.max_in_flight_per_session = (args.max_in_flight > 0).then_some(args.max_in_flight);
    o.max_sessions_per_principal = args.max_sessions_per_principal;
    o.initialize_timeout = (!args.initialize_timeout.is_zero()).then_some(args.initialize_timeout);
    if let Some(rate) = args.rate_limit {
        o.rate_limit = Some(match args.rate_burst {
            Some(burst) => vellum::store::RateLimit::new(rate, burst),
            None => one_second_burst(rate),
        });
    }
    let mut limits = vellum::transport::http::RateLimits::new();
    for (method, rate) in &args.rate_limit_method {
        limits = limits.method(method.clone(), one_second_burst(*rate));
    }
    for (tool, rate) in &args.rate_limit_tool {
        limits = limits.tool(tool.clone(), one_second_burst(*rate));
    }
    o.rate_limits = limits;
    let limited = o.rate_limit.is_some() || !o.rate_limits.is_empty();
    if let Some(url) = stores.rate_limit_store(limited)? {
        let r = redis.get(url).await?;
        o.rate_limiter = Some(Arc::new(r.rate_limiter()));
    }
    o.request_grace = args.request_grace;
    o.stream_grace = args.stream_grace;
    Ok(o)
}

impl ServeArgs {
    /// The store flags, `--redis` filling in those not given.
    fn stores(&self) -> StoreFlags<'_> {
        StoreFlags {
            redis: self.redis_url.as_deref(),
            event_store: self.event_store.as_deref(),
            session_store: self.session_store.as_deref(),
            task_store: self.task_store.as_deref(),
            rate_limit_store: self.rate_limit_store.as_deref(),
            dpop_replay: self.auth.dpop_replay(),
        }
    }
}

/// Readiness: not draining, and every Redis connection answering.
fn health(redis: RedisPool) -> Health {
    redis
        .into_connections()
        .into_iter()
        .fold(Health::new(), |h, r| {
            h.with_check("redis", move || {
                let r = r.clone();
                async move { r.ping().await.map_err(|e| e.to_string()) }
            })
        })
}

/// SIGTERM (or Ctrl-C), then `/readyz` 503 and new sessions refused for `grace` while
/// serving on. Quiet without a grace: stderr stays for what the operator asked to see.
async fn drained(health: Health, handler: StreamableHttpHandler, grace: Duration) {
    shutdown_signal().await;
    health.start_draining();
    handler.start_draining();
    if grace.is_zero() {
        return;
    }
    eprintln!(
        "draining: /readyz answers 503, new sessions are refused, stopping in {}",
        humantime::format_duration(grace)
    );
    tokio::time::sleep(grace).await;
    eprintln!("stopping: streams end with retry, in-flight requests finish");
}

/// Serves over TLS when configured, the handler inside `layer`, within the connection
/// limits.
async fn serve_tcp(
    listener: tokio::net::TcpListener,
    tls: Option<TlsConfig>,
    limits: ConnectionLimits,
    handler: StreamableHttpHandler,
    layer: impl ServeLayer,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut serving = vellum::transport::http::serve(listener, handler)
        .layer(layer)
        .connection_limits(limits);
    if let Some(tls) = tls {
        serving = serving.tls(tls);
    }
    serving.with_graceful_shutdown(shutdown).await
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The session cap of a server on a network address that names none.
const NETWORK_MAX_SESSIONS: usize = 10_000;
/// The idle timeout of a server on a network address that names none.
const NETWORK_SESSION_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A server reachable from the network with neither a session cap nor an idle timeout
/// would keep every session anyone opens: it gets both (unless `--no-network-defaults`).
/// Returns the line that says so, printed after the start line.
fn network_defaults(
    args: &ServeArgs,
    addr: std::net::SocketAddr,
    o: &mut StreamableHttpOptions,
) -> Option<String> {
    if addr.ip().is_loopback()
        || args.no_network_defaults
        || args.max_sessions.is_some()
        || args.session_timeout.is_some()
        || o.stateless
    {
        return None;
    }
    o.max_sessions = Some(NETWORK_MAX_SESSIONS);
    o.session_timeout = Some(NETWORK_SESSION_TIMEOUT);
    Some(format!(
        "network defaults: {addr} is not loopback and no --max-sessions or --session-timeout \
         was given: at most {NETWORK_MAX_SESSIONS} sessions, idle ones closed after 30m \
         (--no-network-defaults turns this off)"
    ))
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let (logger, otel) = crate::telemetry::logger(
        &args.log,
        args.otlp_endpoint.as_deref(),
        &args.otlp_service_name,
    )?;
    if let Some(url) = &args.otlp_endpoint {
        eprintln!("otlp: exporting request spans to {url}");
    }
    let served = serve(args, logger).await;
    // After the drain: the last requests' spans are queued by now.
    crate::telemetry::shutdown(otel).await;
    served
}

async fn serve(args: ServeArgs, logger: Option<tracing::Dispatch>) -> anyhow::Result<()> {
    // main prints the configuration and exits before this.
    debug_assert!(!args.print_config);
    if let Some(path) = &args.config {
        eprintln!("config: {}", path.display());
    }
    let server = build_server(&args)?;
    if args.stdio {
        eprintln!("stdio MCP: serving on stdin/stdout");
        vellum::transport::stdio::serve_stdio(server)
            .await
            .context("serving on stdio failed")?;
        return Ok(());
    }
    let mut redis = RedisPool::new(&args.redis, args.session_timeout);
    let mut options = options(&args, &server, logger, &mut redis).await?;
    // The DPoP replay cache connects now, so readiness watches its Redis too.
    let dpop_replay = match args.stores().dpop_replay()? {
        Some(url) if args.auth.enabled() => Some(redis.get(url).await?),
        _ => None,
    };
    let health = health(redis);
    if let Some(addr) = &args.metrics_addr {
        let bound = crate::metrics_endpoint::serve(addr).await?;
        eprintln!("metrics: http://{bound}/metrics");
    }
    if let Some(path) = &args.unix {
        let handler = StreamableHttpHandler::for_server(server, options);
        if args.auth.enabled() {
            bail!("--auth-* flags need TCP (--addr), not --unix");
        }
        #[cfg(unix)]
        {
            let _ = std::fs::remove_file(path);
            // Bind before announcing: a client may connect as soon as it reads the line.
            let listener = tokio::net::UnixListener::bind(path)
                .with_context(|| format!("cannot listen on {}", path.display()))?;
            eprintln!("streamable HTTP MCP: unix:{}", path.display());
            eprintln!("{}", crate::endpoint_flags::options_line(handler.options()));
            vellum::transport::http::serve(listener, handler)
                .connection_limits(args.connections.limits())
                .with_graceful_shutdown(shutdown_signal())
                .await
                .with_context(|| format!("cannot serve on {}", path.display()))?;
            return Ok(());
        }
        #[cfg(not(unix))]
        bail!("--unix needs a Unix system");
    }
    let tls = tls_config(&args)?;
    let limits = args.connections.limits();
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = listener.local_addr()?;
    let defaults = network_defaults(&args, addr, &mut options);
    // Printed after the start line (and the network defaults line, if any).
    let defaults = defaults
        .into_iter()
        .chain([crate::endpoint_flags::options_line(&options)]);
    let auth_checks = options.clone();
    let handler = StreamableHttpHandler::for_server(server, options);
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Held for the life of the server: reloads the certificate on SIGHUP.
    #[cfg(unix)]
    let _reload = match &tls {
        Some(t) => Some(
            t.reload_on_sighup(|r| match r {
                Ok(()) => eprintln!("TLS certificate reloaded"),
                Err(e) => eprintln!("TLS certificate reload failed, keeping the current one: {e}"),
            })
            .context("cannot listen for SIGHUP")?,
        ),
        None => None,
    };
    let shutdown = drained(health.clone(), handler.clone(), args.drain_grace);
    let probes = (!args.no_health).then(|| health.layer_at(&args.health_path));
    if args.auth.enabled() {
        let auth = args.auth.layer(addr, &auth_checks, dpop_replay).await?;
        eprintln!(
            "streamable HTTP MCP: {scheme}://{addr} (OAuth: {})",
            auth.metadata_url()
        );
        defaults.for_each(|d| eprintln!("{d}"));
        // The probes sit outside authorization: probes carry no token.
        match probes {
            Some(p) => {
                serve_tcp(
                    listener,
                    tls,
                    limits,
                    handler,
                    Stack::new(auth, p),
                    shutdown,
                )
                .await?
            }
            None => serve_tcp(listener, tls, limits, handler, auth, shutdown).await?,
        }
        return Ok(());
    }
    eprintln!("streamable HTTP MCP: {scheme}://{addr}");
    defaults.for_each(|d| eprintln!("{d}"));
    match probes {
        Some(p) => serve_tcp(listener, tls, limits, handler, p, shutdown).await?,
        None => serve_tcp(listener, tls, limits, handler, Identity::new(), shutdown).await?,
    }
    Ok(())
}

/// `--tls-cert` and `--tls-key`, loaded (clap makes sure both or neither are given).
fn tls_config(args: &ServeArgs) -> anyhow::Result<Option<TlsConfig>> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Ok(Some(
            TlsConfig::from_pem_files(cert, key).context("--tls-cert/--tls-key")?,
        )),
        _ => Ok(None),
    }
}
