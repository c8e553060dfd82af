//! Serving over Streamable HTTP as the flags say: the one place where command-line flags
//! become handler options (`vellum serve` and `vellum proxy` both serve through here).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tower_layer::{Identity, Stack};
use vellum::transport::http::{
    ClientAddresses, ConnectionLimits, CrossOriginProtection, ForwardedHeader, Health, ServeLayer,
    StreamableHttpHandler, StreamableHttpOptions, TlsConfig,
};

use crate::http_args::{ForwardedHeaderArg, HttpArgs};
use crate::redis_flags::RedisPool;

/// `--list-ttl`, `--read-ttl` and `--cache-scope` as the server's cache hints (what a flag
/// does not name stays as the server has it).
fn set_cache_hints(args: &HttpArgs, server: &vellum::server::Server) {
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

/// A bucket of `rate` per second holding one second's worth (at least one token).
fn one_second_burst(rate: f64) -> vellum::store::RateLimit {
    vellum::store::RateLimit::new(rate, rate.ceil().max(1.0) as u32)
}

/// Maps the flags to handler options (the only place that does).
async fn options(
    args: &HttpArgs,
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
    o.max_sessions_per_address = args.max_sessions_per_address.filter(|n| *n > 0);
    o.client_addresses = client_addresses(args);
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
    } else if limited {
        o.rate_limiter = Some(Arc::new(vellum::store::MemoryRateLimiter::with_max_keys(
            args.rate_limit_keys,
        )));
    }
    o.request_grace = args.request_grace;
    o.stream_grace = args.stream_grace;
    Ok(o)
}

/// `--trusted-proxy`, `--forwarded-header` and `--ipv6-prefix`: how per-address limits tell
/// clients apart.
fn client_addresses(args: &HttpArgs) -> ClientAddresses {
    let header = match args.forwarded_header {
        ForwardedHeaderArg::XForwardedFor => ForwardedHeader::XForwardedFor,
        ForwardedHeaderArg::Forwarded => ForwardedHeader::Forwarded,
    };
    args.trusted_proxy.iter().fold(
        ClientAddresses::default()
            .ipv6_prefix(args.ipv6_prefix)
            .forwarded_header(header),
        |clients, proxy| clients.trust_proxy(*proxy),
    )
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

pub(crate) async fn shutdown_signal() {
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
/// The per-address session cap (sessions without authentication) of a server on a network
/// address that names none.
const NETWORK_MAX_SESSIONS_PER_ADDRESS: usize = 100;
/// The idle timeout of a server on a network address that names none.
const NETWORK_SESSION_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A server reachable from the network with neither a session cap nor an idle timeout
/// would keep every session anyone opens: it gets both (unless `--no-network-defaults`).
/// Returns the line that says so, printed after the start line.
fn network_defaults(
    args: &HttpArgs,
    addr: std::net::SocketAddr,
    o: &mut StreamableHttpOptions,
) -> Option<String> {
    if addr.ip().is_loopback() || args.no_network_defaults || o.stateless {
        return None;
    }
    let mut set = Vec::new();
    if args.max_sessions.is_none() && args.session_timeout.is_none() {
        o.max_sessions = Some(NETWORK_MAX_SESSIONS);
        o.session_timeout = Some(NETWORK_SESSION_TIMEOUT);
        set.push(format!(
            "at most {NETWORK_MAX_SESSIONS} sessions, idle ones closed after 30m"
        ));
    }
    if args.max_sessions_per_address.is_none() {
        o.max_sessions_per_address = Some(NETWORK_MAX_SESSIONS_PER_ADDRESS);
        set.push(format!(
            "at most {NETWORK_MAX_SESSIONS_PER_ADDRESS} sessions per client address without \
             authentication"
        ));
    }
    if set.is_empty() {
        return None;
    }
    Some(format!(
        "network defaults: {addr} is not loopback: {} (--no-network-defaults turns this off)",
        set.join("; ")
    ))
}

/// What a command serves, besides its flags.
pub(crate) struct Serving {
    /// The server.
    pub(crate) server: vellum::server::Server,
    /// At most this many sessions whatever the flags say (a proxy with a process per session
    /// caps sessions at its processes).
    pub(crate) session_cap: Option<usize>,
}

/// Serves `serving.server` over Streamable HTTP as `args` say, until SIGTERM or Ctrl-C (and
/// the drain): the one place flags become handler options.
pub(crate) async fn run(serving: Serving, args: &HttpArgs) -> anyhow::Result<()> {
    let (logger, otel) = crate::telemetry::logger(
        &args.log,
        args.otlp_endpoint.as_deref(),
        &args.otlp_service_name,
    )?;
    if let Some(url) = &args.otlp_endpoint {
        eprintln!("otlp: exporting request spans to {url}");
    }
    let served = serve(serving, args, logger).await;
    // After the drain: the last requests' spans are queued by now.
    crate::telemetry::shutdown(otel).await;
    served
}

/// The flags that set the server itself: the request-state keys and the cache hints.
pub(crate) fn configure_server(
    args: &HttpArgs,
    server: &vellum::server::Server,
) -> anyhow::Result<()> {
    if let Some(path) = &args.request_state_key_file {
        server.set_request_state_key(vellum::server::RequestStateKey::from_key_file(path)?);
    }
    set_cache_hints(args, server);
    server.set_limits(args.state.limits());
    Ok(())
}

async fn serve(
    serving: Serving,
    args: &HttpArgs,
    logger: Option<tracing::Dispatch>,
) -> anyhow::Result<()> {
    let Serving {
        server,
        session_cap,
    } = serving;
    configure_server(args, &server)?;
    let mut redis = RedisPool::new(&args.redis, args.session_timeout);
    let mut options = options(args, &server, logger, &mut redis).await?;
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
        cap_sessions(&mut options, session_cap);
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
    let tls = tls_config(args)?;
    let limits = args.connections.limits();
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = listener.local_addr()?;
    let defaults = network_defaults(args, addr, &mut options);
    cap_sessions(&mut options, session_cap);
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
                let layer = Stack::new(auth, p);
                serve_tcp(listener, tls, limits, handler, layer, shutdown).await?
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

/// Caps the sessions at `cap`, whatever the flags and defaults said.
fn cap_sessions(options: &mut StreamableHttpOptions, cap: Option<usize>) {
    if let Some(cap) = cap {
        options.max_sessions = Some(options.max_sessions.map_or(cap, |m| m.min(cap)));
    }
}

/// `--tls-cert` and `--tls-key`, loaded (clap makes sure both or neither are given).
fn tls_config(args: &HttpArgs) -> anyhow::Result<Option<TlsConfig>> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Ok(Some(
            TlsConfig::from_pem_files(cert, key).context("--tls-cert/--tls-key")?,
        )),
        _ => Ok(None),
    }
}
