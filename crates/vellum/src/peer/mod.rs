//! The bookkeeping either end of a JSON-RPC conversation keeps so that requests, answers and
//! cancellations find each other. The client and the server session share it.
//!
//! - [`RequestIds`]: ids for the requests this side sends.
//! - [`PendingAnswers`]: this side's requests waiting for the peer's answer, with a
//!   [`Waiter`] per request that forgets it when the caller stops waiting.
//! - [`InflightRequests`]: the peer's requests this side is serving, so a
//!   `notifications/cancelled` (or the end of the conversation) can stop them, and a second
//!   request under a running id can be refused.
//! - [`cancelled_notification`]: the `notifications/cancelled` either side sends when it gives
//!   up on one of its requests.
//!
//! Not here: what a request means (dispatch, the client's typed calls), how messages travel
//! (transports), or what the handshake negotiated. Every structure is a small map behind one
//! lock that stays empty (allocation-free) until used; none owns a task.

mod ids;
mod inflight;
mod pending;

pub(crate) use ids::RequestIds;
pub(crate) use inflight::{Cancel, InflightRequests, Ticket};
pub(crate) use pending::PendingAnswers;
pub(crate) use pending::Waiter;

use bytes::Bytes;

use crate::protocol::{CancelledParams, RequestId, encode_notification, methods};

/// The `notifications/cancelled` for request `id`, telling the peer this side stopped waiting
/// for it (`reason` is for the peer's logs).
pub(crate) fn cancelled_notification(
    id: &RequestId,
    reason: &str,
) -> Result<Bytes, serde_json::Error> {
    let params = CancelledParams {
        request_id: id.clone(),
        reason: Some(reason.to_owned()),
        meta: None,
    };
    encode_notification(methods::CANCELLED, Some(&params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cancel_notification_names_the_request() {
        let bytes = cancelled_notification(&RequestId::Number(7), "timed out").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 7, "reason": "timed out"}})
        );
    }
}
