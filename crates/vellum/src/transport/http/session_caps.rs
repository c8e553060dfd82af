//! What the session caps need of the session table: how many sessions each client address
//! holds (sessions without an authenticated owner, for `max_sessions_per_address`), and when
//! the soonest idle session expires, in all and per address, so that the 503 of a session
//! cap says the real wait in `Retry-After`.
//!
//! The counts follow the table exactly (a session counts from when it enters the table to
//! when it leaves). The wait of a per-address refusal is computed then, from the address's
//! own sessions (at most its cap of them). The wait of the other caps (in all, per
//! principal) would need every session: the sweeper, which visits every session anyway,
//! records the soonest expiry, and a new session lowers it; between sweeps (at most 5 s) a
//! session that got busy or sent `initialized` still counts as expiring at its old time, so
//! that wait is never longer than the real one.
//!
//! Not here: the table itself (`session_table.rs`), the checks (`session_routing.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
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

/// A session as the caps see it.
pub(crate) trait Expiring: Send + Sync {
    /// When it expires if it stays idle from now (ms since the table's epoch); `None`: it is
    /// busy, or never expires by itself.
    fn expires_at(&self, expiry: &Expiry) -> Option<u64>;
}

/// The sessions of one client address, by id.
type Held = Vec<(Arc<str>, Weak<dyn Expiring>)>;

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

    /// Session `id` entered the table (from `address`, when it is counted per address).
    /// `expires`: when it would expire if idle from now.
    pub(crate) fn added(
        &self,
        id: &Arc<str>,
        address: Option<IpAddr>,
        session: Weak<dyn Expiring>,
        expires: Option<u64>,
    ) {
        self.soonest
            .fetch_min(expires.unwrap_or(NONE), Ordering::AcqRel);
        if let Some(a) = address {
            lock(&self.per_address)
                .entry(a)
                .or_default()
                .push((id.clone(), session));
        }
    }

    /// Session `id` left the table.
    pub(crate) fn removed(&self, id: &str, address: Option<IpAddr>) {
        let Some(a) = address else { return };
        let mut per = lock(&self.per_address);
        if let Some(held) = per.get_mut(&a) {
            held.retain(|(i, _)| &**i != id);
            if held.is_empty() {
                per.remove(&a);
            }
        }
    }

    /// How many sessions `address` holds.
    pub(crate) fn held_by(&self, address: IpAddr) -> usize {
        lock(&self.per_address).get(&address).map_or(0, Vec::len)
    }

    /// The sweeper's view: the soonest expiry of all idle sessions.
    pub(crate) fn swept(&self, soonest: Option<u64>) {
        self.soonest
            .store(soonest.unwrap_or(NONE), Ordering::Release);
    }

    /// The `Retry-After` of a refusal at `now`: until the soonest session of `address` (or of
    /// all, without one) expires, at least 1 s.
    pub(crate) fn retry_after_secs(&self, address: Option<IpAddr>, now: u64) -> u64 {
        let soonest = match address {
            Some(a) => lock(&self.per_address).get(&a).map_or(NONE, |held| {
                held.iter()
                    .filter_map(|(_, s)| s.upgrade()?.expires_at(&self.expiry))
                    .min()
                    .unwrap_or(NONE)
            }),
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

    struct Fixed(Option<u64>);

    impl Expiring for Fixed {
        fn expires_at(&self, _: &Expiry) -> Option<u64> {
            self.0
        }
    }

    #[test]
    fn the_wait_is_until_the_soonest_session_of_the_address_expires() {
        let expiry = Expiry {
            idle: Some(Duration::from_secs(1800)),
            handshake: Some(Duration::from_secs(60)),
        };
        let caps = SessionCaps::new(expiry);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        // Created at 0 without a handshake: expires at 60 s.
        let s1: Arc<dyn Expiring> = Arc::new(Fixed(expiry.at(0, 0, false)));
        // Initialized, last active at 10 s: expires at 1810 s.
        let s2: Arc<dyn Expiring> = Arc::new(Fixed(expiry.at(0, 10_000, true)));
        caps.added(
            &Arc::from("1"),
            Some(a),
            Arc::downgrade(&s1),
            s1.expires_at(&expiry),
        );
        caps.added(
            &Arc::from("2"),
            Some(b),
            Arc::downgrade(&s2),
            s2.expires_at(&expiry),
        );
        assert_eq!(caps.held_by(a), 1);
        assert_eq!(caps.retry_after_secs(Some(a), 20_000), 40);
        assert_eq!(caps.retry_after_secs(Some(b), 20_000), 1790);
        assert_eq!(caps.retry_after_secs(None, 20_000), 40);
        caps.removed("1", Some(a));
        assert_eq!(caps.held_by(a), 0);
        // Unknown: the shortest timeout.
        assert_eq!(caps.retry_after_secs(Some(a), 20_000), 60);
    }
}
