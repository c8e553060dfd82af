//! [`StateLimits`]: what one client may make the server *keep* between its requests (issue
//! 27): the bytes of a legacy session (what its `initialize` said, its subscriptions), and
//! the tasks it starts (how many, for how long, how many bytes of inputs and results), per
//! session, principal, client address and in total. Every
//! limit has a default that is safe on a public network; a request past one gets a JSON-RPC
//! error saying which, and nothing of it is kept.
//!
//! The one way a size is measured against them is `json_len` (`json_len.rs`, re-exported
//! here): about the memory a value takes, given up as soon as it passes a bound.
//!
//! Not here: the transport's limits (bodies, connections, the number of sessions: see
//! `StreamableHttpOptions` and `ConnectionLimits`), and where each limit is checked (the
//! session, `methods/lifecycle.rs`, the task ledger).

use std::time::Duration;

pub(crate) use super::json_len::json_len;

/// What a client may make the server keep: per legacy session, and for tasks. Set with
/// [`ServerOptions::with_limits`](super::ServerOptions::with_limits), or
/// [`Server::set_limits`](super::Server::set_limits) on a server built elsewhere. Every
/// field's default is what `StateLimits::default()` gives; `usize::MAX` turns a cap off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateLimits {
    /// The most bytes a legacy session keeps: the client's capabilities and info from
    /// `initialize` (as JSON) plus the URIs it subscribed to. An `initialize` past it, or a
    /// `resources/subscribe` that would pass it, is refused (-32602) and nothing is kept.
    /// The same bound holds for the session's record in a session store (Redis).
    /// Default: [`StateLimits::DEFAULT_MAX_SESSION_BYTES`] (64 KiB).
    pub max_session_bytes: usize,
    /// The most resources one legacy session may be subscribed to at once.
    /// Default: [`StateLimits::DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION`] (1,000).
    pub max_subscriptions_per_session: usize,
    /// The longest a task is kept: a client's requested TTL is clamped to it (the task then
    /// reports the clamped value), and a task that asks none gets it.
    /// Default: [`StateLimits::DEFAULT_MAX_TASK_TTL`] (1 hour).
    pub max_task_ttl: Duration,
    /// The most tasks one legacy session may have kept at once (running, or ended and
    /// within their TTL). Default: [`StateLimits::DEFAULT_MAX_TASKS_PER_SESSION`] (100).
    pub max_tasks_per_session: usize,
    /// The most tasks one authenticated principal may have kept at once, across its
    /// sessions and eras (tasks of a caller without a principal count against the session
    /// and total caps only). Default: [`StateLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL`]
    /// (1,000).
    pub max_tasks_per_principal: usize,
    /// The most tasks one client address may have kept at once, across its sessions and
    /// eras, when the caller has no principal (an authenticated caller's count against
    /// [`max_tasks_per_principal`](Self::max_tasks_per_principal) instead). The address is
    /// the HTTP transport's (`ClientAddresses`: the TCP peer or what a trusted proxy
    /// forwarded, IPv6 by prefix); requests that have none (stdio) are not counted per
    /// address. Behind a proxy whose address is not trusted every client is one address.
    /// Default: [`StateLimits::DEFAULT_MAX_TASKS_PER_ADDRESS`] (1,000).
    pub max_tasks_per_address: usize,
    /// The most tasks this server keeps at once, for everyone.
    /// Default: [`StateLimits::DEFAULT_MAX_TASKS`] (10,000).
    pub max_tasks: usize,
    /// The most bytes of task inputs (a call's arguments, answers given before it became a
    /// task) and results (as JSON) one legacy session's tasks may have kept at once. A task
    /// whose input would pass it is not created; one whose result would pass it fails with
    /// an error saying so, its result not kept.
    /// Default: [`StateLimits::DEFAULT_MAX_TASK_BYTES_PER_SESSION`] (16 MiB).
    pub max_task_bytes_per_session: usize,
    /// The most bytes of task inputs and results the tasks of one client address may have
    /// kept at once (as above), when the caller has no principal (see
    /// [`max_tasks_per_address`](Self::max_tasks_per_address)).
    /// Default: [`StateLimits::DEFAULT_MAX_TASK_BYTES_PER_ADDRESS`] (32 MiB).
    pub max_task_bytes_per_address: usize,
    /// The most bytes of task inputs and results kept at once, for everyone (as above).
    /// Default: [`StateLimits::DEFAULT_MAX_TASK_BYTES`] (256 MiB).
    pub max_task_bytes: usize,
}

impl StateLimits {
    /// 64 KiB: a real client's capabilities and info are well under 4 KiB; the rest leaves
    /// room for hundreds of subscriptions. 10,000 sessions (the network default of
    /// `vellum serve`) then keep at most 640 MiB, most of which no client ever uses.
    pub const DEFAULT_MAX_SESSION_BYTES: usize = 64 * 1024;
    /// 1,000 subscriptions: more than a client watching a project's files needs; each costs
    /// a set entry beside its URI's bytes (which count against the session's bytes).
    pub const DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION: usize = 1000;
    /// One hour: long enough for a client to poll a long job's result, short enough that
    /// abandoned results do not pile up for a day.
    pub const DEFAULT_MAX_TASK_TTL: Duration = Duration::from_secs(3600);
    /// 100 tasks per session: far more than a client polls at once.
    pub const DEFAULT_MAX_TASKS_PER_SESSION: usize = 100;
    /// 1,000 tasks per principal: ten sessions' worth.
    pub const DEFAULT_MAX_TASKS_PER_PRINCIPAL: usize = 1000;
    /// 1,000 tasks per client address without a principal: ten sessions' worth, a tenth of
    /// the total, so that one address (whose sessions `vellum serve` caps at 100 on a
    /// network) cannot take every task of the server.
    pub const DEFAULT_MAX_TASKS_PER_ADDRESS: usize = 1000;
    /// 10,000 tasks in all, as many as the network default of sessions.
    pub const DEFAULT_MAX_TASKS: usize = 10_000;
    /// 16 MiB of task inputs and results per session: four answers of the largest default
    /// body (4 MiB).
    pub const DEFAULT_MAX_TASK_BYTES_PER_SESSION: usize = 16 * 1024 * 1024;
    /// 32 MiB of task inputs and results per client address without a principal: two
    /// sessions' worth, an eighth of the total.
    pub const DEFAULT_MAX_TASK_BYTES_PER_ADDRESS: usize = 32 * 1024 * 1024;
    /// 256 MiB of task inputs and results in all, the size of the server's other budgets
    /// (buffered bodies, unwritten answers).
    pub const DEFAULT_MAX_TASK_BYTES: usize = 256 * 1024 * 1024;

    /// Sets [`StateLimits::max_session_bytes`].
    #[must_use]
    pub fn with_max_session_bytes(mut self, bytes: usize) -> Self {
        self.max_session_bytes = bytes;
        self
    }

    /// Sets [`StateLimits::max_subscriptions_per_session`].
    #[must_use]
    pub fn with_max_subscriptions_per_session(mut self, n: usize) -> Self {
        self.max_subscriptions_per_session = n;
        self
    }

    /// Sets [`StateLimits::max_task_ttl`].
    #[must_use]
    pub fn with_max_task_ttl(mut self, ttl: Duration) -> Self {
        self.max_task_ttl = ttl;
        self
    }

    /// Sets [`StateLimits::max_tasks_per_session`].
    #[must_use]
    pub fn with_max_tasks_per_session(mut self, n: usize) -> Self {
        self.max_tasks_per_session = n;
        self
    }

    /// Sets [`StateLimits::max_tasks_per_principal`].
    #[must_use]
    pub fn with_max_tasks_per_principal(mut self, n: usize) -> Self {
        self.max_tasks_per_principal = n;
        self
    }

    /// Sets [`StateLimits::max_tasks_per_address`].
    #[must_use]
    pub fn with_max_tasks_per_address(mut self, n: usize) -> Self {
        self.max_tasks_per_address = n;
        self
    }

    /// Sets [`StateLimits::max_tasks`].
    #[must_use]
    pub fn with_max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }

    /// Sets [`StateLimits::max_task_bytes_per_session`].
    #[must_use]
    pub fn with_max_task_bytes_per_session(mut self, bytes: usize) -> Self {
        self.max_task_bytes_per_session = bytes;
        self
    }

    /// Sets [`StateLimits::max_task_bytes_per_address`].
    #[must_use]
    pub fn with_max_task_bytes_per_address(mut self, bytes: usize) -> Self {
        self.max_task_bytes_per_address = bytes;
        self
    }

    /// Sets [`StateLimits::max_task_bytes`].
    #[must_use]
    pub fn with_max_task_bytes(mut self, bytes: usize) -> Self {
        self.max_task_bytes = bytes;
        self
    }
}

impl Default for StateLimits {
    fn default() -> Self {
        StateLimits {
            max_session_bytes: Self::DEFAULT_MAX_SESSION_BYTES,
            max_subscriptions_per_session: Self::DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION,
            max_task_ttl: Self::DEFAULT_MAX_TASK_TTL,
            max_tasks_per_session: Self::DEFAULT_MAX_TASKS_PER_SESSION,
            max_tasks_per_principal: Self::DEFAULT_MAX_TASKS_PER_PRINCIPAL,
            max_tasks_per_address: Self::DEFAULT_MAX_TASKS_PER_ADDRESS,
            max_tasks: Self::DEFAULT_MAX_TASKS,
            max_task_bytes_per_session: Self::DEFAULT_MAX_TASK_BYTES_PER_SESSION,
            max_task_bytes_per_address: Self::DEFAULT_MAX_TASK_BYTES_PER_ADDRESS,
            max_task_bytes: Self::DEFAULT_MAX_TASK_BYTES,
        }
    }
}
