//! The connection flags of `vellum serve`: what one connection may hold of the server and
//! for how long (vellum's [`ConnectionLimits`]), each defaulting to the library's default.

use std::time::Duration;

use clap::Args;
use vellum::transport::http::ConnectionLimits;

/// Connection limits (flattened into `vellum serve`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Connections")]
pub(crate) struct ConnectionArgs {
    /// One deadline from accept to the first request's head: the TCP connection, HTTP
    /// version detection, the TLS handshake and the head itself; closed when it passes.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "10s")]
    first_request_timeout: Duration,
    /// Close connections with no request or stream in progress for this long, even if they
    /// answer HTTP/2 PINGs (`0s` turns it off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "60s")]
    idle_timeout: Duration,
    /// The most connections open at once; at it, the connections idle the longest are
    /// closed to make room. Default: the process's file limit (raised from soft to hard at
    /// start) less a reserve of an eighth, at least 64.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Close a connection whose peer has taken none of its waiting answer bytes for this
    /// long (it does not read, or keeps its HTTP/2 window shut; `0s` turns it off).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "30s")]
    write_timeout: Duration,
    /// The most answer bytes one connection may have produced but not yet written: past
    /// it, its new requests and streams wait for the peer to read (0 = no cap).
    #[arg(long, value_name = "BYTES", default_value_t = ConnectionLimits::DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION)]
    max_unsent_bytes_per_connection: usize,
    /// The most answer bytes produced but not yet written, across connections: past it,
    /// stalled connections are closed to make room, else a finished answer gets 503 with
    /// Retry-After (0 = no cap).
    #[arg(long, value_name = "BYTES", default_value_t = ConnectionLimits::DEFAULT_MAX_UNSENT_BYTES)]
    max_unsent_bytes: usize,
}

impl ConnectionArgs {
    /// The flags as the accept loop's limits.
    pub(crate) fn limits(&self) -> ConnectionLimits {
        let nonzero = |d: Duration| (!d.is_zero()).then_some(d);
        ConnectionLimits::default()
            .first_request_timeout(self.first_request_timeout)
            .idle_timeout(nonzero(self.idle_timeout))
            .max_connections(self.max_connections)
            .write_timeout(nonzero(self.write_timeout))
            .max_unsent_bytes_per_connection(
                (self.max_unsent_bytes_per_connection > 0)
                    .then_some(self.max_unsent_bytes_per_connection),
            )
            .max_unsent_bytes((self.max_unsent_bytes > 0).then_some(self.max_unsent_bytes))
    }
}
