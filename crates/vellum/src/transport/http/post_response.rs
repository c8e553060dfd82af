//! Answering the requests of a POST, in five named steps:
//!
//! 1. [`start`](Inner::start_requests): begin each request in the core (registered in its
//!    session, or standing alone for 2026-07-28), with its span when the handler logs;
//! 2. [`first_events`]: poll once, so most answers are written whole: JSON when asked for
//!    (upgraded to SSE when a notification comes first), else a finished SSE body;
//! 3. [`make_resumable`](Inner::make_resumable): an answer that keeps streaming in a legacy
//!    session gets event ids (and a priming event on 2025-11-25) and is stored;
//! 4. [`commit_new_session`](Inner::commit_new_session): a new session exists once its
//!    `initialize` succeeded (the session table settles it);
//! 5. [`write_response`](Inner::write_response): a JSON body, a modern error with its HTTP
//!    status, or an SSE body (ready chunks, or a live stream).
//!
//! Not here: routing (`post.rs`, `session_routing.rs`), the event source (`post_events.rs`)
//! and the SSE writer (`sse_writer.rs`).

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use crate::protocol::{ProtocolVersion, RawJson, Request as RpcRequest, encode_error, methods};
use crate::server::{
    Caller, Exchange, ModernMeta, ScopeRules, Server, Session, redact_session_id, scopes,
};
use crate::store::EventId;

use super::body::ResponseBody;
use super::caching::Conditional;
use super::endpoint::Inner;
use super::headers::{Accepts, names};
use super::post_events::{PostEvent, PostEvents, StoredStream};
use super::rejection::{Rejection, modern_error_status};
use super::response::{json_response, sse_response};
use super::session_routing::Route;
use super::session_table::{ActivityGuard, HttpSession};
use super::sse_writer::{self, SseEvent, SseStream, push_event};
use super::trace::{RequestInfo, RequestTrace, log_event};
use super::trace_context::TraceContext;

/// How long a lone 2026-07-28 request whose answer was not ready at the first poll waits for
/// its first message before its stream starts: long enough for an answer that is only a
/// hop away (a gateway's backend answers in well under a millisecond), short enough that a
/// handler that streams, or works for long, starts its stream at once as far as a person
/// can tell.
const MODERN_HOLD: Duration = Duration::from_millis(250);

/// Where the requests of a POST get their protocol context.
enum Origin {
    /// A legacy session (possibly a stateless throwaway one).
    Legacy(Arc<Session>),
    /// 2026-07-28: the request's own `_meta` (taken by the one request a modern POST
    /// holds), served by this server.
    Modern(Option<Box<ModernMeta>>, Server),
}

/// What the steps know about the POST they answer.
struct Post {
    /// The HTTP session, for a legacy request of a stateful handler.
    http: Option<Arc<HttpSession>>,
    /// The session is new: it exists once its `initialize` succeeded.
    new: bool,
    /// A 2026-07-28 request.
    modern: bool,
    /// More than one request.
    batch: bool,
}

/// How the answer may be written: JSON when it completes, and with caching headers for a
/// cacheable modern request.
struct Answer {
    json_mode: bool,
    conditional: Option<Conditional>,
}

/// What the first poll of the requests produced.
struct FirstEvents {
    /// The events so far (all of them when `complete`).
    buffered: Vec<PostEvent>,
    /// Every request finished.
    complete: bool,
    /// A JSON answer had to become a stream (a notification came first, or a handler closed
    /// its stream early).
    upgraded: bool,
}

impl Inner {
    /// Runs the requests of a POST and writes its answer.
    pub(super) async fn respond(
        &self,
        parts: http::request::Parts,
        requests: Vec<RpcRequest>,
        accepts: Accepts,
        route: Route,
    ) -> Result<Response<ResponseBody>, Rejection> {
        // `subscriptions/listen` is a stream by nature: never a JSON body.
        let listen = requests
            .iter()
            .any(|r| r.method == methods::SUBSCRIPTIONS_LISTEN);
        // JSON when the client takes nothing else, or when asked for and the request is not
        // a stream by nature.
        let json_mode = !accepts.sse || (self.options.json_response && accepts.json && !listen);
        let conditional = json_mode
            .then(|| {
                let modern = matches!(route, Route::Modern(_));
                Conditional::of(&parts.headers, &requests, modern)
            })
            .flatten();
        let (post, mut events, early) = self.start_requests(parts, requests, route)?;
        // A lone 2026-07-28 request holds its headers a moment for its first message, so an
        // error that was not ready at the first poll (a handler that awaits a quick lookup, a
        // gateway's backend) still gets its HTTP status (SEP-2575).
        let hold = (post.modern && !post.batch).then_some(MODERN_HOLD);
        let mut first = first_events(&mut events, json_mode, accepts.sse, post.new, hold).await;
        let prefix = self.make_resumable(&post, &mut events, &mut first).await;
        let session_header = self.commit_new_session(&post, &first).await?;
        let answer = Answer {
            json_mode,
            conditional,
        };
        let mut resp = self.write_response(&post, first, answer, early, prefix, events);
        if let Some(v) = session_header {
            resp.headers_mut().insert(names::SESSION_ID, v);
        }
        Ok(resp)
    }

    /// Step 1: begins every request; a request that cannot begin (its id is still in flight)
    /// is answered at once, among the `early` messages.
    fn start_requests(
        &self,
        parts: http::request::Parts,
        requests: Vec<RpcRequest>,
        route: Route,
    ) -> Result<(Post, PostEvents, Vec<Bytes>), Rejection> {
        let batch = requests.len() > 1;
        let (mut origin, http, activity, new): (_, _, Option<ActivityGuard>, _) = match route {
            Route::Legacy {
                session,
                http,
                activity,
                new,
            } => (Origin::Legacy(session), http, activity, new),
            Route::Modern(meta) => {
                let server = (self.factory)(&parts).ok_or(Rejection::NoServer)?;
                (Origin::Modern(Some(meta), server), None, None, false)
            }
        };
        let server = match &origin {
            Origin::Legacy(session) => session.server(),
            Origin::Modern(_, server) => server,
        };
        check_scopes(server, &parts, &requests)?;
        let logger = self.options.logger.as_ref();
        let mut exchanges = Vec::with_capacity(requests.len());
        let mut early = Vec::new();
        let n = requests.len();
        // Read only for a span to carry it.
        let header_context = logger.and_then(|_| TraceContext::from_headers(&parts.headers));
        let mut parts_slot = Some(parts);
        for (i, r) in requests.into_iter().enumerate() {
            let http_parts = if i + 1 == n {
                parts_slot.take()
            } else {
                parts_slot.clone()
            };
            // Span names and the metrics' tool label.
            let target = (logger.is_some() || super::metrics::recording())
                .then(|| request_target(&r.method, r.params.as_ref()))
                .flatten();
            let meta_context = logger.and_then(|_| TraceContext::from_params(r.params.as_ref()));
            let exchange = match &mut origin {
                Origin::Legacy(session) => {
                    let id = r.id.clone();
                    match session.begin(r, None, http_parts) {
                        Ok(exchange) => exchange,
                        Err(e) => {
                            early.push(encode_error(Some(&id), &e));
                            continue;
                        }
                    }
                }
                Origin::Modern(meta, server) => {
                    // The last request (a modern POST has one) takes the context, the others
                    // a copy; it is there until the last takes it.
                    let meta = if i + 1 == n {
                        meta.take()
                    } else {
                        meta.clone()
                    }
                    .unwrap_or_else(|| Box::new(ModernMeta::of_notification()));
                    Exchange::sessionless(server.clone(), r, meta, http_parts)
                }
            };
            let trace = (logger.is_some() || super::metrics::recording()).then(|| {
                let shared = exchange.shared();
                RequestTrace::start(
                    logger,
                    RequestInfo {
                        method: &shared.method,
                        id: &shared.id,
                        target: target.as_deref(),
                        session: http.as_ref().map(|h| &*h.id),
                        version: shared.version().as_str(),
                        context: meta_context.as_ref().or(header_context.as_ref()),
                    },
                )
            });
            exchanges.push((exchange, trace));
        }
        let post = Post {
            http,
            new,
            modern: matches!(origin, Origin::Modern(..)),
            batch,
        };
        Ok((post, PostEvents::new(exchanges, activity), early))
    }

    /// Step 3: an answer that keeps streaming in a legacy session is resumable: its events
    /// get ids (from the event store when there is one, else from this process, good for a
    /// resume on this instance after the server itself closed the stream), and 2025-11-25
    /// streams open with a priming event. Returns what the stream starts with.
    async fn make_resumable(
        &self,
        post: &Post,
        events: &mut PostEvents,
        first: &mut FirstEvents,
    ) -> VecDeque<Bytes> {
        let mut prefix = VecDeque::new();
        let Some(h) = post.http.as_ref().filter(|_| !first.complete) else {
            return prefix;
        };
        let stream = match self.store() {
            Some(store) => store
                .open_stream(&h.id, &events.request_ids())
                .await
                .ok()
                .map(|s| (s, Some(store.clone()))),
            None => Some((h.live.next_local_stream(), None)),
        };
        let Some((stream, store)) = stream else {
            return prefix;
        };
        let superseded = h.live.open(stream);
        if h.core.protocol_version() >= ProtocolVersion::V2025_11_25 {
            prefix.push_back(sse_writer::priming(
                EventId::start_of(stream),
                self.options.sse_retry,
            ));
        }
        events.make_resumable(
            StoredStream {
                store,
                session: h.id.clone(),
                stream,
                live: h.live.clone(),
            },
            std::mem::take(&mut first.buffered),
            superseded,
        );
        prefix
    }

    /// Step 4: a new session exists once `initialize` succeeded; its id goes out in the
    /// response's `Mcp-Session-Id`.
    async fn commit_new_session(
        &self,
        post: &Post,
        first: &FirstEvents,
    ) -> Result<Option<HeaderValue>, Rejection> {
        let Some(h) = post.http.as_ref().filter(|_| post.new) else {
            return Ok(None);
        };
        let initialized = first.complete && first.buffered.iter().any(|e| e.fin == Some(None));
        let committed = self
            .sessions
            .commit(h, initialized)
            .await
            .map_err(|_| Rejection::StoreUnavailable)?;
        if !committed {
            return Ok(None);
        }
        log_event!(self.options.logger.as_ref(), info, "mcp.session.id" = %redact_session_id(&h.id), "session created");
        Ok(HeaderValue::from_str(&h.id).ok())
    }

    /// Step 5: the response: a JSON body, a modern error with its HTTP status, or SSE.
    fn write_response(
        &self,
        post: &Post,
        first: FirstEvents,
        answer: Answer,
        early: Vec<Bytes>,
        mut prefix: VecDeque<Bytes>,
        events: PostEvents,
    ) -> Response<ResponseBody> {
        let FirstEvents {
            buffered,
            complete,
            upgraded,
        } = first;
        // Modern protocol errors carry their HTTP status (SEP-2575), in JSON mode as on the
        // SSE path, so they cannot ride a stream.
        let modern_status = if complete && post.modern && !post.batch {
            modern_error(&buffered)
        } else {
            None
        };
        if let Some(status) = modern_status {
            let mut r = json_response(&buffered, &early, false);
            *r.status_mut() = status;
            return r;
        }
        if complete && answer.json_mode && !upgraded {
            let r = json_response(&buffered, &early, post.batch);
            return match answer.conditional {
                // A cacheable modern request: one message, no early ones.
                Some(c) => {
                    let message = buffered.iter().find(|e| e.fin.is_some());
                    c.answer(message.map(|e| &e.event.message), r)
                }
                None => r,
            };
        }
        for message in early {
            push_event(&mut prefix, SseEvent { id: None, message });
        }
        for ev in buffered.into_iter().filter(|e| !e.silent) {
            push_event(&mut prefix, ev.event);
        }
        let body = if complete {
            ResponseBody::chunks(sse_writer::gather(prefix))
        } else {
            ResponseBody::stream(SseStream::new(
                Box::new(events),
                prefix,
                self.options.sse_keep_alive,
                self.options.sse_retry,
                self.stops(post.http.as_deref()),
                None,
            ))
        };
        sse_response(body)
    }
}

/// Step 2: polls the requests once, so that most answers are written in one go (nothing to
/// resume: no event ids, nothing stored). In JSON mode, waits for the result unless a
/// notification (or a handler closing its stream) comes first; a new session's `initialize`
/// waits too (its session exists only once it succeeded).
async fn first_events(
    events: &mut PostEvents,
    json_mode: bool,
    accepts_sse: bool,
    new_session: bool,
    hold: Option<Duration>,
) -> FirstEvents {
    let mut buffered: Vec<PostEvent> = Vec::new();
    let mut upgraded = false;
    // JSON mode and a new session wait for the result anyway.
    let hold = hold.filter(|_| !json_mode && !new_session);
    let first = poll_fn(|cx| {
        loop {
            match events.poll_post_event(cx) {
                Poll::Ready(Some(ev)) => {
                    let notification = ev.fin.is_none();
                    if notification && json_mode && !accepts_sse {
                        continue; // The client cannot take a stream: drop it.
                    }
                    buffered.push(ev);
                    if notification && json_mode {
                        upgraded = true;
                        return Poll::Ready(false);
                    }
                }
                Poll::Ready(None) => return Poll::Ready(true),
                // A handler that ends its stream early (SSE polling) needs a stream.
                Poll::Pending if json_mode && accepts_sse && events.close_requested_any() => {
                    upgraded = true;
                    return Poll::Ready(false);
                }
                Poll::Pending if json_mode || new_session => return Poll::Pending,
                Poll::Pending if hold.is_some() && buffered.is_empty() => return Poll::Pending,
                Poll::Pending => return Poll::Ready(false),
            }
        }
    });
    let complete = match hold {
        Some(limit) => tokio::time::timeout(limit, first).await.unwrap_or(false),
        None => first.await,
    };
    FirstEvents {
        buffered,
        complete,
        upgraded,
    }
}

/// The HTTP status of a modern request's final error, when it is not 200.
fn modern_error(events: &[PostEvent]) -> Option<StatusCode> {
    events
        .iter()
        .find_map(|e| e.fin.flatten())
        .map(modern_error_status)
        .filter(|s| *s != StatusCode::OK)
}

/// The tool, prompt or resource a request targets (for span names).
fn request_target(method: &str, params: Option<&RawJson>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Target {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        uri: Option<String>,
    }
    match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ => {
            let t: Target = params?.parse().ok()?;
            t.name.or(t.uri)
        }
        _ => None,
    }
}

/// Refuses, before any of them begins, requests whose caller lacks a scope they need
/// (HTTP 403: the client steps up and sends the request again, on the same session). Only
/// with a caller: without one no authentication layer is in front, nobody can step up, and
/// the core refuses a scoped tool with a JSON-RPC error instead.
fn check_scopes(
    server: &Server,
    parts: &http::request::Parts,
    requests: &[RpcRequest],
) -> Result<(), Rejection> {
    let Some(caller) = parts.extensions.get::<Caller>() else {
        return Ok(());
    };
    let rules = parts.extensions.get::<Arc<ScopeRules>>().map(|r| &**r);
    for r in requests {
        scopes::check(Some(caller), scopes::needed(server, rules, r)).map_err(|refusal| {
            Rejection::InsufficientScope {
                id: Some(r.id.clone()),
                refusal,
            }
        })?;
    }
    Ok(())
}
