//! Prompts and completions: the request a prompt handler sees, and the erased get and
//! complete handlers the dispatcher calls.
//!
//! Not here: registering them (`registration.rs`) and serving `prompts/get` and
//! `completion/complete` (`methods/`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::protocol::{
    CompleteParams, CompleteResult, Completion, CompletionReference, GetPromptResult, Meta, Prompt,
};
use crate::server::handler_error::HandlerError;
use crate::server::request::context::RequestContext;

/// A `prompts/get` request as a handler sees it; required arguments are already checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GetPromptRequest {
    /// The prompt's name.
    pub name: String,
    /// Argument values.
    pub arguments: BTreeMap<String, String>,
    /// The request's `_meta`.
    pub meta: Option<Meta>,
}

impl GetPromptRequest {
    /// One argument's value.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).map(String::as_str)
    }
}

pub(crate) trait DynPromptHandler: Send + Sync {
    fn get(
        &self,
        ctx: RequestContext,
        request: GetPromptRequest,
    ) -> BoxFuture<'static, Result<GetPromptResult, HandlerError>>;
}

pub(crate) struct FnPrompt<F>(pub(crate) F);

impl<F, Fut, E> DynPromptHandler for FnPrompt<F>
where
    F: Fn(RequestContext, GetPromptRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, E>> + Send + 'static,
    E: Into<HandlerError> + 'static,
{
    fn get(
        &self,
        ctx: RequestContext,
        request: GetPromptRequest,
    ) -> BoxFuture<'static, Result<GetPromptResult, HandlerError>> {
        let fut = (self.0)(ctx, request);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// A registered prompt.
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Arc<dyn DynPromptHandler>,
}

pub(crate) trait DynCompletionHandler: Send + Sync {
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteParams,
    ) -> BoxFuture<'static, Result<CompleteResult, HandlerError>>;
}

pub(crate) struct FnCompletion<F>(pub(crate) F);

impl<F, Fut, E> DynCompletionHandler for FnCompletion<F>
where
    F: Fn(RequestContext, CompleteParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CompleteResult, E>> + Send + 'static,
    E: Into<HandlerError> + 'static,
{
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteParams,
    ) -> BoxFuture<'static, Result<CompleteResult, HandlerError>> {
        let fut = (self.0)(ctx, params);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// A completer of one argument: returns the candidate values for what was typed.
pub(crate) struct FnCompleter<F>(pub(crate) F);

impl<F, Fut, E> DynCompletionHandler for FnCompleter<F>
where
    F: Fn(RequestContext, CompleteParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<String>, E>> + Send + 'static,
    E: Into<HandlerError> + 'static,
{
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteParams,
    ) -> BoxFuture<'static, Result<CompleteResult, HandlerError>> {
        let fut = (self.0)(ctx, params);
        Box::pin(async move {
            let values = fut.await.map_err(Into::into)?;
            Ok(CompleteResult::new(Completion::all(values)))
        })
    }
}

/// The registry key of a completer: what it completes and which argument.
pub(crate) fn completer_key(reference: &CompletionReference, argument: &str) -> (String, String) {
    let what = match reference {
        CompletionReference::Prompt { name, .. } => format!("prompt\0{name}"),
        CompletionReference::Resource { uri } => format!("resource\0{uri}"),
    };
    (what, argument.to_owned())
}
