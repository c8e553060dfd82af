//! [`Server`]: an MCP server's identity, options and registries of tools, resources and
//! prompts. Cheap to clone (one `Arc`), so a transport's factory may hand out the same
//! server to every session, or build one per tenant.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::{DEFAULT_CLIENT_REQUEST_TIMEOUT, RequestContext};
use super::dispatch::Outcome;
use super::listen::Listeners;
use super::middleware::{IncomingRequest, MessageEvent, Middleware, Next, observe};
use super::mrtr::RequestStateKey;
use super::prompt::{
    DynCompletionHandler, FnCompleter, FnCompletion, FnPrompt, GetPromptRequest, PromptEntry,
    completer_key,
};
use super::resource::{FnResource, ReadResourceRequest, ResourceEntry, TemplateEntry};
use super::session::Session;
use super::tasks::Tasks;
use super::tool::{
    CallToolRequest, HandlerError, IntoToolResult, RawTool, RegistrationError, ToolEntry,
    TypedTool, schema_for,
};
use super::uri_template::UriTemplate;
use crate::protocol::encode_notification;
use crate::protocol::{
    CompleteParams, CompleteResult, CompletionReference, GetPromptResult, Implementation,
    JsonObject, ListCapability, NotificationParams, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, ResourceUpdatedParams, ResourcesCapability, ServerCapabilities, Tool,
    methods,
};
use crate::sync::{lock, read, write};

/// How long list-changed notifications wait for more changes before going out.
const LIST_CHANGED_DEBOUNCE: Duration = Duration::from_millis(10);

/// Server-wide settings. Every field's default is what `ServerOptions::default()` gives.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Instructions for the model, returned by `initialize` and `server/discover`.
    /// Default: none.
    pub instructions: Option<String>,
    /// The most items a list page holds. Default: [`ServerOptions::DEFAULT_PAGE_SIZE`].
    pub page_size: usize,
    /// Capabilities to advertise instead of the ones inferred from what is registered
    /// (tools, resources, prompts, completion, logging). Default: inferred.
    pub capabilities: Option<ServerCapabilities>,
    /// How long a handler's question to the client (sampling, elicitation, roots) waits for
    /// its answer in a legacy session; [`RequestContext::with_timeout`] overrides it per call.
    /// Default: [`DEFAULT_CLIENT_REQUEST_TIMEOUT`] (5 minutes).
    pub client_request_timeout: Duration,
    /// The key that signs the `requestState` of multi round-trip requests (2026-07-28).
    /// Instances that may receive each other's retries need the same key. Default: a random
    /// key per server.
    pub request_state_key: Option<RequestStateKey>,
    /// How long a `requestState` stays valid (how long the user has to answer a question).
    /// Default: 10 minutes.
    pub request_state_ttl: Duration,
}

impl ServerOptions {
    /// The default page size of list results.
    pub const DEFAULT_PAGE_SIZE: usize = 1000;

    /// Sets the instructions.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the key that signs `requestState` (share it between instances).
    #[must_use]
    pub fn with_request_state_key(mut self, key: RequestStateKey) -> Self {
        self.request_state_key = Some(key);
        self
    }

    /// Sets how long a `requestState` stays valid.
    #[must_use]
    pub fn with_request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = ttl;
        self
    }

    /// Sets the default timeout of questions to the client.
    #[must_use]
    pub fn with_client_request_timeout(mut self, timeout: Duration) -> Self {
        self.client_request_timeout = timeout;
        self
    }

    /// Sets the page size (at least 1).
    #[must_use]
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            instructions: None,
            page_size: Self::DEFAULT_PAGE_SIZE,
            capabilities: None,
            client_request_timeout: DEFAULT_CLIENT_REQUEST_TIMEOUT,
            request_state_key: None,
            request_state_ttl: Duration::from_secs(600),
        }
    }
}

/// The three lists that announce changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl ListKind {
    pub(crate) fn method(self) -> &'static str {
        match self {
            ListKind::Tools => methods::TOOLS_LIST_CHANGED,
            ListKind::Resources => methods::RESOURCES_LIST_CHANGED,
            ListKind::Prompts => methods::PROMPTS_LIST_CHANGED,
        }
    }
    fn index(self) -> usize {
        match self {
            ListKind::Tools => 0,
            ListKind::Resources => 1,
            ListKind::Prompts => 2,
        }
    }
}

#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: BTreeMap<String, Arc<ToolEntry>>,
    pub(crate) resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub(crate) templates: BTreeMap<String, Arc<TemplateEntry>>,
    pub(crate) prompts: BTreeMap<String, Arc<PromptEntry>>,
    pub(crate) completion: Option<Arc<dyn DynCompletionHandler>>,
    /// Completers of single arguments, by (prompt or template, argument).
    pub(crate) completers: HashMap<(String, String), Arc<dyn DynCompletionHandler>>,
}

/// Encoded first pages of the lists, rebuilt after a change (most clients only ever fetch
/// the first page, so this makes `tools/list` a copy of bytes).
#[derive(Default)]
pub(crate) struct ListCache {
    /// The first page of `tools/list` as result JSON, `[legacy, modern]`, each with the
    /// generation of the tool registry it was computed from.
    pub(crate) tools: Mutex<[Option<(u64, Bytes)>; 2]>,
    /// Bumped (under the registry's write lock) on every change of the tools: a page computed
    /// from an older generation is never served or cached as current.
    pub(crate) tools_generation: AtomicU64,
}

pub(crate) struct ServerInner {
    pub(crate) info: Implementation,
    pub(crate) options: ServerOptions,
    pub(crate) registry: RwLock<Registry>,
    pub(crate) cache: ListCache,
    /// The server's identity as JSON, for the `_meta` of modern results.
    pub(crate) info_json: Value,
    /// The key `requestState` is signed with.
    pub(crate) state_key: RequestStateKey,
    /// Request middleware and message observers.
    middleware: RwLock<Middleware>,
    /// Tool calls running as tasks.
    pub(crate) tasks: Arc<Tasks>,
    /// Open `subscriptions/listen` streams (2026-07-28).
    pub(crate) listeners: Arc<Listeners>,
    sessions: Mutex<HashMap<u64, Weak<Session>>>,
    next_session_key: AtomicU64,
    change_scheduled: [AtomicBool; 3],
}

/// An MCP server: identity, options, and what it offers.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with this identity and these options, offering nothing yet.
    pub fn new(info: Implementation, options: ServerOptions) -> Server {
        let info_json = serde_json::to_value(&info).unwrap_or(Value::Null);
        Server {
            inner: Arc::new(ServerInner {
                info,
                state_key: options
                    .request_state_key
                    .clone()
                    .unwrap_or_else(RequestStateKey::random),
                options,
                registry: RwLock::new(Registry::default()),
                cache: ListCache::default(),
                info_json,
                middleware: RwLock::default(),
                listeners: Arc::default(),
                tasks: Arc::default(),
                sessions: Mutex::new(HashMap::new()),
                next_session_key: AtomicU64::new(1),
                change_scheduled: Default::default(),
            }),
        }
    }

    /// The server's identity.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The server's options.
    pub fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    /// Registers a tool with a typed input, like the Go SDK's `mcp.AddTool`.
    ///
    /// The input schema is derived from `In` (doc comments become descriptions, non-`Option`
    /// fields are required) unless `tool` already carries one other than the bare
    /// `{"type":"object"}`; the output schema comes from the return type (see
    /// [`Structured`](super::Structured)). Arguments are validated against the schema before
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
    ) -> Result<&Self, RegistrationError>
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
        self.insert_tool(entry);
        Ok(self)
    }

    /// Registers a tool whose schemas are used verbatim and whose handler gets the raw
    /// (validated) arguments in [`CallToolRequest::arguments`].
    pub fn add_raw_tool<Out, E, F, Fut>(
        &self,
        tool: Tool,
        handler: F,
    ) -> Result<&Self, RegistrationError>
    where
        F: Fn(RequestContext, CallToolRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, E>> + Send + 'static,
        Out: IntoToolResult,
        E: Into<HandlerError> + 'static,
    {
        let entry = ToolEntry::new(tool, Arc::new(RawTool(handler)))?;
        self.insert_tool(entry);
        Ok(self)
    }

    fn insert_tool(&self, entry: ToolEntry) {
        let name = entry.tool.name.clone();
        {
            let mut reg = write(&self.inner.registry);
            reg.tools.insert(name, Arc::new(entry));
            self.inner
                .cache
                .tools_generation
                .fetch_add(1, Ordering::AcqRel);
        }
        self.changed(ListKind::Tools);
    }

    /// Removes a tool; true if it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = {
            let mut reg = write(&self.inner.registry);
            let removed = reg.tools.remove(name).is_some();
            if removed {
                self.inner
                    .cache
                    .tools_generation
                    .fetch_add(1, Ordering::AcqRel);
            }
            removed
        };
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
    ) -> Result<&Self, RegistrationError>
    where
        F: Fn(RequestContext, ReadResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        if resource.uri.is_empty() || !resource.uri.contains(':') {
            return Err(RegistrationError::InvalidResource(
                resource.uri,
                "a resource URI needs a scheme".into(),
            ));
        }
        let uri = resource.uri.clone();
        write(&self.inner.registry).resources.insert(
            uri,
            Arc::new(ResourceEntry {
                resource,
                handler: Arc::new(FnResource(handler)),
            }),
        );
        self.changed(ListKind::Resources);
        Ok(self)
    }

    /// Registers a family of resources described by a URI template.
    pub fn add_resource_template<F, Fut, E>(
        &self,
        template: ResourceTemplate,
        handler: F,
    ) -> Result<&Self, RegistrationError>
    where
        F: Fn(RequestContext, ReadResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        let matcher = UriTemplate::parse(&template.uri_template).map_err(|e| {
            RegistrationError::InvalidResource(template.uri_template.clone(), e.to_string())
        })?;
        let key = template.uri_template.clone();
        write(&self.inner.registry).templates.insert(
            key,
            Arc::new(TemplateEntry {
                template,
                matcher,
                handler: Arc::new(FnResource(handler)),
            }),
        );
        self.changed(ListKind::Resources);
        Ok(self)
    }

    /// Removes a resource (by URI) or template (by template text); true if it existed.
    pub fn remove_resource(&self, uri_or_template: &str) -> bool {
        let removed = {
            let mut r = write(&self.inner.registry);
            r.resources.remove(uri_or_template).is_some()
                || r.templates.remove(uri_or_template).is_some()
        };
        if removed {
            self.changed(ListKind::Resources);
        }
        removed
    }

    /// Registers a prompt.
    pub fn add_prompt<F, Fut, E>(
        &self,
        prompt: Prompt,
        handler: F,
    ) -> Result<&Self, RegistrationError>
    where
        F: Fn(RequestContext, GetPromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        let name = prompt.name.clone();
        write(&self.inner.registry).prompts.insert(
            name,
            Arc::new(PromptEntry {
                prompt,
                handler: Arc::new(FnPrompt(handler)),
            }),
        );
        self.changed(ListKind::Prompts);
        Ok(self)
    }

    /// Removes a prompt; true if it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = write(&self.inner.registry).prompts.remove(name).is_some();
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
        write(&self.inner.registry).completion = Some(Arc::new(FnCompletion(handler)));
        self
    }

    /// Adds request middleware: `f` runs around every request this server dispatches, on
    /// every transport and in both eras, and decides whether to pass it on
    /// (`next.run(request).await`) or answer it itself. The first added runs first
    /// (outermost). See [`middleware`](super::middleware) for the order.
    ///
    /// ```
    /// use vellum::server::{Outcome, Server, ServerOptions};
    /// use vellum::protocol::{ErrorObject, Implementation};
    ///
    /// let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
    /// server.add_request_middleware(|req, next| async move {
    ///     if req.method() == "tools/call" && req.context().http().is_none() {
    ///         return Outcome::Error(ErrorObject::invalid_request("tools need HTTP here"));
    ///     }
    ///     let started = std::time::Instant::now();
    ///     let outcome = next.run(req).await;
    ///     let _elapsed = started.elapsed(); // record a metric
    ///     outcome
    /// });
    /// ```
    pub fn add_request_middleware<F, Fut>(&self, f: F) -> &Self
    where
        F: Fn(IncomingRequest, Next) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        write(&self.inner.middleware).add_request(f);
        self
    }

    /// Adds a message observer: `f` sees every message the server sends (responses,
    /// notifications, requests to the client) and every notification and answer it
    /// receives, in the order observers were added. It must not block.
    pub fn add_message_observer<F>(&self, f: F) -> &Self
    where
        F: Fn(&MessageEvent<'_>) + Send + Sync + 'static,
    {
        write(&self.inner.middleware).add_observer(f);
        self
    }

    pub(crate) fn middleware(&self) -> Middleware {
        read(&self.inner.middleware).clone()
    }

    /// Runs the observers on one event (nothing when there are none).
    pub(crate) fn observe(&self, event: &MessageEvent<'_>) {
        if let Some(o) = read(&self.inner.middleware).observers() {
            observe(&o, event);
        }
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
        write(&self.inner.registry).completers.insert(
            completer_key(&reference, argument),
            Arc::new(FnCompleter(f)),
        );
        self
    }

    /// The capabilities this server advertises now.
    pub fn capabilities(&self) -> ServerCapabilities {
        if let Some(c) = &self.inner.options.capabilities {
            return c.clone();
        }
        let r = read(&self.inner.registry);
        let listed = Some(ListCapability {
            list_changed: Some(true),
        });
        let tasks = r.tools.values().any(|t| {
            t.tool
                .execution
                .as_ref()
                .and_then(|e| e.task_support)
                .is_some_and(|s| s != crate::protocol::TaskSupport::Forbidden)
        });
        ServerCapabilities {
            // 2025-11-25 tasks and the 2026-07-28 tasks extension; each era's framing drops
            // the other's field.
            tasks: tasks.then(|| {
                serde_json::from_value(serde_json::json!({
                    "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}
                }))
                .unwrap_or_default()
            }),
            extensions: tasks.then(|| {
                let mut e = JsonObject::new();
                e.insert(
                    crate::protocol::TASKS_EXTENSION.into(),
                    Value::Object(JsonObject::new()),
                );
                e
            }),
            logging: Some(JsonObject::new()),
            completions: (r.completion.is_some() || !r.completers.is_empty()).then(JsonObject::new),
            tools: (!r.tools.is_empty()).then(|| listed.clone()).flatten(),
            prompts: (!r.prompts.is_empty()).then(|| listed.clone()).flatten(),
            resources: (!r.resources.is_empty() || !r.templates.is_empty()).then_some(
                ResourcesCapability {
                    subscribe: Some(true),
                    list_changed: Some(true),
                },
            ),
            ..Default::default()
        }
    }

    /// Tells every subscribed client that a resource changed
    /// (`notifications/resources/updated`).
    pub fn notify_resource_updated(&self, uri: &str) {
        let params = ResourceUpdatedParams {
            uri: uri.to_owned(),
            meta: None,
        };
        let Ok(message) = encode_notification(methods::RESOURCES_UPDATED, Some(&params)) else {
            return;
        };
        self.inner.listeners.resource_updated(uri);
        let targets: Vec<Arc<Session>> = self
            .live_sessions()
            .into_iter()
            .filter(|s| s.is_subscribed(uri))
            .collect();
        self.fan_out(targets, message);
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Arc<ToolEntry>> {
        read(&self.inner.registry).tools.get(name).cloned()
    }

    pub(crate) fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        read(&self.inner.registry)
    }

    pub(crate) fn next_session_key(&self) -> u64 {
        self.inner.next_session_key.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn register_session(&self, key: u64, session: Weak<Session>) {
        lock(&self.inner.sessions).insert(key, session);
    }

    pub(crate) fn unregister_session(&self, key: u64) {
        lock(&self.inner.sessions).remove(&key);
    }

    fn live_sessions(&self) -> Vec<Arc<Session>> {
        lock(&self.inner.sessions)
            .values()
            .filter_map(Weak::upgrade)
            .filter(|s| !s.is_closed() && s.is_initialized())
            .collect()
    }

    fn fan_out(&self, targets: Vec<Arc<Session>>, message: Bytes) {
        if targets.is_empty() {
            return;
        }
        for _ in &targets {
            self.observe(&MessageEvent::Sending(&message));
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(async move {
            for s in targets {
                // A session without a listening stream simply misses it (documented).
                let _ = s.send_unrelated(message.clone()).await;
            }
        });
    }

    /// Whether clients were promised `listChanged` notifications for this list: always with
    /// the inferred capabilities, only where set with capabilities given in the options.
    fn announces_changes_of(&self, kind: ListKind) -> bool {
        let Some(caps) = &self.inner.options.capabilities else {
            return true;
        };
        let promised = match kind {
            ListKind::Tools => caps.tools.as_ref().and_then(|c| c.list_changed),
            ListKind::Prompts => caps.prompts.as_ref().and_then(|c| c.list_changed),
            ListKind::Resources => caps.resources.as_ref().and_then(|c| c.list_changed),
        };
        promised == Some(true)
    }

    /// A list changed: invalidate its cache and announce it (debounced).
    fn changed(&self, kind: ListKind) {
        // Only sessions that exist now can have seen the old list; one that connects during
        // the debounce lists afresh anyway.
        if !self.announces_changes_of(kind) {
            return;
        }
        let targets = self.live_sessions();
        if targets.is_empty() && self.inner.listeners.is_empty() {
            // Nobody to tell (registration before serving): clients list afresh anyway.
            return;
        }
        let flag = &self.inner.change_scheduled[kind.index()];
        if flag.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            // Registration before any runtime exists: no session can be listening yet.
            flag.store(false, Ordering::Release);
            return;
        };
        let server = self.clone();
        rt.spawn(async move {
            tokio::time::sleep(LIST_CHANGED_DEBOUNCE).await;
            server.inner.change_scheduled[kind.index()].store(false, Ordering::Release);
            let Ok(message) =
                encode_notification(kind.method(), Some(&NotificationParams::default()))
            else {
                return;
            };
            let targets = targets.into_iter().filter(|s| !s.is_closed()).collect();
            server.fan_out(targets, message);
            server.inner.listeners.list_changed(kind);
        });
    }
}

fn is_bare_object(schema: &JsonObject) -> bool {
    schema.len() == 1 && schema.get("type") == Some(&Value::String("object".into()))
}
