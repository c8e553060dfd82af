//! The one dispatch path: every request of every era and transport is served here.
//!
//! The era decides where a request's context comes from (its session, or its own `_meta`)
//! and how its result is framed (`resultType`, cache hints and server info for 2026-07-28),
//! not which handler runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::{RequestContext, RequestShared, Scope};
use super::listen::subscription_meta;
use super::middleware::{IncomingRequest, MessageEvent};
use super::prompt::completer_key;
use super::session::{ClientInit, Session};
use super::tasks;
use super::tool::{CallToolRequest, HandlerError, ToolEntry};
use super::{GetPromptRequest, ReadResourceRequest};
use crate::protocol::{
    CacheHint, CallToolParams, CallToolResult, CancelledParams, CompleteParams, CompleteResult,
    CompletionReference, DiscoverResult, EmptyResult, ErrorObject, GetPromptParams,
    GetPromptResult, InitializeParams, InitializeResult, InputRequiredResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Meta, Notification,
    PaginatedParams, ProtocolVersion, RawJson, ReadResourceParams, ReadResourceResult, Response,
    ResultType, SetLevelParams, SubscribeParams, SubscriptionFilter,
    SubscriptionsAcknowledgedParams, SubscriptionsListenParams, code, meta_keys, methods,
};
use crate::protocol::{
    encode_error, encode_notification, encode_response_raw, encode_response_with,
};

/// What serving a request produced (what request middleware get back from
/// [`Next::run`](super::Next::run), and may return instead).
#[derive(Debug)]
pub enum Outcome {
    /// The encoded JSON-RPC success response (the whole message, ready to send).
    Reply(Bytes),
    /// A JSON-RPC error for the request.
    Error(ErrorObject),
    /// Nothing is sent (the request was cancelled).
    Silent,
}

impl Outcome {
    /// The error, when the request failed.
    pub fn error(&self) -> Option<&ErrorObject> {
        match self {
            Outcome::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// Results that can carry server info in their `_meta` (2026-07-28).
pub(crate) trait HasMeta {
    /// The result's `_meta`.
    fn meta_mut(&mut self) -> &mut Option<Meta>;
}

macro_rules! has_meta {
    ($($t:ty),* $(,)?) => {
        $(impl HasMeta for $t {
            fn meta_mut(&mut self) -> &mut Option<Meta> { &mut self.meta }
        })*
    };
}

has_meta!(
    EmptyResult,
    InitializeResult,
    DiscoverResult,
    ListToolsResult,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    GetPromptResult,
    CompleteResult,
    InputRequiredResult,
    crate::protocol::CreateTaskResult,
    crate::protocol::ListTasksResult,
);

/// A modern result: `resultType`, the result's own fields, then the cache hints.
#[derive(Serialize)]
struct Modern<'a, T: Serialize> {
    #[serde(rename = "resultType")]
    result_type: &'a ResultType,
    #[serde(flatten)]
    inner: &'a T,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<crate::protocol::CacheScope>,
}

pub(crate) fn is_modern(shared: &RequestShared) -> bool {
    matches!(shared.scope, Scope::Modern(_))
}

/// Serializes a result for the request's era into `out`. `cache` is given for cacheable
/// results.
fn write_result<T: Serialize + HasMeta>(
    shared: &RequestShared,
    mut result: T,
    result_type: ResultType,
    cache: Option<CacheHint>,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    if is_modern(shared) {
        result.meta_mut().get_or_insert_with(Meta::new).insert(
            meta_keys::SERVER_INFO.to_owned(),
            shared.server.inner.info_json.clone(),
        );
        serde_json::to_writer(
            out,
            &Modern {
                result_type: &result_type,
                inner: &result,
                ttl_ms: cache.map(|c| c.ttl_ms),
                cache_scope: cache.map(|c| c.scope),
            },
        )
    } else {
        serde_json::to_writer(out, &result)
    }
}

/// Encodes the response message of a result for the request's era.
pub(crate) fn encode_result<T: Serialize + HasMeta>(
    shared: &RequestShared,
    result: T,
    result_type: ResultType,
    cache: Option<CacheHint>,
) -> Outcome {
    let encoded = encode_response_with(&shared.id, |out| {
        write_result(shared, result, result_type, cache, out)
    });
    match encoded {
        Ok(b) => Outcome::Reply(b),
        Err(e) => Outcome::Error(ErrorObject::internal(format!(
            "the result could not be encoded: {e}"
        ))),
    }
}

pub(crate) fn complete<T: Serialize + HasMeta>(shared: &RequestShared, result: T) -> Outcome {
    encode_result(shared, result, ResultType::Complete, None)
}

fn cacheable<T: Serialize + HasMeta>(shared: &RequestShared, result: T) -> Outcome {
    encode_result(
        shared,
        result,
        ResultType::Complete,
        Some(CacheHint::default()),
    )
}

pub(crate) fn params<T: DeserializeOwned + Default>(
    raw: Option<&RawJson>,
) -> Result<T, ErrorObject> {
    match raw {
        None => Ok(T::default()),
        Some(r) => r
            .parse()
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}"))),
    }
}

pub(crate) fn required_params<T: DeserializeOwned>(
    raw: Option<&RawJson>,
) -> Result<T, ErrorObject> {
    match raw {
        None => Err(ErrorObject::invalid_params(
            "Invalid params: missing params",
        )),
        Some(r) => r
            .parse()
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}"))),
    }
}

/// Serves one request, through the server's request middleware when it has any. The caller
/// owns `shared` (its outbox, cancellation flag) and drives the returned future.
pub(crate) async fn handle_request(
    shared: Arc<RequestShared>,
    raw: Option<RawJson>,
    chain: Option<super::Next>,
) -> Outcome {
    match chain {
        Some(next) => {
            next.run(IncomingRequest::new(RequestContext::new(shared), raw))
                .await
        }
        None => dispatch_request(shared, raw).await,
    }
}

/// The innermost step of every request: the only place methods are matched.
pub(crate) async fn dispatch_request(shared: Arc<RequestShared>, raw: Option<RawJson>) -> Outcome {
    match dispatch(&shared, raw).await {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Error(e),
    }
}

async fn dispatch(
    shared: &Arc<RequestShared>,
    raw: Option<RawJson>,
) -> Result<Outcome, ErrorObject> {
    let method = shared.method.as_str();
    let modern = is_modern(shared);
    if let Scope::Legacy(session) = &shared.scope
        && !session.is_initialized()
        && !matches!(method, methods::INITIALIZE | methods::PING)
    {
        return Err(ErrorObject::invalid_request(
            "Invalid request: the session is not initialized yet",
        ));
    }
    let raw = raw.as_ref();
    Ok(match method {
        methods::TOOLS_CALL => call_tool(shared, raw, required_params(raw)?).await,
        methods::TOOLS_LIST => list_tools(shared, params(raw)?)?,
        methods::INITIALIZE if !modern => initialize(shared, required_params(raw)?)?,
        methods::PING if !modern => encode_ping(shared),
        methods::DISCOVER if modern => discover(shared),
        methods::RESOURCES_LIST => list_resources(shared, params(raw)?)?,
        methods::RESOURCES_TEMPLATES_LIST => list_templates(shared, params(raw)?)?,
        methods::RESOURCES_READ => read_resource(shared, raw, required_params(raw)?).await,
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE if !modern => subscribe(
            shared,
            method == methods::RESOURCES_SUBSCRIBE,
            required_params(raw)?,
        )?,
        methods::PROMPTS_LIST => list_prompts(shared, params(raw)?)?,
        methods::PROMPTS_GET => get_prompt(shared, raw, required_params(raw)?).await,
        methods::COMPLETION_COMPLETE => complete_argument(shared, required_params(raw)?).await?,
        methods::LOGGING_SET_LEVEL if !modern => set_level(shared, required_params(raw)?)?,
        methods::TASKS_GET => tasks::get(shared, required_params(raw)?)?,
        methods::TASKS_RESULT if !modern => tasks::result(shared, required_params(raw)?).await?,
        methods::TASKS_LIST if !modern => tasks::list(shared, params(raw)?)?,
        methods::TASKS_CANCEL => tasks::cancel(shared, required_params(raw)?)?,
        methods::TASKS_UPDATE if modern => tasks::update(shared, required_params(raw)?)?,
        methods::SUBSCRIPTIONS_LISTEN if modern => listen(shared, required_params(raw)?).await?,
        _ => return Err(ErrorObject::method_not_found(method)),
    })
}

fn encode_ping(shared: &RequestShared) -> Outcome {
    // `ping` answers exactly `{}`.
    Outcome::Reply(encode_response_raw(&shared.id, b"{}"))
}

fn session_of(shared: &RequestShared) -> Result<&Arc<Session>, ErrorObject> {
    match &shared.scope {
        Scope::Legacy(s) => Ok(s),
        Scope::Modern(_) => Err(ErrorObject::method_not_found(&shared.method)),
    }
}

fn initialize(shared: &RequestShared, p: InitializeParams) -> Result<Outcome, ErrorObject> {
    let session = session_of(shared)?;
    let version = ProtocolVersion::negotiate_legacy(&p.protocol_version);
    let init = ClientInit {
        version,
        capabilities: p.capabilities,
        info: Some(p.client_info),
    };
    if !session.set_init(init) {
        return Err(ErrorObject::invalid_request(
            "Invalid request: the session is already initialized",
        ));
    }
    let server = &shared.server;
    let mut capabilities = server.capabilities();
    capabilities.extensions = None;
    if version < ProtocolVersion::V2025_11_25 {
        capabilities.tasks = None;
    }
    Ok(complete(
        shared,
        InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: server.info().clone(),
            instructions: server.options().instructions.clone(),
            meta: None,
        },
    ))
}

fn discover(shared: &RequestShared) -> Outcome {
    let server = &shared.server;
    let mut capabilities = server.capabilities();
    capabilities.tasks = None;
    cacheable(
        shared,
        DiscoverResult {
            supported_versions: DiscoverResult::all_versions(),
            capabilities,
            instructions: server.options().instructions.clone(),
            meta: None,
        },
    )
}

fn set_level(shared: &RequestShared, p: SetLevelParams) -> Result<Outcome, ErrorObject> {
    session_of(shared)?.set_log_level(p.level);
    Ok(Outcome::Reply(encode_response_raw(&shared.id, b"{}")))
}

fn subscribe(shared: &RequestShared, on: bool, p: SubscribeParams) -> Result<Outcome, ErrorObject> {
    let session = session_of(shared)?;
    if on {
        session.subscribe(&p.uri);
    } else {
        session.unsubscribe(&p.uri);
    }
    Ok(Outcome::Reply(encode_response_raw(&shared.id, b"{}")))
}

/// `subscriptions/listen`: acknowledges the part of the filter this server honours, then
/// stays open; the server pushes the notifications into this request's outbox until the
/// client goes away (see `listen.rs`).
async fn listen(
    shared: &Arc<RequestShared>,
    p: SubscriptionsListenParams,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let caps = shared.server.capabilities();
    let lists = |cap: Option<bool>, asked: Option<bool>| {
        (cap == Some(true) && asked == Some(true)).then_some(true)
    };
    let asked = p.notifications;
    let resources = caps.resources.as_ref();
    let granted = SubscriptionFilter {
        tools_list_changed: lists(
            caps.tools.as_ref().and_then(|c| c.list_changed),
            asked.tools_list_changed,
        ),
        prompts_list_changed: lists(
            caps.prompts.as_ref().and_then(|c| c.list_changed),
            asked.prompts_list_changed,
        ),
        resources_list_changed: lists(
            resources.and_then(|c| c.list_changed),
            asked.resources_list_changed,
        ),
        resource_subscriptions: asked
            .resource_subscriptions
            .filter(|uris| !uris.is_empty() && resources.and_then(|c| c.subscribe) == Some(true)),
    };
    let ack = SubscriptionsAcknowledgedParams {
        notifications: granted.clone(),
        meta: Some(subscription_meta(&shared.id)),
    };
    let message =
        encode_notification(methods::SUBSCRIPTIONS_ACKNOWLEDGED, Some(&ack)).map_err(|e| {
            ErrorObject::internal(format!("the acknowledgement could not be encoded: {e}"))
        })?;
    if shared.outbox.send(message).await.is_err() {
        return Ok(Outcome::Silent);
    }
    if granted == SubscriptionFilter::default() {
        // Nothing to listen for: the stream ends at once.
        return Ok(complete(
            shared,
            EmptyResult {
                meta: Some(subscription_meta(&shared.id)),
            },
        ));
    }
    let _registered = shared.server.inner.listeners.register(shared, granted);
    std::future::pending::<()>().await;
    Ok(Outcome::Silent)
}

// ---- pagination -------------------------------------------------------------------------

fn decode_cursor(cursor: Option<&str>) -> Result<Option<String>, ErrorObject> {
    let Some(c) = cursor else { return Ok(None) };
    URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Some)
        .ok_or_else(|| ErrorObject::invalid_params("Invalid params: unknown cursor"))
}

/// One page of a sorted map: items after the cursor's key, and the next cursor.
pub(crate) fn page<'a, V>(
    map: &'a BTreeMap<String, V>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<&'a V>, Option<String>), ErrorObject> {
    let after = decode_cursor(cursor)?;
    let iter: Box<dyn Iterator<Item = (&String, &V)>> = match &after {
        None => Box::new(map.iter()),
        Some(k) => Box::new(
            map.range::<String, _>((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded)),
        ),
    };
    let mut items = Vec::new();
    let mut last = None;
    let mut more = false;
    for (k, v) in iter {
        if items.len() == size {
            more = true;
            break;
        }
        items.push(v);
        last = Some(k);
    }
    let next = if more {
        last.map(|k| URL_SAFE_NO_PAD.encode(k.as_bytes()))
    } else {
        None
    };
    Ok((items, next))
}

fn list_tools(shared: &RequestShared, p: PaginatedParams) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let server = &shared.server;
    let modern = is_modern(shared);
    let slot = usize::from(modern);
    let cache = &server.inner.cache;
    if p.cursor.is_none() {
        let current = cache.tools_generation.load(Ordering::Acquire);
        let cached = cache
            .tools
            .lock()
            .ok()
            .and_then(|c| c[slot].clone())
            .filter(|(generation, _)| *generation == current);
        if let Some((_, bytes)) = cached {
            return Ok(Outcome::Reply(encode_response_raw(&shared.id, &bytes)));
        }
    }
    let (result, generation) = {
        let reg = server.registry();
        // Read under the registry lock: writers bump it under the write lock, so it is the
        // generation of exactly this map.
        let generation = cache.tools_generation.load(Ordering::Acquire);
        let (items, next) = page(&reg.tools, p.cursor.as_deref(), server.options().page_size)?;
        let tools = items
            .into_iter()
            .map(|e| {
                let mut t = e.tool.clone();
                // Before 2026-07-28 an output schema describes an object; others are not
                // listed to legacy clients (they get the text fallback instead).
                if !modern
                    && t.output_schema
                        .as_ref()
                        .is_some_and(|s| !is_object_schema(s))
                {
                    t.output_schema = None;
                }
                t
            })
            .collect();
        (
            ListToolsResult {
                tools,
                next_cursor: next,
                meta: None,
            },
            generation,
        )
    };
    if p.cursor.is_some() {
        return Ok(cacheable(shared, result));
    }
    let mut body = Vec::with_capacity(1024);
    write_result(
        shared,
        result,
        ResultType::Complete,
        Some(CacheHint::default()),
        &mut body,
    )
    .map_err(|e| ErrorObject::internal(format!("the tool list could not be encoded: {e}")))?;
    let body = Bytes::from(body);
    if let Ok(mut c) = cache.tools.lock()
        && c[slot].as_ref().is_none_or(|(g, _)| *g < generation)
    {
        c[slot] = Some((generation, body.clone()));
    }
    Ok(Outcome::Reply(encode_response_raw(&shared.id, &body)))
}

/// True for a schema whose root describes an object.
fn is_object_schema(schema: &crate::protocol::JsonObject) -> bool {
    schema.get("type") == Some(&Value::String("object".into()))
}

fn list_resources(shared: &RequestShared, p: PaginatedParams) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let server = &shared.server;
    let result = {
        let reg = server.registry();
        let (items, next) = page(
            &reg.resources,
            p.cursor.as_deref(),
            server.options().page_size,
        )?;
        ListResourcesResult {
            resources: items.into_iter().map(|e| e.resource.clone()).collect(),
            next_cursor: next,
            meta: None,
        }
    };
    Ok(cacheable(shared, result))
}

fn list_templates(shared: &RequestShared, p: PaginatedParams) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let server = &shared.server;
    let result = {
        let reg = server.registry();
        let (items, next) = page(
            &reg.templates,
            p.cursor.as_deref(),
            server.options().page_size,
        )?;
        ListResourceTemplatesResult {
            resource_templates: items.into_iter().map(|e| e.template.clone()).collect(),
            next_cursor: next,
            meta: None,
        }
    };
    Ok(cacheable(shared, result))
}

fn list_prompts(shared: &RequestShared, p: PaginatedParams) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let server = &shared.server;
    let result = {
        let reg = server.registry();
        let (items, next) = page(
            &reg.prompts,
            p.cursor.as_deref(),
            server.options().page_size,
        )?;
        ListPromptsResult {
            prompts: items.into_iter().map(|e| e.prompt.clone()).collect(),
            next_cursor: next,
            meta: None,
        }
    };
    Ok(cacheable(shared, result))
}

// ---- handlers -----------------------------------------------------------------------------

/// Turns a handler's MRTR request into the era's answer.
fn input_required(shared: &RequestShared, r: InputRequiredResult) -> Outcome {
    if is_modern(shared) {
        encode_result(shared, r, ResultType::InputRequired, None)
    } else {
        // Legacy handlers ask the client directly; this only happens if a handler returned
        // the error of another request.
        Outcome::Error(ErrorObject::internal(
            "the handler asked for client input in a way this protocol version cannot carry",
        ))
    }
}

async fn call_tool(
    shared: &Arc<RequestShared>,
    raw: Option<&RawJson>,
    mut p: CallToolParams,
) -> Outcome {
    shared.set_meta(p.meta.clone());
    if let Err(e) = shared.begin_attempt(raw, p.input_responses.take(), p.request_state.as_deref())
    {
        return Outcome::Error(e);
    }
    let Some(entry) = shared.server.tool(&p.name) else {
        return Outcome::Error(ErrorObject::invalid_params(format!(
            "Unknown tool: {}",
            p.name
        )));
    };
    let arguments = Value::Object(p.arguments.take().unwrap_or_default());
    if let Err(message) = entry.validate_input(&arguments) {
        return complete(shared, CallToolResult::error(message));
    }
    let request = CallToolRequest {
        name: p.name,
        arguments,
        meta: p.meta,
        task: p.task,
    };
    match tasks::decide(shared, &entry, &request) {
        Err(e) => return Outcome::Error(e),
        Ok(Some(ttl)) => return tasks::start(shared, entry, request, ttl),
        Ok(None) => {}
    }
    match execute_tool(shared.clone(), &entry, request).await {
        Ok(result) => complete(shared, result),
        Err(HandlerError::Protocol(e)) => Outcome::Error(e),
        Err(HandlerError::InputRequired(r)) => input_required(shared, *r),
        Err(HandlerError::Failed(message)) => complete(shared, CallToolResult::error(message)),
    }
}

/// Runs a tool's handler and checks and frames its output; a handler failure becomes a tool
/// error result, so the error side is only protocol errors and MRTR questions.
pub(crate) async fn execute_tool(
    shared: Arc<RequestShared>,
    entry: &ToolEntry,
    request: CallToolRequest,
) -> Result<CallToolResult, HandlerError> {
    let modern = is_modern(&shared);
    let ctx = RequestContext::new(shared);
    match entry.handler.call(ctx, request).await {
        Ok(result) => {
            if entry.has_output_schema() && !result.is_error() {
                let checked = match &result.structured_content {
                    Some(v) => entry.validate_output(v),
                    None => Err(
                        "the tool declares an output schema but returned no structuredContent"
                            .into(),
                    ),
                };
                if let Err(why) = checked {
                    return Err(HandlerError::Protocol(ErrorObject::internal(format!(
                        "The tool's output does not match its output schema: {why}"
                    ))));
                }
            }
            Ok(frame_structured(result, modern))
        }
        Err(HandlerError::Failed(message)) => Ok(CallToolResult::error(message)),
        Err(e) => Err(e),
    }
}

/// Makes structured output readable by every client: a result with `structuredContent` and
/// no content gets a text block with the JSON; before 2026-07-28 `structuredContent` must be an
/// object, so other values are carried by that text block alone.
fn frame_structured(mut result: CallToolResult, modern: bool) -> CallToolResult {
    let Some(value) = &result.structured_content else {
        return result;
    };
    let object = value.is_object();
    if result.content.is_empty() || (!modern && !object && !has_text(&result)) {
        result
            .content
            .push(crate::protocol::ContentBlock::text(value.to_string()));
    }
    if !modern && !object {
        result.structured_content = None;
    }
    result
}

fn has_text(r: &CallToolResult) -> bool {
    r.content.iter().any(|c| c.as_text().is_some())
}

/// The resource-not-found error of the request's era.
fn resource_not_found(shared: &RequestShared, uri: &str) -> ErrorObject {
    let code = if is_modern(shared) {
        code::INVALID_PARAMS
    } else {
        code::RESOURCE_NOT_FOUND
    };
    ErrorObject::new(code, "Resource not found").with_data(serde_json::json!({ "uri": uri }))
}

fn handler_error(shared: &RequestShared, e: HandlerError) -> Outcome {
    match e {
        HandlerError::Failed(message) => Outcome::Error(ErrorObject::internal(message)),
        HandlerError::Protocol(e) => Outcome::Error(e),
        HandlerError::InputRequired(r) => input_required(shared, *r),
    }
}

async fn read_resource(
    shared: &Arc<RequestShared>,
    raw: Option<&RawJson>,
    mut p: ReadResourceParams,
) -> Outcome {
    shared.set_meta(p.meta.clone());
    if let Err(e) = shared.begin_attempt(raw, p.input_responses.take(), p.request_state.as_deref())
    {
        return Outcome::Error(e);
    }
    let found = {
        let reg = shared.server.registry();
        if let Some(e) = reg.resources.get(&p.uri) {
            Some((e.handler.clone(), BTreeMap::new()))
        } else {
            reg.templates
                .values()
                .find_map(|t| t.matcher.matches(&p.uri).map(|v| (t.handler.clone(), v)))
        }
    };
    let Some((handler, variables)) = found else {
        return Outcome::Error(resource_not_found(shared, &p.uri));
    };
    let request = ReadResourceRequest {
        uri: p.uri.clone(),
        variables,
        meta: p.meta,
    };
    match handler
        .read(RequestContext::new(shared.clone()), request)
        .await
    {
        // An empty read means "no such resource", never an empty success (2026-07-28 rule).
        Ok(r) if r.contents.is_empty() => Outcome::Error(resource_not_found(shared, &p.uri)),
        Ok(r) => cacheable(shared, r),
        Err(e) => handler_error(shared, e),
    }
}

async fn get_prompt(
    shared: &Arc<RequestShared>,
    raw: Option<&RawJson>,
    mut p: GetPromptParams,
) -> Outcome {
    shared.set_meta(p.meta.clone());
    if let Err(e) = shared.begin_attempt(raw, p.input_responses.take(), p.request_state.as_deref())
    {
        return Outcome::Error(e);
    }
    let Some(entry) = shared.server.registry().prompts.get(&p.name).cloned() else {
        return Outcome::Error(ErrorObject::invalid_params(format!(
            "Unknown prompt: {}",
            p.name
        )));
    };
    let arguments = p.arguments.take().unwrap_or_default();
    for a in entry.prompt.arguments.iter().flatten() {
        if a.required == Some(true) && !arguments.contains_key(&a.name) {
            return Outcome::Error(ErrorObject::invalid_params(format!(
                "Missing required argument: {}",
                a.name
            )));
        }
    }
    let request = GetPromptRequest {
        name: p.name,
        arguments,
        meta: p.meta,
    };
    match entry
        .handler
        .get(RequestContext::new(shared.clone()), request)
        .await
    {
        Ok(r) => complete(shared, r),
        Err(e) => handler_error(shared, e),
    }
}

async fn complete_argument(
    shared: &Arc<RequestShared>,
    p: CompleteParams,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta.clone());
    let handler = {
        let reg = shared.server.registry();
        if reg.completion.is_none() && reg.completers.is_empty() {
            return Err(ErrorObject::method_not_found(methods::COMPLETION_COMPLETE));
        }
        match &p.reference {
            CompletionReference::Prompt { name, .. } => {
                let Some(prompt) = reg.prompts.get(name) else {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown prompt: {name}"
                    )));
                };
                let known = prompt
                    .prompt
                    .arguments
                    .iter()
                    .flatten()
                    .any(|a| a.name == p.argument.name);
                if !known {
                    return Err(ErrorObject::invalid_params(format!(
                        "Prompt {name} has no argument {}",
                        p.argument.name
                    )));
                }
            }
            CompletionReference::Resource { uri } => {
                if !reg.templates.contains_key(uri) && !reg.resources.contains_key(uri) {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown resource template: {uri}"
                    )));
                }
            }
        }
        let key = completer_key(&p.reference, &p.argument.name);
        match reg.completers.get(&key).or(reg.completion.as_ref()) {
            Some(h) => h.clone(),
            // Nothing completes this argument: no suggestions.
            None => return Ok(complete(shared, CompleteResult::default())),
        }
    };
    Ok(
        match handler
            .complete(RequestContext::new(shared.clone()), p)
            .await
        {
            Ok(mut r) => {
                r.completion.values.truncate(100);
                complete(shared, r)
            }
            Err(e) => handler_error(shared, e),
        },
    )
}

// ---- notifications and responses from the client -----------------------------------------

/// Handles a notification from the client. Notifications never get an answer.
pub(crate) fn handle_notification(session: Option<&Arc<Session>>, n: &Notification) {
    if let Some(s) = session {
        s.server().observe(&MessageEvent::NotificationReceived(n));
    }
    match n.method.as_str() {
        methods::INITIALIZED => {
            if let Some(s) = session {
                s.mark_initialized();
            }
        }
        methods::CANCELLED => {
            if let (Some(s), Some(p)) = (
                session,
                n.params
                    .as_ref()
                    .and_then(|p| p.parse::<CancelledParams>().ok()),
            ) && !s.cancel_inflight(&p.request_id)
                && let Some(h) = s.hooks()
                && let Ok(m) = encode_notification(methods::CANCELLED, Some(&p))
            {
                // Not running here: it may run on another instance of the deployment.
                h.unmatched_cancel(m);
            }
        }
        // Progress from the client and roots changes need no action from the core.
        _ => {}
    }
}

/// Delivers the client's answer to one of our requests.
pub(crate) fn handle_response(session: &Session, r: Response) {
    session
        .server()
        .observe(&MessageEvent::ResponseReceived(&r));
    let Some(id) = r.id.clone() else { return };
    let stray = session.hooks().map(|_| match &r.outcome {
        Ok(result) => encode_response_raw(&id, result.as_bytes()),
        Err(e) => encode_error(Some(&id), e),
    });
    if !session.resolve(&id, r.outcome)
        && let (Some(h), Some(m)) = (session.hooks(), stray)
    {
        // Nobody waits here: the request may be another instance's.
        h.unmatched_response(m);
    }
}
