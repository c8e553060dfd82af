//! [`Inner`]: the state of a Streamable HTTP handler, shared by its clones, and the few
//! questions every stage of a request asks of it (draining? which methods? the event store,
//! what ends a stream, when sessions expire). The stages themselves are free functions of
//! their own files, each taking this state: `endpoint.rs` → `security_layer.rs` →
//! `post.rs` → `session_routing.rs` → `respond.rs` → `post_events.rs` → `sse_writer.rs`.
//!
//! Not here: what a request does (the stages) and the public face of the handler
//! (`endpoint.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::server::Server;
use crate::store::EventStore;

use super::body_reader::BodyBudget;
use super::cluster::Cluster;
use super::options::StreamableHttpOptions;
use super::rate_limit::Limits;
use super::security_layer::SecurityLayer;
use super::session_table::{Expiry, HttpSession, SessionTable};
use super::sse_writer::Stops;

/// How long a stored session lives without activity when `session_timeout` is unset.
const DEFAULT_STORED_SESSION_TTL: Duration = Duration::from_secs(3600);

/// The factory of the servers a handler serves: one per session (stateful), or per request.
pub(super) type Factory = dyn Fn(&http::request::Parts) -> Option<Server> + Send + Sync;

/// The state of a handler, shared by its clones.
pub(super) struct Inner {
    pub(super) factory: Box<Factory>,
    pub(super) options: StreamableHttpOptions,
    /// The Host/Origin checks and CORS, run around every request.
    pub(super) security: SecurityLayer,
    pub(super) sessions: Arc<SessionTable>,
    /// The bytes buffered for bodies being received, across every connection.
    pub(super) bodies: Arc<BodyBudget>,
    pub(super) shutdown: CancellationToken,
    /// Set by `StreamableHttpHandler::start_draining`: new sessions are refused.
    draining: AtomicBool,
    /// The rate limits (`options.rate_limit`, `options.rate_limits`), when any is set.
    pub(super) limits: Option<Limits>,
    /// Whether the bus listener runs.
    listening: AtomicBool,
}

impl Inner {
    /// The state of a handler serving what `factory` returns, with `options`.
    pub(super) fn new(factory: Box<Factory>, options: StreamableHttpOptions) -> Self {
        let cluster = Arc::new(Cluster {
            events: options.event_store.clone(),
            sessions: options.session_store.clone(),
            bus: options.bus.clone(),
            ttl: options
                .session_timeout
                .unwrap_or(DEFAULT_STORED_SESSION_TTL),
        });
        Inner {
            factory,
            security: SecurityLayer::new(&options),
            sessions: Arc::new(SessionTable::new(
                cluster,
                options.max_in_flight_per_session,
                Expiry {
                    idle: options.session_timeout,
                    handshake: options.initialize_timeout,
                },
            )),
            bodies: BodyBudget::new(options.max_buffered_body_bytes),
            limits: Limits::new(
                options.rate_limit,
                &options.rate_limits,
                options.rate_limiter.clone(),
                &options.client_addresses,
            ),
            options,
            shutdown: CancellationToken::new(),
            draining: AtomicBool::new(false),
            listening: AtomicBool::new(false),
        }
    }

    /// Refuses new sessions from now on (see `StreamableHttpHandler::start_draining`).
    pub(super) fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Whether new sessions are refused.
    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// The methods served, for `Allow`.
    pub(super) fn allow(&self) -> &'static str {
        if self.options.stateless {
            "POST"
        } else {
            "GET, POST, DELETE"
        }
    }

    /// The event store, when streams are resumable.
    pub(super) fn store(&self) -> Option<&Arc<dyn EventStore>> {
        self.options.event_store.as_ref()
    }

    /// What ends a stream of this handler (and of `session`) early.
    pub(super) fn stops(&self, session: Option<&HttpSession>) -> Stops {
        Stops {
            shutdown: self.shutdown.clone(),
            session: session.map(|s| s.closed.clone()),
        }
    }

    /// When the sweeper ends idle sessions, and sessions whose `initialize` never came.
    pub(super) fn expiry(&self) -> Expiry {
        Expiry {
            idle: self.options.session_timeout,
            handshake: self.options.initialize_timeout,
        }
    }

    /// Starts the task that receives the other instances' messages (once, with a bus).
    pub(super) fn listen_to_bus(&self) {
        let Some(bus) = &self.options.bus else {
            return;
        };
        if self.listening.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut rx = bus.subscribe();
        let table = Arc::downgrade(&self.sessions);
        tokio::spawn(async move {
            loop {
                let message = match rx.recv().await {
                    Ok(m) => m,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(table) = table.upgrade() else { return };
                table.on_bus(message);
            }
        });
    }
}
