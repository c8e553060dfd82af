//! [`StreamableHttpOptions`]: every knob of the Streamable HTTP handler, each with the
//! default its zero value gives and the wire effect it has.
//!
//! Not here: the server's own options (`ServerOptions` in the core).

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::ProtocolVersions;
use crate::store::{EventStore, MessageBus, RateLimit, RateLimiter, SessionStore};

use super::{ClientAddresses, RateLimits};

use super::security::CrossOriginProtection;

/// How long a graceful shutdown waits for in-flight requests by default
/// ([`StreamableHttpOptions::request_grace`]).
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Options of [`StreamableHttpHandler`](super::StreamableHttpHandler).
///
/// `StreamableHttpOptions::default()` is the stateful, SSE-answering, secure default: no
/// event store, no idle timeout, localhost and cross-origin protection on.
#[derive(Clone)]
#[non_exhaustive]
pub struct StreamableHttpOptions {
    /// Serve without sessions. No `Mcp-Session-Id` is minted or checked; every legacy
    /// request gets a throwaway session, as if initialized with the version in its
    /// `MCP-Protocol-Version` header (2025-03-26 when absent); requests from the server to
    /// the client fail at once with an error (they cannot be answered); notifications a
    /// handler emits still reach that request's response. GET and DELETE answer 405.
    /// Modern (2026-07-28) requests are stateless in every mode. Default: false.
    pub stateless: bool,
    /// Answer requests with one `application/json` body instead of an SSE stream. A handler
    /// that emits a notification (progress, log, a question to the client) before its result
    /// has its response upgraded to SSE on the spot, so nothing is dropped; a client that did
    /// not accept `text/event-stream` gets those notifications dropped instead.
    /// Default: false (SSE).
    pub json_response: bool,
    /// Where this handler's logs go (a `tracing` dispatcher). `None` means this handler logs
    /// nothing, whatever the global subscriber. Default: `None`.
    pub logger: Option<tracing::Dispatch>,
    /// Stores SSE events so clients can resume a broken stream with `Last-Event-ID`
    /// (legacy versions only). With a store, SSE events carry ids, 2025-11-25 streams start
    /// with a priming event, and a GET with `Last-Event-ID` replays what the client missed on
    /// that stream. Default: none (no ids, no resumption, as in the Go SDK).
    pub event_store: Option<Arc<dyn EventStore>>,
    /// Close sessions idle for this long. In-flight requests and open streams (the GET
    /// stream included) count as activity, so a listening client is never reaped.
    /// Default: none (sessions live until DELETE).
    pub session_timeout: Option<Duration>,
    /// Turn off the DNS-rebinding defence: by default a request that arrives on a loopback
    /// address with a `Host` that is not a loopback name or IP gets 403. Default: false.
    pub disable_localhost_protection: bool,
    /// The address the handler is served on, for the DNS-rebinding defence when you serve
    /// the handler with a server of your own (`axum::serve`, hyper): [`serve`](super::serve)
    /// tells the handler each connection's address, other servers do not, and a handler
    /// that does not know its address judges every request as a loopback one (it cannot
    /// rule the rebinding attack out), so a public `Host` gets 403 saying why. Set it to the
    /// listener's address (`listener.local_addr()`). Default: none.
    pub local_address: Option<std::net::SocketAddr>,
    /// Hosts accepted on a loopback connection besides loopback names: the public names a
    /// reverse proxy on the same machine forwards with (`mcp.example.com`, matched without
    /// the port, ASCII case-insensitively). Only names you serve belong here: each one is a
    /// name a browser page could rebind. Default: none.
    pub allowed_hosts: Vec<String>,
    /// Cross-origin (CSRF) protection, with the semantics of Go's
    /// `http.CrossOriginProtection`. `None` means the default policy, as in the seed. Even
    /// when disabled, a present `Origin` that is neither same-origin nor trusted gets 403
    /// (the spec's rule). Default: the default policy.
    pub cross_origin_protection: Option<CrossOriginProtection>,
    /// The largest request body accepted; larger bodies get 413.
    /// Default: [`StreamableHttpOptions::DEFAULT_MAX_BODY_BYTES`] (4 MiB).
    pub max_body_bytes: usize,
    /// The whole body of a request must have arrived this long after its headers; a slower
    /// one gets 408 and its connection is closed. Default: 30 s. `None`: no deadline.
    pub body_timeout: Option<Duration>,
    /// The slowest a body may arrive, in bytes per second on average, once it has had 5 s
    /// (a client that trickles its body gets 408 and its connection is closed). Default:
    /// [`StreamableHttpOptions::DEFAULT_MIN_BODY_RATE`] (1 KiB/s). `None`: no minimum.
    pub min_body_rate: Option<u64>,
    /// The most bytes buffered for request bodies being received, across every connection.
    /// Bodies count from their first byte but one per connection, whose first 64 KiB are not
    /// counted (every connection may buffer that much of its request anyway): an HTTP/1.1
    /// body, alone on its connection, and one body at a time of an HTTP/2 connection (served
    /// by [`serve`](super::serve); on a connection the handler does not know, an HTTP/2 body
    /// has no exemption). A body that would pass it gets 503 with `Retry-After` (an HTTP/1.1
    /// connection is then closed, an HTTP/2 stream reset); once it is spent a new body
    /// without the exemption is refused before any of it is read. Default:
    /// [`StreamableHttpOptions::DEFAULT_MAX_BUFFERED_BODY_BYTES`] (256 MiB). `None`: no cap.
    pub max_buffered_body_bytes: Option<usize>,
    /// The most entries of a JSON-RPC batch (2025-03-26 only); a larger batch gets 400.
    /// Default: [`StreamableHttpOptions::DEFAULT_MAX_BATCH_ENTRIES`] (64).
    pub max_batch_entries: usize,
    /// The most live sessions; an `initialize` beyond it gets 503 with `Retry-After`.
    /// Default: none.
    pub max_sessions: Option<usize>,
    /// Send an SSE comment this often on idle streams so proxies keep them open.
    /// Default: 15 s. `None` disables keep-alives.
    pub sse_keep_alive: Option<Duration>,
    /// The `retry` (reconnect delay) announced on priming events and stream closes.
    /// Default: 1 s.
    pub sse_retry: Duration,
    /// Answer CORS requests from the trusted origins of `cross_origin_protection`: preflight
    /// `OPTIONS` gets 204, responses carry `Access-Control-Allow-Origin` and expose
    /// `Mcp-Session-Id`, `Mcp-Protocol-Version` and `WWW-Authenticate`. Default: false.
    pub cors: bool,
    /// The most requests one session may have in flight, each request of a batch counted;
    /// a POST that would pass it gets 429 with `Retry-After`. A request stops counting when
    /// it is answered, or when the connection that carried it goes.
    /// Default: 256.
    pub max_in_flight_per_session: Option<usize>,
    /// The most live sessions one authenticated caller may hold (see
    /// [`Caller`](crate::server::Caller)); more get 503 with `Retry-After`.
    /// Default: none.
    pub max_sessions_per_principal: Option<usize>,
    /// The most live sessions created without an authenticated caller from one client
    /// address (as `client_addresses` derives it: IPv6 by prefix); more get 503 with
    /// `Retry-After` saying when the soonest of them expires. Default: none
    /// (`vellum serve` sets 100 on a network address).
    pub max_sessions_per_address: Option<usize>,
    /// How a client's address is told (the TCP peer, or what a trusted proxy forwarded)
    /// and keyed (IPv6 by prefix), for every limit counted per address: the rate limit of
    /// a caller without a principal, `max_sessions_per_address`, and the failed
    /// authentications of the authorization layer. Default: no trusted proxy, IPv6 /64.
    pub client_addresses: ClientAddresses,
    /// Close sessions whose client has not sent `notifications/initialized` this long after
    /// `initialize` (abandoned handshakes). Default: 60 s.
    pub initialize_timeout: Option<Duration>,
    /// Where sessions live so that any instance can serve them (and they survive a
    /// restart). Stored sessions expire after `session_timeout` without activity (one hour
    /// when unset). Default: none (sessions live in this process only).
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// The bus to the other instances sharing the session store: answers to server→client
    /// requests, cancellations, standalone-stream messages and session ends reach the
    /// instance that needs them. Default: none.
    pub bus: Option<Arc<dyn MessageBus>>,
    /// On shutdown, how long requests still running get to finish once the listener has
    /// closed; then every session here is closed (what still runs is cancelled).
    /// Default: [`DEFAULT_SHUTDOWN_GRACE`] (10 s).
    pub request_grace: Duration,
    /// On shutdown, how long streams that answer no running request (GET streams,
    /// `subscriptions/listen`) stay open once the listener has closed, before they end
    /// with a `retry` hint (at most `request_grace`). Default: zero (they end at once, so
    /// their clients reconnect elsewhere while in-flight requests finish).
    pub stream_grace: Duration,
    /// A token bucket per caller: per authenticated principal (the [`Caller`] an
    /// authentication layer put on the request), else per client IP address. Every HTTP
    /// request to the endpoint takes a token; without one it gets 429 with `Retry-After`
    /// and a JSON-RPC error, before its body is read. Default: none (no limit).
    ///
    /// [`Caller`]: crate::server::Caller
    pub rate_limit: Option<RateLimit>,
    /// Limits per JSON-RPC method and per tool, each a token bucket per caller (principal,
    /// else client IP): every request of a POST, batch entries each, takes a token from its
    /// method's and its tool's bucket once the body is decoded; beyond one the POST gets 429
    /// with `Retry-After`. Only the names set here have buckets. Default: none.
    pub rate_limits: RateLimits,
    /// Where the buckets of `rate_limit` and `rate_limits` live: [`MemoryRateLimiter`](crate::store::MemoryRateLimiter)
    /// when unset (each instance limits on its own), a Redis one
    /// (`Redis::rate_limiter`, feature `redis`) to hold the limit across instances. A
    /// limiter that fails (Redis unreachable) lets the request through. Default: none.
    pub rate_limiter: Option<Arc<dyn RateLimiter>>,
    /// Serve MCP on this path alone (`/mcp`, compared with the request's path exactly):
    /// any other path gets 404 with a JSON-RPC error naming this one. `None`: every path,
    /// as in the Go SDK (mount the handler where it belongs). Either way a path under
    /// `/.well-known/` gets 404, so that metadata discovery (OAuth, OpenID) finds nothing
    /// here rather than an MCP refusal. Default: none.
    pub path: Option<String>,
    /// The protocol versions this handler accepts (like the Go SDK's
    /// `SupportedProtocolVersions`): a 2026-07-28 request when 2026-07-28 is not among them
    /// gets 400 with -32022 (`data.supported` lists them), an `MCP-Protocol-Version` header
    /// outside them 400, and a legacy `initialize` negotiates within them (the client's
    /// version when listed, else the newest legacy version listed; refused with -32602
    /// when none is). `server/discover` lists them. Default: every version.
    pub protocol_versions: ProtocolVersions,
}

impl StreamableHttpOptions {
    /// The default request body limit: 4 MiB, as in the Go SDK.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;

    /// The default batch entry cap: 64 (clients batch a handful of calls; each entry is a
    /// request the session must track).
    pub const DEFAULT_MAX_BATCH_ENTRIES: usize = 64;

    /// The default whole-body deadline: 30 s.
    pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

    /// The default minimum body rate: 1 KiB/s.
    pub const DEFAULT_MIN_BODY_RATE: u64 = 1024;

    /// The default budget of buffered body bytes across connections: 256 MiB (64 bodies of
    /// the default maximum size).
    pub const DEFAULT_MAX_BUFFERED_BODY_BYTES: usize = 256 << 20;

    /// Sets `local_address`: the address you serve the handler on with a server of your
    /// own.
    #[must_use]
    pub fn local_address(mut self, address: std::net::SocketAddr) -> Self {
        self.local_address = Some(address);
        self
    }

    /// Adds to `allowed_hosts`: a public name a reverse proxy on this machine forwards with.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Sets `stateless`.
    #[must_use]
    pub fn stateless(mut self, on: bool) -> Self {
        self.stateless = on;
        self
    }

    /// Sets `json_response`.
    #[must_use]
    pub fn json_response(mut self, on: bool) -> Self {
        self.json_response = on;
        self
    }

    /// Sets the event store.
    #[must_use]
    pub fn event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.event_store = Some(store);
        self
    }

    /// Sets the idle session timeout.
    #[must_use]
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = Some(timeout);
        self
    }

    /// Shares sessions through a store and a bus (several instances, restarts).
    #[must_use]
    pub fn shared_sessions(
        mut self,
        store: Arc<dyn SessionStore>,
        bus: Arc<dyn MessageBus>,
    ) -> Self {
        self.session_store = Some(store);
        self.bus = Some(bus);
        self
    }

    /// Serves MCP on `path` alone (see [`path`](Self::path)).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Sets the logger.
    #[must_use]
    pub fn logger(mut self, dispatch: tracing::Dispatch) -> Self {
        self.logger = Some(dispatch);
        self
    }
}

impl Default for StreamableHttpOptions {
    fn default() -> Self {
        StreamableHttpOptions {
            stateless: false,
            json_response: false,
            logger: None,
            event_store: None,
            session_timeout: None,
            disable_localhost_protection: false,
            local_address: None,
            allowed_hosts: Vec::new(),
            cross_origin_protection: None,
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            body_timeout: Some(Self::DEFAULT_BODY_TIMEOUT),
            max_batch_entries: Self::DEFAULT_MAX_BATCH_ENTRIES,
            min_body_rate: Some(Self::DEFAULT_MIN_BODY_RATE),
            max_buffered_body_bytes: Some(Self::DEFAULT_MAX_BUFFERED_BODY_BYTES),
            max_sessions: None,
            sse_keep_alive: Some(Duration::from_secs(15)),
            sse_retry: Duration::from_secs(1),
            cors: false,
            max_in_flight_per_session: Some(256),
            max_sessions_per_principal: None,
            max_sessions_per_address: None,
            client_addresses: ClientAddresses::default(),
            initialize_timeout: Some(Duration::from_secs(60)),
            session_store: None,
            bus: None,
            request_grace: DEFAULT_SHUTDOWN_GRACE,
            stream_grace: Duration::ZERO,
            rate_limit: None,
            rate_limits: RateLimits::new(),
            rate_limiter: None,
            path: None,
            protocol_versions: ProtocolVersions::ALL,
        }
    }
}

impl std::fmt::Debug for StreamableHttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpOptions")
            .field("stateless", &self.stateless)
            .field("json_response", &self.json_response)
            .field("logger", &self.logger.is_some())
            .field("event_store", &self.event_store.is_some())
            .field("session_timeout", &self.session_timeout)
            .field(
                "disable_localhost_protection",
                &self.disable_localhost_protection,
            )
            .field("local_address", &self.local_address)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cross_origin_protection", &self.cross_origin_protection)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("body_timeout", &self.body_timeout)
            .field("max_batch_entries", &self.max_batch_entries)
            .field("min_body_rate", &self.min_body_rate)
            .field("max_buffered_body_bytes", &self.max_buffered_body_bytes)
            .field("max_sessions", &self.max_sessions)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .field("sse_retry", &self.sse_retry)
            .field("cors", &self.cors)
            .field("max_in_flight_per_session", &self.max_in_flight_per_session)
            .field(
                "max_sessions_per_principal",
                &self.max_sessions_per_principal,
            )
            .field("max_sessions_per_address", &self.max_sessions_per_address)
            .field("client_addresses", &self.client_addresses)
            .field("initialize_timeout", &self.initialize_timeout)
            .field("session_store", &self.session_store.is_some())
            .field(
                "bus",
                &self.bus.as_ref().map(|b| b.instance_id().to_owned()),
            )
            .field("request_grace", &self.request_grace)
            .field("stream_grace", &self.stream_grace)
            .field("rate_limit", &self.rate_limit)
            .field("rate_limits", &self.rate_limits)
            .field("rate_limiter", &self.rate_limiter)
            .field("path", &self.path)
            .field("protocol_versions", &self.protocol_versions)
            .finish()
    }
}
