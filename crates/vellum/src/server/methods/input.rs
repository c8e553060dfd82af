//! The methods whose handlers may ask the client for input (2026-07-28 multi round-trip):
//! `tools/call`, `resources/read` and `prompts/get`, served by one generic path, [`serve`]:
//!
//! 1. record the request's `_meta`;
//! 2. start the MRTR attempt (check the echoed `requestState`, keep the client's answers);
//! 3. find what the params name (the tool, resource or prompt) and
//! 4. build the handler's request, or answer at once (unknown name, invalid arguments, a
//!    call that runs as a task);
//! 5. call the handler;
//! 6. frame its result, or map its failure with the one mapping
//!    ([`HandlerError::into_wire`](crate::server::handler_error::HandlerError::into_wire)).
//!
//! Each method says only what differs (an [`InputMethod`]). Not here: the handler context
//! asking the question (`request/context.rs`) and the signed state (`mrtr.rs`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::tasks::{self, Plan, ToolOutput};
use crate::protocol::echo;
use crate::protocol::{
    CallToolParams, CallToolResult, ErrorObject, GetPromptParams, GetPromptResult, InputResponses,
    JsonObject, Meta, ParamHeader, RawJson, ReadResourceParams, ReadResourceResult, code,
};
use crate::server::handler_error::{HandlerError, Served, WireFailure};
use crate::server::registry::cache_hints::Cached;
use crate::server::registry::prompt::{GetPromptRequest, PromptEntry};
use crate::server::registry::resource::{DynResourceHandler, ReadResourceRequest};
use crate::server::registry::tool::{CallToolRequest, ToolEntry, execute_tool};
use crate::server::request::context::RequestContext;
use crate::server::request::reply::{Outcome, cacheable_with, complete, failure};
use crate::server::request::request::{QuestionsVerdict, RequestShared, WithoutHttp};
use crate::server::scopes::{self, ScopeRules};

/// The params of a method that may ask the client: they carry the retry's answers and
/// state besides `_meta`.
pub(super) trait AttemptParams {
    /// The request's `_meta`.
    fn meta(&self) -> Option<&Meta>;
    /// The client's answers and the echoed `requestState`, taken out of the params.
    fn take_attempt(&mut self) -> (Option<InputResponses>, Option<String>);
}

macro_rules! attempt_params {
    ($($t:ty),*) => {
        $(impl AttemptParams for $t {
            fn meta(&self) -> Option<&Meta> {
                self.meta.as_ref()
            }
            fn take_attempt(&mut self) -> (Option<InputResponses>, Option<String>) {
                (self.input_responses.take(), self.request_state.take())
            }
        })*
    };
}

attempt_params!(CallToolParams, ReadResourceParams, GetPromptParams);

/// What one method of this family does in the steps of [`serve`] that differ.
pub(super) trait InputMethod {
    /// The method's params.
    type Params: AttemptParams;
    /// What the lookup found and the request built for the handler.
    type Call: Send;
    /// What the handler returned.
    type Output;
    /// What a plain failure of the handler becomes.
    const SERVED: Served;

    /// Steps 3 and 4: `Err` answers the request without calling the handler.
    fn prepare(
        shared: &Arc<RequestShared>,
        p: Self::Params,
    ) -> impl Future<Output = Result<Self::Call, Outcome>> + Send;

    /// Step 5.
    fn call(
        shared: &Arc<RequestShared>,
        call: Self::Call,
    ) -> impl Future<Output = Result<Self::Output, HandlerError>> + Send;

    /// Step 6, for a handler that succeeded.
    fn frame(shared: &RequestShared, output: Self::Output) -> Outcome;

    /// Whether the output is a task the call became (its questions go on in the task).
    fn is_task(_output: &Self::Output) -> bool {
        false
    }
}

/// Serves one request of a method that may ask the client (the six steps above).
pub(super) async fn serve<M: InputMethod>(
    shared: &Arc<RequestShared>,
    raw: Option<&RawJson>,
    mut p: M::Params,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta().cloned());
    let (responses, state) = p.take_attempt();
    shared.begin_attempt(raw, responses, state.as_deref())?;
    let call = match M::prepare(shared, p).await {
        Ok(call) => call,
        Err(answer) => return Ok(answer),
    };
    let output = M::call(shared, call).await;
    // The questions decide the answer, whatever the handler made of the error that told it
    // so (wrapped in anyhow, turned into text, or caught and ignored): an answer that did
    // not fit is the client's error; a question left pending is asked, and the handler runs
    // again with its answer.
    if !output.as_ref().is_ok_and(M::is_task) {
        match shared.questions_verdict() {
            Some(QuestionsVerdict::InvalidAnswer(e)) => {
                return Ok(failure(shared, WireFailure::Error(e)));
            }
            Some(QuestionsVerdict::Pending) => {
                let asked = match output {
                    Err(HandlerError::InputRequired(r)) => r,
                    _ => Box::default(),
                };
                let asked = shared.input_required(asked);
                return Ok(failure(shared, WireFailure::InputRequired(asked)));
            }
            None => {}
        }
    }
    Ok(match output {
        Ok(output) => M::frame(shared, output),
        Err(e) => failure(
            shared,
            match e.into_wire(M::SERVED, shared.is_modern()) {
                WireFailure::InputRequired(r) => {
                    WireFailure::InputRequired(shared.input_required(r))
                }
                other => other,
            },
        ),
    })
}

/// `tools/call`.
pub(super) struct ToolCall;

impl InputMethod for ToolCall {
    type Params = CallToolParams;
    type Call = (Arc<ToolEntry>, CallToolRequest, Plan);
    type Output = ToolOutput;
    const SERVED: Served = Served::Tool;

    async fn prepare(
        shared: &Arc<RequestShared>,
        mut p: CallToolParams,
    ) -> Result<Self::Call, Outcome> {
        let Some(entry) = shared.server.registry().tool(&p.name) else {
            return Err(Outcome::Error(ErrorObject::invalid_params(format!(
                "Unknown tool: {}",
                echo(&p.name)
            ))));
        };
        // The scopes are checked before anything else about the call: a caller without them
        // learns nothing from argument errors. (Over HTTP the transport already refused such
        // a call with 403; this covers every other way in.)
        let rules = shared
            .http
            .as_ref()
            .and_then(|h| h.extensions.get::<Arc<ScopeRules>>());
        let mut needed = Vec::new();
        scopes::tool_scopes(&shared.server, rules.map(|r| &**r), &p.name, &mut needed);
        if let Err(refusal) = scopes::check(shared.caller(), needed) {
            return Err(Outcome::Error(refusal.to_error()));
        }
        if !entry.param_headers.is_empty()
            && shared.is_modern()
            && let Some(http) = &shared.http
            && http.extensions.get::<WithoutHttp>().is_none()
        {
            check_param_headers(&entry.param_headers, &http.headers, p.arguments.as_ref())
                .map_err(Outcome::Error)?;
        }
        let arguments = Value::Object(p.arguments.take().unwrap_or_default());
        if let Err(message) = entry.validate_input(&arguments) {
            // Invalid arguments are the model's to fix: a tool error result it can read.
            return Err(complete(shared, CallToolResult::error(message)));
        }
        let request = CallToolRequest {
            name: p.name,
            arguments,
            meta: p.meta,
            task: p.task,
        };
        match tasks::plan(shared, &entry, &request) {
            Err(e) => Err(Outcome::Error(e)),
            Ok(Plan::Task(ttl)) => Err(tasks::start(shared, entry, request, ttl).await),
            Ok(plan) => Ok((entry, request, plan)),
        }
    }

    async fn call(
        shared: &Arc<RequestShared>,
        (entry, request, plan): Self::Call,
    ) -> Result<ToolOutput, HandlerError> {
        match plan {
            Plan::MayBecomeTask => tasks::in_place_until_task(shared, entry, request).await,
            Plan::InPlace | Plan::Task(_) => execute_tool(shared.clone(), &entry, request)
                .await
                .map(ToolOutput::Result),
        }
    }

    fn frame(shared: &RequestShared, output: ToolOutput) -> Outcome {
        match output {
            ToolOutput::Result(r) => complete(shared, r),
            ToolOutput::Task(answer) => answer,
        }
    }

    fn is_task(output: &ToolOutput) -> bool {
        matches!(output, ToolOutput::Task(_))
    }
}

/// SEP-2243: every `Mcp-Param-*` header of a tool's `x-mcp-header` arguments must mirror its
/// argument (once, decodable, equal; absent when the argument is), else -32020 (HTTP 400),
/// before the arguments are validated or the handler runs.
pub(super) fn check_param_headers(
    param_headers: &[ParamHeader],
    headers: &http::HeaderMap,
    arguments: Option<&JsonObject>,
) -> Result<(), ErrorObject> {
    static NONE: std::sync::OnceLock<JsonObject> = std::sync::OnceLock::new();
    let arguments = arguments.unwrap_or_else(|| NONE.get_or_init(JsonObject::new));
    for h in param_headers {
        let values: Vec<&[u8]> = headers
            .get_all(h.header_name())
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        h.verify(arguments, &values)
            .map_err(|e| ErrorObject::new(code::HEADER_MISMATCH, e.to_string()))?;
    }
    Ok(())
}

/// `resources/read`.
pub(super) struct ResourceRead;

/// The resource-not-found error of the request's era.
fn resource_not_found(shared: &RequestShared, uri: &str) -> ErrorObject {
    let code = if shared.is_modern() {
        code::INVALID_PARAMS
    } else {
        code::RESOURCE_NOT_FOUND
    };
    ErrorObject::new(code, "Resource not found").with_data(serde_json::json!({ "uri": uri }))
}

impl InputMethod for ResourceRead {
    type Params = ReadResourceParams;
    type Call = (Arc<dyn DynResourceHandler>, ReadResourceRequest);
    type Output = (String, ReadResourceResult);
    const SERVED: Served = Served::Other;

    async fn prepare(
        shared: &Arc<RequestShared>,
        p: ReadResourceParams,
    ) -> Result<Self::Call, Outcome> {
        let found = {
            let reg = shared.server.registry().read();
            if let Some(e) = reg.resources.get(&p.uri) {
                Some((e.handler.clone(), BTreeMap::new()))
            } else {
                reg.templates
                    .values()
                    .find_map(|t| t.matcher.matches(&p.uri).map(|v| (t.handler.clone(), v)))
            }
        };
        let Some((handler, variables)) = found else {
            return Err(Outcome::Error(resource_not_found(shared, &p.uri)));
        };
        let request = ReadResourceRequest {
            uri: p.uri,
            variables,
            meta: p.meta,
        };
        Ok((handler, request))
    }

    async fn call(
        shared: &Arc<RequestShared>,
        (handler, request): Self::Call,
    ) -> Result<(String, ReadResourceResult), HandlerError> {
        let uri = request.uri.clone();
        let result = handler
            .read(RequestContext::new(shared.clone()), request)
            .await?;
        Ok((uri, result))
    }

    fn frame(shared: &RequestShared, (uri, result): (String, ReadResourceResult)) -> Outcome {
        // An empty read means "no such resource", never an empty success (2026-07-28 rule).
        if result.contents.is_empty() {
            return Outcome::Error(resource_not_found(shared, &uri));
        }
        let hint = shared.server.cache_hint(Cached::ResourcesRead);
        cacheable_with(shared, result, hint)
    }
}

/// `prompts/get`.
pub(super) struct PromptGet;

impl InputMethod for PromptGet {
    type Params = GetPromptParams;
    type Call = (Arc<PromptEntry>, GetPromptRequest);
    type Output = GetPromptResult;
    const SERVED: Served = Served::Other;

    async fn prepare(
        shared: &Arc<RequestShared>,
        mut p: GetPromptParams,
    ) -> Result<Self::Call, Outcome> {
        let Some(entry) = shared
            .server
            .registry()
            .read()
            .prompts
            .get(&p.name)
            .cloned()
        else {
            return Err(Outcome::Error(ErrorObject::invalid_params(format!(
                "Unknown prompt: {}",
                p.name
            ))));
        };
        let arguments = p.arguments.take().unwrap_or_default();
        for a in entry.prompt.arguments.iter().flatten() {
            if a.required == Some(true) && !arguments.contains_key(&a.name) {
                return Err(Outcome::Error(ErrorObject::invalid_params(format!(
                    "Missing required argument: {}",
                    a.name
                ))));
            }
        }
        let request = GetPromptRequest {
            name: p.name,
            arguments,
            meta: p.meta,
        };
        Ok((entry, request))
    }

    async fn call(
        shared: &Arc<RequestShared>,
        (entry, request): Self::Call,
    ) -> Result<GetPromptResult, HandlerError> {
        entry
            .handler
            .get(RequestContext::new(shared.clone()), request)
            .await
    }

    fn frame(shared: &RequestShared, output: GetPromptResult) -> Outcome {
        complete(shared, output)
    }
}
