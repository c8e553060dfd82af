//! [`Shared`]: the state of one Streamable HTTP client transport that its background tasks
//! share (the HTTP client, the endpoint, the session, the queue to `recv`), and the headers
//! every request it sends carries.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use base64::Engine as _;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::client_options::HttpClientOptions;
use crate::client::transport::{Incoming, OutgoingMessage};
use crate::error::TransportError;
use crate::peer::InflightRequests;
use crate::protocol::RequestId;
use crate::sync::{read, write};
use crate::transport::http::headers::names;

/// The `Accept` of a POST: the server may answer with JSON or an event stream.
pub(super) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

pub(super) struct Shared {
    pub(super) http: reqwest::Client,
    pub(super) url: reqwest::Url,
    pub(super) options: HttpClientOptions,
    /// The legacy session id (`Mcp-Session-Id`).
    session: RwLock<Option<String>>,
    /// The negotiated legacy version, for GET and DELETE.
    pub(super) version: RwLock<Option<String>>,
    tx: mpsc::UnboundedSender<Incoming>,
    pub(super) rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Incoming>>,
    /// Requests whose response is being read: cancelling one closes its stream.
    pub(super) inflight: Arc<InflightRequests<tokio::task::AbortHandle>>,
    /// Ends everything (close).
    pub(super) stop: CancellationToken,
    /// Ends the current session's standalone stream.
    pub(super) session_stop: Mutex<CancellationToken>,
    /// Set once the server turned out to speak only the 2024-11-05 HTTP+SSE transport.
    pub(super) fallback: RwLock<Option<Arc<FallbackConnection>>>,
}

/// An open connection of the deprecated 2024-11-05 HTTP+SSE transport: what
/// `http_sse_fallback` opens and then sends through (the data lives here, below both, so
/// that the shared state can hold it without importing the fallback).
pub(super) struct FallbackConnection {
    /// Where messages are POSTed (the stream's `endpoint` event).
    pub(super) endpoint: reqwest::Url,
    /// Requests sent and not yet answered: failed when the stream ends.
    pub(super) waiting: Arc<Mutex<HashSet<RequestId>>>,
    /// The task reading the stream.
    pub(super) reader: tokio::task::AbortHandle,
}

impl FallbackConnection {
    /// Stops reading the stream.
    pub(super) fn close(&self) {
        self.reader.abort();
    }
}

impl Shared {
    pub(super) fn new(
        http: reqwest::Client,
        url: reqwest::Url,
        options: HttpClientOptions,
    ) -> Shared {
        let (tx, rx) = mpsc::unbounded_channel();
        Shared {
            http,
            url,
            options,
            session: RwLock::new(None),
            version: RwLock::new(None),
            tx,
            rx: tokio::sync::Mutex::new(rx),
            inflight: Arc::new(InflightRequests::new()),
            stop: CancellationToken::new(),
            session_stop: Mutex::new(CancellationToken::new()),
            fallback: RwLock::new(None),
        }
    }

    pub(super) fn session_id(&self) -> Option<String> {
        read(&self.session).clone()
    }

    pub(super) fn set_session(&self, id: Option<String>) {
        *write(&self.session) = id;
    }

    pub(super) fn version(&self) -> Option<String> {
        read(&self.version).clone()
    }

    /// Queues an event for the client's `recv`.
    pub(super) fn deliver(&self, incoming: Incoming) {
        let _ = self.tx.send(incoming);
    }

    /// Fails the request `id`.
    pub(super) fn fail(&self, id: &RequestId, error: TransportError) {
        self.deliver(Incoming::Failed {
            id: id.clone(),
            error,
        });
    }

    /// The headers every request of this session carries.
    pub(super) fn base_headers(&self, accept: &'static str) -> HeaderMap {
        let mut h = self.options.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(accept));
        h
    }

    /// The POST of one message.
    pub(super) fn post(&self, message: &OutgoingMessage) -> reqwest::RequestBuilder {
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
        } else if let Some(v) = self.session_header() {
            h.insert(names::SESSION_ID, v);
        }
        self.http
            .post(self.url.clone())
            .headers(h)
            .body(message.bytes.clone())
    }

    /// A GET of the standalone stream, or a resumption after `last_event_id`.
    pub(super) fn get(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let mut h = self.base_headers("text/event-stream");
        if let Some(v) = self.session_header() {
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

    /// The DELETE that ends the session.
    pub(super) fn delete(&self) -> Option<reqwest::RequestBuilder> {
        let session = self.session_header()?;
        let mut h = self.base_headers("*/*");
        h.insert(names::SESSION_ID, session);
        if let Some(v) = self.version().and_then(|s| HeaderValue::from_str(&s).ok()) {
            h.insert(names::PROTOCOL_VERSION, v);
        }
        Some(self.http.delete(self.url.clone()).headers(h))
    }

    /// The session id as a header value, marked sensitive: it is a bearer secret.
    fn session_header(&self) -> Option<HeaderValue> {
        let mut v = HeaderValue::from_str(read(&self.session).as_deref()?).ok()?;
        v.set_sensitive(true);
        Some(v)
    }
}

/// A header value for a mirrored field: plain when it is safe visible ASCII, else the
/// `=?base64?…?=` form (SEP-2243).
pub(super) fn encode_header_value(value: &str) -> String {
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
