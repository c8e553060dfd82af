//! The standalone GET stream of a legacy session: the server's requests and notifications
//! outside any call. Opened once the session is initialized, reopened (resumed when its
//! events had ids) whenever it ends, until the session ends or the attempts run out; a 405
//! means the server offers none.

use std::sync::Arc;

use http::StatusCode;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::authorize::send_request;
use super::event_reader::{Cursor, EventReader};
use super::response::content_type;
use super::response_stream::{backoff, pump};
use super::shared::Shared;

/// Runs the standalone stream until `token` (the session) or the transport stops; `opened`
/// hears when the first GET has its answer (or failed).
pub(super) async fn standalone(
    shared: Arc<Shared>,
    token: CancellationToken,
    opened: oneshot::Sender<()>,
) {
    let mut cursor = Cursor::default();
    let mut attempt = 0u32;
    let mut opened = Some(opened);
    let run = async {
        loop {
            let sent = send_request(&shared, shared.get(cursor.last_event_id.as_deref())).await;
            if let Some(tx) = opened.take() {
                let _ = tx.send(());
            }
            let resp = match sent {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!("the standalone stream failed: {}", crate::error::chain(&e));
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
