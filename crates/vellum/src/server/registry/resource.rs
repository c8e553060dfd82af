//! Resources and resource templates: the request a read handler sees, and the erased read
//! handler the dispatcher calls.
//!
//! Not here: registering them (`registration.rs`) and serving `resources/read` (`methods/`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::protocol::{Meta, ReadResourceResult, Resource, ResourceTemplate};
use crate::server::handler_error::HandlerError;
use crate::server::request::context::RequestContext;
use crate::uri_template::UriTemplate;

/// A `resources/read` request as a handler sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReadResourceRequest {
    /// The URI being read.
    pub uri: String,
    /// The template variables, when the URI matched a template.
    pub variables: BTreeMap<String, String>,
    /// The request's `_meta`.
    pub meta: Option<Meta>,
}

impl ReadResourceRequest {
    /// A template variable's (percent-decoded) value.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

pub(crate) trait DynResourceHandler: Send + Sync {
    fn read(
        &self,
        ctx: RequestContext,
        request: ReadResourceRequest,
    ) -> BoxFuture<'static, Result<ReadResourceResult, HandlerError>>;
}

pub(crate) struct FnResource<F>(pub(crate) F);

impl<F, Fut, E> DynResourceHandler for FnResource<F>
where
    F: Fn(RequestContext, ReadResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, E>> + Send + 'static,
    E: Into<HandlerError> + 'static,
{
    fn read(
        &self,
        ctx: RequestContext,
        request: ReadResourceRequest,
    ) -> BoxFuture<'static, Result<ReadResourceResult, HandlerError>> {
        let fut = (self.0)(ctx, request);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// A registered static resource.
pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<dyn DynResourceHandler>,
}

/// A registered template.
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) matcher: UriTemplate,
    pub(crate) handler: Arc<dyn DynResourceHandler>,
}
