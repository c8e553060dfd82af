//! [`Subscriptions`]: the resource URIs a legacy session subscribed to, with the bytes they
//! take, added only within the session's limits (`max_subscriptions_per_session`, and
//! `max_session_bytes` shared with what its `initialize` keeps).
//!
//! Not here: the session itself (`session.rs`), the `resources/subscribe` method
//! (`methods/lifecycle.rs`), sending updates (`Server::notify_resource_updated`).

use std::collections::BTreeSet;

use super::limits::StateLimits;
use crate::protocol::ErrorObject;

/// The URIs a session subscribed to, and their bytes.
#[derive(Default)]
pub(crate) struct Subscriptions {
    uris: BTreeSet<String>,
    bytes: usize,
}

impl Subscriptions {
    /// The URIs.
    pub(crate) fn uris(&self) -> &BTreeSet<String> {
        &self.uris
    }

    /// Replaces the URIs (a stored record's, which its writer kept within the limits).
    pub(crate) fn replace(&mut self, uris: BTreeSet<String>) {
        self.bytes = uris.iter().map(String::len).sum();
        self.uris = uris;
    }

    /// Adds `uri` unless the session would pass a limit, `others` being the bytes the
    /// session keeps besides its subscriptions; whether it is new.
    pub(crate) fn add(
        &mut self,
        uri: &str,
        others: usize,
        limits: &StateLimits,
    ) -> Result<bool, ErrorObject> {
        if self.uris.contains(uri) {
            return Ok(false);
        }
        if self.uris.len() >= limits.max_subscriptions_per_session {
            return Err(ErrorObject::invalid_params(format!(
                "Subscription refused: this session is subscribed to {} resources, the most \
                 this server allows (max_subscriptions_per_session); unsubscribe from one first",
                self.uris.len()
            )));
        }
        let kept = others + self.bytes;
        if kept.saturating_add(uri.len()) > limits.max_session_bytes {
            return Err(ErrorObject::invalid_params(format!(
                "Subscription refused: a URI of {} bytes would take this session past the \
                 {} bytes it may keep (max_session_bytes; {kept} kept)",
                uri.len(),
                limits.max_session_bytes
            )));
        }
        self.bytes += uri.len();
        self.uris.insert(uri.to_owned());
        Ok(true)
    }

    /// Removes `uri`; whether it was there.
    pub(crate) fn remove(&mut self, uri: &str) -> bool {
        let removed = self.uris.remove(uri);
        if removed {
            self.bytes -= uri.len();
        }
        removed
    }
}
