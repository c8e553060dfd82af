//! The one dispatch path: every request of every era and transport is served here.
//!
//! The era decides where a request's context comes from (its session, or its own `_meta`)
//! and how its result is framed (`resultType`, cache hints and server info for 2026-07-28),
//! not which handler runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::{RequestContext, RequestShared, Scope};
use super::session::{ClientInit, Session};
use super::tool::{CallToolRequest, HandlerError};
use super::{GetPromptRequest, ReadResourceRequest};
use crate::protocol::jsonrpc::{
    encode_error, encode_notification, encode_response_raw, encode_response_with,
};
use crate::protocol::{
    CacheHint, CallToolParams, CallToolResult, CancelledParams, CompleteParams, CompleteResult,
    CompletionReference, DiscoverResult, EmptyResult, ErrorObject, GetPromptParams,
    GetPromptResult, InitializeParams, InitializeResult, InputRequiredResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Meta, Notification,
    PaginatedParams, ProtocolVersion, RawJson, ReadResourceParams, ReadResourceResult, Response,
    ResultType, SetLevelParams, SubscribeParams, code, meta_keys, methods,
};

/// What serving a request produced.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The encoded success response.
    Reply(Bytes),
    /// A JSON-RPC error for the request.
    Error(ErrorObject),
    /// Nothing is sent (the request was cancelled).
    Silent,
}

/// Results that can carry server info in their `_meta` (2026-07-28).
pub(crate) trait HasMeta {
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

fn is_modern(shared: &RequestShared) -> bool {
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
fn encode_result<T: Serialize + HasMeta>(
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

fn complete<T: Serialize + HasMeta>(shared: &RequestShared, result: T) -> Outcome {
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

fn params<T: DeserializeOwned + Default>(raw: Option<&RawJson>) -> Result<T, ErrorObject> {
    match raw {
        None => Ok(T::default()),
        Some(r) => r
            .parse()
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}"))),
    }
}

fn required_params<T: DeserializeOwned>(raw: Option<&RawJson>) -> Result<T, ErrorObject> {
    match raw {
        None => Err(ErrorObject::invalid_params(
            "Invalid params: missing params",
        )),
        Some(r) => r
            .parse()
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}"))),
    }
}

/// Serves one request. The caller owns `shared` (its outbox, cancellation flag) and drives
/// the returned future; this is the only place methods are matched.
pub(crate) async fn handle_request(shared: Arc<RequestShared>, raw: Option<RawJson>) -> Outcome {
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
        methods::TOOLS_CALL => call_tool(shared, required_params(raw)?).await,
        methods::TOOLS_LIST => list_tools(shared, params(raw)?)?,
        methods::INITIALIZE if !modern => initialize(shared, required_params(raw)?)?,
        methods::PING if !modern => encode_ping(shared),
        methods::DISCOVER if modern => discover(shared),
        methods::RESOURCES_LIST => list_resources(shared, params(raw)?)?,
        methods::RESOURCES_TEMPLATES_LIST => list_templates(shared, params(raw)?)?,
        methods::RESOURCES_READ => read_resource(shared, required_params(raw)?).await,
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE if !modern => subscribe(
            shared,
            method == methods::RESOURCES_SUBSCRIBE,
            required_params(raw)?,
        )?,
        methods::PROMPTS_LIST => list_prompts(shared, params(raw)?)?,
        methods::PROMPTS_GET => get_prompt(shared, required_params(raw)?).await,
        methods::COMPLETION_COMPLETE => complete_argument(shared, required_params(raw)?).await?,
        methods::LOGGING_SET_LEVEL if !modern => set_level(shared, required_params(raw)?)?,
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
    Ok(complete(
        shared,
        InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: server.capabilities(),
            server_info: server.info().clone(),
            instructions: server.options().instructions.clone(),
            meta: None,
        },
    ))
}

fn discover(shared: &RequestShared) -> Outcome {
    let server = &shared.server;
    cacheable(
        shared,
        DiscoverResult {
            supported_versions: DiscoverResult::all_versions(),
            capabilities: server.capabilities(),
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
fn page<'a, V>(
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
    let slot = usize::from(is_modern(shared));
    if p.cursor.is_none()
        && let Some(bytes) = server
            .inner
            .cache
            .tools
            .lock()
            .map(|c| c[slot].clone())
            .ok()
            .flatten()
    {
        return Ok(Outcome::Reply(encode_response_raw(&shared.id, &bytes)));
    }
    let result = {
        let reg = server.registry();
        let (items, next) = page(&reg.tools, p.cursor.as_deref(), server.options().page_size)?;
        ListToolsResult {
            tools: items.into_iter().map(|e| e.tool.clone()).collect(),
            next_cursor: next,
            meta: None,
        }
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
    if let Ok(mut c) = server.inner.cache.tools.lock() {
        c[slot] = Some(body.clone());
    }
    Ok(Outcome::Reply(encode_response_raw(&shared.id, &body)))
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

async fn call_tool(shared: &Arc<RequestShared>, mut p: CallToolParams) -> Outcome {
    shared.set_meta(p.meta.clone());
    shared.set_input_responses(p.input_responses.take());
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
    let ctx = RequestContext::new(shared.clone());
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
                    return Outcome::Error(ErrorObject::internal(format!(
                        "The tool's output does not match its output schema: {why}"
                    )));
                }
            }
            complete(shared, result)
        }
        Err(HandlerError::Failed(message)) => complete(shared, CallToolResult::error(message)),
        Err(HandlerError::Protocol(e)) => Outcome::Error(e),
        Err(HandlerError::InputRequired(r)) => input_required(shared, *r),
    }
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

async fn read_resource(shared: &Arc<RequestShared>, mut p: ReadResourceParams) -> Outcome {
    shared.set_meta(p.meta.clone());
    shared.set_input_responses(p.input_responses.take());
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

async fn get_prompt(shared: &Arc<RequestShared>, mut p: GetPromptParams) -> Outcome {
    shared.set_meta(p.meta.clone());
    shared.set_input_responses(p.input_responses.take());
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
        let Some(h) = reg.completion.clone() else {
            return Err(ErrorObject::method_not_found(methods::COMPLETION_COMPLETE));
        };
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
        h
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
