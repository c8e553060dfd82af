//! [`RequestIds`]: ids for the requests one side sends, unique for the conversation.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::protocol::RequestId;

/// A counter of request ids: `0, 1, 2, …`, or `{prefix}-0, {prefix}-1, …` where several
/// instances send requests into one conversation (a session shared through a store) and each
/// needs ids the others cannot produce.
#[derive(Debug, Default)]
pub(crate) struct RequestIds {
    next: AtomicI64,
}

impl RequestIds {
    /// A counter starting at 0.
    pub(crate) const fn new() -> RequestIds {
        RequestIds {
            next: AtomicI64::new(0),
        }
    }

    /// The next id: a number, or `"{prefix}-{number}"` when `prefix` is given.
    pub(crate) fn next(&self, prefix: Option<&str>) -> RequestId {
        // Only uniqueness matters, not ordering with other memory: Relaxed suffices.
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        match prefix {
            Some(prefix) => RequestId::String(format!("{prefix}-{n}").into()),
            None => RequestId::Number(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_with_or_without_a_prefix() {
        let ids = RequestIds::new();
        assert_eq!(ids.next(None), RequestId::Number(0));
        assert_eq!(ids.next(Some("a1")), RequestId::from("a1-1"));
        assert_eq!(ids.next(None), RequestId::Number(2));
    }
}
