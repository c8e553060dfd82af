//! The call engine: one request out, its answer back. It adds the era's `_meta`, registers
//! the call with the peer bookkeeping before the request leaves, waits (progress restarts the
//! wait), tells the server when the caller stops waiting, and retries once on a new session
//! when a legacy server forgot ours.
//!
//! Not here: what a result means (MRTR rounds in `input_rounds.rs`, typed calls in
//! `calls.rs`) and how the handshake picks the era (`handshake.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::call_options::CallOptions;
use super::handle::{CallMeta, Client};
use super::mirror::mirror_values;
use crate::client::transport::{OutgoingKind, OutgoingMessage};
use crate::error::{Error, TransportError, Unsupported};
use crate::peer::{Waiter, cancelled_notification};
use crate::protocol::{
    Meta, ProtocolVersion, RawJson, RequestId, encode_notification, encode_request, meta_keys,
    methods,
};
use crate::sync::read;

/// The era a request is sent in.
#[derive(Clone, Copy, Debug)]
pub(super) enum Era<'a> {
    /// The one the handshake established (legacy before any handshake).
    Session,
    /// During the handshake, before there is a session: modern with this version, or legacy
    /// (`version` empty: none sent yet).
    Handshake {
        /// True for `server/discover`.
        modern: bool,
        /// The version the request is sent under.
        version: &'a str,
    },
}

impl Client {
    /// Sends a request with the era's `_meta` and waits for its raw result. Retries once on
    /// a new session when the server forgot ours.
    pub(super) async fn call_raw(
        &self,
        method: &str,
        params: &Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<RawJson, Error> {
        let generation = self.inner.generation.load(Ordering::Acquire);
        match self
            .call_once(method, params, opts, Era::Session, None)
            .await
        {
            Err(e)
                if matches!(e.transport(), Some(TransportError::SessionExpired))
                    && !self.is_modern() =>
            {
                self.reinitialize(generation).await?;
                self.call_once(method, params, opts, Era::Session, None)
                    .await
            }
            other => other,
        }
    }

    /// One attempt of a request, in `era`; `id` is a pre-allocated request id.
    pub(super) async fn call_once(
        &self,
        method: &str,
        params: &Map<String, Value>,
        opts: &CallOptions,
        era: Era<'_>,
        id: Option<RequestId>,
    ) -> Result<RawJson, Error> {
        let inner = &self.inner;
        if let Some(e) = inner.end_error() {
            return Err(e);
        }
        let (modern, version) = match era {
            Era::Handshake { modern, version } => {
                (modern, (!version.is_empty()).then(|| version.to_owned()))
            }
            Era::Session => self.with_state(|s| match s {
                Some(s) => (s.modern, Some(s.version.clone())),
                None => (false, None),
            }),
        };
        let id = id.unwrap_or_else(|| inner.ids.next(None));
        let meta = self.request_meta(opts, &id, modern.then_some(version.as_deref()).flatten());
        let mirrors = if modern {
            self.mirrors(method, params)
        } else {
            Vec::new()
        };
        let bytes = if params.is_empty() && meta.is_empty() && method != methods::DISCOVER {
            encode_request::<()>(&id, method, None)?
        } else {
            let with_meta = WithMeta {
                params,
                meta: &meta,
            };
            encode_request(&id, method, Some(&with_meta))?
        };

        let alive = Arc::new(Notify::new());
        let waiter = inner.pending.wait_for(
            id.clone(),
            CallMeta {
                alive: alive.clone(),
                progress: opts.progress.clone(),
            },
        );
        let mut call = CallGuard {
            client: self,
            waiter,
            modern,
            version: version.clone(),
        };
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Request(id),
            method: Some(method.to_owned()),
            protocol_version: version,
            modern,
            mirrors,
        };
        if let Err(e) = inner.transport.send(message).await {
            // The request never left: there is nothing to cancel.
            call.waiter.abandon();
            return Err(e.into());
        }

        let timeout = opts.timeout.unwrap_or(inner.config.request_timeout);
        loop {
            tokio::select! {
                answer = call.waiter.answer() => {
                    return answer.unwrap_or(Err(Error::session_closed()));
                }
                () = alive.notified() => continue,
                // The guard tells the server, as it does when the caller drops the call.
                () = tokio::time::sleep(timeout) => return Err(Error::timeout(timeout)),
            }
        }
    }

    /// A request's `_meta`: the caller's entries, a progress token, and with `modern` (the
    /// version of a 2026-07-28 request) that era's context, where the caller gave none (a
    /// gateway gives the context of the client it speaks for).
    fn request_meta(&self, opts: &CallOptions, id: &RequestId, modern: Option<&str>) -> Meta {
        let inner = &self.inner;
        let mut meta = opts.meta.clone().unwrap_or_default();
        if opts.progress.is_some() {
            meta.insert(meta_keys::PROGRESS_TOKEN, id);
        }
        if let Some(v) = modern {
            meta.insert(meta_keys::PROTOCOL_VERSION, v);
            if !meta.0.contains_key(meta_keys::CLIENT_CAPABILITIES) {
                let caps = inner.config.capabilities(ProtocolVersion::parse(v));
                meta.insert(meta_keys::CLIENT_CAPABILITIES, caps);
            }
            if !meta.0.contains_key(meta_keys::CLIENT_INFO) {
                meta.insert(meta_keys::CLIENT_INFO, &inner.config.info);
            }
            let level = *read(&inner.log_level);
            if let Some(level) = level
                && !meta.0.contains_key(meta_keys::LOG_LEVEL)
            {
                meta.insert(meta_keys::LOG_LEVEL, level);
            }
        }
        meta
    }

    /// The values a modern HTTP request mirrors into headers.
    fn mirrors(&self, method: &str, params: &Map<String, Value>) -> Vec<(String, String)> {
        let field = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
            methods::RESOURCES_READ => "uri",
            // SEP-2663: the task methods route by their taskId.
            methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => "taskId",
            _ => return Vec::new(),
        };
        let mut out = Vec::new();
        if let Some(Value::String(name)) = params.get(field) {
            out.push(("Mcp-Name".to_owned(), name.clone()));
            if method == methods::TOOLS_CALL {
                let args = params.get("arguments").and_then(Value::as_object);
                self.with_state(|s| {
                    if let Some(headers) = s.and_then(|s| s.tool_headers.get(name)) {
                        out.extend(mirror_values(headers, args));
                    }
                });
            }
        }
        out
    }

    /// Sends a notification in the session's era.
    pub(super) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let (version, modern) =
            self.with_state(|s| (s.map(|s| s.version.clone()), s.is_some_and(|s| s.modern)));
        let bytes = encode_notification(method, params.as_ref())?;
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Notification,
            method: Some(method.to_owned()),
            protocol_version: version,
            modern,
            mirrors: Vec::new(),
        };
        Ok(self.inner.transport.send(message).await?)
    }
}

/// A request's params with its `_meta` (in place of any the params hold), written without
/// copying the params.
struct WithMeta<'a> {
    params: &'a Map<String, Value>,
    meta: &'a Meta,
}

impl Serialize for WithMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let own_meta = !self.meta.is_empty();
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.params {
            if !(own_meta && k == "_meta") {
                map.serialize_entry(k, v)?;
            }
        }
        if own_meta {
            map.serialize_entry("_meta", self.meta)?;
        }
        map.end()
    }
}

/// The params of a request as a JSON object (`()` or `None` give an empty one).
pub(super) fn to_object<P: Serialize + ?Sized>(params: &P) -> Result<Map<String, Value>, Error> {
    match serde_json::to_value(params)? {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(Error::unsupported(Unsupported::ParamsNotObject)),
    }
}

/// A call on its way: when the caller stops waiting before the answer (dropped the call, or
/// timed out), it forgets the call and sends `notifications/cancelled`.
struct CallGuard<'a> {
    client: &'a Client,
    waiter: Waiter<'a, Result<RawJson, Error>, CallMeta>,
    modern: bool,
    version: Option<String>,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.waiter.is_waiting() {
            return;
        }
        self.waiter.abandon();
        let Ok(bytes) = cancelled_notification(self.waiter.id(), "the client stopped waiting")
        else {
            return;
        };
        let message = OutgoingMessage {
            bytes,
            kind: OutgoingKind::Notification,
            method: Some(methods::CANCELLED.to_owned()),
            protocol_version: self.version.take(),
            modern: self.modern,
            mirrors: Vec::new(),
        };
        let transport = self.client.inner.transport.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = transport.send(message).await;
            });
        }
    }
}
