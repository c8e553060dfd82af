//! [`CallOptions`]: what one call may set beyond its params (timeout, progress, `_meta`).

use std::sync::Arc;
use std::time::Duration;

use super::callbacks::ProgressHandler;
use crate::protocol::{Meta, ProgressParams};

/// Options of one call.
#[derive(Clone, Default)]
#[must_use]
pub struct CallOptions {
    /// How long to wait for the answer (progress restarts the wait). Default: the client's.
    pub timeout: Option<Duration>,
    /// Receives the call's progress notifications; setting it sends a progress token.
    pub progress: Option<ProgressHandler>,
    /// Extra `_meta` entries for the request.
    pub meta: Option<Meta>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("meta", &self.meta)
            .finish()
    }
}

impl CallOptions {
    /// Waits at most `timeout` for the answer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls `f` with every progress notification of the call.
    pub fn on_progress<F>(mut self, f: F) -> Self
    where
        F: Fn(&ProgressParams) + Send + Sync + 'static,
    {
        self.progress = Some(Arc::new(f));
        self
    }
}
