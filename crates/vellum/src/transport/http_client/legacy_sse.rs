//! The deprecated 2024-11-05 HTTP+SSE transport, as a client fallback: a GET stream whose
//! first event (`endpoint`) names the URL to POST messages to; every server message then
//! arrives on that one stream.
//!
//! Used only when a server refuses `initialize` on its Streamable HTTP endpoint with 400,
//! 404 or 405 and answers the GET this way (the spec's backwards-compatibility section).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;
use http::header::CONTENT_TYPE;

use super::sse::{Cursor, EventReader};
use super::{Shared, connection_error, content_type, detail_of, read_body};
use crate::client::{Incoming, OutgoingKind, OutgoingMessage, TransportError, transport_decode};
use crate::protocol::{Message, RequestId};
use crate::sync::lock;

/// How long the server may take to name its POST endpoint.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// An open HTTP+SSE connection.
pub(super) struct LegacySse {
    endpoint: reqwest::Url,
    /// Requests sent and not yet answered: failed when the stream ends.
    waiting: Arc<Mutex<HashSet<RequestId>>>,
    reader: tokio::task::AbortHandle,
}

impl LegacySse {
    /// GETs the URL and waits for the `endpoint` event; then reads the rest of the stream in
    /// a task.
    pub(super) async fn open(shared: &Arc<Shared>) -> Result<Arc<LegacySse>, String> {
        let resp = shared
            .http
            .get(shared.url.clone())
            .headers(shared.base_headers("text/event-stream"))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !resp.status().is_success() || content_type(&resp) != "text/event-stream" {
            return Err(format!("the GET answered HTTP {}", resp.status()));
        }
        let mut reader = EventReader::new(resp, shared.options.max_message_bytes);
        let mut cursor = Cursor::default();
        let first = tokio::time::timeout(ENDPOINT_TIMEOUT, reader.next(&mut cursor))
            .await
            .map_err(|_| "no endpoint event within 10 s".to_owned())?
            .map_err(|e| format!("the stream ended before the endpoint event: {e:?}"))?;
        if first.event.as_deref() != Some("endpoint") {
            return Err("the first event is not an endpoint event".into());
        }
        let endpoint = shared
            .url
            .join(first.data.trim())
            .map_err(|e| format!("bad endpoint {:?}: {e}", first.data))?;
        if endpoint.origin() != shared.url.origin() {
            // Posting our messages to another origin would hand them to a third party.
            return Err(format!("the endpoint {endpoint} is on another origin"));
        }
        let waiting: Arc<Mutex<HashSet<RequestId>>> = Arc::default();
        let (shared2, waiting2) = (shared.clone(), waiting.clone());
        let task = tokio::spawn(async move {
            loop {
                let event = match reader.next(&mut cursor).await {
                    Ok(e) => e,
                    Err(end) => {
                        let why = format!("the HTTP+SSE stream ended: {end:?}");
                        let ids: Vec<RequestId> = lock(&waiting2).drain().collect();
                        for id in ids {
                            shared2.fail(&id, TransportError::StreamLost(why.clone()));
                        }
                        return;
                    }
                };
                if event.event.as_deref().is_some_and(|e| e != "message") {
                    continue;
                }
                for i in transport_decode(&Bytes::from(event.data)) {
                    if let Incoming::Message(Message::Response(r)) = &i
                        && let Some(id) = &r.id
                    {
                        lock(&waiting2).remove(id);
                    }
                    shared2.deliver(i);
                }
            }
        });
        Ok(Arc::new(LegacySse {
            endpoint,
            waiting,
            reader: task.abort_handle(),
        }))
    }

    /// POSTs one message to the endpoint; answers come on the stream.
    pub(super) async fn send(
        &self,
        shared: &Shared,
        message: OutgoingMessage,
    ) -> Result<(), TransportError> {
        if let OutgoingKind::Request(id) = &message.kind {
            lock(&self.waiting).insert(id.clone());
        }
        let mut headers = shared.base_headers("application/json, text/event-stream");
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let sent = shared
            .http
            .post(self.endpoint.clone())
            .headers(headers)
            .body(message.bytes.clone())
            .send()
            .await;
        let outcome = match sent {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => {
                let status = r.status().as_u16();
                let body = read_body(r, 64 * 1024).await.unwrap_or_default();
                Err(TransportError::Http {
                    status,
                    detail: detail_of(&body),
                })
            }
            Err(e) => Err(connection_error(&e)),
        };
        if let (Err(e), OutgoingKind::Request(id)) = (&outcome, &message.kind) {
            lock(&self.waiting).remove(id);
            // The caller of a request learns through recv, as with the other transports.
            shared.fail(id, e.clone());
            return Ok(());
        }
        outcome
    }

    /// Stops reading the stream.
    pub(super) fn close(&self) {
        self.reader.abort();
    }
}
