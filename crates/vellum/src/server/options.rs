//! [`ServerOptions`]: the server-wide settings, each with its default.
//!
//! Not here: transport settings (HTTP limits, sessions, streams: see
//! `StreamableHttpOptions` in the transport).

use std::time::Duration;

use super::limits::StateLimits;
use super::mrtr::RequestStateKey;
use super::registry::cache_hints::{CacheHints, Cached};
use crate::protocol::{CacheHint, ServerCapabilities};

/// How long a question to the client may wait for its answer, unless the handler says
/// otherwise.
pub const DEFAULT_CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Server-wide settings. Every field's default is what `ServerOptions::default()` gives.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Instructions for the model, returned by `initialize` and `server/discover`.
    /// Default: none.
    pub instructions: Option<String>,
    /// The most items a list page holds. Default: [`ServerOptions::DEFAULT_PAGE_SIZE`].
    pub page_size: usize,
    /// Capabilities to advertise instead of the ones inferred from what is registered
    /// (tools, resources, prompts, completion, logging). Default: inferred.
    pub capabilities: Option<ServerCapabilities>,
    /// How long a handler's question to the client (sampling, elicitation, roots) waits for
    /// its answer in a legacy session; [`RequestContext::with_timeout`](super::RequestContext::with_timeout) overrides it per call.
    /// Default: [`DEFAULT_CLIENT_REQUEST_TIMEOUT`] (5 minutes).
    pub client_request_timeout: Duration,
    /// The key that signs the `requestState` of multi round-trip requests (2026-07-28).
    /// Instances that may receive each other's retries need the same key. Default: a random
    /// key per server.
    pub request_state_key: Option<RequestStateKey>,
    /// How long a `requestState` stays valid (how long the user has to answer a question).
    /// Default: 10 minutes.
    pub request_state_ttl: Duration,
    /// The `ttlMs` and `cacheScope` of the 2026-07-28 lists and `resources/read` (also
    /// their HTTP `Cache-Control`). Default: `ttlMs` 0, `public`.
    pub cache_hints: CacheHints,
    /// What one client may make the server keep: a legacy session's bytes and
    /// subscriptions, its tasks (count, TTL, bytes). Default: [`StateLimits::default()`].
    pub limits: StateLimits,
}

impl ServerOptions {
    /// The default page size of list results.
    pub const DEFAULT_PAGE_SIZE: usize = 1000;

    /// Sets the instructions.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the key that signs `requestState` (share it between instances).
    #[must_use]
    pub fn with_request_state_key(mut self, key: RequestStateKey) -> Self {
        self.request_state_key = Some(key);
        self
    }

    /// Sets how long a `requestState` stays valid.
    #[must_use]
    pub fn with_request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = ttl;
        self
    }

    /// Sets the default timeout of questions to the client.
    #[must_use]
    pub fn with_client_request_timeout(mut self, timeout: Duration) -> Self {
        self.client_request_timeout = timeout;
        self
    }

    /// Sets the cache hints of one result (`ttlMs`, `cacheScope`).
    #[must_use]
    pub fn with_cache_hint(mut self, result: Cached, hint: CacheHint) -> Self {
        self.cache_hints = self.cache_hints.with(result, hint);
        self
    }

    /// Sets what one client may make the server keep (see [`StateLimits`]).
    #[must_use]
    pub fn with_limits(mut self, limits: StateLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the page size (at least 1).
    #[must_use]
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            instructions: None,
            page_size: Self::DEFAULT_PAGE_SIZE,
            capabilities: None,
            client_request_timeout: DEFAULT_CLIENT_REQUEST_TIMEOUT,
            request_state_key: None,
            request_state_ttl: Duration::from_secs(600),
            cache_hints: CacheHints::default(),
            limits: StateLimits::default(),
        }
    }
}
