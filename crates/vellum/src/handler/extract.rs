//! Extractors: what a handler function may take as an argument.

use serde::de::DeserializeOwned;

use crate::auth::Principal;
use crate::protocol::ErrorObject;
use crate::server::{
    CallToolRequest, Caller, GetPromptRequest, HandlerError, ReadResourceRequest, RequestContext,
};

/// A value a handler takes as an argument, built from the request's context and the request
/// (`R` is [`CallToolRequest`], [`GetPromptRequest`] or [`ReadResourceRequest`]).
///
/// Implemented for [`RequestContext`], the request types, [`Caller`] (whoever an
/// authentication layer said is calling; the call fails without one) and `Option<Caller>`,
/// [`Principal`] (the OAuth resource server's caller, with its scopes) and `Option<Principal>`, [`Extension<T>`] and, for
/// tools, [`Json<T>`]. Implement it for your own types to take them as arguments (mark such
/// an argument `#[extract]` in a `#[tool]` function so the macro does not read it as an
/// input property).
///
/// ```
/// use vellum::handler::FromRequest;
/// use vellum::prelude::*;
///
/// /// The caller's client name, or "unknown".
/// struct ClientName(String);
///
/// impl<R> FromRequest<R> for ClientName {
///     fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
///         Ok(ClientName(ctx.client_info().map_or("unknown".into(), |i| i.name.clone())))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be taken as an argument of this handler",
    label = "not an extractor",
    note = "a handler argument is one of: &RequestContext, the request (&CallToolRequest, &GetPromptRequest, &ReadResourceRequest), Caller, Principal or an Option of either (the caller), Extension<T>, State<T>, Json<T> (a tool's whole input), or a typed input property (a plain `name: Type` argument of a #[tool])",
    note = "for your own type, implement `vellum::handler::FromRequest` and mark the argument `#[extract]`"
)]
pub trait FromRequest<R>: Sized {
    /// Builds the value; an error fails the call.
    fn from_request(ctx: &RequestContext, request: &R) -> Result<Self, HandlerError>;
}

impl<R> FromRequest<R> for RequestContext {
    fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
        Ok(ctx.clone())
    }
}

macro_rules! request_extractor {
    ($($ty:ty),*) => {$(
        impl FromRequest<$ty> for $ty {
            fn from_request(_ctx: &RequestContext, request: &$ty) -> Result<Self, HandlerError> {
                Ok(request.clone())
            }
        }
    )*};
}
request_extractor!(CallToolRequest, GetPromptRequest, ReadResourceRequest);

impl<R> FromRequest<R> for Caller {
    fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
        ctx.caller().cloned().ok_or_else(|| {
            // As for `Principal`: no caller means no authentication layer, a setup error.
            HandlerError::Protocol(ErrorObject::internal(
                "this handler needs an authenticated caller, but the request carries none (is an authentication layer in front of the MCP endpoint?)",
            ))
        })
    }
}

impl<R> FromRequest<R> for Option<Caller> {
    fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
        Ok(ctx.caller().cloned())
    }
}

impl<R> FromRequest<R> for Principal {
    fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
        ctx.extension::<Principal>().cloned().ok_or_else(|| {
            // A server that takes a principal but serves without the auth layer is a setup
            // error, not the caller's: say so in the JSON-RPC error.
            HandlerError::Protocol(ErrorObject::internal(
                "this handler needs an authenticated caller, but the request carries none (is the auth layer in front of the MCP endpoint?)",
            ))
        })
    }
}

impl<R> FromRequest<R> for Option<Principal> {
    fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
        Ok(ctx.extension::<Principal>().cloned())
    }
}

/// A typed value from the HTTP request's extensions (put there by a tower layer in front of
/// the MCP endpoint); the call fails with an internal error when it is missing.
///
/// ```
/// use vellum::handler::Extension;
///
/// #[derive(Clone)]
/// struct TenantId(String);
///
/// async fn whoami(Extension(tenant): Extension<TenantId>) -> String {
///     tenant.0
/// }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Extension<T>(pub T);

impl<R, T: Clone + Send + Sync + 'static> FromRequest<R> for Extension<T> {
    fn from_request(ctx: &RequestContext, _request: &R) -> Result<Self, HandlerError> {
        ctx.extension::<T>().cloned().map(Extension).ok_or_else(|| {
            HandlerError::Protocol(ErrorObject::internal(format!(
                "the HTTP request has no extension of type {}",
                std::any::type_name::<T>()
            )))
        })
    }
}

/// A tool's whole input as one typed value (its JSON Schema is the tool's `inputSchema`), or
/// a tool's typed structured output (its schema is the tool's `outputSchema`).
///
/// ```
/// use vellum::handler::Json;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddInput { a: i64, b: i64 }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum { sum: i64 }
///
/// async fn add(Json(input): Json<AddInput>) -> Json<Sum> {
///     Json(Sum { sum: input.a + input.b })
/// }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned> FromRequest<CallToolRequest> for Json<T> {
    fn from_request(
        _ctx: &RequestContext,
        request: &CallToolRequest,
    ) -> Result<Self, HandlerError> {
        // The arguments already passed the schema; a type stricter than its schema still
        // fails here, and the model reads why.
        T::deserialize(&request.arguments)
            .map(Json)
            .map_err(|e| HandlerError::Failed(format!("invalid arguments: {e}")))
    }
}

/// State given to a handler when its route is built: a `#[tool]` function taking
/// `State<T>` gets a route builder taking the `T` (clone it into each tool that shares it).
/// In a `#[tools]` impl the state is `self` instead.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use vellum::handler::State;
///
/// async fn bump(State(counter): State<Arc<AtomicU64>>) -> String {
///     (counter.fetch_add(1, Ordering::Relaxed) + 1).to_string()
/// }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);
