//! The flags of every command that serves over Streamable HTTP (`vellum serve`, `vellum
//! proxy`): one struct, flattened into each, so that an option exists once and means the same
//! everywhere. `http_serve.rs` turns them into handler options.

use std::time::Duration;

use clap::Args;
use vellum::transport::http::StreamableHttpOptions;

use crate::stores::StoreFlags;

/// The flags of every command that serves over Streamable HTTP (`vellum serve`, `vellum
/// proxy`): where, how, and every option of the handler.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// Read flags from this TOML file: each key is a flag without its `--` (`addr =
    /// "0.0.0.0:8000"`, `stateless = true`, `trusted-origin = ["https://a.example"]`). Flags
    /// on the command line and environment variables override it; an unknown key is an error.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Print the effective configuration (every key, its value and where it came from;
    /// secrets masked) in the format of `--config`, and exit.
    #[arg(long)]
    pub(crate) print_config: bool,
    /// Address to listen on (port 0 picks a free port; the start line shows it).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub(crate) addr: String,
    /// Serve on a Unix socket at this path instead of TCP.
    #[arg(long, value_name = "PATH", conflicts_with = "addr")]
    pub(crate) unix: Option<std::path::PathBuf>,
    /// No sessions: every request stands alone (server→client requests fail at once).
    #[arg(long)]
    pub(crate) stateless: bool,
    /// Answer with one JSON body instead of an SSE stream (upgraded to SSE when a handler
    /// emits notifications first).
    #[arg(long)]
    pub(crate) json_response: bool,
    #[command(flatten)]
    pub(crate) endpoint: crate::endpoint_flags::EndpointArgs,
    /// Per-request logging of this handler to stderr: a level (error, warn, info, debug,
    /// trace) or `off`.
    #[arg(long, value_name = "LEVEL|off", default_value = "off")]
    pub(crate) log: String,
    /// Keep every store in this Redis: sessions and the bus, SSE events, tasks, rate-limit
    /// buckets and DPoP proofs (what several instances behind one load balancer share):
    /// one node (`redis://HOST:PORT`) or a Redis Cluster
    /// (`redis-cluster://HOST:PORT[,HOST:PORT...]`). Each store's own flag overrides it.
    #[arg(
        long = "redis",
        value_name = "redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]",
        value_parser = crate::stores::parse_redis_url
    )]
    pub(crate) redis_url: Option<String>,
    /// Keep SSE events for `Last-Event-ID` resumption: `memory`, `memory:BYTES`, or a
    /// Redis URL shared by several instances: one node (`redis://HOST:PORT`) or a Redis
    /// Cluster (`redis-cluster://HOST:PORT[,HOST:PORT...]`, any nodes of it as seeds).
    /// Default: `--redis`, else none.
    #[arg(
        long,
        value_name = "memory[:BYTES]|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    pub(crate) event_store: Option<String>,
    /// Share sessions with other instances (and survive restarts) through Redis:
    /// `redis://HOST:PORT` or `redis-cluster://HOST:PORT[,HOST:PORT...]` (the same URL as
    /// `--event-store` shares one connection); `memory` keeps them in this process.
    /// Default: `--redis`, else memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    pub(crate) session_store: Option<String>,
    /// Keep tasks where every instance finds them: `memory` (this process; the default) or
    /// `redis://HOST:PORT` or `redis-cluster://HOST:PORT[,HOST:PORT...]`, so any instance
    /// answers tasks/get, tasks/update, tasks/cancel, tasks/result and tasks/list (the same
    /// URL as the other stores shares one connection). Default: `--redis`, else memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    pub(crate) task_store: Option<String>,
    /// How Redis operations are bounded and failovers followed.
    #[command(flatten)]
    pub(crate) redis: crate::redis_flags::RedisArgs,
    /// With a Redis task store: a running task whose instance sent no heartbeat for this
    /// long is failed (the instance died).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "5s")]
    pub(crate) task_heartbeat_window: Duration,
    /// Close sessions idle for this long (e.g. `30s`, `5m`); open streams count as activity.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) session_timeout: Option<Duration>,
    /// Accept any Host header on loopback connections (turns off the DNS-rebinding defence).
    #[arg(long)]
    pub(crate) disable_localhost_protection: bool,
    /// Accept this Host on loopback connections besides loopback names: the public name a
    /// reverse proxy on this machine forwards with (e.g. `mcp.example.com`); repeatable.
    #[arg(long, value_name = "HOST")]
    pub(crate) allowed_host: Vec<String>,
    /// Trust cross-origin requests from this origin (`scheme://host[:port]`); repeatable.
    #[arg(long, value_name = "ORIGIN")]
    pub(crate) trusted_origin: Vec<String>,
    /// Cross-origin protection with the default policy (the default).
    #[arg(long, conflicts_with = "no_cross_origin_protection")]
    pub(crate) cross_origin_protection: bool,
    /// Turn cross-origin protection off (a present, foreign `Origin` still gets 403).
    #[arg(long)]
    pub(crate) no_cross_origin_protection: bool,
    /// The largest request body accepted (413 beyond it).
    #[arg(long, value_name = "BYTES", default_value_t = StreamableHttpOptions::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,
    /// The whole request body must arrive within this time after its headers (408 and the
    /// connection closed otherwise; `0s` turns it off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "30s")]
    pub(crate) body_timeout: Duration,
    /// The slowest a request body may arrive, in bytes per second on average after 5 s
    /// (408 and the connection closed otherwise; 0 = no minimum).
    #[arg(long, value_name = "BYTES_PER_SEC", default_value_t = StreamableHttpOptions::DEFAULT_MIN_BODY_RATE)]
    pub(crate) min_body_rate: u64,
    /// The most bytes buffered for request bodies across all connections (the first 64 KiB
    /// of each not counted); bodies past it get 503 with Retry-After (0 = no cap).
    #[arg(long, value_name = "BYTES", default_value_t = StreamableHttpOptions::DEFAULT_MAX_BUFFERED_BODY_BYTES)]
    pub(crate) max_buffered_body_bytes: usize,
    /// On a non-loopback address without --max-sessions and --session-timeout, do not apply
    /// the network defaults (at most 10,000 sessions, idle ones closed after 30 minutes; at
    /// most 100 sessions per client address without authentication).
    #[arg(long)]
    pub(crate) no_network_defaults: bool,
    /// The most live sessions (503 with Retry-After beyond it).
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions: Option<usize>,
    /// Answer CORS requests (preflights, exposed `Mcp-Session-Id`) from the trusted origins.
    #[arg(long)]
    pub(crate) cors: bool,
    /// The most requests one session may have in flight (429 beyond it; 0 = no limit).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub(crate) max_in_flight: usize,
    /// The most sessions one authenticated principal may hold (503 beyond it).
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions_per_principal: Option<usize>,
    /// The most sessions one client address may hold without authentication (503 with the
    /// real wait in Retry-After beyond it; 0 = no cap). Default: 100 on a non-loopback
    /// address (a network default), else no cap.
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions_per_address: Option<usize>,
    /// Believe the forwarded header (`--forwarded-header`) from this proxy (an address or a
    /// CIDR range, repeatable): the client is the rightmost hop that is not a trusted proxy.
    /// From any other peer the header is ignored.
    #[arg(long, value_name = "ADDR|CIDR", value_parser = parse_trusted_proxy)]
    pub(crate) trusted_proxy: Vec<ipnet::IpNet>,
    /// The header a trusted proxy appends the client to: the other one is never read (the
    /// proxy passes the client's own copy of it through).
    #[arg(long, value_name = "HEADER", value_enum, default_value_t = ForwardedHeaderArg::XForwardedFor)]
    pub(crate) forwarded_header: ForwardedHeaderArg,
    /// The leading bits of an IPv6 address that make one client for the per-address limits
    /// (rate limit, sessions, failed authentications); IPv4 addresses count whole.
    #[arg(long, value_name = "BITS", default_value_t = vellum::transport::http::ClientAddresses::DEFAULT_IPV6_PREFIX, value_parser = clap::value_parser!(u8).range(0..=128))]
    pub(crate) ipv6_prefix: u8,
    /// Close sessions that never send `notifications/initialized` within this time
    /// (`0s` turns it off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    pub(crate) initialize_timeout: Duration,
    /// Interval of SSE keep-alive comments (`0s` turns them off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "15s")]
    pub(crate) sse_keep_alive: Duration,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs `--tls-key`.
    /// `SIGHUP` reloads both files without dropping connections.
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        conflicts_with = "unix"
    )]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// Serve the health probes under this prefix (`/ops` gives `/ops/healthz` and
    /// `/ops/readyz`).
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "",
        conflicts_with = "no_health"
    )]
    pub(crate) health_path: String,
    /// Serve no health probes (`/healthz` alive, `/readyz` ready) beside the endpoint.
    #[arg(long)]
    pub(crate) no_health: bool,
    /// On SIGTERM, answer `/readyz` with 503 and refuse new sessions (503 + Retry-After)
    /// for this long while still serving the open ones (so load balancers stop routing
    /// here), then close the listener.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "0s")]
    pub(crate) drain_grace: Duration,
    /// Once the listener has closed, how long requests still running get to finish before
    /// their sessions are closed.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "10s")]
    pub(crate) request_grace: Duration,
    /// Once the listener has closed, how long GET and listen streams stay open before they
    /// end with a `retry` hint (at most `--request-grace`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "0s")]
    pub(crate) stream_grace: Duration,
    /// Limit each caller (an authenticated principal, else a client IP address) to this
    /// rate: `N/s`, `N/m` or `N/h`; every request to the endpoint takes a token, 429 with
    /// Retry-After beyond it.
    #[arg(long, value_name = "N/s", value_parser = parse_rate)]
    pub(crate) rate_limit: Option<f64>,
    /// The burst a quiet caller may send at once under `--rate-limit` (default: one second's
    /// worth, at least 1).
    #[arg(long, value_name = "N", requires = "rate_limit")]
    pub(crate) rate_burst: Option<u32>,
    /// Limit each caller's requests of one JSON-RPC method (repeatable): `METHOD=N/s` (or
    /// `N/m`, `N/h`), bursts of one second's worth (at least 1); every request of a POST,
    /// batch entries each, takes a token, 429 with Retry-After beyond it.
    #[arg(long, value_name = "METHOD=N/s", value_parser = parse_named_rate)]
    pub(crate) rate_limit_method: Vec<(String, f64)>,
    /// Limit each caller's `tools/call` requests of one tool (repeatable): `NAME=N/s` (or
    /// `N/m`, `N/h`), bursts of one second's worth (at least 1), besides any
    /// `--rate-limit-method tools/call=...`.
    #[arg(long, value_name = "NAME=N/s", value_parser = parse_named_rate)]
    pub(crate) rate_limit_tool: Vec<(String, f64)>,
    /// Hold the rate limit across instances through Redis (`redis://HOST:PORT` or
    /// `redis-cluster://…`; the same URL as `--session-store` shares one connection);
    /// `memory`: each instance limits alone. Default: `--redis`, else memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    pub(crate) rate_limit_store: Option<String>,
    /// The most rate-limit buckets kept in memory (one per client address or principal, and
    /// per limited method or tool): past it, the least recently used are forgotten (they come
    /// back full). A Redis store keeps each bucket until it would be full again.
    #[arg(long, value_name = "N", default_value_t = vellum::store::MemoryRateLimiter::DEFAULT_MAX_KEYS)]
    pub(crate) rate_limit_keys: usize,
    /// Serve Prometheus metrics (operation and session durations, sessions, GET streams,
    /// refusals, event-store appends) at `http://ADDR/metrics`, on a listener of its own.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_addr: Option<String>,
    /// Sign and verify 2026-07-28 `requestState` with the keys of this file: one secret per
    /// line, the first signs, every line verifies (rotate by adding a new first line on every
    /// instance, later dropping the old one). Give every instance behind one load balancer
    /// the same file; without it each instance has a random key of its own.
    #[arg(long, value_name = "PATH")]
    pub(crate) request_state_key_file: Option<std::path::PathBuf>,
    /// How long 2026-07-28 clients may keep the four lists (`ttlMs`, and `Cache-Control:
    /// max-age` on a JSON answer, with an `ETag` for `If-None-Match`). Default: 0s.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) list_ttl: Option<Duration>,
    /// How long 2026-07-28 clients may keep a `resources/read` result. Default: 0s.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) read_ttl: Option<Duration>,
    /// Who may reuse the lists and reads: `public` (shared caches too) or `private` (one
    /// authorization context; use it when answers differ per caller).
    /// Default: the server's own (`public` for the demos).
    #[arg(long, value_name = "SCOPE", value_parser = ["public", "private"])]
    pub(crate) cache_scope: Option<String>,
    /// Export each request's span over OTLP/HTTP (protobuf) to the collector at this base
    /// URL (`http://collector:4318`; spans go to `/v1/traces`), its parent the caller's W3C
    /// trace context; spans still queued are posted at shutdown.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub(crate) otlp_endpoint: Option<String>,
    /// The `service.name` of the exported spans.
    #[arg(
        long,
        value_name = "NAME",
        env = "OTEL_SERVICE_NAME",
        default_value = "vellum"
    )]
    pub(crate) otlp_service_name: String,
    #[command(flatten)]
    pub(crate) connections: crate::connection_flags::ConnectionArgs,
    #[command(flatten)]
    pub(crate) state: crate::state_flags::StateArgs,
    #[command(flatten)]
    pub(crate) auth: Box<crate::auth_flags::AuthArgs>,
}

impl HttpArgs {
    /// Says which config file was read (`main` prints the configuration and exits before a
    /// command runs, for `--print-config`).
    pub(crate) fn announce_config(&self) {
        debug_assert!(!self.print_config);
        if let Some(path) = &self.config {
            eprintln!("config: {}", path.display());
        }
    }

    /// The store flags, `--redis` filling in those not given.
    pub(crate) fn stores(&self) -> StoreFlags<'_> {
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

/// `N/s`, `N/m`, `N/h` (or a bare `N`, per second) as tokens per second.
pub(crate) fn parse_rate(s: &str) -> Result<f64, String> {
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

/// `--forwarded-header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ForwardedHeaderArg {
    /// `X-Forwarded-For` (nginx, AWS ALB, most ingresses).
    XForwardedFor,
    /// `Forwarded` (RFC 7239).
    Forwarded,
}

/// `--trusted-proxy`: an address (`10.0.0.1`, one host) or a range (`10.0.0.0/8`).
pub(crate) fn parse_trusted_proxy(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{s:?}: expected an address or a CIDR range (10.0.0.0/8)"))
}

/// `NAME=N/s` (or `N/m`, `N/h`): a method or tool name and its rate per second.
pub(crate) fn parse_named_rate(s: &str) -> Result<(String, f64), String> {
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
