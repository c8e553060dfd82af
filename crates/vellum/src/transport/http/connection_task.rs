//! A connection's task: its handshake and its HTTP, kept within the connection's deadlines
//! by a [`Watchdog`] that wakes only when a deadline is due (never per request):
//!
//! - from accept to the first request head: [`ConnectionLimits::first_request_timeout`],
//!   covering the TLS handshake and HTTP version detection as well;
//! - idle (no request in progress): [`ConnectionLimits::idle_timeout`], then a graceful close
//!   (GOAWAY on HTTP/2) with [`CLOSE_GRACE`] to finish it;
//! - answer bytes waiting with no progress: [`ConnectionLimits::write_timeout`], then closed;
//! - chosen by the table to make room, or the server shutting down (graceful).
//!
//! Not here: the state it reads (`connection_table.rs`), the accept loop (`serve.rs`).

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use super::connection_limits::ConnectionLimits;
use super::connection_table::{Activity, ConnectionState, signal};
use super::listener::{Connected, Handshake};
use super::trace::log_event;

/// How long a graceful close (an idle connection's) may take before the connection is
/// dropped.
pub(super) const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How often a busy connection is looked at when no idle timeout says (a request ending
/// makes it idle without waking anyone).
const RECHECK: Duration = Duration::from_secs(60);

/// The connection's handshake (TLS, and a look at the first bytes with the feature `http2`)
/// within the first-request deadline; `None` when it failed, timed out, or the connection
/// was closed meanwhile.
pub(super) async fn handshake(state: &ConnectionState, handshake: Handshake) -> Option<Connected> {
    let table = state.table();
    let deadline = table.instant(
        state
            .accepted_ms()
            .saturating_add(millis(table.limits.first_request_timeout)),
    );
    let mut finish = pin!(handshake.finish());
    let mut timer = pin!(tokio::time::sleep_until(deadline));
    poll_fn(|cx| {
        if state.take_signals(cx) & (signal::CLOSE | signal::SHUTDOWN) != 0 {
            return Poll::Ready(None);
        }
        if let Poll::Ready(r) = finish.as_mut().poll(cx) {
            return Poll::Ready(r.ok());
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Runs `http` (a connection's HTTP) until it ends, its deadlines close it, or the table
/// does; `shut_down` starts its graceful close.
pub(super) async fn drive<C: Future>(
    state: &ConnectionState,
    http: C,
    mut shut_down: impl FnMut(Pin<&mut C>),
) {
    let table = state.table();
    let mut http = pin!(http);
    let mut watchdog = Watchdog::new(&table.limits, state.accepted_ms());
    let mut timer = pin!(tokio::time::sleep_until(
        table.instant(watchdog.first_check())
    ));
    poll_fn(|cx| {
        loop {
            if http.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            let signals = state.take_signals(cx);
            if signals & signal::CLOSE != 0 {
                return Poll::Ready(());
            }
            if signals & signal::SHUTDOWN != 0 && !watchdog.closing() {
                watchdog.shutting_down();
                shut_down(http.as_mut());
                continue;
            }
            if signals & signal::CHARGED == 0 && timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let now = table.now_ms();
            match watchdog.check(now, state.activity(), state.unsent()) {
                Verdict::Wait(at) => timer.as_mut().reset(table.instant(at)),
                Verdict::CloseGracefully => {
                    log_event!(table.logger.as_ref(), debug, "idle connection closed");
                    shut_down(http.as_mut());
                    timer
                        .as_mut()
                        .reset(table.instant(now.saturating_add(millis(CLOSE_GRACE))));
                }
                Verdict::Close(why) => {
                    log_event!(
                        table.logger.as_ref(),
                        debug,
                        reason = why,
                        "connection closed"
                    );
                    state.close_now();
                    return Poll::Ready(());
                }
            }
        }
    })
    .await
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 4)
}

/// What a connection's deadlines say now.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Look again at this time (ms on the table's clock).
    Wait(u64),
    /// Idle too long: close gracefully.
    CloseGracefully,
    /// Close now, for this reason.
    Close(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request head has arrived yet.
    Head,
    Serving,
    /// A graceful close began, to end by this time (never, for a server shutdown, whose
    /// grace the accept loop keeps).
    Closing {
        by: u64,
    },
}

/// The deadlines of one connection, in milliseconds on the table's clock.
#[derive(Debug)]
struct Watchdog {
    phase: Phase,
    head_due: u64,
    idle: Option<u64>,
    write: Option<u64>,
}

impl Watchdog {
    fn new(limits: &ConnectionLimits, accepted: u64) -> Self {
        Watchdog {
            phase: Phase::Head,
            head_due: accepted.saturating_add(millis(limits.first_request_timeout)),
            idle: limits.idle_timeout.map(millis),
            write: limits.write_timeout.map(millis),
        }
    }

    /// The first time to look: the first-request deadline.
    fn first_check(&self) -> u64 {
        self.head_due
    }

    fn closing(&self) -> bool {
        matches!(self.phase, Phase::Closing { .. })
    }

    fn shutting_down(&mut self) {
        self.phase = Phase::Closing { by: u64::MAX };
    }

    /// The verdict at `now`, given the connection's activity and its waiting answer bytes
    /// (how many, and when the peer last took some).
    fn check(&mut self, now: u64, activity: Activity, (unsent, progress): (usize, u64)) -> Verdict {
        let mut next = u64::MAX;
        if unsent > 0
            && let Some(write) = self.write
        {
            let due = progress.saturating_add(write);
            if now >= due {
                return Verdict::Close("write_timeout");
            }
            next = due;
        }
        match self.phase {
            Phase::Closing { by } if now >= by => return Verdict::Close("close_grace"),
            Phase::Closing { by } => return Verdict::Wait(next.min(by)),
            Phase::Head => match activity {
                Activity::Idle { served: false, .. } if now >= self.head_due => {
                    return Verdict::Close("first_request_timeout");
                }
                Activity::Idle { served: false, .. } => {
                    return Verdict::Wait(next.min(self.head_due));
                }
                _ => self.phase = Phase::Serving,
            },
            Phase::Serving => {}
        }
        let recheck = now.saturating_add(self.idle.unwrap_or(millis(RECHECK)));
        match (activity, self.idle) {
            (Activity::Idle { since_ms, .. }, Some(idle)) => {
                let due = since_ms.saturating_add(idle);
                if now >= due {
                    self.phase = Phase::Closing {
                        by: now.saturating_add(millis(CLOSE_GRACE)),
                    };
                    return Verdict::CloseGracefully;
                }
                Verdict::Wait(next.min(due))
            }
            _ => Verdict::Wait(next.min(recheck)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dog() -> Watchdog {
        Watchdog::new(
            &ConnectionLimits::default()
                .first_request_timeout(Duration::from_secs(10))
                .idle_timeout(Some(Duration::from_secs(60)))
                .write_timeout(Some(Duration::from_secs(30))),
            1_000,
        )
    }

    const NEVER_SERVED: Activity = Activity::Idle {
        since_ms: 1_000,
        served: false,
    };

    #[test]
    fn a_connection_without_a_request_is_closed_at_the_first_request_deadline() {
        let mut d = dog();
        assert_eq!(d.first_check(), 11_000);
        assert_eq!(d.check(5_000, NEVER_SERVED, (0, 0)), Verdict::Wait(11_000));
        assert_eq!(
            d.check(11_000, NEVER_SERVED, (0, 0)),
            Verdict::Close("first_request_timeout")
        );
    }

    #[test]
    fn an_idle_connection_closes_gracefully_after_the_idle_timeout_and_a_busy_one_does_not() {
        let mut d = dog();
        let idle = Activity::Idle {
            since_ms: 2_000,
            served: true,
        };
        assert_eq!(d.check(11_000, idle, (0, 0)), Verdict::Wait(62_000));
        assert_eq!(
            d.check(70_000, Activity::Busy, (0, 0)),
            Verdict::Wait(130_000)
        );
        let later = Activity::Idle {
            since_ms: 100_000,
            served: true,
        };
        assert_eq!(d.check(130_000, later, (0, 0)), Verdict::Wait(160_000));
        assert_eq!(d.check(160_000, later, (0, 0)), Verdict::CloseGracefully);
        assert_eq!(d.check(160_500, later, (0, 0)), Verdict::Wait(161_000));
        assert_eq!(
            d.check(161_000, later, (0, 0)),
            Verdict::Close("close_grace")
        );
    }

    #[test]
    fn waiting_bytes_without_progress_close_the_connection_at_the_write_timeout() {
        let mut d = dog();
        assert_eq!(
            d.check(11_000, Activity::Busy, (4096, 10_000)),
            Verdict::Wait(40_000)
        );
        assert_eq!(
            d.check(30_000, Activity::Busy, (4096, 25_000)),
            Verdict::Wait(55_000)
        );
        assert_eq!(
            d.check(55_000, Activity::Busy, (4096, 25_000)),
            Verdict::Close("write_timeout")
        );
    }
}
