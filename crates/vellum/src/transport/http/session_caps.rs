//! What the session caps need of the session table: how many sessions each holder has (an
//! authenticated principal, for `max_sessions_per_principal`; else the client address, for
//! `max_sessions_per_address`), the slots reserved by `initialize` requests still being
//! answered, and when the soonest idle session expires, in all and per holder, so that the
//! 503 of a session cap says the real wait in `Retry-After`.
//!
//! A new session takes a [`SessionSlot`] when its `initialize` is routed, checked against
//! every cap together with the sessions already in the table under one lock, so that many
//! `initialize` at once (one HTTP/2 connection, many connections) cannot all pass the check
//! before any of them is in the table. The slot goes when the session enters the table, or
//! when it is abandoned or its request dropped.
//!
//! The counts follow the table exactly (a session counts from when it enters the table to
//! when it leaves). The wait of a per-holder refusal is computed then, from the holder's
//! own sessions (at most its cap of them). The wait of the cap in all would need every
//! session: the sweeper, which visits every session anyway, records the soonest expiry, and
//! a new session lowers it; between sweeps (at most 5 s) a session that got busy or sent
//! `initialized` still counts as expiring at its old time, so that wait is never longer
//! than the real one.
//!
//! Not here: the table itself (`session_table.rs`), the checks (`session_routing.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::sync::lock;

use super::session_hooks::Owner;

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

/// Whom a session counts against: its authenticated owner, else its client address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Holder {
    Owner(Owner),
    Address(IpAddr),
}

/// The sessions of one holder, by id.
type Held = Vec<(Arc<str>, Weak<dyn Expiring>)>;

/// The caps a new session is checked against (`None`: no cap).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) total: Option<usize>,
    pub(crate) per_principal: Option<usize>,
    pub(crate) per_address: Option<usize>,
}

/// Which cap refused a new session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Full {
    Total,
    Holder(Holder),
}

/// The sessions in the table per holder, and the slots reserved but not yet in the table.
#[derive(Default)]
struct Counts {
    held: HashMap<Holder, Held>,
    reserved: usize,
    reserved_by: HashMap<Holder, usize>,
}

/// Per-holder counts and the soonest expiries (see the module documentation).
pub(crate) struct SessionCaps {
    pub(crate) expiry: Expiry,
    counts: Mutex<Counts>,
    soonest: AtomicU64,
}

/// A new session's place under the caps, from its `initialize` until it enters the table
/// (or is abandoned): released on drop.
pub(crate) struct SessionSlot {
    caps: Arc<SessionCaps>,
    holder: Option<Holder>,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let mut counts = lock(&self.caps.counts);
        counts.reserved = counts.reserved.saturating_sub(1);
        if let Some(h) = &self.holder
            && let Some(n) = counts.reserved_by.get_mut(h)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.reserved_by.remove(h);
            }
        }
    }
}

impl SessionCaps {
    pub(crate) fn new(expiry: Expiry) -> Self {
        SessionCaps {
            expiry,
            counts: Mutex::new(Counts::default()),
            soonest: AtomicU64::new(NONE),
        }
    }

    /// Reserves a slot for a new session of `holder` when the sessions in the table
    /// (`in_table` of them in all) and the slots already reserved leave room under `caps`.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        caps: Caps,
        in_table: impl FnOnce() -> usize,
        holder: Option<Holder>,
    ) -> Result<SessionSlot, Full> {
        let mut counts = lock(&self.counts);
        if let Some(max) = caps.total
            && in_table().saturating_add(counts.reserved) >= max
        {
            return Err(Full::Total);
        }
        let cap = match &holder {
            Some(Holder::Owner(_)) => caps.per_principal,
            Some(Holder::Address(_)) => caps.per_address,
            None => None,
        };
        if let (Some(max), Some(h)) = (cap, &holder) {
            let held = counts.held.get(h).map_or(0, Vec::len);
            let reserved = counts.reserved_by.get(h).copied().unwrap_or(0);
            if held.saturating_add(reserved) >= max {
                return Err(Full::Holder(h.clone()));
            }
        }
        counts.reserved += 1;
        if let Some(h) = &holder {
            *counts.reserved_by.entry(h.clone()).or_default() += 1;
        }
        Ok(SessionSlot {
            caps: self.clone(),
            holder,
        })
    }

    /// Session `id` entered the table (counted against `holder`, when it has one).
    /// `expires`: when it would expire if idle from now.
    pub(crate) fn added(
        &self,
        id: &Arc<str>,
        holder: Option<&Holder>,
        session: Weak<dyn Expiring>,
        expires: Option<u64>,
    ) {
        self.soonest
            .fetch_min(expires.unwrap_or(NONE), Ordering::AcqRel);
        if let Some(h) = holder {
            lock(&self.counts)
                .held
                .entry(h.clone())
                .or_default()
                .push((id.clone(), session));
        }
    }

    /// Session `id` left the table.
    pub(crate) fn removed(&self, id: &str, holder: Option<&Holder>) {
        let Some(h) = holder else { return };
        let mut counts = lock(&self.counts);
        if let Some(held) = counts.held.get_mut(h) {
            held.retain(|(i, _)| &**i != id);
            if held.is_empty() {
                counts.held.remove(h);
            }
        }
    }

    /// How many sessions `holder` has in the table.
    #[cfg(test)]
    pub(crate) fn held_by(&self, holder: &Holder) -> usize {
        lock(&self.counts).held.get(holder).map_or(0, Vec::len)
    }

    /// The sweeper's view: the soonest expiry of all idle sessions.
    pub(crate) fn swept(&self, soonest: Option<u64>) {
        self.soonest
            .store(soonest.unwrap_or(NONE), Ordering::Release);
    }

    /// The `Retry-After` of a refusal at `now`: until the soonest session of the holder that
    /// is full (or of all) expires, at least 1 s.
    pub(crate) fn retry_after_secs(&self, full: &Full, now: u64) -> u64 {
        let soonest = match full {
            Full::Holder(h) => lock(&self.counts).held.get(h).map_or(NONE, |held| {
                held.iter()
                    .filter_map(|(_, s)| s.upgrade()?.expires_at(&self.expiry))
                    .min()
                    .unwrap_or(NONE)
            }),
            Full::Total => self.soonest.load(Ordering::Acquire),
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
        let a = Holder::Address("192.0.2.1".parse().unwrap());
        let b = Holder::Owner(("issuer".into(), "subject".into()));
        // Created at 0 without a handshake: expires at 60 s.
        let s1: Arc<dyn Expiring> = Arc::new(Fixed(expiry.at(0, 0, false)));
        // Initialized, last active at 10 s: expires at 1810 s.
        let s2: Arc<dyn Expiring> = Arc::new(Fixed(expiry.at(0, 10_000, true)));
        caps.added(
            &Arc::from("1"),
            Some(&a),
            Arc::downgrade(&s1),
            s1.expires_at(&expiry),
        );
        caps.added(
            &Arc::from("2"),
            Some(&b),
            Arc::downgrade(&s2),
            s2.expires_at(&expiry),
        );
        let (fa, fb) = (Full::Holder(a.clone()), Full::Holder(b.clone()));
        assert_eq!(caps.held_by(&a), 1);
        assert_eq!(caps.retry_after_secs(&fa, 20_000), 40);
        // A principal's wait is its own sessions', not the soonest of all.
        assert_eq!(caps.retry_after_secs(&fb, 20_000), 1790);
        assert_eq!(caps.retry_after_secs(&Full::Total, 20_000), 40);
        caps.removed("1", Some(&a));
        assert_eq!(caps.held_by(&a), 0);
        // Unknown: the shortest timeout.
        assert_eq!(caps.retry_after_secs(&fa, 20_000), 60);
    }

    #[test]
    fn reserved_slots_count_until_dropped() {
        let expiry = Expiry {
            idle: None,
            handshake: None,
        };
        let caps = Arc::new(SessionCaps::new(expiry));
        let a = Holder::Address("192.0.2.1".parse().unwrap());
        let limits = Caps {
            total: Some(3),
            per_principal: None,
            per_address: Some(2),
        };
        let first = caps.reserve(limits, || 0, Some(a.clone())).unwrap();
        let second = caps.reserve(limits, || 0, Some(a.clone())).unwrap();
        // Nothing in the table yet: the reservations alone fill the address's cap.
        let refused = caps.reserve(limits, || 0, Some(a.clone())).err();
        assert_eq!(refused, Some(Full::Holder(a.clone())));
        let other = caps.reserve(limits, || 0, None).unwrap();
        assert_eq!(caps.reserve(limits, || 0, None).err(), Some(Full::Total));
        drop((first, other));
        let third = caps.reserve(limits, || 0, Some(a.clone()));
        assert!(third.is_ok());
        drop(second);
    }
}
