//! The client side of Streamable HTTP, for both eras, with the deprecated 2024-11-05
//! HTTP+SSE transport as a fallback.
//!
//! ```text
//! send(request) ─► POST (Accept: JSON and SSE; session id; MCP-Protocol-Version;
//!                  modern: Mcp-Method, Mcp-Name, Mcp-Param-*)
//!                  ├─ JSON body ─────────────────────────────► recv()
//!                  └─ SSE body ─► events ───────────────────► recv()
//!                        └ broken before the response (legacy): GET + Last-Event-ID,
//!                          after `retry` / backoff with jitter, at most N attempts
//! session_started ─► GET standalone stream, awaited until answered (reopened when it
//!                   ends; 405 = none offered)
//! close ─► DELETE the session (bounded)
//! ```
//!
//! A 404 to a request that carried a session id becomes
//! [`TransportError::SessionExpired`]; the client then re-initialises and retries. A 400,
//! 404 or 405 to `initialize` makes the transport try the old HTTP+SSE transport (a GET whose
//! first event names the POST endpoint) before giving up. Modern requests are cancelled by
//! closing their stream, as the 2026-07-28 spec says; legacy ones by the
//! `notifications/cancelled` the client sends.
//!
//! ## Layout
//! - this file: [`StreamableHttpClientTransport`] and its [`Transport`] implementation.
//! - `shared`: the state the background tasks share, and the headers of every request.
//! - `post`: the POST of one message and what its answer carries.
//! - `response_stream`, `standalone_stream`: the SSE answer of a POST (with resumption) and
//!   the session's GET stream; `event_reader`: parsing SSE within a byte budget.
//! - `response`: bounded bodies, error details, reqwest errors as [`TransportError`]s.
//! - `http_sse_fallback`: the 2024-11-05 transport; `client_options`: the settings.

mod authorize;
mod client_options;
mod event_reader;
mod http_sse_fallback;
mod post;
mod response;
mod response_stream;
mod shared;
mod standalone_stream;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use http::{HeaderName, HeaderValue, StatusCode};
use tokio_util::sync::CancellationToken;

pub use client_options::{HttpClientOptions, ReconnectOptions};

use self::http_sse_fallback::send as send_by_fallback;
use self::post::{cancelled_id, post_one_way, request};
use self::shared::Shared;
use self::standalone_stream::standalone;
use crate::client::transport::{Incoming, OutgoingKind, OutgoingMessage, Transport};
use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::error::TransportError;
use crate::protocol::methods;
use crate::sync::{lock, read, write};

/// A URL for messages and logs: scheme, host, port and path, with any credentials and the
/// query (which may carry tokens or session ids) cut out.
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (mut kept, cut) = (&rest[..end], end < rest.len());
    let authority_end = kept.find('/').unwrap_or(kept.len());
    let credentials = kept[..authority_end].rfind('@');
    if let Some(at) = credentials {
        kept = &kept[at + 1..];
    }
    let mut out = String::with_capacity(url.len());
    if let Some(s) = scheme {
        out.push_str(s);
        out.push_str("://");
    }
    if credentials.is_some() {
        out.push_str("…@");
    }
    out.push_str(kept);
    if cut {
        out.push_str("?…");
    }
    out
}

/// A Streamable HTTP client transport for one MCP endpoint.
#[derive(Clone)]
pub struct StreamableHttpClientTransport {
    shared: Arc<Shared>,
    /// Stops the background streams when the last handle is dropped without `close`.
    _alive: Arc<tokio_util::sync::DropGuard>,
}

impl std::fmt::Debug for StreamableHttpClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpClientTransport")
            .field("url", &redact_url(self.shared.url.as_str()))
            .finish_non_exhaustive()
    }
}

impl StreamableHttpClientTransport {
    /// A transport for the MCP endpoint at `url`, with default options.
    pub fn new(url: &str) -> Result<Self, ConfigError> {
        Self::with_options(url, HttpClientOptions::default())
    }

    /// A transport for `url` with `options` (headers, a custom reqwest client, timeouts,
    /// reconnection).
    pub fn with_options(url: &str, mut options: HttpClientOptions) -> Result<Self, ConfigError> {
        // The text shows the URL without its query and credentials, which may be secrets.
        let invalid = |reason: String| {
            ConfigError::from(ConfigKind::EndpointUrl {
                shown: redact_url(url),
                reason,
            })
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid("the scheme must be http or https".into()));
        }
        options.mark_credentials_sensitive();
        let http = match &options.client {
            Some(c) => c.clone(),
            None => {
                crate::transport::install_crypto_provider();
                reqwest::Client::builder()
                    .connect_timeout(options.connect_timeout)
                    .read_timeout(options.read_timeout)
                    .build()
                    .map_err(|e| ConfigError::with_source(ConfigKind::HttpClient, e))?
            }
        };
        let shared = Arc::new(Shared::new(http, parsed, options));
        Ok(StreamableHttpClientTransport {
            _alive: Arc::new(shared.stop.clone().drop_guard()),
            shared,
        })
    }

    /// Adds a header to every request (e.g. `Authorization: Bearer …`).
    pub fn with_header(self, name: HeaderName, value: HeaderValue) -> Self {
        // Options are read-only once shared; rebuild with the header added.
        let mut options = self.shared.options.clone();
        options.headers.insert(name, value);
        match Self::with_options(self.shared.url.as_str(), options) {
            Ok(t) => t,
            Err(_) => self,
        }
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        self.shared.session_id()
    }
}

impl Transport for StreamableHttpClientTransport {
    fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.stop.is_cancelled() {
                return Err(TransportError::Closed);
            }
            let fallback = read(&shared.fallback).clone();
            if let Some(fallback) = fallback {
                return send_by_fallback(&fallback, shared, message).await;
            }
            match &message.kind {
                OutgoingKind::Request(id) => {
                    let id = id.clone();
                    let this = shared.clone();
                    // Registered until the answer is read, or the request is cancelled (its
                    // task aborted, which closes the stream).
                    let started = shared.inflight.spawn(&id, async move {
                        let stop = this.stop.clone();
                        tokio::select! {
                            () = request(&this, message) => {}
                            () = stop.cancelled() => {}
                        }
                    });
                    started.map_err(|_| TransportError::Protocol {
                        detail: format!("request id {id} is already waiting for its answer"),
                    })
                }
                OutgoingKind::Notification
                    if message.method.as_deref() == Some(methods::CANCELLED) =>
                {
                    // Closing the request's stream: the modern cancellation, and the end of a
                    // legacy stream nobody reads any more.
                    if let Some(id) = cancelled_id(&message.bytes) {
                        shared.inflight.cancel(&id);
                    }
                    if message.modern {
                        return Ok(());
                    }
                    post_one_way(shared, &message).await
                }
                _ => post_one_way(shared, &message).await,
            }
        })
    }

    fn recv(&self) -> BoxFuture<'_, Option<Incoming>> {
        Box::pin(async move {
            let mut rx = self.shared.rx.lock().await;
            tokio::select! {
                i = rx.recv() => i,
                () = self.shared.stop.cancelled() => None,
            }
        })
    }

    fn session_started(&self, protocol_version: &str) -> BoxFuture<'_, ()> {
        let shared = &self.shared;
        *write(&shared.version) = Some(protocol_version.to_owned());
        let fallback = read(&shared.fallback).is_some();
        let opened = (shared.options.standalone_stream
            && shared.session_id().is_some()
            && !fallback)
            .then(|| {
                let token = lock(&shared.session_stop).clone();
                let (tx, rx) = tokio::sync::oneshot::channel();
                tokio::spawn(standalone(shared.clone(), token, tx));
                rx
            });
        let wait = shared.options.connect_timeout;
        Box::pin(async move {
            if let Some(rx) = opened {
                // Any outcome will do (answered, refused, the task gone): only the order
                // matters, and a silent server costs at most the connect timeout.
                let _ = tokio::time::timeout(wait, rx).await;
            }
        })
    }

    fn session_reset(&self) {
        let shared = &self.shared;
        shared.set_session(None);
        let old = std::mem::replace(&mut *lock(&shared.session_stop), CancellationToken::new());
        old.cancel();
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.stop.is_cancelled() {
                return;
            }
            lock(&shared.session_stop).cancel();
            shared.inflight.cancel_all();
            let fallback = read(&shared.fallback).clone();
            if let Some(f) = fallback {
                f.close();
            }
            if let Some(delete) = shared.delete() {
                let sent = authorize::send_request(shared, delete);
                match tokio::time::timeout(shared.options.close_timeout, sent).await {
                    Ok(Ok(r))
                        if r.status().is_success()
                            || r.status() == StatusCode::METHOD_NOT_ALLOWED => {}
                    Ok(Ok(r)) => tracing::debug!("DELETE of the session answered {}", r.status()),
                    Ok(Err(e)) => {
                        tracing::debug!("DELETE of the session failed: {}", crate::error::chain(&e))
                    }
                    Err(_) => tracing::debug!("DELETE of the session timed out"),
                }
            }
            shared.stop.cancel();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_texts_lose_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:pw@mcp.example.com:8443/mcp?key=s3cret#x"),
            "https://…@mcp.example.com:8443/mcp?…"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8000/mcp"),
            "http://127.0.0.1:8000/mcp"
        );
        assert_eq!(redact_url("not a url?token=t"), "not a url?…");
        let e = StreamableHttpClientTransport::new("ftp://h/p?token=s3cret").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
