//! [`TaskLedger`]: the tasks this instance created and still keeps, counted per legacy
//! session, per principal, per client address (a caller without a principal) and in total,
//! with the bytes of their inputs and results, so that the caps of [`StateLimits`] hold
//! before a task is created and before its result is stored.
//!
//! A task is charged from its creation until it has stopped running here *and* its TTL has
//! passed (what the store keeps it for); charges past that are dropped the next time the
//! ledger is used, in deadline order (no scan of the live tasks). With a shared store
//! (Redis), each instance counts the tasks it created: a deployment keeps at most its
//! instances times the caps.
//!
//! Not here: the store itself (`crate::store`), what runs a task (`methods/tasks/`).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::limits::StateLimits;
use crate::sync::lock;

/// Who a task is charged to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Payer {
    /// The legacy session that started it (its key in the server's session table).
    pub(crate) session: Option<u64>,
    /// The authenticated principal that started it (its digest).
    pub(crate) principal: Option<String>,
    /// The client address key of a caller without a principal (the transport's: IPv6 by
    /// prefix), so that one address cannot take every task of the server.
    pub(crate) address: Option<IpAddr>,
}

/// What a task may not be created past, or have kept past: the cap, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    SessionTasks(usize),
    PrincipalTasks(usize),
    AddressTasks(usize),
    Tasks(usize),
    SessionBytes(usize),
    AddressBytes(usize),
    Bytes(usize),
}

impl std::fmt::Display for Over {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Over::SessionTasks(n) => write!(
                f,
                "this session keeps {n} tasks, the most this server allows \
                 (max_tasks_per_session)"
            ),
            Over::PrincipalTasks(n) => write!(
                f,
                "this principal keeps {n} tasks, the most this server allows \
                 (max_tasks_per_principal)"
            ),
            Over::AddressTasks(n) => write!(
                f,
                "this client address keeps {n} tasks, the most this server allows \
                 (max_tasks_per_address)"
            ),
            Over::Tasks(n) => write!(
                f,
                "the server keeps {n} tasks, the most it allows (max_tasks)"
            ),
            Over::SessionBytes(n) => write!(
                f,
                "this session's tasks would keep more than {n} bytes of inputs and results \
                 (max_task_bytes_per_session)"
            ),
            Over::AddressBytes(n) => write!(
                f,
                "this client address's tasks would keep more than {n} bytes of inputs and \
                 results (max_task_bytes_per_address)"
            ),
            Over::Bytes(n) => write!(
                f,
                "the server's tasks would keep more than {n} bytes of inputs and results \
                 (max_task_bytes)"
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    tasks: usize,
    bytes: usize,
}

/// What a payer's session, principal and address already keep (zero for those it has not).
#[derive(Debug, Clone, Copy, Default)]
struct Usages {
    session: Usage,
    principal: Usage,
    address: Usage,
}

struct Charge {
    payer: Payer,
    bytes: usize,
    /// When its TTL passes; none when that is past what an `Instant` holds (then it is
    /// kept: never dropped early).
    deadline: Option<Instant>,
    /// Its key in `State::ending`, once it stopped running here.
    ending: Option<(Instant, u64)>,
}

#[derive(Default)]
struct State {
    charges: HashMap<String, Charge>,
    /// The charges of tasks no longer running here, by when they go.
    ending: BTreeMap<(Instant, u64), String>,
    seq: u64,
    total: Usage,
    sessions: HashMap<u64, Usage>,
    principals: HashMap<String, Usage>,
    addresses: HashMap<IpAddr, Usage>,
}

impl Usage {
    fn add(&mut self, tasks: isize, bytes: isize) {
        self.tasks = self.tasks.saturating_add_signed(tasks);
        self.bytes = self.bytes.saturating_add_signed(bytes);
    }
}

/// Adds `tasks` and `bytes` (or takes them away) to the usage of `key` in `map`, dropping
/// it once it has no task left (the maps hold only payers that keep something).
fn account_in<K: std::hash::Hash + Eq + Clone>(
    map: &mut HashMap<K, Usage>,
    key: &K,
    tasks: isize,
    bytes: isize,
) {
    if let Some(u) = map.get_mut(key) {
        u.add(tasks, bytes);
        if u.tasks == 0 {
            map.remove(key);
        }
        return;
    }
    let mut u = Usage::default();
    u.add(tasks, bytes);
    if u.tasks != 0 {
        map.insert(key.clone(), u);
    }
}

impl State {
    fn usage(&self, payer: &Payer) -> Usages {
        Usages {
            session: payer
                .session
                .and_then(|k| self.sessions.get(&k).copied())
                .unwrap_or_default(),
            principal: payer
                .principal
                .as_ref()
                .and_then(|p| self.principals.get(p).copied())
                .unwrap_or_default(),
            address: payer
                .address
                .and_then(|a| self.addresses.get(&a).copied())
                .unwrap_or_default(),
        }
    }

    /// Adds (or takes away) a task and bytes to each of `payer`'s usages.
    fn account(&mut self, payer: &Payer, tasks: isize, bytes: isize) {
        self.total.add(tasks, bytes);
        if let Some(k) = &payer.session {
            account_in(&mut self.sessions, k, tasks, bytes);
        }
        if let Some(p) = &payer.principal {
            account_in(&mut self.principals, p, tasks, bytes);
        }
        if let Some(a) = &payer.address {
            account_in(&mut self.addresses, a, tasks, bytes);
        }
    }

    /// Drops the charges whose task stopped and whose TTL passed.
    fn purge(&mut self, now: Instant) {
        while let Some(entry) = self.ending.first_entry() {
            if entry.key().0 > now {
                return;
            }
            let id = entry.remove();
            if let Some(c) = self.charges.remove(&id) {
                self.account(&c.payer, -1, -(c.bytes as isize));
            }
        }
    }
}

/// The tasks this instance keeps, by payer (see the module).
#[derive(Default)]
pub(crate) struct TaskLedger {
    state: Mutex<State>,
}

impl TaskLedger {
    /// Charges a new task `id` with `input` bytes, kept for `ttl`; refused past a cap.
    pub(crate) fn reserve(
        &self,
        id: &str,
        payer: Payer,
        input: usize,
        ttl: Duration,
        limits: &StateLimits,
    ) -> Result<(), Over> {
        let now = Instant::now();
        let mut st = lock(&self.state);
        st.purge(now);
        let u = st.usage(&payer);
        if payer.session.is_some() && u.session.tasks >= limits.max_tasks_per_session {
            return Err(Over::SessionTasks(u.session.tasks));
        }
        if payer.principal.is_some() && u.principal.tasks >= limits.max_tasks_per_principal {
            return Err(Over::PrincipalTasks(u.principal.tasks));
        }
        if payer.address.is_some() && u.address.tasks >= limits.max_tasks_per_address {
            return Err(Over::AddressTasks(u.address.tasks));
        }
        if st.total.tasks >= limits.max_tasks {
            return Err(Over::Tasks(st.total.tasks));
        }
        check_bytes(&st, &payer, u, input, limits)?;
        st.account(&payer, 1, input as isize);
        st.charges.insert(
            id.to_owned(),
            Charge {
                payer,
                bytes: input,
                deadline: now.checked_add(ttl),
                ending: None,
            },
        );
        Ok(())
    }

    /// Charges task `id` with `bytes` more (its result); refused past a byte budget, and
    /// then nothing is charged.
    pub(crate) fn add_bytes(
        &self,
        id: &str,
        bytes: usize,
        limits: &StateLimits,
    ) -> Result<(), Over> {
        let mut st = lock(&self.state);
        let Some(payer) = st.charges.get(id).map(|c| c.payer.clone()) else {
            // Not charged here (its charge lapsed): nothing to count it against.
            return Ok(());
        };
        let u = st.usage(&payer);
        check_bytes(&st, &payer, u, bytes, limits)?;
        st.account(&payer, 0, bytes as isize);
        if let Some(c) = st.charges.get_mut(id) {
            c.bytes += bytes;
        }
        Ok(())
    }

    /// Task `id` stopped running here: its charge goes once its TTL has passed.
    pub(crate) fn stopped(&self, id: &str) {
        let now = Instant::now();
        let mut st = lock(&self.state);
        st.seq += 1;
        let seq = st.seq;
        let Some(c) = st.charges.get_mut(id) else {
            return;
        };
        if c.ending.is_some() {
            return;
        }
        let Some(deadline) = c.deadline else {
            return;
        };
        let key = (deadline.max(now), seq);
        c.ending = Some(key);
        st.ending.insert(key, id.to_owned());
        st.purge(now);
    }

    /// Drops task `id`'s charge now (it was never kept: its record could not be stored).
    pub(crate) fn release(&self, id: &str) {
        let mut st = lock(&self.state);
        if let Some(c) = st.charges.remove(id) {
            if let Some(k) = c.ending {
                st.ending.remove(&k);
            }
            st.account(&c.payer, -1, -(c.bytes as isize));
        }
    }

    /// Tasks and bytes charged now, in total (for tests).
    #[cfg(test)]
    fn total(&self) -> (usize, usize) {
        let mut st = lock(&self.state);
        st.purge(Instant::now());
        (st.total.tasks, st.total.bytes)
    }

    /// The addresses charged now (for tests).
    #[cfg(test)]
    fn addresses(&self) -> usize {
        lock(&self.state).addresses.len()
    }
}

fn check_bytes(
    st: &State,
    payer: &Payer,
    u: Usages,
    bytes: usize,
    limits: &StateLimits,
) -> Result<(), Over> {
    if payer.session.is_some()
        && u.session.bytes.saturating_add(bytes) > limits.max_task_bytes_per_session
    {
        return Err(Over::SessionBytes(limits.max_task_bytes_per_session));
    }
    if payer.address.is_some()
        && u.address.bytes.saturating_add(bytes) > limits.max_task_bytes_per_address
    {
        return Err(Over::AddressBytes(limits.max_task_bytes_per_address));
    }
    if st.total.bytes.saturating_add(bytes) > limits.max_task_bytes {
        return Err(Over::Bytes(limits.max_task_bytes));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Over, Payer, StateLimits, TaskLedger};

    fn session(k: u64) -> Payer {
        Payer {
            session: Some(k),
            principal: None,
            address: None,
        }
    }

    fn address(a: &str) -> Payer {
        Payer {
            session: None,
            principal: None,
            address: a.parse().ok(),
        }
    }

    #[test]
    fn caps_count_tasks_per_session_and_in_total() {
        let limits = StateLimits::default()
            .with_max_tasks_per_session(2)
            .with_max_tasks(3);
        let l = TaskLedger::default();
        let hour = Duration::from_secs(3600);
        assert!(l.reserve("a", session(1), 10, hour, &limits).is_ok());
        assert!(l.reserve("b", session(1), 10, hour, &limits).is_ok());
        assert_eq!(
            l.reserve("c", session(1), 10, hour, &limits),
            Err(Over::SessionTasks(2))
        );
        assert!(l.reserve("c", session(2), 10, hour, &limits).is_ok());
        assert_eq!(
            l.reserve("d", session(3), 10, hour, &limits),
            Err(Over::Tasks(3))
        );
        assert_eq!(l.total(), (3, 30));
    }

    #[test]
    fn bytes_are_refused_whole_and_charges_lapse_after_stop_and_ttl() {
        let limits = StateLimits::default()
            .with_max_task_bytes_per_session(100)
            .with_max_task_bytes(150);
        let l = TaskLedger::default();
        assert!(
            l.reserve("a", session(1), 60, Duration::ZERO, &limits)
                .is_ok()
        );
        assert_eq!(l.add_bytes("a", 50, &limits), Err(Over::SessionBytes(100)));
        assert!(l.add_bytes("a", 40, &limits).is_ok());
        assert_eq!(
            l.reserve("b", session(2), 60, Duration::ZERO, &limits),
            Err(Over::Bytes(150))
        );
        // Its TTL (zero) has passed, but it still runs: still charged.
        assert_eq!(l.total(), (1, 100));
        l.stopped("a");
        assert_eq!(l.total(), (0, 0));
        assert!(
            l.reserve("b", session(2), 60, Duration::ZERO, &limits)
                .is_ok()
        );
    }

    #[test]
    fn caps_count_tasks_and_bytes_per_address() {
        let limits = StateLimits::default()
            .with_max_tasks_per_address(2)
            .with_max_task_bytes_per_address(100);
        let l = TaskLedger::default();
        let hour = Duration::from_secs(3600);
        let a = || address("192.0.2.1");
        assert!(l.reserve("a", a(), 10, hour, &limits).is_ok());
        assert!(l.reserve("b", a(), 10, hour, &limits).is_ok());
        assert_eq!(
            l.reserve("c", a(), 10, hour, &limits),
            Err(Over::AddressTasks(2))
        );
        // Another address is not charged for the first one's tasks.
        assert!(
            l.reserve("c", address("192.0.2.2"), 90, hour, &limits)
                .is_ok()
        );
        assert_eq!(l.add_bytes("a", 81, &limits), Err(Over::AddressBytes(100)));
        assert!(l.add_bytes("a", 80, &limits).is_ok());
        // Its tasks given back, the address has room again.
        l.release("a");
        l.release("b");
        assert!(l.reserve("d", a(), 100, hour, &limits).is_ok());
        assert_eq!(l.total(), (2, 190));
        // An address that keeps nothing is not kept either.
        l.release("c");
        l.release("d");
        assert_eq!((l.total(), l.addresses()), ((0, 0), 0));
    }

    #[test]
    fn a_ttl_past_what_an_instant_holds_keeps_the_charge() {
        let limits = StateLimits::default();
        let l = TaskLedger::default();
        assert!(
            l.reserve("a", session(1), 10, Duration::MAX, &limits)
                .is_ok()
        );
        l.stopped("a");
        assert_eq!(l.total(), (1, 10));
    }
}
