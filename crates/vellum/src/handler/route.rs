//! Routes: a tool, prompt or resource with its handler, ready to register on a [`Server`].

use std::future::Future;

use crate::config_error::ConfigError;
use crate::protocol::{
    CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use crate::server::{
    CallToolRequest, GetPromptRequest, HandlerError, ReadResourceRequest, RequestContext, Server,
};

/// Something that registers tools, prompts or resources on a [`Server`]: a route, a type
/// with a `#[tools]` impl, or a tuple of these.
///
/// ```
/// use vellum::handler::{Register, ToolRoute};
/// use vellum::prelude::*;
///
/// let ping = ToolRoute::new(Tool::new("ping", "Answers pong"), |_: RequestContext, _: CallToolRequest| async {
///     Ok(CallToolResult::text("pong"))
/// });
/// let echo = ToolRoute::new(Tool::new("echo", "Echoes its arguments"), |_: RequestContext, req: CallToolRequest| async move {
///     Ok(CallToolResult::text(req.arguments.to_string()))
/// });
/// let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
/// (ping, echo).register(&server)?;
/// # Ok::<(), vellum::error::ConfigError>(())
/// ```
pub trait Register {
    /// Registers everything on `server` (replacing entries of the same name).
    fn register(self, server: &Server) -> Result<(), ConfigError>;
}

/// Declares a handler trait and its blanket impl for every `Fn(RequestContext, $req) ->
/// impl Future<Output = Result<$out, HandlerError>>`: the three kinds differ only in the
/// request they take and the result they give.
macro_rules! handler_trait {
    ($(#[$doc:meta])* $name:ident($req:ty) -> $out:ty, $call_doc:literal) => {
        $(#[$doc])*
        pub trait $name: Send + Sync + 'static {
            /// The handler's future.
            type Future: Future<Output = Result<$out, HandlerError>> + Send + 'static;
            #[doc = $call_doc]
            fn call(&self, ctx: RequestContext, request: $req) -> Self::Future;
        }

        impl<F, Fut> $name for F
        where
            F: Fn(RequestContext, $req) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<$out, HandlerError>> + Send + 'static,
        {
            type Future = Fut;
            fn call(&self, ctx: RequestContext, request: $req) -> Fut {
                self(ctx, request)
            }
        }
    };
}

handler_trait!(
    /// A tool handler over the raw (schema-validated) arguments: any
    /// `Fn(RequestContext, CallToolRequest) -> impl Future<Output = Result<CallToolResult,
    /// HandlerError>>` that is `Send + Sync + 'static` with a `Send` future.
    ToolHandler(CallToolRequest) -> CallToolResult,
    "Serves one call."
);

handler_trait!(
    /// A prompt handler: any `Fn(RequestContext, GetPromptRequest) -> impl Future<Output =
    /// Result<GetPromptResult, HandlerError>>` that is `Send + Sync + 'static` with a `Send`
    /// future.
    PromptHandler(GetPromptRequest) -> GetPromptResult,
    "Serves one `prompts/get`."
);

handler_trait!(
    /// A resource handler: any `Fn(RequestContext, ReadResourceRequest) -> impl Future<Output =
    /// Result<ReadResourceResult, HandlerError>>` that is `Send + Sync + 'static` with a `Send`
    /// future.
    ResourceHandler(ReadResourceRequest) -> ReadResourceResult,
    "Serves one `resources/read`."
);

/// A tool and its handler (over the raw, schema-validated arguments). `#[tool]` builds one.
pub struct ToolRoute<F> {
    tool: Tool,
    handler: F,
}

impl<F, Fut> ToolRoute<F>
where
    F: Fn(RequestContext, CallToolRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, HandlerError>> + Send + 'static,
{
    /// A route serving `tool` (whose schemas are used as given) with `handler`.
    pub fn new(tool: Tool, handler: F) -> Self {
        ToolRoute { tool, handler }
    }
}

impl<F> ToolRoute<F> {
    /// The tool as `tools/list` shows it.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The same route with the tool changed (a title, annotations, icons, ...).
    #[must_use]
    pub fn map_tool(mut self, f: impl FnOnce(Tool) -> Tool) -> Self {
        self.tool = f(self.tool);
        self
    }
}

impl<H: ToolHandler> Register for ToolRoute<H> {
    fn register(self, server: &Server) -> Result<(), ConfigError> {
        let handler = self.handler;
        server.add_raw_tool(self.tool, move |ctx, req| handler.call(ctx, req))?;
        Ok(())
    }
}

/// A prompt and its handler. `#[prompt]` builds one.
pub struct PromptRoute<F> {
    prompt: Prompt,
    handler: F,
}

impl<F, Fut> PromptRoute<F>
where
    F: Fn(RequestContext, GetPromptRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
{
    /// A route serving `prompt` with `handler`.
    pub fn new(prompt: Prompt, handler: F) -> Self {
        PromptRoute { prompt, handler }
    }
}

impl<F> PromptRoute<F> {
    /// The prompt as `prompts/list` shows it.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// The same route with the prompt changed.
    #[must_use]
    pub fn map_prompt(mut self, f: impl FnOnce(Prompt) -> Prompt) -> Self {
        self.prompt = f(self.prompt);
        self
    }
}

impl<H: PromptHandler> Register for PromptRoute<H> {
    fn register(self, server: &Server) -> Result<(), ConfigError> {
        let handler = self.handler;
        server.add_prompt(self.prompt, move |ctx, req| handler.call(ctx, req))?;
        Ok(())
    }
}

/// A resource (a fixed URI) or a resource template, and its handler. `#[resource]` builds
/// one.
pub struct ResourceRoute<F> {
    kind: ResourceKind,
    handler: F,
}

enum ResourceKind {
    Fixed(Resource),
    Template(ResourceTemplate),
}

impl<F, Fut> ResourceRoute<F>
where
    F: Fn(RequestContext, ReadResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, HandlerError>> + Send + 'static,
{
    /// A route serving the resource at a fixed URI.
    pub fn fixed(resource: Resource, handler: F) -> Self {
        ResourceRoute {
            kind: ResourceKind::Fixed(resource),
            handler,
        }
    }

    /// A route serving every URI the template matches.
    pub fn template(template: ResourceTemplate, handler: F) -> Self {
        ResourceRoute {
            kind: ResourceKind::Template(template),
            handler,
        }
    }
}

impl<F> ResourceRoute<F> {
    /// The resource, when the route serves a fixed URI.
    pub fn resource(&self) -> Option<&Resource> {
        match &self.kind {
            ResourceKind::Fixed(r) => Some(r),
            ResourceKind::Template(_) => None,
        }
    }

    /// The template, when the route serves a template.
    pub fn resource_template(&self) -> Option<&ResourceTemplate> {
        match &self.kind {
            ResourceKind::Template(t) => Some(t),
            ResourceKind::Fixed(_) => None,
        }
    }
}

impl<H: ResourceHandler> Register for ResourceRoute<H> {
    fn register(self, server: &Server) -> Result<(), ConfigError> {
        let handler = self.handler;
        let read = move |ctx, req| handler.call(ctx, req);
        match self.kind {
            ResourceKind::Fixed(r) => server.add_resource(r, read)?,
            ResourceKind::Template(t) => server.add_resource_template(t, read)?,
        };
        Ok(())
    }
}

macro_rules! register_tuple {
    ($($name:ident)+) => {
        impl<$($name: Register),+> Register for ($($name,)+) {
            #[allow(non_snake_case)]
            fn register(self, server: &Server) -> Result<(), ConfigError> {
                let ($($name,)+) = self;
                $($name.register(server)?;)+
                Ok(())
            }
        }
    };
}
register_tuple!(A);
register_tuple!(A B);
register_tuple!(A B C);
register_tuple!(A B C D);
register_tuple!(A B C D E);
register_tuple!(A B C D E F);
register_tuple!(A B C D E F G);
register_tuple!(A B C D E F G H);
register_tuple!(A B C D E F G H I);
register_tuple!(A B C D E F G H I J);
register_tuple!(A B C D E F G H I J K);
register_tuple!(A B C D E F G H I J K L);
