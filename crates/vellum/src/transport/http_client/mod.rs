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
//! session_started ─► GET standalone stream (reopened when it ends; 405 = none offered)
//! close ─► DELETE the session (bounded)
//! ```
//!
//! A 404 to a request that carried a session id becomes
//! [`TransportError::SessionExpired`]; the client then re-initialises and retries. A 400,
//! 404 or 405 to `initialize` makes the transport try the old HTTP+SSE transport (a GET whose
//! first event names the POST endpoint) before giving up. Modern requests are cancelled by
//! closing their stream, as the 2026-07-28 spec says; legacy ones by the
//! `notifications/cancelled` the client sends.

mod legacy_sse;
mod options;
mod sse;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use base64::Engine as _;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use options::{HttpClientOptions, ReconnectOptions};

use self::legacy_sse::LegacySse;
use self::sse::{Cursor, End, EventReader};
use super::http::headers::names;
use crate::client::{
    Incoming, OutgoingKind, OutgoingMessage, Transport, TransportError, transport_decode,
};
use crate::protocol::{CancelledParams, Message, RequestId, methods};
use crate::sync::{lock, read, write};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Why a URL or option could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpClientError {
    /// The URL does not parse, or is not `http`/`https`.
    #[error("invalid MCP endpoint URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (TLS setup).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl From<HttpClientError> for crate::Error {
    fn from(e: HttpClientError) -> Self {
        crate::Error::Transport(e.to_string())
    }
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
            .field("url", &self.shared.url.as_str())
            .finish_non_exhaustive()
    }
}

struct Shared {
    http: reqwest::Client,
    url: reqwest::Url,
    options: HttpClientOptions,
    /// The legacy session id (`Mcp-Session-Id`).
    session: RwLock<Option<String>>,
    /// The negotiated legacy version, for GET and DELETE.
    version: RwLock<Option<String>>,
    tx: mpsc::UnboundedSender<Incoming>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Incoming>>,
    /// Requests whose response is being read: aborting one closes its stream.
    inflight: Mutex<HashMap<RequestId, tokio::task::AbortHandle>>,
    /// Ends everything (close).
    stop: CancellationToken,
    /// Ends the current session's standalone stream.
    session_stop: Mutex<CancellationToken>,
    /// Set once the server turned out to speak only the 2024-11-05 HTTP+SSE transport.
    legacy: RwLock<Option<Arc<LegacySse>>>,
}

impl StreamableHttpClientTransport {
    /// A transport for the MCP endpoint at `url`, with default options.
    pub fn new(url: &str) -> Result<Self, HttpClientError> {
        Self::with_options(url, HttpClientOptions::default())
    }

    /// A transport for `url` with `options` (headers, a custom reqwest client, timeouts,
    /// reconnection).
    pub fn with_options(url: &str, options: HttpClientOptions) -> Result<Self, HttpClientError> {
        let parsed = reqwest::Url::parse(url).map_err(|e| HttpClientError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(HttpClientError::InvalidUrl {
                url: url.to_owned(),
                reason: "the scheme must be http or https".into(),
            });
        }
        let http = match &options.client {
            Some(c) => c.clone(),
            None => reqwest::Client::builder()
                .connect_timeout(options.connect_timeout)
                .read_timeout(options.read_timeout)
                .build()
                .map_err(|e| HttpClientError::Client(e.to_string()))?,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        Ok(StreamableHttpClientTransport {
            _alive: Arc::new(stop.clone().drop_guard()),
            shared: Arc::new(Shared {
                http,
                url: parsed,
                options,
                session: RwLock::new(None),
                version: RwLock::new(None),
                tx,
                rx: tokio::sync::Mutex::new(rx),
                inflight: Mutex::new(HashMap::new()),
                stop,
                session_stop: Mutex::new(CancellationToken::new()),
                legacy: RwLock::new(None),
            }),
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
        read(&self.shared.session).clone()
    }
}

/// A header value for a mirrored field: plain when it is safe visible ASCII, else the
/// `=?base64?…?=` form (SEP-2243).
pub(crate) fn encode_header_value(value: &str) -> String {
    let printable = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = !value.is_empty() && printable && !padded && !sentinel;
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

impl Shared {
    fn session_id(&self) -> Option<String> {
        read(&self.session).clone()
    }

    fn set_session(&self, id: Option<String>) {
        *write(&self.session) = id;
    }

    fn version(&self) -> Option<String> {
        read(&self.version).clone()
    }

    fn deliver(&self, incoming: Incoming) {
        let _ = self.tx.send(incoming);
    }

    fn fail(&self, id: &RequestId, error: TransportError) {
        self.deliver(Incoming::Failed {
            id: id.clone(),
            error,
        });
    }

    /// The headers every request of this session carries.
    fn base_headers(&self, accept: &'static str) -> HeaderMap {
        let mut h = self.options.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(accept));
        h
    }

    /// The POST of one message.
    fn post(&self, message: &OutgoingMessage) -> reqwest::RequestBuilder {
        let mut h = self.base_headers(ACCEPT_BOTH);
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(v) = message
            .protocol_version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            h.insert(names::PROTOCOL_VERSION, v);
        }
        if message.modern {
            if let Some(v) = message
                .method
                .as_deref()
                .and_then(|m| HeaderValue::from_str(&encode_header_value(m)).ok())
            {
                h.insert(names::METHOD, v);
            }
            for (name, value) in &message.mirrors {
                if let (Ok(n), Ok(v)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&encode_header_value(value)),
                ) {
                    h.insert(n, v);
                }
            }
        } else if let Some(v) = self
            .session_id()
            .and_then(|s| HeaderValue::from_str(&s).ok())
        {
            h.insert(names::SESSION_ID, v);
        }
        self.http
            .post(self.url.clone())
            .headers(h)
            .body(message.bytes.clone())
    }

    /// A GET of the standalone stream, or a resumption after `last_event_id`.
    fn get(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let mut h = self.base_headers("text/event-stream");
        if let Some(v) = self
            .session_id()
            .and_then(|s| HeaderValue::from_str(&s).ok())
        {
            h.insert(names::SESSION_ID, v);
        }
        if let Some(v) = self.version().and_then(|s| HeaderValue::from_str(&s).ok()) {
            h.insert(names::PROTOCOL_VERSION, v);
        }
        if let Some(v) = last_event_id.and_then(|s| HeaderValue::from_str(s).ok()) {
            h.insert(names::LAST_EVENT_ID, v);
        }
        self.http.get(self.url.clone()).headers(h)
    }
}

fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

fn connection_error(e: &reqwest::Error) -> TransportError {
    // The source chain says why (refused, reset, TLS); reqwest's top line alone does not.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    TransportError::Connection(text)
}

/// Reads a whole body up to `max` bytes.
async fn read_body(mut resp: reqwest::Response, max: usize) -> Result<Bytes, TransportError> {
    let mut buf = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if buf.len() + c.len() > max {
                    return Err(TransportError::Protocol(format!(
                        "a response body longer than {max} bytes"
                    )));
                }
                buf.extend_from_slice(&c);
            }
            Ok(None) => return Ok(Bytes::from(buf)),
            Err(e) => return Err(connection_error(&e)),
        }
    }
}

/// A short description of an error body for messages: the JSON-RPC error's message, or the
/// start of the text.
fn detail_of(body: &Bytes) -> String {
    if let Ok(crate::protocol::Payload::Single(Message::Response(r))) =
        crate::protocol::decode(body)
        && let Err(e) = r.outcome
    {
        return e.message.into_owned();
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// The JSON-RPC answer to request `id` in an error body, if the body is one.
fn answer_in(body: &Bytes, id: &RequestId) -> Option<Message> {
    match crate::protocol::decode(body) {
        Ok(crate::protocol::Payload::Single(m @ Message::Response(_))) if m.id() == Some(id) => {
            Some(m)
        }
        _ => None,
    }
}

impl Transport for StreamableHttpClientTransport {
    fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.stop.is_cancelled() {
                return Err(TransportError::Closed);
            }
            let legacy = read(&shared.legacy).clone();
            if let Some(legacy) = legacy {
                return legacy.send(shared, message).await;
            }
            match &message.kind {
                OutgoingKind::Request(id) => {
                    let id = id.clone();
                    let this = shared.clone();
                    // The map is locked while the task starts, so its own removal comes after.
                    let mut inflight = lock(&shared.inflight);
                    let key = id.clone();
                    let task = tokio::spawn(async move {
                        let stop = this.stop.clone();
                        tokio::select! {
                            () = request(&this, message) => {}
                            () = stop.cancelled() => {}
                        }
                        lock(&this.inflight).remove(&id);
                    });
                    inflight.insert(key, task.abort_handle());
                    Ok(())
                }
                OutgoingKind::Notification
                    if message.method.as_deref() == Some(methods::CANCELLED) =>
                {
                    // Closing the request's stream: the modern cancellation, and the end of a
                    // legacy stream nobody reads any more.
                    if let Some(id) = cancelled_id(&message.bytes)
                        && let Some(h) = lock(&shared.inflight).remove(&id)
                    {
                        h.abort();
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

    fn session_started(&self, protocol_version: &str) {
        let shared = &self.shared;
        *write(&shared.version) = Some(protocol_version.to_owned());
        let legacy_sse = read(&shared.legacy).is_some();
        if shared.options.standalone_stream && shared.session_id().is_some() && !legacy_sse {
            let token = lock(&shared.session_stop).clone();
            tokio::spawn(standalone(shared.clone(), token));
        }
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
            for (_, h) in lock(&shared.inflight).drain() {
                h.abort();
            }
            let legacy = read(&shared.legacy).clone();
            if let Some(l) = legacy {
                l.close();
            }
            if let Some(id) = shared.session_id() {
                let mut h = shared.base_headers("*/*");
                if let Ok(v) = HeaderValue::from_str(&id) {
                    h.insert(names::SESSION_ID, v);
                }
                if let Some(v) = shared
                    .version()
                    .and_then(|s| HeaderValue::from_str(&s).ok())
                {
                    h.insert(names::PROTOCOL_VERSION, v);
                }
                let delete = shared.http.delete(shared.url.clone()).headers(h).send();
                match tokio::time::timeout(shared.options.close_timeout, delete).await {
                    Ok(Ok(r))
                        if r.status().is_success()
                            || r.status() == StatusCode::METHOD_NOT_ALLOWED => {}
                    Ok(Ok(r)) => tracing::debug!("DELETE of the session answered {}", r.status()),
                    Ok(Err(e)) => tracing::debug!("DELETE of the session failed: {e}"),
                    Err(_) => tracing::debug!("DELETE of the session timed out"),
                }
            }
            shared.stop.cancel();
        })
    }
}

/// The `requestId` of a `notifications/cancelled`.
fn cancelled_id(bytes: &Bytes) -> Option<RequestId> {
    match crate::protocol::decode(bytes) {
        Ok(crate::protocol::Payload::Single(Message::Notification(n))) => n
            .params
            .and_then(|p| p.parse::<CancelledParams>().ok())
            .map(|p| p.request_id),
        _ => None,
    }
}

/// POSTs a notification or a response: 202 (any 2xx) is success.
async fn post_one_way(shared: &Shared, message: &OutgoingMessage) -> Result<(), TransportError> {
    let carried_session = !message.modern && shared.session_id().is_some();
    let resp = shared
        .post(message)
        .send()
        .await
        .map_err(|e| connection_error(&e))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    if status == StatusCode::NOT_FOUND && carried_session {
        return Err(TransportError::SessionExpired);
    }
    let body = read_body(resp, 64 * 1024).await.unwrap_or_default();
    Err(TransportError::Http {
        status: status.as_u16(),
        detail: detail_of(&body),
    })
}

/// Sends one request and delivers everything its response carries.
async fn request(shared: &Arc<Shared>, message: OutgoingMessage) {
    let Some(id) = message.request_id().cloned() else {
        return;
    };
    let carried_session = !message.modern && shared.session_id().is_some();
    let resp = match shared.post(&message).send().await {
        Ok(r) => r,
        Err(e) => return shared.fail(&id, connection_error(&e)),
    };
    let status = resp.status();
    if message.method.as_deref() == Some(methods::INITIALIZE)
        && status.is_success()
        && let Some(sid) = resp
            .headers()
            .get(names::SESSION_ID)
            .and_then(|v| v.to_str().ok())
    {
        shared.set_session(Some(sid.to_owned()));
    }
    if status.is_success() {
        match content_type(&resp).as_str() {
            "text/event-stream" => read_response_stream(shared, resp, &id, message.modern).await,
            "application/json" => match read_body(resp, shared.options.max_message_bytes).await {
                Ok(body) => {
                    for i in transport_decode(&body) {
                        shared.deliver(i);
                    }
                }
                Err(e) => shared.fail(&id, e),
            },
            // 202 with no body: the answer comes on another stream (unusual, but legal in
            // 2025-03-26 batches).
            _ if status == StatusCode::ACCEPTED => {}
            other => shared.fail(
                &id,
                TransportError::Protocol(format!(
                    "a response with Content-Type {other:?} (expected JSON or SSE)"
                )),
            ),
        }
        return;
    }
    if status == StatusCode::NOT_FOUND && carried_session {
        shared.set_session(None);
        return shared.fail(&id, TransportError::SessionExpired);
    }
    let body = read_body(resp, 64 * 1024).await.unwrap_or_default();
    if let Some(answer) = answer_in(&body, &id) {
        // The server's own JSON-RPC error for this request (modern errors carry a status).
        return shared.deliver(Incoming::Message(answer));
    }
    let refused_initialize = message.method.as_deref() == Some(methods::INITIALIZE)
        && matches!(status.as_u16(), 400 | 404 | 405);
    if refused_initialize && shared.options.legacy_sse_fallback {
        match LegacySse::open(shared).await {
            Ok(legacy) => {
                tracing::debug!("the server speaks the 2024-11-05 HTTP+SSE transport; using it");
                *write(&shared.legacy) = Some(legacy.clone());
                if let Err(e) = legacy.send(shared, message).await {
                    shared.fail(&id, e);
                }
                return;
            }
            Err(e) => tracing::debug!("no HTTP+SSE fallback either: {e}"),
        }
    }
    shared.fail(
        &id,
        TransportError::Http {
            status: status.as_u16(),
            detail: detail_of(&body),
        },
    );
}

/// Delivers the events of a POST's SSE answer until the response to `id`; resumes a
/// broken legacy stream with `Last-Event-ID`.
async fn read_response_stream(
    shared: &Arc<Shared>,
    resp: reqwest::Response,
    id: &RequestId,
    modern: bool,
) {
    let mut cursor = Cursor::default();
    let mut reader = EventReader::new(resp, shared.options.max_message_bytes);
    let mut attempt = 0u32;
    loop {
        let end = pump(shared, &mut reader, &mut cursor, Some(id), &mut attempt).await;
        let end = match end {
            Pumped::Answered => return,
            Pumped::Ended(e) => e,
        };
        // Modern streams cannot be resumed: a lost stream is a lost request.
        let why = match &end {
            End::Closed => "the server closed the stream".to_owned(),
            End::Broken(e) => e.clone(),
        };
        if modern || cursor.last_event_id.is_none() {
            return shared.fail(id, TransportError::StreamLost(why));
        }
        match resume(shared, &cursor, &mut attempt).await {
            Ok(r) => reader = EventReader::new(r, shared.options.max_message_bytes),
            Err(e) => return shared.fail(id, TransportError::StreamLost(format!("{why}; {e}"))),
        }
    }
}

enum Pumped {
    /// The response to the awaited request arrived.
    Answered,
    /// The stream ended first.
    Ended(End),
}

/// Delivers events until the stream ends or (when `awaited` is set) its response arrives.
async fn pump(
    shared: &Shared,
    reader: &mut EventReader,
    cursor: &mut Cursor,
    awaited: Option<&RequestId>,
    attempt: &mut u32,
) -> Pumped {
    loop {
        let event = match reader.next(cursor).await {
            Ok(e) => e,
            Err(end) => return Pumped::Ended(end),
        };
        *attempt = 0;
        if event.event.as_deref().is_some_and(|e| e != "message") {
            continue;
        }
        let mut answered = false;
        for i in transport_decode(&Bytes::from(event.data)) {
            if let (Some(want), Incoming::Message(Message::Response(r))) = (awaited, &i)
                && r.id.as_ref() == Some(want)
            {
                answered = true;
            }
            shared.deliver(i);
        }
        if answered {
            return Pumped::Answered;
        }
    }
}

/// Waits (the server's `retry`, else backoff with jitter) and GETs the stream after
/// `cursor`'s last event id.
async fn resume(
    shared: &Shared,
    cursor: &Cursor,
    attempt: &mut u32,
) -> Result<reqwest::Response, String> {
    loop {
        if *attempt >= shared.options.reconnect.max_retries {
            return Err(format!("gave up after {attempt} attempts to resume"));
        }
        let delay = shared.options.reconnect.delay(*attempt, cursor.retry);
        *attempt += 1;
        tokio::time::sleep(delay).await;
        let resp = match shared.get(cursor.last_event_id.as_deref()).send().await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("resuming the stream failed: {e}");
                continue;
            }
        };
        let status = resp.status();
        if status.is_success() && content_type(&resp) == "text/event-stream" {
            return Ok(resp);
        }
        if status.is_client_error() {
            return Err(format!("the server refused to resume (HTTP {status})"));
        }
        tracing::debug!("resuming the stream answered HTTP {status}; retrying");
    }
}

/// The standalone GET stream of a legacy session: the server's requests and notifications
/// outside any call. Reopened (resumed when events had ids) whenever it ends.
async fn standalone(shared: Arc<Shared>, token: CancellationToken) {
    let mut cursor = Cursor::default();
    let mut attempt = 0u32;
    let run = async {
        loop {
            let resp = match shared.get(cursor.last_event_id.as_deref()).send().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!("the standalone stream failed: {e}");
                    if !backoff(&shared, &cursor, &mut attempt).await {
                        return;
                    }
                    continue;
                }
            };
            let status = resp.status();
            if status == StatusCode::METHOD_NOT_ALLOWED || status == StatusCode::NOT_FOUND {
                return; // No stream offered, or the session is gone (the next call will see).
            }
            if !status.is_success() || content_type(&resp) != "text/event-stream" {
                tracing::debug!("the standalone stream answered HTTP {status}");
                if !backoff(&shared, &cursor, &mut attempt).await {
                    return;
                }
                continue;
            }
            let mut reader = EventReader::new(resp, shared.options.max_message_bytes);
            let _ = pump(&shared, &mut reader, &mut cursor, None, &mut attempt).await;
            if !backoff(&shared, &cursor, &mut attempt).await {
                return;
            }
        }
    };
    tokio::select! {
        () = run => {}
        () = token.cancelled() => {}
        () = shared.stop.cancelled() => {}
    }
}

/// Waits before the next attempt; false once the attempts are used up.
async fn backoff(shared: &Shared, cursor: &Cursor, attempt: &mut u32) -> bool {
    if *attempt >= shared.options.reconnect.max_retries {
        return false;
    }
    let delay = shared.options.reconnect.delay(*attempt, cursor.retry);
    *attempt += 1;
    tokio::time::sleep(delay).await;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_use_base64_only_when_needed() {
        assert_eq!(encode_header_value("hello_world"), "hello_world");
        assert_eq!(encode_header_value("test://item/1"), "test://item/1");
        assert_eq!(encode_header_value("élé"), "=?base64?w6lsw6k=?=");
        assert_eq!(encode_header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(
            encode_header_value("=?base64?abc?="),
            "=?base64?PT9iYXNlNjQ/YWJjPz0=?="
        );
    }
}
