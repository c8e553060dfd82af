//! [`RequestShared`]: everything the code serving one request shares (its id, method, era
//! scope, server, outbox, cancellation flag and multi round-trip bookkeeping). One exists per
//! request; the handler's [`RequestContext`](crate::server::RequestContext) is a view of it.
//!
//! Not here: the handler-facing API (`context.rs`) and starting a request (`exchange.rs`).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;

use super::outbox::{Outbox, OutboxClosed};
use crate::protocol::{
    ClientCapabilities, ErrorObject, InputRequiredResult, InputResponses, Meta, ProtocolVersion,
    RawJson, RequestId,
};
use crate::server::Server;
use crate::server::caller::{Caller, ClientKey};
use crate::server::listeners::ListenTarget;
use crate::server::modern_meta::ModernMeta;
use crate::server::mrtr::{Attempt, Binding, principal_digest};
use crate::server::session::{InflightRequest, Session};
use crate::sync::lock;

/// Where a request's protocol state comes from.
pub(crate) enum Scope {
    /// A legacy session (possibly a temporary one, in stateless mode).
    Legacy(Arc<Session>),
    /// A modern request: everything comes from its own `_meta`.
    Modern(Box<ModernMeta>),
}

/// Where a request stands with tasks ([`RequestShared::task_phase`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum TaskPhase {
    /// An ordinary request.
    None = 0,
    /// A tool call served in place whose handler may go on as a task
    /// (`RequestContext::become_task`).
    MayBecome = 1,
    /// Its handler called `become_task`: the call answers with a new task, and the handler,
    /// still running, is that task's first round.
    Becoming = 2,
    /// A round of a task started as one.
    Task = 3,
}

impl TaskPhase {
    fn from_u8(v: u8) -> TaskPhase {
        match v {
            1 => TaskPhase::MayBecome,
            2 => TaskPhase::Becoming,
            3 => TaskPhase::Task,
            _ => TaskPhase::None,
        }
    }
}

/// Everything one request's handlers share.
pub(crate) struct RequestShared {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) scope: Scope,
    pub(crate) server: Server,
    pub(crate) outbox: Outbox,
    pub(crate) meta: OnceLock<Meta>,
    pub(crate) http: Option<http::request::Parts>,
    pub(crate) cancelled: AtomicBool,
    /// Bits of the last progress value sent (for the "must increase" rule); NaN = none yet.
    pub(crate) last_progress: AtomicU64,
    /// Milliseconds of `retry` the handler asked for when closing its SSE stream; 0 = none.
    pub(crate) close_stream: AtomicU64,
    /// MRTR bookkeeping (modern requests that may ask the client).
    pub(crate) attempt: Mutex<Attempt>,
    /// A [`TaskPhase`]: whether this request is (or may become) a task.
    task_phase: AtomicU8,
}

impl RequestShared {
    pub(crate) fn new(
        id: RequestId,
        method: String,
        scope: Scope,
        server: Server,
        http: Option<http::request::Parts>,
    ) -> Self {
        RequestShared {
            id,
            method,
            scope,
            server,
            outbox: Outbox::default(),
            meta: OnceLock::new(),
            http,
            cancelled: AtomicBool::new(false),
            last_progress: AtomicU64::new(f64::NAN.to_bits()),
            close_stream: AtomicU64::new(0),
            attempt: Mutex::new(Attempt::default()),
            task_phase: AtomicU8::new(TaskPhase::None as u8),
        }
    }

    /// Records the request's `_meta` (first call wins).
    pub(crate) fn set_meta(&self, meta: Option<Meta>) {
        if let Some(m) = meta {
            let _ = self.meta.set(m);
        }
    }

    /// Starts the MRTR attempt of a modern `tools/call`, `resources/read` or `prompts/get`:
    /// checks the echoed `requestState` and keeps the client's answers.
    pub(crate) fn begin_attempt(
        &self,
        params: Option<&RawJson>,
        responses: Option<InputResponses>,
        state: Option<&str>,
    ) -> Result<(), ErrorObject> {
        if !self.is_modern() {
            return Ok(());
        }
        let principal = self.principal_digest();
        let binding = Binding {
            method: self.method.clone(),
            params: params.cloned(),
            principal,
        };
        lock(&self.attempt).begin(&self.server.state_key(), binding, responses, state)
    }

    /// The authenticated caller (from the HTTP request's extensions), if any.
    pub(crate) fn caller(&self) -> Option<&Caller> {
        self.http
            .as_ref()
            .and_then(|p| p.extensions.get::<Caller>())
    }

    /// A digest of the authenticated caller, if any (what state and tasks are bound to).
    pub(crate) fn principal_digest(&self) -> Option<String> {
        self.caller()
            .map(|c| principal_digest(&c.issuer, &c.subject))
    }

    /// The client address key the transport gave the request (a caller without a
    /// principal, over HTTP), if any.
    pub(crate) fn client_key(&self) -> Option<std::net::IpAddr> {
        self.http
            .as_ref()
            .and_then(|p| p.extensions.get::<ClientKey>())
            .map(|k| k.0)
    }

    /// The legacy session of the request (none for a 2026-07-28 request).
    pub(crate) fn session(&self) -> Option<&Arc<Session>> {
        match &self.scope {
            Scope::Legacy(s) => Some(s),
            Scope::Modern(_) => None,
        }
    }

    /// True for a 2026-07-28 request (its context is its own `_meta`).
    pub(crate) fn is_modern(&self) -> bool {
        matches!(self.scope, Scope::Modern(_))
    }

    /// The client's capabilities as they apply to this request.
    pub(crate) fn client_capabilities(&self) -> &ClientCapabilities {
        static NONE: OnceLock<ClientCapabilities> = OnceLock::new();
        match &self.scope {
            Scope::Legacy(s) => s.client_capabilities(),
            Scope::Modern(m) => Some(&m.client.capabilities),
        }
        .unwrap_or_else(|| NONE.get_or_init(ClientCapabilities::default))
    }

    /// A copy of this request's identity and context with its own outbox and state, for a
    /// round of a task (work that outlives the request).
    pub(crate) fn detached(&self) -> RequestShared {
        let scope = match &self.scope {
            Scope::Legacy(s) => Scope::Legacy(s.clone()),
            Scope::Modern(m) => Scope::Modern(m.clone()),
        };
        let copy = RequestShared::new(
            self.id.clone(),
            self.method.clone(),
            scope,
            self.server.clone(),
            self.http.clone(),
        );
        copy.set_meta(self.meta.get().cloned());
        copy.set_task_phase(TaskPhase::Task);
        copy
    }

    /// Where this request stands with tasks.
    pub(crate) fn task_phase(&self) -> TaskPhase {
        TaskPhase::from_u8(self.task_phase.load(Ordering::Acquire))
    }

    pub(crate) fn set_task_phase(&self, phase: TaskPhase) {
        self.task_phase.store(phase as u8, Ordering::Release);
    }

    /// [`TaskPhase::MayBecome`] to [`TaskPhase::Becoming`]: true when this call just began to
    /// go on as a task (false when it cannot, or already did).
    pub(crate) fn begin_becoming_task(&self) -> bool {
        self.task_phase
            .compare_exchange(
                TaskPhase::MayBecome as u8,
                TaskPhase::Becoming as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Queues a message for the request's stream (progress, a log). A 2026-07-28 task has
    /// none (its client polls `tasks/get`): from the moment a call is a task, its messages
    /// are dropped here.
    pub(crate) async fn send(&self, message: Bytes) -> Result<(), OutboxClosed> {
        if self.is_modern() && matches!(self.task_phase(), TaskPhase::Becoming | TaskPhase::Task) {
            return Ok(());
        }
        self.outbox.send(message).await
    }

    /// What a 2026-07-28 handler that ended asking answers: every question it left pending
    /// and the signed state of the next round (see `mrtr.rs`).
    pub(crate) fn input_required(
        &self,
        mut r: Box<InputRequiredResult>,
    ) -> Box<InputRequiredResult> {
        let key = self.server.state_key();
        let ttl = self.server.inner.options.request_state_ttl;
        let asked = std::mem::take(&mut *r);
        *r = lock(&self.attempt).finish(&key, ttl, asked);
        r
    }

    /// What the attempt's questions decide about its answer, whatever the handler returned
    /// (only a 2026-07-28 request has such questions: a legacy session asks the client
    /// directly): the client's error when one of its answers did not fit, else the
    /// questions still without an answer. `None`: the handler's return decides.
    pub(crate) fn questions_verdict(&self) -> Option<QuestionsVerdict> {
        let attempt = lock(&self.attempt);
        if let Some(e) = attempt.invalid_answer() {
            return Some(QuestionsVerdict::InvalidAnswer(e));
        }
        attempt.has_pending().then_some(QuestionsVerdict::Pending)
    }

    /// Records an answer of the client that does not fit its question.
    pub(crate) fn refuse_answer(&self, error: ErrorObject) {
        lock(&self.attempt).refuse_answer(error);
    }

    /// The answers the handler was handed in this attempt (carried into the task it becomes).
    pub(crate) fn used_answers(&self) -> InputResponses {
        lock(&self.attempt).used_answers()
    }

    /// Hands a task's collected answers to its next run (questions are keyed as in MRTR).
    pub(crate) fn set_task_answers(&self, answers: InputResponses) {
        lock(&self.attempt).set_answers(answers);
    }

    /// Marks the request cancelled and wakes its driver, which drops the handler.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.outbox.wake_reader();
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// The `retry` the handler asked for when it closed its stream (SEP-1699), if it did.
    pub(crate) fn close_requested(&self) -> Option<Duration> {
        match self.close_stream.load(Ordering::Acquire) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        match &self.scope {
            Scope::Legacy(s) => s.protocol_version(),
            Scope::Modern(m) => m.version,
        }
    }
}

impl InflightRequest for RequestShared {
    fn request_id(&self) -> &RequestId {
        &self.id
    }

    fn cancel(&self) {
        RequestShared::cancel(self);
    }
}

impl ListenTarget for RequestShared {
    fn push(&self, message: Bytes) {
        self.outbox.try_send(message);
    }
}

/// What an attempt's questions decide (see [`RequestShared::questions_verdict`]).
pub(crate) enum QuestionsVerdict {
    /// An answer did not fit its question: the client's error (-32602).
    InvalidAnswer(ErrorObject),
    /// Questions are still without an answer: the round asks them.
    Pending,
}

/// The mark of a request that came over no HTTP but carries request extensions (an
/// in-memory test connection's caller or principal): it has no headers to check against its
/// arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WithoutHttp;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Implementation;
    use crate::server::ServerOptions;

    fn request(caller: Option<Caller>) -> RequestShared {
        let server = Server::new(Implementation::new("t", "1"), ServerOptions::default());
        let (mut parts, ()) = http::Request::new(()).into_parts();
        if let Some(c) = caller {
            parts.extensions.insert(c);
        }
        RequestShared::new(
            RequestId::Number(1),
            "tools/call".into(),
            Scope::Modern(Box::new(ModernMeta::of_notification())),
            server,
            Some(parts),
        )
    }

    #[test]
    fn the_caller_comes_from_the_request_extensions() {
        let r = request(Some(Caller::new("https://issuer", "alice")));
        assert_eq!(r.caller(), Some(&Caller::new("https://issuer", "alice")));
        // What state and tasks are bound to: the same digest as before the neutral type.
        assert_eq!(
            r.principal_digest(),
            Some(principal_digest("https://issuer", "alice"))
        );
        let anonymous = request(None);
        assert_eq!(anonymous.caller(), None);
        assert_eq!(anonymous.principal_digest(), None);
    }
}
