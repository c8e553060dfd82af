//! [`StateLimits`]: what one client may make the server *keep* between its requests (issue
//! 27): the bytes of a legacy session (what its `initialize` said, its subscriptions), and
//! the tasks it starts (how many, for how long, how many bytes of inputs and results), per
//! session, principal, client address and in total. Every
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

/// What one value kept as a `serde_json::Value` takes beyond its JSON text: the value itself
/// and as much again of room in the vector or B-tree node holding it (both grow by halves
/// and doubles).
const VALUE_COST: usize = 2 * std::mem::size_of::<serde_json::Value>();

/// What one object member takes beyond its JSON text and its value: the key's `String` and
/// its heap block (an allocator's smallest is 16 to 32 bytes).
const MEMBER_COST: usize = std::mem::size_of::<String>() + 32;

/// Counts the bytes written to it plus what the formatter adds for each value and member,
/// failing once the sum passes `max` (which ends serialization early: a 4 MB value costs no
/// more to refuse than one just past the bound).
struct Counter<'a> {
    n: usize,
    max: usize,
    /// What the formatter added.
    costs: &'a std::cell::Cell<usize>,
}

impl Counter<'_> {
    fn add(&mut self, n: usize) -> std::io::Result<()> {
        self.n = self.n.saturating_add(n);
        if self.n.saturating_add(self.costs.get()) > self.max {
            return Err(std::io::Error::other("past the bound"));
        }
        Ok(())
    }
}

impl std::io::Write for Counter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.add(buf.len())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Compact JSON, with the cost of each value and member added to the [`Counter`] it writes
/// to (as zero-width writes would not be: the counter is the writer).
struct Costed<'a> {
    counter: &'a std::cell::Cell<usize>,
}

impl Costed<'_> {
    fn cost(&self, n: usize) {
        self.counter.set(self.counter.get().saturating_add(n));
    }
}

/// Forwards to serde_json's compact output, noting a cost at the start of each value and
/// member.
macro_rules! costed_values {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            $($arg: $ty),*
        ) -> std::io::Result<()> {
            self.cost(VALUE_COST);
            serde_json::ser::CompactFormatter.$method(writer, $($arg),*)
        }
    )*};
}

impl serde_json::ser::Formatter for Costed<'_> {
    costed_values! {
        write_null();
        write_bool(value: bool);
        write_i8(value: i8);
        write_i16(value: i16);
        write_i32(value: i32);
        write_i64(value: i64);
        write_i128(value: i128);
        write_u8(value: u8);
        write_u16(value: u16);
        write_u32(value: u32);
        write_u64(value: u64);
        write_u128(value: u128);
        write_f32(value: f32);
        write_f64(value: f64);
        write_number_str(value: &str);
        begin_string();
        begin_array();
        begin_object();
        write_raw_fragment(fragment: &str);
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.cost(MEMBER_COST);
        // The key is a string, but not a value of its own: its `begin_string` is undone.
        self.counter
            .set(self.counter.get().saturating_sub(VALUE_COST));
        serde_json::ser::CompactFormatter.begin_object_key(writer, first)
    }
}

/// About the memory `value` takes when kept as parsed JSON (`serde_json::Value`): its JSON
/// bytes plus a cost per value and per object member; `None` when that is more than `max`
/// (or it cannot be serialized: then nothing of it can be kept either). A value of many
/// tiny nodes (`{"a":0,...}`, `[[],[],...]`) takes 10-25 times its JSON bytes in memory;
/// this counts it so.
pub(crate) fn json_len<T: Serialize + ?Sized>(value: &T, max: usize) -> Option<usize> {
    let costs = std::cell::Cell::new(0);
    let mut c = Counter {
        n: 0,
        max,
        costs: &costs,
    };
    let mut ser = serde_json::Serializer::with_formatter(&mut c, Costed { counter: &costs });
    value.serialize(&mut ser).ok()?;
    c.add(0).ok()?;
    Some(c.n.saturating_add(costs.get()))
}

#[cfg(test)]
mod tests {
    use super::{MEMBER_COST, VALUE_COST, json_len};

    #[test]
    fn json_len_counts_and_stops_past_the_bound() {
        let v = serde_json::json!({"a": "xyz"});
        // 11 bytes of JSON, two values (the object, the string) and one member.
        let n = 11 + 2 * VALUE_COST + MEMBER_COST;
        assert_eq!(json_len(&v, 1000), Some(n));
        assert_eq!(json_len(&v, n), Some(n));
        assert_eq!(json_len(&v, n - 1), None);
        assert_eq!(json_len(&"x".repeat(1 << 20), 1000), None);
    }

    #[test]
    fn json_len_counts_tiny_nodes_near_their_memory() {
        // 6,000 members of `"aNNNN":0`: about 60 KiB of JSON, several times that kept as a
        // `serde_json::Value`.
        let members: serde_json::Map<String, serde_json::Value> =
            (0..6000).map(|i| (format!("a{i:04}"), 0.into())).collect();
        let v = serde_json::Value::Object(members);
        let json = serde_json::to_string(&v).unwrap_or_default().len();
        let counted = json_len(&v, usize::MAX).unwrap_or_default();
        assert!(json < 64 * 1024, "{json}");
        assert!(counted > 6000 * (VALUE_COST + MEMBER_COST), "{counted}");
        assert_eq!(json_len(&v, 64 * 1024), None);
    }
}
