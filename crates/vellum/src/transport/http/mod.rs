//! Streamable HTTP, server side: one endpoint for both protocol eras.
//!
//! ```text
//! request ─► SecurityLayer (Host, Origin, CORS) ─► method ─► body (limit, JSON-RPC decode)
//!         ─► era routing: modern header/_meta │ Mcp-Session-Id │ initialize │ stateless
//!         ─► the server core (Session::begin / Exchange::sessionless, one dispatch path)
//!         ─► one writer: JSON body or SSE stream
//! ```
//!
//! Each stage is a file that imports the next (`endpoint.rs` names them in order).
//!
//! - [`StreamableHttpHandler`]: the endpoint, a tower `Service` (usable from hyper or axum).
//! - [`SecurityLayer`]: its Host/Origin checks and CORS as a tower layer, for the
//!   authorization layer and for anything else served beside the endpoint.
//! - [`StreamableHttpOptions`]: every option of the Go SDK's handler, and a few more.
//! - [`serve`]`(listener, handler)`: the accept loop, with the right socket settings, on TCP
//!   or a Unix socket; [`Serve`]'s builder methods add a layer, TLS (`TlsConfig`, feature
//!   `tls`), the limits of its connections ([`ConnectionLimits`]) and a graceful shutdown.
//!
//! Every rejection and its HTTP status and JSON-RPC code are listed in
//! `docs/http-status.md`.
//!
//! Not here: the client side of Streamable HTTP ([`crate::transport::http_client`]).

mod answer_budget;
mod body;
mod body_reader;
mod caching;
mod client_address;
mod cluster;
mod connection_limits;
mod connection_table;
mod connection_task;
mod cors;
mod endpoint;
mod get;
pub mod headers;
mod health;
mod listener;
mod live_streams;
mod metrics;
mod modern_headers;
mod mount;
mod options;
mod post;
mod post_events;
mod rate_limit;
mod rejection;
mod respond;
mod response;
mod resume_stream;
mod security;
mod security_layer;
mod serve;
mod session_caps;
mod session_hooks;
mod session_routing;
mod session_table;
mod sse_writer;
mod state;
#[cfg(feature = "tls")]
mod tls;
mod trace;
mod trace_context;

pub use body::ResponseBody;
pub use client_address::{ClientAddresses, ForwardedHeader};
pub use connection_limits::ConnectionLimits;
pub use endpoint::{HandlerFuture, StreamableHttpHandler};
pub use health::{
    Health, HealthBody, HealthFuture, HealthLayer, HealthService, READINESS_CHECK_TIMEOUT,
};
pub use listener::Listener;
#[cfg(feature = "metrics")]
pub use metrics::{describe_metrics, names as metric_names};
#[cfg(feature = "auth")]
pub(crate) use mount::well_known_not_found;
pub use options::{DEFAULT_SHUTDOWN_GRACE, StreamableHttpOptions};
pub use rate_limit::RateLimits;
#[cfg(feature = "auth")]
pub(crate) use rejection::too_many_auth_failures;
pub use security::{ConnectionInfo, CrossOriginProtection, is_loopback_host};
pub use security_layer::{SecurityBody, SecurityFuture, SecurityLayer, SecurityService};
#[cfg(feature = "http2")]
pub use serve::{
    H2_KEEP_ALIVE, H2_MAX_CONCURRENT_STREAMS, H2_MAX_HEADER_LIST_BYTES,
    H2_MAX_LOCAL_ERROR_RESET_STREAMS, H2_MAX_PENDING_ACCEPT_RESET_STREAMS,
};
pub use serve::{Layered, Serve, ServeFuture, ServeLayer, local_addr, serve};
#[cfg(feature = "tls")]
pub use tls::TlsConfig;
