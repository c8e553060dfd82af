//! The gateway: a server whose requests are served by another MCP server (feature `client`).
//!
//! ```text
//! front: Server (any transport: Streamable HTTP, stdio)      backend: Client (stdio child, HTTP)
//!   a session's initialize ─────────► open a link for it ──► spawn / connect, initialize with
//!   every other request ──── forward ─► the link's client ──►   the client's own params
//!   progress, logs, questions ◄──────── the link routes ◄──── what the backend sends
//! ```
//!
//! A [`Gateway`] is an [`Upstream`]: attached to a [`Server`], it receives every request the
//! server does not answer itself (see [`Upstream`]) and forwards it through a
//! [`Client`](crate::client::Client) to
//! its [`Backend`]: a stdio server it runs ([`Backend::Stdio`], one process per legacy
//! session by default) or a remote Streamable HTTP server ([`Backend::Http`], one upstream
//! session per legacy session). The server's own transport and layers stay in front: serve it
//! with the Streamable HTTP handler and every option of that transport (auth, TLS, rate
//! limits, metrics, health, session stores, caching) applies to the backend's tools; serve it
//! on stdio and a desktop host reaches a remote server (what `vellum connect` does).
//!
//! Era translation is the client core's and the server core's: the client probes the backend
//! and speaks its era, the server frames each answer for its client's era (a 2026-07-28
//! client's `server/discover` is answered from a 2025-era backend's `initialize`). The
//! backend's questions (sampling, elicitation, roots) reach the client as requests (legacy)
//! or input rounds (2026-07-28); progress, logs and list changes are passed on; cancellation
//! goes both ways. See `docs/gateway.md`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use vellum::gateway::{Backend, ChildCommand, Gateway, GatewayOptions};
//! use vellum::prelude::*;
//!
//! let child = ChildCommand::from_command_line("npx -y @modelcontextprotocol/server-everything")?;
//! let gateway = Gateway::new(Backend::Stdio(child), GatewayOptions::default());
//! let server = gateway.server(Implementation::new("my-gateway", "1.0"), ServerOptions::default());
//! let handler = StreamableHttpHandler::for_server(server, StreamableHttpOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//! vellum::transport::http::serve(listener, handler).await?;
//! gateway.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## Layout
//! - this file: [`Gateway`], [`GatewayOptions`], the [`Upstream`] implementation.
//! - `backends`: every backend connection, when each opens and closes, the limits.
//! - `forward`: one request through a link; `link`: one backend connection and where what it
//!   sends goes; `backend`: what a backend is and how a connection to it opens.

mod backend;
mod backends;
mod era;
mod forward;
mod link;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

pub use backend::{Backend, ChildCommand};

use crate::client::ProtocolChoice;
use crate::protocol::{
    ErrorObject, Implementation, InitializeParams, InitializeResult, Notification, RawJson, methods,
};
use crate::server::{ForwardedRequest, HandlerError, Server, ServerOptions, SessionRef, Upstream};
use backends::Backends;

/// How a [`Gateway`] runs its backends. Every field's default is what
/// `GatewayOptions::default()` gives.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Share a pool of this many backend connections between every request, instead of one
    /// per legacy session (for backends that keep no per-client state). Requests of
    /// 2026-07-28 clients and of stateless servers always use the pool (of one without this).
    /// Default: none.
    pub shared_backends: Option<usize>,
    /// The most backend connections (child processes, upstream sessions) open at once;
    /// sessions beyond it are refused. Default [`GatewayOptions::DEFAULT_MAX_BACKENDS`].
    pub max_backends: usize,
    /// How long a backend may take to start and finish its handshake. Default 60 s.
    pub start_timeout: Duration,
    /// How long a forwarded call waits for the backend's answer (its progress restarts the
    /// wait). Default 300 s.
    pub call_timeout: Duration,
    /// Which era to speak to the backend. Default [`ProtocolChoice::Auto`] (probe).
    pub protocol: ProtocolChoice,
    /// The longest line a stdio backend may write; a longer one (or one that is not JSON-RPC)
    /// ends that backend. Default 16 MiB.
    pub max_line_bytes: usize,
    /// Who the gateway is to shared backends (a session's own backend sees the session's
    /// client). Default `vellum-gateway` and this crate's version.
    pub client_info: Implementation,
}

impl GatewayOptions {
    /// The default of [`max_backends`](Self::max_backends): 100.
    pub const DEFAULT_MAX_BACKENDS: usize = 100;
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            shared_backends: None,
            max_backends: Self::DEFAULT_MAX_BACKENDS,
            start_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(300),
            protocol: ProtocolChoice::Auto,
            max_line_bytes: crate::transport::stdio::DEFAULT_MAX_LINE_BYTES,
            client_info: Implementation::new("vellum-gateway", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// A gateway to one backend MCP server: attach it to a [`Server`] (or build one with
/// [`Gateway::server`]) and serve that server on any transport. Cheap to clone; clones share
/// the backends.
#[derive(Clone)]
pub struct Gateway {
    backends: Arc<Backends>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("backend", &self.backends.backend)
            .field("open", &self.backends.count())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway to `backend`. Nothing starts until a request needs it (or
    /// [`start`](Self::start)).
    pub fn new(backend: Backend, options: GatewayOptions) -> Gateway {
        Gateway {
            backends: Backends::new(backend, options),
        }
    }

    /// Makes `server` forward to this gateway ([`Server::set_upstream`]); false when the
    /// server already had an upstream (then nothing changed). Attach one server per gateway.
    pub fn attach(&self, server: &Server) -> bool {
        let _ = self.backends.server.set(server.downgrade());
        server.set_upstream(Arc::new(self.clone()))
    }

    /// A server with this identity and options that forwards to this gateway.
    pub fn server(&self, info: Implementation, options: ServerOptions) -> Server {
        let server = Server::new(info, options);
        self.attach(&server);
        server
    }

    /// With shared backends, opens the whole pool now (so the first requests find it
    /// ready, and a backend that cannot start is reported at once); otherwise does nothing.
    pub async fn start(&self) -> Result<(), crate::error::Error> {
        if self.backends.shared() {
            self.backends
                .fill_pool()
                .await
                .map_err(crate::error::Error::rpc)?;
        }
        Ok(())
    }

    /// How many backend connections are open (or opening) now.
    pub fn open_backends(&self) -> usize {
        self.backends.count()
    }

    /// Closes every backend connection (stdio children are shut down the spec's way).
    pub async fn shutdown(&self) {
        self.backends.close_all().await;
    }
}

/// `{}`: the answer to what a shared backend does not need to hear.
fn empty() -> RawJson {
    RawJson::empty_object()
}

impl Upstream for Gateway {
    fn open_session(
        &self,
        session: SessionRef,
        params: InitializeParams,
    ) -> BoxFuture<'static, Result<InitializeResult, ErrorObject>> {
        let backends = self.backends.clone();
        Box::pin(async move {
            let link = if backends.shared() {
                backends.pool_link().await?
            } else {
                backends.session_link(&session, Some(params)).await?
            };
            link.info()
                .cloned()
                .ok_or_else(|| ErrorObject::internal("the backend connection is not open"))
        })
    }

    fn describe(&self) -> BoxFuture<'static, Result<InitializeResult, ErrorObject>> {
        let backends = self.backends.clone();
        Box::pin(async move {
            let link = backends.pool_link().await?;
            link.info()
                .cloned()
                .ok_or_else(|| ErrorObject::internal("the backend connection is not open"))
        })
    }

    fn forward(
        &self,
        request: ForwardedRequest,
    ) -> BoxFuture<'static, Result<RawJson, HandlerError>> {
        let backends = self.backends.clone();
        Box::pin(async move {
            let session = request.context.session();
            let link = backends.link_for(session.as_ref()).await?;
            if link.session().is_none() {
                // A shared backend hears of the session state once for every client: the
                // first subscription and the last unsubscription of a resource, and no log
                // level (it logs everything; each request keeps what its client asked for).
                match request.context.method() {
                    methods::LOGGING_SET_LEVEL => return Ok(empty()),
                    m @ (methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE) => {
                        let uri = request
                            .params
                            .as_ref()
                            .and_then(|p| p.parse::<crate::protocol::SubscribeParams>().ok())
                            .map(|p| p.uri)
                            .unwrap_or_default();
                        if !backends.count_watch(&uri, m == methods::RESOURCES_SUBSCRIBE) {
                            return Ok(empty());
                        }
                    }
                    _ => {}
                }
            }
            if let Some(client) = link.client().filter(|c| c.is_modern())
                && let Some(answer) = link
                    .listens()
                    .serve(client, request.context.method(), request.params.as_ref())
                    .await
            {
                return answer;
            }
            forward::forward(link, request, backends.options.call_timeout).await
        })
    }

    fn notification(&self, session: Option<&SessionRef>, notification: &Notification) {
        let Some(session) = session else { return };
        if self.backends.shared() {
            // One client's roots are not a shared backend's business.
            return;
        }
        let (backends, session) = (self.backends.clone(), session.clone());
        let method = notification.method.clone();
        let params = notification
            .params
            .as_ref()
            .and_then(|p| p.parse::<serde_json::Value>().ok());
        tokio::spawn(async move {
            if let Ok(link) = backends.session_link(&session, None).await
                && let Some(client) = link.client()
                && let Err(e) = client.send_notification(&method, params).await
            {
                tracing::debug!(target: "vellum::gateway", "{method} not passed on: {e}");
            }
        });
    }

    fn session_closed(&self, session: &SessionRef) {
        self.backends.session_closed(session);
    }

    fn param_headers(&self, tool: &str) -> Option<Arc<[crate::protocol::ParamHeader]>> {
        self.backends.param_headers(tool)
    }

    fn watch_resource(&self, uri: &str, watching: bool) {
        if !self.backends.count_watch(uri, watching) {
            return;
        }
        let (backends, uri) = (self.backends.clone(), uri.to_owned());
        tokio::spawn(async move {
            let method = if watching {
                methods::RESOURCES_SUBSCRIBE
            } else {
                methods::RESOURCES_UNSUBSCRIBE
            };
            let Ok(link) = backends.pool_link().await else {
                return;
            };
            let Some(client) = link.client().cloned() else {
                return;
            };
            let mut params = serde_json::Map::new();
            params.insert("uri".into(), uri.into());
            let failed = if client.is_modern() {
                let raw = RawJson::from_value(&params).ok();
                match link.listens().serve(&client, method, raw.as_ref()).await {
                    Some(Err(e)) => Some(e.to_string()),
                    _ => None,
                }
            } else {
                let opts = crate::client::CallOptions::default();
                client
                    .request_raw(method, params, opts)
                    .await
                    .err()
                    .map(|e| e.to_string())
            };
            if let Some(e) = failed {
                tracing::debug!(target: "vellum::gateway", "{method} on {}: {e}", link.label());
            }
        });
    }
}
