//! [`HttpClientOptions`]: every setting of the Streamable HTTP client transport, with its
//! default and its effect. (The server's settings are `transport::http::StreamableHttpOptions`.)

use std::time::Duration;

use http::HeaderMap;

/// How a broken SSE stream is resumed (`Last-Event-ID`) or the standalone stream reopened.
#[derive(Clone, Debug)]
pub struct ReconnectOptions {
    /// Attempts in a row before giving up (an attempt that receives events resets the count).
    /// Default 5.
    pub max_retries: u32,
    /// The first wait when the server gave no `retry`; doubles per attempt. Default 500 ms.
    pub initial_delay: Duration,
    /// The longest wait between attempts. Default 30 s.
    pub max_delay: Duration,
}

impl Default for ReconnectOptions {
    fn default() -> Self {
        ReconnectOptions {
            max_retries: 5,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl ReconnectOptions {
    /// The wait before attempt `attempt` (0-based): the server's `retry` when it sent one
    /// (the spec's MUST: never sooner) plus up to 10 % jitter; else exponential backoff
    /// capped at `max_delay`, plus up to 25 % jitter, so many clients do not reconnect in
    /// lockstep.
    pub(crate) fn delay(&self, attempt: u32, server_retry: Option<Duration>) -> Duration {
        let (base, spread) = match server_retry {
            Some(r) => (r, 0.10),
            None => (
                self.initial_delay
                    .saturating_mul(1u32 << attempt.min(16))
                    .min(self.max_delay),
                0.25,
            ),
        };
        let mut b = [0u8; 4];
        let jitter = match getrandom::fill(&mut b) {
            Ok(()) => f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX) * spread,
            Err(_) => 0.0,
        };
        base.mul_f64(1.0 + jitter)
    }
}

/// Settings of [`StreamableHttpClientTransport`](super::StreamableHttpClientTransport).
///
/// Its `Debug` shows the names of the headers, never their values (they often carry
/// credentials).
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpClientOptions {
    /// Headers sent with every request (authorization, tracing, …). Default: none.
    /// `Authorization`, `Proxy-Authorization` and `Cookie` values are marked sensitive when
    /// the transport is built, so the HTTP stack's own logs do not show them either.
    pub headers: HeaderMap,
    /// The reqwest client to use (proxies, TLS roots, …). Default: one built from the
    /// timeouts below. A client given here keeps its own timeouts; do not give it a total
    /// request `timeout`, which would cut long SSE streams.
    pub client: Option<reqwest::Client>,
    /// How long connecting may take. Default 10 s.
    pub connect_timeout: Duration,
    /// How long the server may stay silent on a connection before it counts as dead (a
    /// read timeout, not a total one, so long SSE streams live). Default 300 s.
    pub read_timeout: Duration,
    /// Resumption of broken SSE streams. Default [`ReconnectOptions::default`].
    pub reconnect: ReconnectOptions,
    /// The largest JSON body or SSE event accepted from the server; a bigger one fails the
    /// request instead of growing a buffer. Default 16 MiB.
    pub max_message_bytes: usize,
    /// How long closing may wait for the session's DELETE. Default 5 s.
    pub close_timeout: Duration,
    /// Open the standalone GET stream after a legacy handshake, for the server's requests
    /// and notifications outside any call. Default true.
    pub standalone_stream: bool,
    /// Fall back to the deprecated 2024-11-05 HTTP+SSE transport when the server refuses
    /// `initialize` with 400, 404 or 405 (the spec's backwards-compatibility rule). Default
    /// true.
    pub legacy_sse_fallback: bool,
    /// The OAuth client that authorizes every request (feature `client-auth`): its
    /// `Authorization` (and `DPoP`) headers on every POST, GET and DELETE, refreshed before
    /// they expire; 401 and 403 `insufficient_scope` answered by discovery, a grant or a
    /// step-up, then the request sent again. Default: none (a 401 is an error like any
    /// other status). See `docs/client.md`.
    #[cfg(feature = "client-auth")]
    pub auth: Option<crate::client::auth::OAuth>,
}

impl std::fmt::Debug for HttpClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.keys().map(|k| k.as_str()).collect();
        let mut d = f.debug_struct("HttpClientOptions");
        d.field("headers", &header_names)
            .field("client", &self.client.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("reconnect", &self.reconnect)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("close_timeout", &self.close_timeout)
            .field("standalone_stream", &self.standalone_stream)
            .field("legacy_sse_fallback", &self.legacy_sse_fallback);
        #[cfg(feature = "client-auth")]
        d.field("auth", &self.auth);
        d.finish()
    }
}

impl HttpClientOptions {
    /// Marks the values of the credential-carrying headers sensitive (hidden from `Debug`
    /// output and from the HTTP stack's logs).
    pub(super) fn mark_credentials_sensitive(&mut self) {
        use http::header::{AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION};
        for name in [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE] {
            if let http::header::Entry::Occupied(mut e) = self.headers.entry(name) {
                for v in e.iter_mut() {
                    v.set_sensitive(true);
                }
            }
        }
    }
}

impl Default for HttpClientOptions {
    fn default() -> Self {
        HttpClientOptions {
            headers: HeaderMap::new(),
            client: None,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
            reconnect: ReconnectOptions::default(),
            max_message_bytes: 16 * 1024 * 1024,
            close_timeout: Duration::from_secs(5),
            standalone_stream: true,
            legacy_sse_fallback: true,
            #[cfg(feature = "client-auth")]
            auth: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_honours_retry() {
        let r = ReconnectOptions::default();
        let d0 = r.delay(0, None);
        assert!(d0 >= Duration::from_millis(500) && d0 <= Duration::from_millis(625));
        let d3 = r.delay(3, None);
        assert!(d3 >= Duration::from_millis(4000) && d3 <= Duration::from_millis(5000));
        let big = r.delay(30, None);
        assert!(big >= Duration::from_secs(30) && big <= Duration::from_millis(37_500));
        let s = r.delay(4, Some(Duration::from_millis(50)));
        assert!(s >= Duration::from_millis(50) && s <= Duration::from_millis(55));
    }

    #[test]
    fn debug_output_and_sensitivity_keep_credentials_hidden() {
        let mut o = HttpClientOptions::default();
        o.headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer s3cret"),
        );
        o.mark_credentials_sensitive();
        let text = format!("{o:?}");
        assert!(
            text.contains("authorization") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(o.headers[http::header::AUTHORIZATION].is_sensitive());
    }
}
