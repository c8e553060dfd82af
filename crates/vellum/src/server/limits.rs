//! [`StateLimits`]: what one client may make the server *keep* between its requests (issue
//! 27): the bytes of a legacy session (what its `initialize` said, its subscriptions), and
//! the tasks it starts (how many, for how long, how many bytes of inputs and results). Every
//! limit has a default that is safe on a public network; a request past one gets a JSON-RPC
//! error saying which, and nothing of it is kept.
//!
//! Also the one way a size is measured here: [`json_len`], the bytes a value takes as JSON,
//! counted without building the JSON and given up as soon as it passes a bound.
//!
//! Not here: the transport's limits (bodies, connections, the number of sessions: see
//! `StreamableHttpOptions` and `ConnectionLimits`), and where each limit is checked (the
//! session, `methods/lifecycle.rs`, the task ledger).

use std::time::Duration;

use serde::Serialize;

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
    /// The most tasks this server keeps at once, for everyone.
    /// Default: [`StateLimits::DEFAULT_MAX_TASKS`] (10,000).
    pub max_tasks: usize,
    /// The most bytes of task inputs (a call's arguments, answers given before it became a
    /// task) and results (as JSON) one legacy session's tasks may have kept at once. A task
    /// whose input would pass it is not created; one whose result would pass it fails with
    /// an error saying so, its result not kept.
    /// Default: [`StateLimits::DEFAULT_MAX_TASK_BYTES_PER_SESSION`] (16 MiB).
    pub max_task_bytes_per_session: usize,
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
    /// 10,000 tasks in all, as many as the network default of sessions.
    pub const DEFAULT_MAX_TASKS: usize = 10_000;
    /// 16 MiB of task inputs and results per session: four answers of the largest default
    /// body (4 MiB).
    pub const DEFAULT_MAX_TASK_BYTES_PER_SESSION: usize = 16 * 1024 * 1024;
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
            max_tasks: Self::DEFAULT_MAX_TASKS,
            max_task_bytes_per_session: Self::DEFAULT_MAX_TASK_BYTES_PER_SESSION,
            max_task_bytes: Self::DEFAULT_MAX_TASK_BYTES,
        }
    }
}

/// Counts the bytes written to it, failing once they pass `max` (which ends serialization
/// early: a 4 MB value costs no more to refuse than one just past the bound).
struct Counter {
    n: usize,
    max: usize,
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.n = self.n.saturating_add(buf.len());
        if self.n > self.max {
            return Err(std::io::Error::other("past the bound"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes `value` takes as JSON, or `None` when that is more than `max` (or it cannot be
/// serialized: then nothing of it can be kept either).
pub(crate) fn json_len<T: Serialize + ?Sized>(value: &T, max: usize) -> Option<usize> {
    let mut c = Counter { n: 0, max };
    serde_json::to_writer(&mut c, value).ok()?;
    Some(c.n)
}

#[cfg(test)]
mod tests {
    use super::json_len;

    #[test]
    fn json_len_counts_and_stops_past_the_bound() {
        let v = serde_json::json!({"a": "xyz"});
        assert_eq!(json_len(&v, 100), Some(11));
        assert_eq!(json_len(&v, 11), Some(11));
        assert_eq!(json_len(&v, 10), None);
        assert_eq!(json_len(&"x".repeat(1 << 20), 1000), None);
    }
}
