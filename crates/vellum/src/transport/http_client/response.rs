//! Reading the server's HTTP answers on the client side: the media type, a whole body within
//! a byte limit, the short detail an error status carries, and the JSON-RPC answer an error
//! body may hold. Also the one place a reqwest failure becomes a [`TransportError`] (with the
//! URL left out of it: a URL may carry a token).

use bytes::Bytes;
use http::header::CONTENT_TYPE;

use crate::error::TransportError;
use crate::protocol::{Message, Payload, RequestId, decode};

/// How much of an error body is read for its detail.
pub(super) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The media type of a response, lowercased, without parameters (empty when absent).
pub(super) fn content_type(resp: &reqwest::Response) -> String {
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

/// A request that failed before any answer: connect, DNS, TLS, reset, timeout.
pub(super) fn connect_error(e: reqwest::Error) -> TransportError {
    TransportError::connect(e.without_url())
}

/// Reads a whole body up to `max` bytes.
pub(super) async fn read_body(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<Bytes, TransportError> {
    let mut buf = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if buf.len() + c.len() > max {
                    return Err(TransportError::TooLarge { limit: max });
                }
                buf.extend_from_slice(&c);
            }
            Ok(None) => return Ok(Bytes::from(buf)),
            Err(e) => return Err(TransportError::body(e.without_url())),
        }
    }
}

/// The [`TransportError::HttpStatus`] of an error response, with its body's detail.
pub(super) async fn status_error(resp: reqwest::Response) -> TransportError {
    let status = resp.status();
    let body = read_body(resp, ERROR_BODY_LIMIT).await.unwrap_or_default();
    TransportError::HttpStatus {
        status,
        detail: detail_of(&body),
    }
}

/// A short description of an error body for messages: the JSON-RPC error's message, or the
/// start of the text.
pub(super) fn detail_of(body: &Bytes) -> String {
    if let Ok(Payload::Single(Message::Response(r))) = decode(body)
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
pub(super) fn answer_in(body: &Bytes, id: &RequestId) -> Option<Message> {
    match decode(body) {
        Ok(Payload::Single(m @ Message::Response(_))) if m.id() == Some(id) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detail_is_the_rpc_message_or_the_start_of_the_text() {
        let rpc = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad session"}}"#,
        );
        assert_eq!(detail_of(&rpc), "Bad session");
        let long = Bytes::from("x".repeat(300));
        let d = detail_of(&long);
        assert_eq!(d.chars().count(), 201);
        assert!(d.ends_with('…'));
        assert_eq!(detail_of(&Bytes::from_static(b"  \n")), "");
    }
}
