//! [`CallOptions`]: what one call may set beyond its params (timeout, progress, `_meta`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::callbacks::ProgressHandler;
use crate::error::Error;
use crate::protocol::{InputRequests, Meta, ProgressParams};

/// Answers a whole 2026-07-28 input round of one call: the server's questions by key in,
/// the answers by the same keys out (see [`CallOptions::on_input_round`]).
pub type InputRoundHandler = Arc<
    dyn Fn(InputRequests) -> BoxFuture<'static, Result<Map<String, Value>, Error>> + Send + Sync,
>;

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
    /// Answers this call's input rounds instead of the client's handlers.
    pub input_round: Option<InputRoundHandler>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("meta", &self.meta)
            .field("input_round", &self.input_round.is_some())
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

    /// Answers this call's input rounds (2026-07-28 MRTR) with `f` instead of the client's
    /// sampling, elicitation and roots handlers: `f` gets every question of a round with its
    /// key (the server's own, which must come back) and returns the answers, or the error the
    /// call then fails with. For a client that asks someone else (a gateway asks its own
    /// client, keeping the server's keys).
    pub fn on_input_round<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(InputRequests) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Map<String, Value>, Error>> + Send + 'static,
    {
        self.input_round = Some(Arc::new(move |r| Box::pin(f(r))));
        self
    }
}
