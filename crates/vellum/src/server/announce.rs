//! [`Announcer`]: when a list-changed notification goes out. The first change goes out at
//! once (no timer: a client hears of it as soon as the fan-out reaches it); changes that
//! arrive while it is being sent are coalesced into one more send right after it, so a
//! burst of registrations costs at most two fan-outs, and a fan-out to many streams never
//! queues one per change.

use std::sync::atomic::{AtomicU8, Ordering};

/// Nothing is being sent.
const IDLE: u8 = 0;
/// A send is in progress, and no change arrived since it started.
const SENDING: u8 = 1;
/// A send is in progress, and a change arrived since it started: one more send is due.
const SENDING_AGAIN: u8 = 2;

/// The announcement state of one list (lock-free: `changed` is called from registration,
/// which may run on any thread).
#[derive(Debug, Default)]
pub(crate) struct Announcer(AtomicU8);

impl Announcer {
    /// A change happened. True when the caller must start sending (nothing was in
    /// progress); false when the send in progress will be followed by another.
    pub(crate) fn changed(&self) -> bool {
        let mut state = self.0.load(Ordering::Acquire);
        loop {
            let next = match state {
                IDLE => SENDING,
                SENDING => SENDING_AGAIN,
                _ => return false,
            };
            match self
                .0
                .compare_exchange_weak(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return state == IDLE,
                Err(now) => state = now,
            }
        }
    }

    /// One send finished. True when changes arrived meanwhile and the sender must send
    /// once more (it stays the sender); false when it is done.
    pub(crate) fn sent(&self) -> bool {
        match self
            .0
            .compare_exchange(SENDING, IDLE, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => false,
            Err(_) => {
                // Only `changed` leaves SENDING, and only for SENDING_AGAIN, which only the
                // sender leaves: this is SENDING_AGAIN.
                self.0.store(SENDING, Ordering::Release);
                true
            }
        }
    }

    /// The sender could not start (no runtime): nothing is in progress.
    pub(crate) fn abandon(&self) {
        self.0.store(IDLE, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::Announcer;

    #[test]
    fn the_first_change_sends_and_a_burst_during_it_sends_once_more() {
        let a = Announcer::default();
        assert!(a.changed(), "the first change starts a send at once");
        assert!(
            !a.changed(),
            "a change during the send does not start another sender"
        );
        assert!(!a.changed(), "nor does a third: they are coalesced");
        assert!(a.sent(), "the changes during the send are sent once more");
        assert!(!a.sent(), "nothing arrived during the second send: done");
        assert!(
            a.changed(),
            "once idle, the next change sends at once again"
        );
        a.abandon();
        assert!(a.changed());
    }
}
