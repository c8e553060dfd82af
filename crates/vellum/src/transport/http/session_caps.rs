//! What the session caps need of the session table: how many sessions each client address
//! holds (sessions without an authenticated owner, for `max_sessions_per_address`), and when
//! the soonest idle session expires, in all and per address, so that the 503 of a session
//! cap says the real wait in `Retry-After`.
//!
//! The counts follow the table exactly (a session counts from when it enters the table to
//! when it leaves). The expiries are kept at O(1) per session: a new session lowers them, and
//! the sweeper, which visits every session anyway, recomputes them. Between sweeps a session
//! that got busy or ended still counts as expiring at its old time, so the wait told is
//! never longer than the real one.
//!
//! Not here: the table itself (`session_table.rs`), the checks (`session_routing.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::sync::lock;

/// No expiry known.
const NONE: u64 = u64::MAX;

/// When the sweeper closes sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expiry {
    /// Idle longer than this (no request, no open stream).
    pub(crate) idle: Option<Duration>,
    /// No `notifications/initialized` this long after creation.
    pub(crate) handshake: Option<Duration>,
}

impl Expiry {
    /// When a session that is idle now expires, in milliseconds since the table's epoch
    /// (`None`: never, by itself).
    pub(crate) fn at(&self, created: u64, last_active: u64, handshake_done: bool) -> Option<u64> {
        let ms = |d: Duration| d.as_millis().min(u128::from(u64::MAX / 2)) as u64;
        let handshake = self
            .handshake
            .filter(|_| !handshake_done)
            .map(|t| created.saturating_add(ms(t)));
        let idle = self.idle.map(|t| last_active.saturating_add(ms(t)));
        handshake.into_iter().chain(idle).min()
    }

    /// The wait to tell when no session's expiry is known: the shortest timeout, else 60 s.
    fn fallback_secs(&self) -> u64 {
        [self.handshake, self.idle]
            .into_iter()
            .flatten()
            .min()
            .map_or(60, |t| t.as_secs().max(1))
    }
}

/// The sessions of one client address.
#[derive(Debug, Clone, Copy)]
struct Held {
    count: usize,
    /// The soonest expiry among them (ms since the epoch).
    soonest: u64,
}

/// Per-address counts and the soonest expiries (see the module documentation).
pub(crate) struct SessionCaps {
    pub(crate) expiry: Expiry,
    per_address: Mutex<HashMap<IpAddr, Held>>,
    soonest: AtomicU64,
}

impl SessionCaps {
    pub(crate) fn new(expiry: Expiry) -> Self {
        SessionCaps {
            expiry,
            per_address: Mutex::new(HashMap::new()),
            soonest: AtomicU64::new(NONE),
        }
    }

    /// A session entered the table (from `address`, when it is counted per address).
    pub(crate) fn added(&self, address: Option<IpAddr>, expires: Option<u64>) {
        let expires = expires.unwrap_or(NONE);
        self.soonest.fetch_min(expires, Ordering::AcqRel);
        if let Some(a) = address {
            let mut per = lock(&self.per_address);
            let held = per.entry(a).or_insert(Held {
                count: 0,
                soonest: NONE,
            });
            held.count += 1;
            held.soonest = held.soonest.min(expires);
        }
    }

    /// A session left the table.
    pub(crate) fn removed(&self, address: Option<IpAddr>) {
        let Some(a) = address else { return };
        let mut per = lock(&self.per_address);
        if let Some(held) = per.get_mut(&a) {
            held.count = held.count.saturating_sub(1);
            if held.count == 0 {
                per.remove(&a);
            }
        }
    }

    /// How many sessions `address` holds.
    pub(crate) fn held_by(&self, address: IpAddr) -> usize {
        lock(&self.per_address).get(&address).map_or(0, |h| h.count)
    }

    /// The sweeper's view: the soonest expiry of all idle sessions and per address.
    pub(crate) fn swept(&self, soonest: Option<u64>, per_address: HashMap<IpAddr, u64>) {
        self.soonest
            .store(soonest.unwrap_or(NONE), Ordering::Release);
        let mut per = lock(&self.per_address);
        for (a, held) in per.iter_mut() {
            held.soonest = per_address.get(a).copied().unwrap_or(NONE);
        }
    }

    /// The `Retry-After` of a refusal at `now`: until the soonest session of `address` (or of
    /// all, without one) expires, at least 1 s.
    pub(crate) fn retry_after_secs(&self, address: Option<IpAddr>, now: u64) -> u64 {
        let soonest = match address {
            Some(a) => lock(&self.per_address).get(&a).map_or(NONE, |h| h.soonest),
            None => self.soonest.load(Ordering::Acquire),
        };
        if soonest == NONE {
            return self.expiry.fallback_secs();
        }
        // Rounded up: a client that waits that long finds the session gone (the sweeper
        // runs a little after; its period is at most 5 s, a quarter of the timeout).
        soonest.saturating_sub(now).div_ceil(1000).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_until_the_soonest_session_of_the_address_expires() {
        let caps = SessionCaps::new(Expiry {
            idle: Some(Duration::from_secs(1800)),
            handshake: Some(Duration::from_secs(60)),
        });
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        // Created at 0 without a handshake: expires at 60 s.
        caps.added(Some(a), caps.expiry.at(0, 0, false));
        // Initialized, last active at 10 s: expires at 1810 s.
        caps.added(Some(b), caps.expiry.at(0, 10_000, true));
        assert_eq!(caps.held_by(a), 1);
        assert_eq!(caps.retry_after_secs(Some(a), 20_000), 40);
        assert_eq!(caps.retry_after_secs(Some(b), 20_000), 1790);
        assert_eq!(caps.retry_after_secs(None, 20_000), 40);
        caps.removed(Some(a));
        assert_eq!(caps.held_by(a), 0);
        // Unknown: the shortest timeout.
        assert_eq!(caps.retry_after_secs(Some(a), 20_000), 60);
    }
}
