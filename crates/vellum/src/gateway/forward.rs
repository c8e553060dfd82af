//! Forwarding one front request through a [`Link`]: the params as the client sent them, with
//! its `_meta` rewritten for the backend (the progress token is the backend call's own, the
//! 2026-07-28 context is the client core's to add), the backend's progress and logs passed on
//! with the front request's token, and what failed said in one JSON-RPC error.
//!
//! Not here: choosing the link (`backends.rs`), the questions of the backend (`link.rs`).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::link::{Event, Link, queue};
use crate::client::CallOptions;
use crate::error::{Error, TransportError};
use crate::protocol::{
    ErrorObject, InputRequest, InputRequests, Meta, ProgressParams, RawJson, meta_keys, methods,
};
use crate::server::{ForwardedRequest, HandlerError, RequestContext};

/// How long an answer waits for the backend's questions through its request to end.
const QUESTIONS_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// The `_meta` keys of the 2026-07-28 context: each side's own, never passed on.
const CONTEXT_KEYS: [&str; 4] = [
    meta_keys::PROTOCOL_VERSION,
    meta_keys::CLIENT_CAPABILITIES,
    meta_keys::CLIENT_INFO,
    meta_keys::LOG_LEVEL,
];

/// Sends `request` to the backend of `link` and passes on what the backend sends for it.
pub(super) async fn forward(
    link: Arc<Link>,
    request: ForwardedRequest,
    call_timeout: std::time::Duration,
) -> Result<RawJson, HandlerError> {
    let ForwardedRequest {
        context: ctx,
        params,
        ..
    } = request;
    let Some(client) = link.client().cloned() else {
        return Err(HandlerError::Protocol(ErrorObject::internal(
            "the backend connection is not open",
        )));
    };
    let mut params: Map<String, Value> = match &params {
        Some(p) => p.parse().map_err(|e| {
            HandlerError::Protocol(ErrorObject::invalid_params(format!("Invalid params: {e}")))
        })?,
        None => Map::new(),
    };
    let (_registered, events, mut rx, asking) = link.register(&ctx);
    let mut opts = CallOptions::default().timeout(call_timeout);
    if let Some(Value::Object(mut meta)) = params.remove("_meta") {
        let token = meta.remove(meta_keys::PROGRESS_TOKEN);
        // The version is each side's own. A 2026-07-28 client's capabilities, identity and
        // level go on to a backend of that era (the client core adds them only where the
        // caller did not); otherwise the backend knows the session's from its handshake.
        meta.remove(meta_keys::PROTOCOL_VERSION);
        if !(client.is_modern() && ctx.protocol_version().is_modern()) {
            for k in CONTEXT_KEYS {
                meta.remove(k);
            }
        }
        if !meta.is_empty() {
            opts.meta = Some(Meta(meta));
        }
        if let Some(token) = token {
            // The backend's progress comes with the backend call's token: back to the front's.
            opts = opts.on_progress(move |p: &ProgressParams| {
                let mut p = p.clone();
                if let Ok(t) = serde_json::from_value(token.clone()) {
                    p.progress_token = t;
                }
                if let Ok(v) = serde_json::to_value(&p) {
                    queue(&events, Event::Notify(methods::PROGRESS.to_owned(), v));
                }
            });
        }
    }
    // A 2026-07-28 backend's questions come with the call: they go to this request's
    // client under the backend's own keys.
    let round_ctx = ctx.clone();
    opts = opts.on_input_round(move |requests| {
        let ctx = round_ctx.clone();
        async move { answer_round(&ctx, requests).await }
    });
    let call = client.request_raw(ctx.method(), params, opts);
    tokio::pin!(call);
    loop {
        tokio::select! {
            // What the backend sent before its answer goes out before it.
            biased;
            Some(event) = rx.recv() => match event {
                Event::Notify(method, params) => {
                    let _ = ctx.notify(&method, &params).await;
                }
                Event::Log(l) => {
                    let _ = ctx.log(l.level, l.logger.as_deref(), l.data).await;
                }
                Event::Abort(e) => return Err(e),
            },
            answer = &mut call => {
                // A question the backend gave up ends (and is cancelled at the client)
                // before the answer goes out.
                asking.settled(QUESTIONS_SETTLE).await;
                // What the backend's answer raced: its questions answered in the same turn
                // (a 2026-07-28 backend's input round runs inside the call).
                while let Ok(event) = rx.try_recv() {
                    match event {
                        Event::Abort(e) => return Err(e),
                        Event::Notify(method, params) => {
                            let _ = ctx.notify(&method, &params).await;
                        }
                        Event::Log(l) => {
                            let _ = ctx.log(l.level, l.logger.as_deref(), l.data).await;
                        }
                    }
                }
                return match answer {
                    Ok(raw) => plain_result(&client, &ctx, raw),
                    Err(e) => {
                        if client.is_closed()
                            && let Some(s) = link.session()
                        {
                            // Its backend ended: the client's next request of the session
                            // gets 404, even before this error reaches it.
                            s.retire();
                        }
                        Err(call_error(&link, e))
                    }
                };
            }
        }
    }
}

/// Asks the front request's client every question of a backend's input round at once, each
/// under the backend's key: a legacy client gets them as requests on the request's stream, a
/// 2026-07-28 client as one input round of its own (the request ends asking, and its retry
/// brings the answers, which the backend gets when the call runs again).
async fn answer_round(
    ctx: &RequestContext,
    requests: InputRequests,
) -> Result<Map<String, Value>, Error> {
    let asked = requests.into_iter().map(|(key, question)| {
        let ctx = ctx.with_input_key(key.clone());
        async move {
            let answer = match question {
                InputRequest::Elicit(p) => ctx.elicit(p).await.and_then(to_value),
                InputRequest::CreateMessage(p) => ctx.create_message(p).await.and_then(to_value),
                InputRequest::ListRoots => ctx.list_roots().await.and_then(to_value),
            };
            (key, answer)
        }
    });
    let mut answers = Map::new();
    let mut pending = None;
    for (key, answer) in futures_util::future::join_all(asked).await {
        match answer {
            Ok(v) => {
                answers.insert(key, v);
            }
            // Every pending question is in the request's attempt: one error carries them.
            Err(e) if e.is_input_required() => pending = Some(e),
            Err(e) => return Err(e),
        }
    }
    match pending {
        Some(e) => Err(e),
        None => Ok(answers),
    }
}

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, Error> {
    Ok(serde_json::to_value(v)?)
}

/// A legacy client gets a 2026-07-28 backend's result without that era's framing (the
/// server core frames results for 2026-07-28 clients itself).
fn plain_result(
    client: &crate::client::Client,
    ctx: &RequestContext,
    raw: RawJson,
) -> Result<RawJson, HandlerError> {
    if !client.is_modern() || ctx.protocol_version().is_modern() {
        return Ok(raw);
    }
    let Ok(mut fields) = raw.parse::<Map<String, Value>>() else {
        return Ok(raw);
    };
    for key in ["resultType", "ttlMs", "cacheScope"] {
        fields.remove(key);
    }
    if let Some(Value::Object(meta)) = fields.get_mut("_meta") {
        meta.remove(meta_keys::SERVER_INFO);
        if meta.is_empty() {
            fields.remove("_meta");
        }
    }
    RawJson::from_value(&fields)
        .map_err(|e| HandlerError::Protocol(ErrorObject::internal(e.to_string())))
}

/// What a front request fails with when its backend call failed: the backend's own JSON-RPC
/// error as it is, else an internal error saying what happened to the backend.
pub(super) fn call_error(link: &Link, e: Error) -> HandlerError {
    let label = link.label();
    if e.is_rpc() || e.is_input_required() {
        return HandlerError::from(e);
    }
    let message = if let Some(d) = e.timeout_after() {
        format!("{label} did not answer within {}s", d.as_secs_f64())
    } else if let Some(TransportError::StreamLost(why)) = e.transport() {
        format!(
            "the answer of {label} was lost ({}); if it lost the session, the next call starts \
             a new one; this call may or may not have run",
            crate::error::chain(&**why)
        )
    } else if let Some(t) = e.transport() {
        format!("{label} failed: {}", crate::error::chain(t))
    } else if e.is_session_closed() {
        format!("{label} is closed")
    } else {
        format!("{label}: {}", crate::error::chain(&e))
    };
    HandlerError::Protocol(ErrorObject::internal(message))
}
