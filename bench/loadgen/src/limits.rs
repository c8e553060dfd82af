//! Raises `RLIMIT_NOFILE` so that holding 10,000 sessions and streams (one socket each) fits.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// File descriptors the load generator asks for.
pub(crate) const WANT_NOFILE: u64 = 65_536;

/// Raises the soft limit to `want` (and the hard limit too, where allowed); returns the soft
/// limit now in force.
pub(crate) fn raise_nofile(want: u64) -> u64 {
    let cur = getrlimit(Resource::Nofile);
    let soft = cur.current.unwrap_or(u64::MAX);
    if soft >= want {
        return soft;
    }
    let hard = cur.maximum.unwrap_or(u64::MAX);
    // Raising the hard limit needs CAP_SYS_RESOURCE; fall back to the hard limit we have.
    let raised = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(want),
            maximum: Some(hard.max(want)),
        },
    );
    if raised.is_err() {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(hard.min(want)),
                maximum: Some(hard),
            },
        );
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}
