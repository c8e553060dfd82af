//! Answering the requests of a POST, in five named steps:
//!
//! 1. [`start_requests`]: begin each request in the core (registered in its session, or
//!    standing alone for 2026-07-28), with its span when the handler logs;
//! 2. [`first_events`]: poll once, so most answers are written whole: JSON when asked for
//!    (upgraded to SSE when a notification comes first), else a finished SSE body;
//! 3. [`make_resumable`]: an answer that keeps streaming in a legacy session gets event ids
//!    (and a priming event on 2025-11-25) and is stored;
//! 4. [`commit_new_session`]: a new session exists once its `initialize` succeeded (the
//!    session table settles it);
//! 5. [`write_response`]: a JSON body, a modern error with its HTTP status, or an SSE body
//!    (ready chunks, or a live stream).
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
use super::headers::{Accepts, names};
use super::post_events::{EventKind, PostEvent, PostEvents, StoredStream};
use super::rejection::{Rejection, modern_error_status};
use super::response::{json_response, sse_response};
use super::session_routing::Route;
use super::session_table::{ActivityGuard, HttpSession};
use super::sse_writer::{self, SseEvent, SseStream, push_event};
use super::state::Inner;
use super::trace::{RequestInfo, RequestTrace, log_event};
use super::trace_context::TraceContext;

/// Where the requests of a POST get their protocol context.
enum Origin {
    /// A legacy session (possibly a stateless throwaway one).
    Legacy(Arc<Session>),
    /// 2026-07-28: the request's own `_meta` (taken by the one request a modern POST
    /// holds), served by this server.
    Modern(Option<Box<ModernMeta>>, Server),
}

/// The kind of POST being answered.
enum PostKind {
    /// One 2026-07-28 request.
    Modern,
    /// Legacy requests in a stateless handler's throwaway session.
    Throwaway,
    /// Legacy requests of a live session.
    InSession(Arc<HttpSession>),
    /// The `initialize` of a new session: the session exists once it succeeded.
    Initialize(Arc<HttpSession>),
}

/// What the steps know about the POST they answer.
struct Post {
    kind: PostKind,
    /// How many requests it carries (more than one: a batch, answered as a JSON array).
    requests: usize,
    /// Its server forwards requests to an upstream (a gateway).
    forwarded: bool,
}

impl Post {
    /// The live HTTP session, for a legacy request of a stateful handler.
    fn http(&self) -> Option<&Arc<HttpSession>> {
        match &self.kind {
            PostKind::InSession(h) | PostKind::Initialize(h) => Some(h),
            PostKind::Modern | PostKind::Throwaway => None,
        }
    }

    fn is_batch(&self) -> bool {
        self.requests > 1
    }
}

/// How the answer to a POST may be written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A JSON body: the client takes nothing else (messages before the answer are dropped).
    JsonOnly,
    /// A JSON body, unless something must come before the answer (a notification, a
    /// handler closing its stream early): then SSE.
    Json,
    /// SSE.
    Sse,
}

impl Shape {
    /// JSON when the client takes nothing else, or when asked for and the requests are not a
    /// stream by nature (`subscriptions/listen`).
    fn of(accepts: Accepts, json_response: bool, requests: &[RpcRequest]) -> Self {
        if !accepts.sse {
            return Shape::JsonOnly;
        }
        let listen = requests
            .iter()
            .any(|r| r.method == methods::SUBSCRIPTIONS_LISTEN);
        if json_response && accepts.json && !listen {
            Shape::Json
        } else {
            Shape::Sse
        }
    }

    fn is_json(self) -> bool {
        self != Shape::Sse
    }
}

/// Where the requests stood after the first poll.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Progress {
    /// Every request finished: the answer is written whole.
    Finished,
    /// Requests still run: the answer is a live SSE stream.
    Running,
    /// A JSON answer had to become a live stream (a notification came first, or a handler
    /// closed its stream early).
    Upgraded,
}

/// How long a lone 2026-07-28 request whose answer was not ready at the first poll waits
/// for its first message before its stream starts: long enough for an answer that is only a
/// hop away (a gateway's backend answers in well under a millisecond), short enough that a
/// handler that streams, or works for long, starts its stream at once as far as a person
/// can tell.
const FIRST_HOLD: Duration = Duration::from_millis(250);

/// The same wait for a gateway's lone legacy request: its backend's quick answer is then
/// written whole, as a local answer is, while a call that takes longer gets the resumable
/// stream (priming event, `retry`) a local handler's slow call gets. There is no HTTP
/// status to keep here, so it waits only as long as a hop can take on a loaded machine.
const FORWARDED_HOLD: Duration = Duration::from_millis(20);

/// What the first poll of the requests produced.
struct FirstEvents {
    /// The events so far (all of them when finished).
    buffered: Vec<PostEvent>,
    progress: Progress,
}

impl FirstEvents {
    fn finished(&self) -> bool {
        self.progress == Progress::Finished
    }
}

/// Runs the requests of a POST and writes its answer.
pub(super) async fn respond(
    inner: &Inner,
    parts: http::request::Parts,
    requests: Vec<RpcRequest>,
    accepts: Accepts,
    route: Route,
) -> Result<Response<ResponseBody>, Rejection> {
    let shape = Shape::of(accepts, inner.options.json_response, &requests);
    // Caching headers, for a cacheable modern request answered with JSON.
    let conditional = shape
        .is_json()
        .then(|| {
            let modern = matches!(route, Route::Modern(_));
            Conditional::of(&parts.headers, &requests, modern)
        })
        .flatten();
    let (post, mut events, early) = start_requests(inner, parts, requests, route)?;
    let initialize = matches!(post.kind, PostKind::Initialize(_));
    // A 2026-07-28 request holds its headers a moment for its first message, so an error
    // that was not ready at the first poll (a handler that awaits a quick lookup, a
    // gateway's backend) still gets its HTTP status (SEP-2575); a gateway's lone legacy
    // request holds them for less, so that its answer (a hop away) is written whole.
    let lone_forwarded = post.forwarded && post.requests == 1;
    let hold = match post.kind {
        PostKind::Modern => Some(FIRST_HOLD),
        _ if lone_forwarded => Some(FORWARDED_HOLD),
        _ => None,
    };
    let mut first = first_events(&mut events, shape, initialize, hold).await;
    let prefix = make_resumable(inner, &post, &mut events, &mut first).await;
    let session_header = commit_new_session(inner, &post, &first).await?;
    let mut resp = write_response(
        inner,
        &post,
        first,
        (shape, conditional),
        early,
        prefix,
        events,
    );
    if let Some(v) = session_header {
        resp.headers_mut().insert(names::SESSION_ID, v);
    }
    Ok(resp)
}

/// Step 1: begins every request; a request that cannot begin (its id is still in flight) is
/// answered at once, among the `early` messages.
fn start_requests(
    inner: &Inner,
    parts: http::request::Parts,
    requests: Vec<RpcRequest>,
    route: Route,
) -> Result<(Post, PostEvents, Vec<Bytes>), Rejection> {
    let n = requests.len();
    let (mut origin, kind, activity) = origin_of(inner, &parts, route)?;
    let server = match &origin {
        Origin::Legacy(session) => session.server(),
        Origin::Modern(_, server) => server,
    };
    let post = Post {
        kind,
        requests: n,
        forwarded: server.upstream().is_some(),
    };
    check_scopes(server, &parts, &requests)?;
    let logger = inner.options.logger.as_ref();
    let mut exchanges = Vec::with_capacity(n);
    let mut early = Vec::new();
    // Read only for a span to carry it.
    let header_context = logger.and_then(|_| TraceContext::from_headers(&parts.headers));
    let mut parts_slot = Some(parts);
    for (i, r) in requests.into_iter().enumerate() {
        let last = i + 1 == n;
        let http_parts = if last {
            parts_slot.take()
        } else {
            parts_slot.clone()
        };
        // Span names and the metrics' tool label.
        let target = (logger.is_some() || super::metrics::recording())
            .then(|| request_target(&r.method, r.params.as_ref()))
            .flatten();
        let meta_context = logger.and_then(|_| TraceContext::from_params(r.params.as_ref()));
        let exchange = match begin(&mut origin, r, http_parts, last) {
            Ok(exchange) => exchange,
            Err(answer) => {
                early.push(answer);
                continue;
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
                    session: post.http().map(|h| &*h.id),
                    // An `initialize` negotiates its version: known when it ends.
                    version: (shared.method != methods::INITIALIZE)
                        .then(|| shared.version().as_str()),
                    context: meta_context.as_ref().or(header_context.as_ref()),
                },
            )
        });
        exchanges.push((exchange, trace));
    }
    Ok((post, PostEvents::new(exchanges, activity), early))
}

/// Where the requests of a routed POST get their context, the kind of POST, and the guard
/// that keeps its session active.
fn origin_of(
    inner: &Inner,
    parts: &http::request::Parts,
    route: Route,
) -> Result<(Origin, PostKind, Option<ActivityGuard>), Rejection> {
    Ok(match route {
        Route::Modern(meta) => {
            let server = (inner.factory)(parts).ok_or(Rejection::NoServer)?;
            (Origin::Modern(Some(meta), server), PostKind::Modern, None)
        }
        Route::Throwaway(session) => (Origin::Legacy(session), PostKind::Throwaway, None),
        Route::Session(a) => {
            let h = a.session().clone();
            (
                Origin::Legacy(h.core.clone()),
                PostKind::InSession(h),
                Some(a),
            )
        }
        Route::NewSession(a) => {
            let h = a.session().clone();
            (
                Origin::Legacy(h.core.clone()),
                PostKind::Initialize(h),
                Some(a),
            )
        }
    })
}

/// Begins one request in the core; `Err` is the answer of a request that cannot begin (its
/// id is still in flight in its session).
fn begin(
    origin: &mut Origin,
    r: RpcRequest,
    http_parts: Option<http::request::Parts>,
    last: bool,
) -> Result<Exchange, Bytes> {
    match origin {
        Origin::Legacy(session) => {
            let id = r.id.clone();
            session
                .begin(r, None, http_parts)
                .map_err(|e| encode_error(Some(&id), &e))
        }
        Origin::Modern(meta, server) => {
            // The last request (a modern POST has one) takes the context, the others a copy;
            // it is there until the last takes it.
            let meta = if last { meta.take() } else { meta.clone() }
                .unwrap_or_else(|| Box::new(ModernMeta::of_notification()));
            Ok(Exchange::sessionless(server.clone(), r, meta, http_parts))
        }
    }
}

/// Step 3: an answer that keeps streaming in a legacy session is resumable: its events get
/// ids (from the event store when there is one, else from this process, good for a resume
/// on this instance after the server itself closed the stream), and 2025-11-25 streams open
/// with a priming event. Returns what the stream starts with.
async fn make_resumable(
    inner: &Inner,
    post: &Post,
    events: &mut PostEvents,
    first: &mut FirstEvents,
) -> VecDeque<Bytes> {
    let mut prefix = VecDeque::new();
    let Some(h) = post.http().filter(|_| !first.finished()) else {
        return prefix;
    };
    let stream = match inner.store() {
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
            inner.options.sse_retry,
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
    inner: &Inner,
    post: &Post,
    first: &FirstEvents,
) -> Result<Option<HeaderValue>, Rejection> {
    let PostKind::Initialize(h) = &post.kind else {
        return Ok(None);
    };
    let initialized = first.finished() && first.buffered.iter().any(|e| e.kind == EventKind::Reply);
    let committed = inner
        .sessions
        .commit(h, initialized)
        .await
        .map_err(|_| Rejection::StoreUnavailable)?;
    if !committed {
        return Ok(None);
    }
    log_event!(inner.options.logger.as_ref(), info, "mcp.session.id" = %redact_session_id(&h.id), "session created");
    Ok(HeaderValue::from_str(&h.id).ok())
}

/// Step 5: the response: a JSON body, a modern error with its HTTP status, or SSE.
fn write_response(
    inner: &Inner,
    post: &Post,
    first: FirstEvents,
    (shape, conditional): (Shape, Option<Conditional>),
    early: Vec<Bytes>,
    mut prefix: VecDeque<Bytes>,
    events: PostEvents,
) -> Response<ResponseBody> {
    let FirstEvents { buffered, progress } = first;
    let finished = progress == Progress::Finished;
    // Modern protocol errors carry their HTTP status (SEP-2575), in JSON mode as on the SSE
    // path, so they cannot ride a stream.
    let modern_status = match post.kind {
        PostKind::Modern if finished => modern_error(&buffered),
        _ => None,
    };
    if let Some(status) = modern_status {
        let mut r = json_response(&buffered, &early, false);
        *r.status_mut() = status;
        return r;
    }
    if finished && shape.is_json() {
        let r = json_response(&buffered, &early, post.is_batch());
        return match conditional {
            // A cacheable modern request: one message, no early ones.
            Some(c) => {
                let message = buffered.iter().find(|e| e.kind.is_final());
                c.answer(message.map(|e| &e.event.message), r)
            }
            None => r,
        };
    }
    for message in early {
        push_event(&mut prefix, SseEvent { id: None, message });
    }
    for ev in buffered
        .into_iter()
        .filter(|e| e.kind != EventKind::Cancelled)
    {
        push_event(&mut prefix, ev.event);
    }
    let body = if finished {
        ResponseBody::chunks(sse_writer::gather(prefix))
    } else {
        ResponseBody::stream(SseStream::new(
            Box::new(events),
            prefix,
            inner.options.sse_keep_alive,
            inner.options.sse_retry,
            inner.stops(post.http().map(|h| &**h)),
            None,
        ))
    };
    sse_response(body)
}

/// Step 2: polls the requests once, so that most answers are written in one go (nothing to
/// resume: no event ids, nothing stored). In JSON mode, waits for the result unless a
/// notification (or a handler closing its stream) comes first; a new session's `initialize`
/// waits too (its session exists only once it succeeded).
async fn first_events(
    events: &mut PostEvents,
    shape: Shape,
    initialize: bool,
    hold: Option<Duration>,
) -> FirstEvents {
    let mut buffered: Vec<PostEvent> = Vec::new();
    // JSON and a new session's `initialize` wait for the answer anyway.
    let hold = hold.filter(|_| !shape.is_json() && !initialize);
    let first = poll_fn(|cx| {
        loop {
            match events.poll_post_event(cx) {
                Poll::Ready(Some(ev)) => {
                    let message = ev.kind == EventKind::Message;
                    if message && shape == Shape::JsonOnly {
                        continue; // The client cannot take a stream: drop it.
                    }
                    buffered.push(ev);
                    if message && shape == Shape::Json {
                        return Poll::Ready(Progress::Upgraded);
                    }
                }
                Poll::Ready(None) => return Poll::Ready(Progress::Finished),
                // A handler that ends its stream early (SSE polling) needs a stream.
                Poll::Pending if shape == Shape::Json && events.close_requested_any() => {
                    return Poll::Ready(Progress::Upgraded);
                }
                Poll::Pending if shape.is_json() || initialize => return Poll::Pending,
                Poll::Pending if hold.is_some() && buffered.is_empty() => return Poll::Pending,
                Poll::Pending => return Poll::Ready(Progress::Running),
            }
        }
    });
    let progress = match hold {
        Some(limit) => tokio::time::timeout(limit, first)
            .await
            .unwrap_or(Progress::Running),
        None => first.await,
    };
    FirstEvents { buffered, progress }
}

/// The HTTP status of a modern request's final error, when it is not 200.
fn modern_error(events: &[PostEvent]) -> Option<StatusCode> {
    events
        .iter()
        .find_map(|e| e.kind.error_code())
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
