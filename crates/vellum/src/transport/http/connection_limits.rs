//! [`ConnectionLimits`]: what one connection may hold of a server [`serve`](super::serve)
//! runs, and for how long: a deadline from accept to the first request, an idle timeout, a
//! cap on connections, a budget of answer bytes produced but not yet written, and a write
//! timeout. Each field says what its default does; `docs/security.md` has the attacks.
//!
//! Not here: enforcing them (`connection_table.rs`, `connection_task.rs`, `answer_budget.rs`);
//! the limits of one request (`StreamableHttpOptions`).

use std::time::Duration;

/// The limits of the connections [`serve`](super::serve) accepts (set with
/// [`Serve::connection_limits`](super::Serve::connection_limits)). The defaults are meant for
/// a server on a public network.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// The one deadline from accept to the head of the first request: the TCP connection,
    /// telling HTTP/1.1 from HTTP/2, the TLS handshake and the request head itself. A
    /// connection that has sent no complete request head by then is closed. Default:
    /// [`ConnectionLimits::DEFAULT_FIRST_REQUEST_TIMEOUT`] (10 s).
    pub first_request_timeout: Duration,
    /// Close a connection with no request in progress (no request being read or answered,
    /// no stream open) for this long, whatever else arrives on it (HTTP/2 PINGs, SETTINGS,
    /// part of the next HTTP/1.1 head). HTTP/2 connections get a GOAWAY first. Default:
    /// [`ConnectionLimits::DEFAULT_IDLE_TIMEOUT`] (60 s). `None`: never.
    pub idle_timeout: Option<Duration>,
    /// The most connections open at once. When a new one arrives at the cap, the
    /// connections idle the longest (a connection that never sent a request is idle since
    /// it was accepted) are closed to make room, a few at a time; when none is idle the new
    /// connection is closed at once. `None` (the default): derived from the process's file
    /// limit ([`ConnectionLimits::for_file_limit`]), which serving then first raises from
    /// its soft to its hard value, as Go's runtime does.
    pub max_connections: Option<usize>,
    /// A connection whose answers have bytes waiting to be written, none of which the peer
    /// took for this long (it does not read, or keeps its HTTP/2 flow-control window shut),
    /// is closed, and the bytes freed. Default: [`ConnectionLimits::DEFAULT_WRITE_TIMEOUT`]
    /// (30 s). `None`: never.
    pub write_timeout: Option<Duration>,
    /// The most answer bytes one connection may have produced but not yet written. Past it
    /// the connection's new requests wait before they start and its streams stop taking
    /// events (so the handlers sending them wait), until the peer reads; an answer that was
    /// already being produced is still sent, so one connection may pass it by one answer.
    /// Default: [`ConnectionLimits::DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION`] (8 MiB).
    /// `None`: no cap.
    pub max_unsent_bytes_per_connection: Option<usize>,
    /// The most answer bytes produced but not yet written, across every connection. A
    /// finished answer that would pass it is refused with 503 and `Retry-After`, its bytes
    /// dropped, and the connections whose peers have taken none of their bytes for a second
    /// or more are closed (the longest stalled first) to make room for the next ones. A
    /// connection that has bytes waiting starts no new request past it. Default:
    /// [`ConnectionLimits::DEFAULT_MAX_UNSENT_BYTES`] (256 MiB). `None`: no cap.
    pub max_unsent_bytes: Option<usize>,
}

impl ConnectionLimits {
    /// The default deadline from accept to the first request head: 10 s.
    pub const DEFAULT_FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

    /// The default idle timeout: 60 s.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

    /// The default write timeout: 30 s.
    pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

    /// The default budget of unwritten answer bytes per connection: 8 MiB.
    pub const DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION: usize = 8 << 20;

    /// The default budget of unwritten answer bytes across connections: 256 MiB.
    pub const DEFAULT_MAX_UNSENT_BYTES: usize = 256 << 20;

    /// The connection cap the default derives from a file limit of `files` descriptors:
    /// all of them but a reserve (an eighth, at least 64) for the listener, the runtime,
    /// stores, logs, and the connections being closed to make room.
    pub fn for_file_limit(files: u64) -> usize {
        let files = usize::try_from(files).unwrap_or(usize::MAX);
        let reserve = (files / 8).max(64);
        files.saturating_sub(reserve).max(1)
    }

    /// Sets `first_request_timeout`.
    #[must_use]
    pub fn first_request_timeout(mut self, timeout: Duration) -> Self {
        self.first_request_timeout = timeout;
        self
    }

    /// Sets `idle_timeout`.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets `max_connections`.
    #[must_use]
    pub fn max_connections(mut self, max: Option<usize>) -> Self {
        self.max_connections = max;
        self
    }

    /// Sets `write_timeout`.
    #[must_use]
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Sets `max_unsent_bytes_per_connection`.
    #[must_use]
    pub fn max_unsent_bytes_per_connection(mut self, max: Option<usize>) -> Self {
        self.max_unsent_bytes_per_connection = max;
        self
    }

    /// Sets `max_unsent_bytes`.
    #[must_use]
    pub fn max_unsent_bytes(mut self, max: Option<usize>) -> Self {
        self.max_unsent_bytes = max;
        self
    }

    /// The connection cap in force: `max_connections`, else derived from the file limit
    /// (raised from soft to hard first).
    pub(super) fn resolved_max_connections(&self) -> usize {
        match self.max_connections {
            Some(n) => n.max(1),
            None => Self::for_file_limit(raise_file_limit()),
        }
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            first_request_timeout: Self::DEFAULT_FIRST_REQUEST_TIMEOUT,
            idle_timeout: Some(Self::DEFAULT_IDLE_TIMEOUT),
            max_connections: None,
            write_timeout: Some(Self::DEFAULT_WRITE_TIMEOUT),
            max_unsent_bytes_per_connection: Some(Self::DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION),
            max_unsent_bytes: Some(Self::DEFAULT_MAX_UNSENT_BYTES),
        }
    }
}

/// The file limit where nothing tells it (no `getrlimit`): the common soft default.
#[cfg(not(unix))]
const ASSUMED_FILE_LIMIT: u64 = 1024;

/// Raises the process's soft limit of open files to its hard limit (a process may, without
/// privileges) and returns the soft limit now in force. A limit that cannot be raised (some
/// systems refuse an unlimited hard value) stays as it was.
#[cfg(unix)]
fn raise_file_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let soft = now.current.unwrap_or(u64::MAX);
    match now.maximum {
        Some(hard) if hard > soft => {
            let raised = Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return hard;
            }
            soft
        }
        // An unlimited hard limit: the soft one is what the system allows in practice.
        _ => soft,
    }
}

#[cfg(not(unix))]
fn raise_file_limit() -> u64 {
    ASSUMED_FILE_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_keeps_a_reserve_of_descriptors() {
        assert_eq!(ConnectionLimits::for_file_limit(256), 192);
        assert_eq!(ConnectionLimits::for_file_limit(1024), 896);
        assert_eq!(ConnectionLimits::for_file_limit(20_000), 17_500);
        assert_eq!(ConnectionLimits::for_file_limit(10), 1);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let soft = raise_file_limit();
        #[cfg(unix)]
        {
            let now = rustix::process::getrlimit(rustix::process::Resource::Nofile);
            assert_eq!(now.current, Some(soft));
        }
        assert!(soft > 0);
    }
}
