//! Registering what a server offers: tools (typed or raw), resources, resource templates,
//! prompts, completions and Agent Skills, each as an `impl Server` method that builds the
//! entry, hands it to the [`Registry`](super::registry::Registry) and announces the list
//! change (see `Server::changed`).
//!
//! Not here: how registered handlers are called (`methods/`), and the erased handler types
//! themselves (`tool.rs`, `resource.rs`, `prompt.rs`).

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::list_kind::ListKind;
use super::prompt::{
    FnCompleter, FnCompletion, FnPrompt, GetPromptRequest, PromptEntry, completer_key,
};
use super::resource::{FnResource, ReadResourceRequest, ResourceEntry, TemplateEntry};
use super::tool::{CallToolRequest, IntoToolResult, RawTool, ToolEntry, TypedTool, schema_for};
use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::protocol::{
    CompleteParams, CompleteResult, CompletionReference, GetPromptResult, JsonObject, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use crate::server::handler_error::HandlerError;
use crate::server::request::context::RequestContext;
use crate::server::server::Server;
#[cfg(feature = "skills")]
use crate::skill_files::SkillFiles;
use crate::uri_template::UriTemplate;

impl Server {
    /// Registers a tool with a typed input, like the Go SDK's `mcp.AddTool`.
    ///
    /// The input schema is derived from `In` (doc comments become descriptions, non-`Option`
    /// fields are required) unless `tool` already carries one other than the bare
    /// `{"type":"object"}`; the output schema comes from the return type (see
    /// [`Structured`](crate::server::Structured)). Arguments are validated against the schema before
    /// the handler runs; invalid arguments become a tool error result. A tool with the same
    /// name is replaced.
    ///
    /// ```
    /// use vellum::server::{Server, ServerOptions, RequestContext, CallToolRequest};
    /// use vellum::protocol::{Implementation, Tool, CallToolResult};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Input {
    ///     /// Who to greet.
    ///     name: String,
    /// }
    ///
    /// let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
    /// server
    ///     .add_tool(Tool::new("greet", "Greets someone"), |_ctx: RequestContext, _req: CallToolRequest, input: Input| async move {
    ///         Ok::<_, vellum::server::HandlerError>(CallToolResult::text(format!("Hi, {}", input.name)))
    ///     })
    ///     .unwrap();
    /// ```
    pub fn add_tool<In, Out, E, F, Fut>(
        &self,
        mut tool: Tool,
        handler: F,
    ) -> Result<&Self, ConfigError>
    where
        In: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, CallToolRequest, In) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, E>> + Send + 'static,
        Out: IntoToolResult,
        E: Into<HandlerError> + 'static,
    {
        if is_bare_object(&tool.input_schema) {
            tool.input_schema = schema_for::<In>(true);
        }
        if tool.output_schema.is_none() {
            tool.output_schema = Out::output_schema();
        }
        let entry = ToolEntry::new(
            tool,
            Arc::new(TypedTool {
                f: handler,
                _in: PhantomData,
            }),
        )?;
        self.inner.registry.insert_tool(entry);
        self.changed(ListKind::Tools);
        Ok(self)
    }

    /// Registers a tool whose schemas are used verbatim and whose handler gets the raw
    /// (validated) arguments in [`CallToolRequest::arguments`].
    pub fn add_raw_tool<Out, E, F, Fut>(&self, tool: Tool, handler: F) -> Result<&Self, ConfigError>
    where
        F: Fn(RequestContext, CallToolRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, E>> + Send + 'static,
        Out: IntoToolResult,
        E: Into<HandlerError> + 'static,
    {
        let entry = ToolEntry::new(tool, Arc::new(RawTool(handler)))?;
        self.inner.registry.insert_tool(entry);
        self.changed(ListKind::Tools);
        Ok(self)
    }

    /// Removes a tool; true if it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.inner.registry.remove_tool(name);
        if removed {
            self.changed(ListKind::Tools);
        }
        removed
    }

    /// Registers a resource at a fixed URI.
    pub fn add_resource<F, Fut, E>(
        &self,
        resource: Resource,
        handler: F,
    ) -> Result<&Self, ConfigError>
    where
        F: Fn(RequestContext, ReadResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        if resource.uri.is_empty() || !resource.uri.contains(':') {
            return Err(ConfigKind::Resource {
                uri: resource.uri,
                reason: "a resource URI needs a scheme".into(),
            }
            .into());
        }
        self.inner.registry.insert_resource(ResourceEntry {
            resource,
            handler: Arc::new(FnResource(handler)),
        });
        self.changed(ListKind::Resources);
        Ok(self)
    }

    /// Registers a family of resources described by a URI template.
    pub fn add_resource_template<F, Fut, E>(
        &self,
        template: ResourceTemplate,
        handler: F,
    ) -> Result<&Self, ConfigError>
    where
        F: Fn(RequestContext, ReadResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        let matcher = UriTemplate::parse(&template.uri_template).map_err(|e| {
            ConfigError::from(ConfigKind::Resource {
                uri: template.uri_template.clone(),
                reason: e.to_string(),
            })
        })?;
        self.inner.registry.insert_template(TemplateEntry {
            template,
            matcher,
            handler: Arc::new(FnResource(handler)),
        });
        self.changed(ListKind::Resources);
        Ok(self)
    }

    /// Removes a resource (by URI) or template (by template text); true if it existed.
    pub fn remove_resource(&self, uri_or_template: &str) -> bool {
        let removed = self.inner.registry.remove_resource(uri_or_template);
        if removed {
            self.changed(ListKind::Resources);
        }
        removed
    }

    /// Registers a prompt.
    pub fn add_prompt<F, Fut, E>(&self, prompt: Prompt, handler: F) -> Result<&Self, ConfigError>
    where
        F: Fn(RequestContext, GetPromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        self.inner.registry.insert_prompt(PromptEntry {
            prompt,
            handler: Arc::new(FnPrompt(handler)),
        });
        self.changed(ListKind::Prompts);
        Ok(self)
    }

    /// Removes a prompt; true if it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.inner.registry.remove_prompt(name);
        if removed {
            self.changed(ListKind::Prompts);
        }
        removed
    }

    /// Sets the handler of `completion/complete` (and advertises `completions`).
    pub fn set_completion_handler<F, Fut, E>(&self, handler: F) -> &Self
    where
        F: Fn(RequestContext, CompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        self.inner
            .registry
            .set_completion(Arc::new(FnCompletion(handler)));
        self
    }

    /// Completes one argument of a prompt or one variable of a resource template: `f` gets
    /// the request (`params.argument.value` is what the user typed so far,
    /// `params.context` the other arguments) and returns candidates; the first 100 are
    /// sent, with `total` and `hasMore`. Takes precedence over the
    /// [`set_completion_handler`](Self::set_completion_handler) for that argument, and
    /// advertises `completions`.
    ///
    /// ```
    /// use vellum::server::{Server, ServerOptions, HandlerError};
    /// use vellum::protocol::{CompletionReference, Implementation};
    ///
    /// let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
    /// server.add_completion(CompletionReference::prompt("greet"), "language", |_ctx, req| async move {
    ///     let typed = req.argument.value.to_lowercase();
    ///     Ok::<_, HandlerError>(
    ///         ["english", "french", "german"].iter()
    ///             .filter(|l| l.starts_with(&typed))
    ///             .map(|l| l.to_string())
    ///             .collect(),
    ///     )
    /// });
    /// ```
    pub fn add_completion<F, Fut, E>(
        &self,
        reference: CompletionReference,
        argument: &str,
        f: F,
    ) -> &Self
    where
        F: Fn(RequestContext, CompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        self.inner.registry.add_completer(
            completer_key(&reference, argument),
            Arc::new(FnCompleter(f)),
        );
        self
    }

    /// Publishes an Agent Skill: its `SKILL.md` and every supporting file become resources
    /// at `skill://<prefix>/<name>/<path>`, it is listed by `skills/list` and fetched by
    /// `skills/get` under the URI of its `SKILL.md`, and its directories are browsable with
    /// `resources/directory/read`. The server then declares the extension
    /// `io.modelcontextprotocol/skills` (with `directoryRead`) and the resources capability.
    /// A skill at the same URI is replaced.
    ///
    /// ```
    /// use vellum::prelude::*;
    /// use vellum::server::SkillFiles;
    ///
    /// let server = Server::new(Implementation::new("docs", "1"), ServerOptions::default());
    /// let skill = SkillFiles::new(
    ///     "",
    ///     "---\nname: refunds\ndescription: Process refund requests per policy\n---\n# Refunds\n",
    /// )?;
    /// server.add_skill(skill)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "skills")]
    pub fn add_skill(&self, skill: SkillFiles) -> Result<&Self, ConfigError> {
        self.inner.registry.insert_skill(skill);
        self.changed(ListKind::Resources);
        Ok(self)
    }

    /// Withdraws the skill whose `SKILL.md` is at `uri` and its resources; true if it existed.
    #[cfg(feature = "skills")]
    pub fn remove_skill(&self, uri: &str) -> bool {
        let removed = self.inner.registry.remove_skill(uri);
        if removed {
            self.changed(ListKind::Resources);
        }
        removed
    }

    /// Every scope some tool registered now requires
    /// ([`Tool::requires_scope`](crate::protocol::Tool::requires_scope)), each once: what a
    /// protected-resource metadata document lists in `scopes_supported`.
    pub fn declared_scopes(&self) -> Vec<String> {
        self.inner.registry.declared_scopes()
    }
}

fn is_bare_object(schema: &JsonObject) -> bool {
    schema.len() == 1 && schema.get("type") == Some(&Value::String("object".into()))
}
