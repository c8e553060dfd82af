//! The flags of what one client may make the server keep between its requests (vellum's
//! [`StateLimits`]): a legacy session's bytes and subscriptions, and tasks. Each defaults to
//! the library's default; `0` turns a cap off.

use std::time::Duration;

use clap::Args;
use vellum::server::StateLimits;

/// Session and task limits (flattened into the HTTP flags; `vellum serve --stdio` applies
/// them too).
#[derive(Debug, Args)]
#[command(next_help_heading = "Sessions and tasks")]
pub(crate) struct StateArgs {
    /// The most bytes a session keeps: the client's capabilities and info from `initialize`
    /// (as JSON) plus the URIs it subscribed to; an `initialize` or `resources/subscribe`
    /// past it gets a JSON-RPC error and nothing is kept (also what a session store keeps).
    #[arg(long, value_name = "BYTES", default_value_t = StateLimits::DEFAULT_MAX_SESSION_BYTES)]
    max_session_bytes: usize,
    /// The most resources one session may be subscribed to at once.
    #[arg(long, value_name = "N", default_value_t = StateLimits::DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION)]
    max_subscriptions: usize,
    /// The longest a task is kept: a client's requested TTL is clamped to it, and the task
    /// reports the clamped value (`0s`: no cap, the client picks).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "1h")]
    max_task_ttl: Duration,
    /// The most tasks one session may have kept at once (running, or ended within their TTL).
    #[arg(long, value_name = "N", default_value_t = StateLimits::DEFAULT_MAX_TASKS_PER_SESSION)]
    max_tasks_per_session: usize,
    /// The most tasks one authenticated principal may have kept at once.
    #[arg(long, value_name = "N", default_value_t = StateLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL)]
    max_tasks_per_principal: usize,
    /// The most tasks one client address may have kept at once when the caller is not
    /// authenticated (the address as --trusted-proxy and --ipv6-prefix tell it).
    #[arg(long, value_name = "N", default_value_t = StateLimits::DEFAULT_MAX_TASKS_PER_ADDRESS)]
    max_tasks_per_address: usize,
    /// The most tasks kept at once, for everyone.
    #[arg(long, value_name = "N", default_value_t = StateLimits::DEFAULT_MAX_TASKS)]
    max_tasks: usize,
    /// The most bytes of task inputs and results one session's tasks may have kept at once
    /// (a task past it is refused, or fails without its result).
    #[arg(long, value_name = "BYTES", default_value_t = StateLimits::DEFAULT_MAX_TASK_BYTES_PER_SESSION)]
    max_task_bytes_per_session: usize,
    /// The most bytes of task inputs and results the tasks of one client address may have
    /// kept at once when the caller is not authenticated.
    #[arg(long, value_name = "BYTES", default_value_t = StateLimits::DEFAULT_MAX_TASK_BYTES_PER_ADDRESS)]
    max_task_bytes_per_address: usize,
    /// The most bytes of task inputs and results kept at once, for everyone.
    #[arg(long, value_name = "BYTES", default_value_t = StateLimits::DEFAULT_MAX_TASK_BYTES)]
    max_task_bytes: usize,
}

impl StateArgs {
    /// The flags as the server's limits (`0` as no cap).
    pub(crate) fn limits(&self) -> StateLimits {
        let cap = |n: usize| if n == 0 { usize::MAX } else { n };
        let ttl = if self.max_task_ttl.is_zero() {
            Duration::MAX
        } else {
            self.max_task_ttl
        };
        StateLimits::default()
            .with_max_session_bytes(cap(self.max_session_bytes))
            .with_max_subscriptions_per_session(cap(self.max_subscriptions))
            .with_max_task_ttl(ttl)
            .with_max_tasks_per_session(cap(self.max_tasks_per_session))
            .with_max_tasks_per_principal(cap(self.max_tasks_per_principal))
            .with_max_tasks_per_address(cap(self.max_tasks_per_address))
            .with_max_tasks(cap(self.max_tasks))
            .with_max_task_bytes_per_session(cap(self.max_task_bytes_per_session))
            .with_max_task_bytes_per_address(cap(self.max_task_bytes_per_address))
            .with_max_task_bytes(cap(self.max_task_bytes))
    }
}
