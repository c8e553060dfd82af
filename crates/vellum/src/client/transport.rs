//! The contract between the client (`vellum::client::Client`) and a client transport:
//! messages go out as [`OutgoingMessage`]s, and everything the server sends comes back as
//! [`Incoming`] events. Published as `vellum::client::{Transport, …}`.
//!
//! It belongs to the client: the transports (Streamable HTTP, stdio, in memory) sit above
//! and implement it, and the client imports none of them.
//!
//! A transport moves encoded JSON-RPC messages; it knows nothing of MCP methods beyond what
//! routing needs (the request id, the method and the mirrored name, which Streamable HTTP
//! copies into headers). Not here: the handshake, era detection, MRTR (all in the client).

use std::fmt;

use bytes::Bytes;
use futures_util::future::BoxFuture;

use crate::error::TransportError;
use crate::protocol::{Message, RequestId};

/// One encoded message on its way to the server, with the facts a transport may route by.
#[derive(Clone, Debug)]
pub struct OutgoingMessage {
    /// The encoded JSON-RPC message (one object, no trailing newline).
    pub bytes: Bytes,
    /// What kind of message it is.
    pub kind: OutgoingKind,
    /// The method of a request or notification.
    pub method: Option<String>,
    /// The protocol version this message is sent under: the negotiated version of a legacy
    /// session, the `_meta` version of a modern request, `None` before the handshake.
    pub protocol_version: Option<String>,
    /// True when the message is a 2026-07-28 (stateless) message.
    pub modern: bool,
    /// Values a modern HTTP request mirrors into headers: `Mcp-Name` (the tool or prompt name,
    /// or the resource URI) and `Mcp-Param-*` (tool arguments marked `x-mcp-header`), as
    /// (header name, plain value) pairs.
    pub mirrors: Vec<(String, String)>,
}

/// What an [`OutgoingMessage`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutgoingKind {
    /// A request; its answer comes back as a response with this id (or as
    /// [`Incoming::Failed`]).
    Request(RequestId),
    /// A notification.
    Notification,
    /// A response to a request of the server.
    Response,
}

impl OutgoingMessage {
    /// The id of a request.
    pub fn request_id(&self) -> Option<&RequestId> {
        match &self.kind {
            OutgoingKind::Request(id) => Some(id),
            _ => None,
        }
    }
}

/// What a transport hands to the client.
#[derive(Debug)]
#[non_exhaustive]
pub enum Incoming {
    /// A message from the server.
    Message(Message),
    /// A request could not be delivered, or its answer was lost: the client fails the call
    /// (or, for [`TransportError::SessionExpired`], re-initialises and retries it).
    Failed {
        /// The request that failed.
        id: RequestId,
        /// Why.
        error: TransportError,
    },
    /// The transport ended for good (the server process exited, say): every call still
    /// waiting, and every later one, fails with `error`. A transport that ends without a
    /// reason to give just returns `None` from [`recv`](Transport::recv); the calls then
    /// fail with an error that [`is_session_closed`](crate::Error::is_session_closed).
    Ended(TransportError),
}

/// A client transport: carries messages to one server and brings its messages back.
///
/// The client calls [`recv`](Transport::recv) from one task only. `send` may be called
/// concurrently; a transport keeps the order of the messages of one caller.
pub trait Transport: Send + Sync + 'static {
    /// Sends one message. For requests this returns once the request is on its way; the
    /// answer arrives through [`recv`](Transport::recv).
    fn send(&self, message: OutgoingMessage) -> BoxFuture<'_, Result<(), TransportError>>;

    /// The next event from the server; `None` once the transport is closed for good (after
    /// [`Incoming::Ended`], if it had a reason to give).
    fn recv(&self) -> BoxFuture<'_, Option<Incoming>>;

    /// Called once a legacy session is initialized (after `notifications/initialized` went
    /// out), with the negotiated version; the handshake awaits it. Streamable HTTP opens its
    /// standalone GET stream here and returns once the server has answered that GET (or
    /// `connect_timeout` passed), so the server can reach the client from the moment
    /// `connect` returns, and the client's first calls never overtake the GET.
    fn session_started(&self, _protocol_version: &str) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Called when the client gives up the session to start a new one (after
    /// [`TransportError::SessionExpired`]): forget the session id and its streams.
    fn session_reset(&self) {}

    /// Closes the transport: ends the session where the transport has one (HTTP DELETE, the
    /// child process), bounded in time.
    fn close(&self) -> BoxFuture<'_, ()>;
}

impl fmt::Debug for dyn Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Transport")
    }
}

/// Decodes one line or body from a server into incoming events (a batch gives several).
/// Undecodable input is logged and dropped: it cannot be tied to a request.
pub(crate) fn decode_incoming(bytes: &Bytes) -> Vec<Incoming> {
    match crate::protocol::decode(bytes) {
        Ok(crate::protocol::Payload::Single(m)) => vec![Incoming::Message(m)],
        Ok(crate::protocol::Payload::Batch(v)) => v.into_iter().map(Incoming::Message).collect(),
        Err(e) => {
            tracing::warn!("dropping an undecodable message from the server: {e}");
            Vec::new()
        }
    }
}
