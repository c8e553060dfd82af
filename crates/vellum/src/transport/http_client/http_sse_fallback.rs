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

use super::authorize::send_request;
use super::event_reader::{Cursor, EventReader, Lost};
use super::response::{content_type, status_error};
use super::shared::{ACCEPT_BOTH, FallbackConnection, Shared};
use crate::client::transport::{Incoming, OutgoingKind, OutgoingMessage, decode_incoming};
use crate::error::TransportError;
use crate::protocol::{Message, RequestId};
use crate::sync::lock;

/// How long the server may take to name its POST endpoint.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// GETs the URL and waits for the `endpoint` event; then reads the rest of the stream in a
/// task.
pub(super) async fn open(shared: &Arc<Shared>) -> Result<Arc<FallbackConnection>, TransportError> {
    let get = shared
        .http
        .get(shared.url.clone())
        .headers(shared.base_headers("text/event-stream"));
    let resp = send_request(shared, get).await?;
    if !resp.status().is_success() {
        return Err(status_error(resp).await);
    }
    let media = content_type(&resp);
    if media != "text/event-stream" {
        return Err(TransportError::ContentType {
            content_type: media,
        });
    }
    let mut reader = EventReader::new(resp, shared.options.max_message_bytes);
    let mut cursor = Cursor::default();
    let first = tokio::time::timeout(ENDPOINT_TIMEOUT, reader.next(&mut cursor))
        .await
        .map_err(|_| TransportError::Protocol {
            detail: "no endpoint event within 10 s".into(),
        })?
        .map_err(|end| Lost { end, resume: None }.into_error())?;
    if first.event.as_deref() != Some("endpoint") {
        return Err(TransportError::Protocol {
            detail: "the first event of the HTTP+SSE stream is not an endpoint event".into(),
        });
    }
    // The endpoint's URL carries the session id (a bearer secret): no error shows it.
    let endpoint = shared
        .url
        .join(first.data.trim())
        .map_err(|e| TransportError::Protocol {
            detail: format!("the endpoint event holds an invalid URL ({e})"),
        })?;
    if endpoint.origin() != shared.url.origin() {
        // Posting our messages to another origin would hand them to a third party.
        return Err(TransportError::Protocol {
            detail: "the endpoint event names another origin".into(),
        });
    }
    let waiting: Arc<Mutex<HashSet<RequestId>>> = Arc::default();
    let (shared2, waiting2) = (shared.clone(), waiting.clone());
    let task = tokio::spawn(async move {
        loop {
            let event = match reader.next(&mut cursor).await {
                Ok(e) => e,
                Err(end) => {
                    let lost = Lost { end, resume: None }.into_error();
                    let ids: Vec<RequestId> = lock(&waiting2).drain().collect();
                    for id in ids {
                        shared2.fail(&id, lost.clone());
                    }
                    return;
                }
            };
            if event.event.as_deref().is_some_and(|e| e != "message") {
                continue;
            }
            for i in decode_incoming(&Bytes::from(event.data)) {
                if let Incoming::Message(Message::Response(r)) = &i
                    && let Some(id) = &r.id
                {
                    lock(&waiting2).remove(id);
                }
                shared2.deliver(i);
            }
        }
    });
    Ok(Arc::new(FallbackConnection {
        endpoint,
        waiting,
        reader: task.abort_handle(),
    }))
}

/// POSTs one message to the connection's endpoint; answers come on the stream.
pub(super) async fn send(
    connection: &FallbackConnection,
    shared: &Shared,
    message: OutgoingMessage,
) -> Result<(), TransportError> {
    if let OutgoingKind::Request(id) = &message.kind {
        lock(&connection.waiting).insert(id.clone());
    }
    let mut headers = shared.base_headers(ACCEPT_BOTH);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let post = shared
        .http
        .post(connection.endpoint.clone())
        .headers(headers)
        .body(message.bytes.clone());
    let outcome = match send_request(shared, post).await {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(status_error(r).await),
        Err(e) => Err(e),
    };
    match (outcome, &message.kind) {
        (Err(e), OutgoingKind::Request(id)) => {
            lock(&connection.waiting).remove(id);
            // The caller of a request learns through recv, as with the other transports.
            shared.fail(id, e);
            Ok(())
        }
        (outcome, _) => outcome,
    }
}
