//! [`CacheHints`]: the `ttlMs` and `cacheScope` a server puts on each 2026-07-28 result a
//! client may cache (the four lists and `resources/read`), set per result by the
//! application. The Streamable HTTP transport maps the same hints to `Cache-Control` and
//! `ETag`, so the body and the headers never disagree.
//!
//! Not here: writing the hints into results (`request/reply.rs`), `Server::set_cache_hint`
//! (`server.rs`) and the HTTP headers (`transport/http/caching.rs`).

use crate::protocol::CacheHint;

/// A result that carries cache hints, whose hints the application may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cached {
    /// `tools/list`.
    ToolsList,
    /// `prompts/list`.
    PromptsList,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read` (every resource alike).
    ResourcesRead,
}

impl Cached {
    /// Every cached result.
    pub const ALL: [Cached; 5] = [
        Cached::ToolsList,
        Cached::PromptsList,
        Cached::ResourcesList,
        Cached::ResourceTemplatesList,
        Cached::ResourcesRead,
    ];

    fn index(self) -> usize {
        match self {
            Cached::ToolsList => 0,
            Cached::PromptsList => 1,
            Cached::ResourcesList => 2,
            Cached::ResourceTemplatesList => 3,
            Cached::ResourcesRead => 4,
        }
    }
}

/// The cache hints of each [`Cached`] result. Default: `ttlMs` 0 (stale at once: a client
/// may cache but should revalidate) and `cacheScope` `public` for all, the spec's defaults.
///
/// A list filtered per caller (by scope, by tenant) must be `private`: a `public` answer may
/// be shared between users by a gateway.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHints([CacheHint; 5]);

impl CacheHints {
    /// The same hint for every cached result.
    pub fn all(hint: CacheHint) -> CacheHints {
        CacheHints([hint; 5])
    }

    /// Sets the hint of one result.
    #[must_use]
    pub fn with(mut self, result: Cached, hint: CacheHint) -> CacheHints {
        self.0[result.index()] = hint;
        self
    }

    /// The hint of one result.
    pub fn get(&self, result: Cached) -> CacheHint {
        self.0[result.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CacheScope;

    #[test]
    fn each_result_keeps_its_own_hint() {
        let tools = CacheHint {
            ttl_ms: 30_000,
            scope: CacheScope::Public,
        };
        let read = CacheHint {
            ttl_ms: 5_000,
            scope: CacheScope::Private,
        };
        let hints = CacheHints::default()
            .with(Cached::ToolsList, tools)
            .with(Cached::ResourcesRead, read);
        assert_eq!(hints.get(Cached::ToolsList), tools);
        assert_eq!(hints.get(Cached::ResourcesRead), read);
        assert_eq!(hints.get(Cached::PromptsList), CacheHint::default());
        assert_eq!(CacheHints::all(read).get(Cached::ResourcesList), read);
    }
}
