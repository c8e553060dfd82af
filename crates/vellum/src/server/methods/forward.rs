//! The forwarding path: a request of a server with an [`Upstream`] that the server does not
//! answer itself (see `upstream.rs` for which) goes here, whatever its method, in five steps:
//!
//! 1. read what the server needs of the params (`_meta`, a tool's name, a retry's answers and
//!    state) without decoding the rest;
//! 2. refuse a `tools/call` whose caller lacks the tool's scopes;
//! 3. start the 2026-07-28 multi round-trip attempt (the upstream's questions to the client
//!    then end the attempt with an `InputRequiredResult`, and the retry brings the answers);
//! 4. hand the request to the upstream;
//! 5. frame its raw result for the client's era, or map its failure with the one mapping.
//!
//! Not here: what the upstream does (a gateway: `crate::gateway`), and the methods the server
//! answers itself even with an upstream (`lifecycle.rs`, `listen.rs`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{
    CacheHint, ErrorObject, InputResponses, JsonObject, Meta, RawJson, ResultType,
    encode_response_raw, methods,
};
use crate::server::handler_error::{Served, WireFailure};
use crate::server::registry::cache_hints::Cached;
use crate::server::request::context::RequestContext;
use crate::server::request::reply::{HasMeta, Outcome, encode_result, failure};
use crate::server::request::request::RequestShared;
use crate::server::scopes::{self, ScopeRules};
use crate::server::upstream::{ForwardedRequest, Upstream};

/// True for the methods a server with an upstream forwards without answering them itself.
pub(super) fn forwarded(method: &str) -> bool {
    !matches!(
        method,
        methods::INITIALIZE
            | methods::PING
            | methods::DISCOVER
            | methods::SUBSCRIPTIONS_LISTEN
            | methods::LOGGING_SET_LEVEL
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE
    )
}

/// What the forwarding path reads of a request's params (everything else stays raw).
#[derive(Deserialize, Default)]
struct Head {
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
    /// The tool of a `tools/call` (its scopes).
    #[serde(default)]
    name: Option<Value>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<InputResponses>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

/// Serves one request by forwarding it (the five steps above).
pub(super) async fn forward(
    shared: &Arc<RequestShared>,
    upstream: &Arc<dyn Upstream>,
    raw: Option<RawJson>,
) -> Outcome {
    let head: Head = match &raw {
        Some(r) => match r.parse() {
            Ok(h) => h,
            Err(e) => {
                return Outcome::Error(ErrorObject::invalid_params(format!("Invalid params: {e}")));
            }
        },
        None => Head::default(),
    };
    shared.set_meta(head.meta);
    if shared.is_modern()
        && !shared.server.knows_upstream_info()
        && let Ok(r) = upstream.describe().await
    {
        // A 2026-07-28 answer names the server behind (learned once).
        shared.server.learn_upstream_info(&r.server_info);
    }
    if shared.method == methods::TOOLS_CALL
        && let Some(Value::String(name)) = &head.name
        && let Err(refusal) = check_tool(shared, upstream, name, raw.as_ref())
    {
        return Outcome::Error(refusal);
    }
    let mut params = raw;
    // The methods whose retries carry the client's answers (`tasks/update` carries answers
    // too, but for the task: those go on untouched).
    let rounds = matches!(
        shared.method.as_str(),
        methods::TOOLS_CALL | methods::RESOURCES_READ | methods::PROMPTS_GET
    );
    if shared.is_modern() && rounds {
        let retry = head.input_responses.is_some() || head.request_state.is_some();
        if let Err(e) = shared.begin_attempt(
            params.as_ref(),
            head.input_responses,
            head.request_state.as_deref(),
        ) {
            return Outcome::Error(e);
        }
        if retry {
            // The answers are the server's now: the upstream sees the request as first sent.
            params = match without_attempt(params.as_ref()) {
                Ok(p) => p,
                Err(e) => return Outcome::Error(e),
            };
        }
    }
    let request = ForwardedRequest {
        context: RequestContext::new(shared.clone()),
        params,
    };
    match upstream.forward(request).await {
        Ok(result) => frame(shared, &result),
        Err(e) => {
            let served = if shared.method == methods::TOOLS_CALL {
                Served::Tool
            } else {
                Served::Other
            };
            let wire = match e.into_wire(served, shared.is_modern()) {
                WireFailure::InputRequired(r) => {
                    WireFailure::InputRequired(shared.input_required(r))
                }
                other => other,
            };
            failure(shared, wire)
        }
    }
}

/// Step 2: what a call of tool `name` must pass before it is forwarded: the scopes it needs
/// (the tool's own are the upstream's to declare; the rules given to the transport apply
/// here too), and on 2026-07-28 HTTP its `Mcp-Param-*` headers, when the upstream knows the
/// tool's `x-mcp-header` arguments.
fn check_tool(
    shared: &RequestShared,
    upstream: &Arc<dyn Upstream>,
    name: &str,
    raw: Option<&RawJson>,
) -> Result<(), ErrorObject> {
    let rules = shared
        .http
        .as_ref()
        .and_then(|h| h.extensions.get::<Arc<ScopeRules>>());
    let mut needed = Vec::new();
    scopes::tool_scopes(&shared.server, rules.map(|r| &**r), name, &mut needed);
    scopes::check(shared.caller(), needed).map_err(|refusal| refusal.to_error())?;
    if let (true, Some(http)) = (shared.is_modern(), &shared.http)
        && let Some(headers) = upstream.param_headers(name).filter(|h| !h.is_empty())
    {
        #[derive(Deserialize)]
        struct Arguments {
            #[serde(default)]
            arguments: Option<JsonObject>,
        }
        let args: Arguments = match raw {
            Some(r) => r
                .parse()
                .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))?,
            None => Arguments { arguments: None },
        };
        super::input::check_param_headers(&headers, &http.headers, args.arguments.as_ref())?;
    }
    Ok(())
}

/// The params without `inputResponses` and `requestState`.
fn without_attempt(params: Option<&RawJson>) -> Result<Option<RawJson>, ErrorObject> {
    let Some(p) = params else { return Ok(None) };
    let mut map: Map<String, Value> = p
        .parse()
        .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))?;
    map.remove("inputResponses");
    map.remove("requestState");
    RawJson::from_value(&map)
        .map(Some)
        .map_err(|e| ErrorObject::internal(format!("the params could not be encoded: {e}")))
}

/// A result as the upstream gave it, to be framed for a 2026-07-28 client: its fields, and
/// its `_meta` (which the framing merges with the server's identity).
#[derive(Serialize)]
struct Forwarded {
    #[serde(flatten)]
    fields: Map<String, Value>,
    #[serde(skip)]
    meta: Option<Meta>,
}

impl HasMeta for Forwarded {
    fn meta_mut(&mut self) -> &mut Option<Meta> {
        &mut self.meta
    }
}

/// Step 5: a legacy client gets the upstream's result as it is; a 2026-07-28 client gets it
/// framed by this server (`resultType`, its identity, its cache hints for what it caches).
fn frame(shared: &RequestShared, result: &RawJson) -> Outcome {
    if !shared.is_modern() {
        return Outcome::Reply(encode_response_raw(&shared.id, result.as_bytes()));
    }
    let mut fields: Map<String, Value> = match result.parse() {
        Ok(f) => f,
        Err(e) => {
            return Outcome::Error(ErrorObject::internal(format!(
                "the upstream's result is not a JSON object: {e}"
            )));
        }
    };
    // The upstream's own framing, if it spoke 2026-07-28, gives way to this server's; a
    // task it made of the request stays one (its `ttlMs` is the task's).
    let task = fields.get("resultType").and_then(Value::as_str) == Some("task");
    fields.remove("resultType");
    if !task {
        fields.remove("ttlMs");
        fields.remove("cacheScope");
    }
    let meta = match fields.remove("_meta") {
        Some(Value::Object(m)) => Some(Meta(m)),
        _ => None,
    };
    if task {
        return encode_result(shared, Forwarded { fields, meta }, ResultType::Task, None);
    }
    let cache = cache_hint(shared, &shared.method);
    encode_result(
        shared,
        Forwarded { fields, meta },
        ResultType::Complete,
        cache,
    )
}

/// The cache hints of a method's answer, for those a client may cache: the application's
/// for the lists and reads, the defaults for the skills (as when the server serves them).
fn cache_hint(shared: &RequestShared, method: &str) -> Option<CacheHint> {
    let cached = match method {
        methods::TOOLS_LIST => Cached::ToolsList,
        methods::PROMPTS_LIST => Cached::PromptsList,
        methods::RESOURCES_LIST => Cached::ResourcesList,
        methods::RESOURCES_TEMPLATES_LIST => Cached::ResourceTemplatesList,
        methods::RESOURCES_READ => Cached::ResourcesRead,
        methods::SKILLS_LIST | methods::SKILLS_GET => return Some(CacheHint::default()),
        _ => return None,
    };
    Some(shared.server.cache_hint(cached))
}
