//! The typed calls: one method per MCP request a client sends (tools, resources, prompts,
//! completion, logging, ping), with the paginated lists also offered whole, and
//! [`Client::request`] for any other method.
//!
//! Each builds its params and goes through [`Client::call`] (MRTR rounds, then the call
//! engine), so every call works in both eras.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::call_options::CallOptions;
use super::engine::to_object;
use super::handle::Client;
use super::mirror::param_headers;
use crate::error::{Error, Unsupported};
use crate::protocol::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, CompletionArgument,
    CompletionReference, DiscoverResult, GetPromptParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedParams, Prompt, RawJson, ReadResourceParams, ReadResourceResult, Resource,
    ResourceTemplate, SetLevelParams, Tool, methods,
};
use crate::sync::write;

impl Client {
    /// Sends any request and decodes its result (an escape hatch for methods without a typed
    /// call). The era's `_meta` is added; MRTR rounds run for the three methods that have them.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        opts: CallOptions,
    ) -> Result<R, Error> {
        let params = to_object(params)?;
        self.call(method, params, &opts).await
    }

    /// Sends any request with params as a JSON object and returns its result undecoded, as
    /// the server sent it (for a client that passes results on, such as a gateway): a
    /// complete result, or the task a 2026-07-28 server made of the request. The era's
    /// `_meta` is added to the caller's (`opts.meta`), and the MRTR rounds of a modern
    /// server run with this client's handlers (or the call's own, `opts.input_round`).
    pub async fn request_raw(
        &self,
        method: &str,
        params: Map<String, Value>,
        opts: CallOptions,
    ) -> Result<RawJson, Error> {
        self.call_rounds(method, params, &opts, true).await
    }

    /// Sends any notification in the session's era (for a client that passes notifications
    /// on, such as a gateway).
    pub async fn send_notification(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), Error> {
        self.notify(method, params).await
    }

    /// Checks that the server answers: `ping` (legacy) or `server/discover` (2026-07-28 has
    /// no `ping`).
    pub async fn ping(&self) -> Result<(), Error> {
        if self.is_modern() {
            let _: DiscoverResult = self
                .call(methods::DISCOVER, Map::new(), &CallOptions::default())
                .await?;
        } else {
            let _: Value = self
                .call(methods::PING, Map::new(), &CallOptions::default())
                .await?;
        }
        Ok(())
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        let mut result: ListToolsResult = self.list(methods::TOOLS_LIST, cursor).await?;
        if self.is_modern() {
            self.learn_tool_headers(&mut result.tools);
        }
        Ok(result)
    }

    /// Remembers the `x-mcp-header` annotations of listed tools and drops tools whose
    /// annotations are invalid (the spec's rule for HTTP clients).
    fn learn_tool_headers(&self, tools: &mut Vec<Tool>) {
        let mut learned = Vec::new();
        tools.retain(|t| match param_headers(t) {
            Ok(h) => {
                learned.push((t.name.clone(), h));
                true
            }
            Err(why) => {
                tracing::warn!(tool = %t.name, "dropping a tool with an invalid x-mcp-header: {why}");
                false
            }
        });
        let mut state = write(&self.inner.state);
        if let Some(s) = state.as_mut() {
            for (name, h) in learned {
                if h.is_empty() {
                    s.tool_headers.remove(&name);
                } else {
                    s.tool_headers.insert(name, h);
                }
            }
        }
    }

    /// Every tool, following `nextCursor` to the end.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_tools(cursor).await?;
            Ok((page.tools, page.next_cursor))
        })
        .await
    }

    /// Calls a tool with JSON-object arguments (`serde_json::json!({...})`, a struct, or
    /// `()` for none).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, Error> {
        let arguments = match serde_json::to_value(arguments)? {
            Value::Object(m) => Some(m),
            Value::Null => None,
            _ => {
                return Err(Error::unsupported(Unsupported::ArgumentsNotObject));
            }
        };
        let params = CallToolParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        };
        self.call_tool_with(params, CallOptions::default()).await
    }

    /// Calls a tool with full control over the params and the call's options.
    pub async fn call_tool_with(
        &self,
        params: CallToolParams,
        opts: CallOptions,
    ) -> Result<CallToolResult, Error> {
        self.call(methods::TOOLS_CALL, to_object(&params)?, &opts)
            .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, Error> {
        self.list(methods::RESOURCES_LIST, cursor).await
    }

    /// Every resource, following `nextCursor` to the end.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_resources(cursor).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.list(methods::RESOURCES_TEMPLATES_LIST, cursor).await
    }

    /// Every resource template, following `nextCursor` to the end.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_resource_templates(cursor).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let params = ReadResourceParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.call(
            methods::RESOURCES_READ,
            to_object(&params)?,
            &CallOptions::default(),
        )
        .await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult, Error> {
        self.list(methods::PROMPTS_LIST, cursor).await
    }

    /// Every prompt, following `nextCursor` to the end.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, Error> {
        all_pages(|cursor| async move {
            let page = self.list_prompts(cursor).await?;
            Ok((page.prompts, page.next_cursor))
        })
        .await
    }

    /// Gets a prompt with string arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (String, String)>,
    ) -> Result<GetPromptResult, Error> {
        let arguments: std::collections::BTreeMap<String, String> = arguments.into_iter().collect();
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: (!arguments.is_empty()).then_some(arguments),
            ..Default::default()
        };
        self.call(
            methods::PROMPTS_GET,
            to_object(&params)?,
            &CallOptions::default(),
        )
        .await
    }

    /// Asks for completions of a prompt's or resource template's argument.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
    ) -> Result<CompleteResult, Error> {
        let params = CompleteParams {
            reference,
            argument: CompletionArgument {
                name: argument.to_owned(),
                value: value.to_owned(),
            },
            context: None,
            meta: None,
        };
        self.complete_with(params).await
    }

    /// `completion/complete` with full params.
    pub async fn complete_with(&self, params: CompleteParams) -> Result<CompleteResult, Error> {
        self.call(
            methods::COMPLETION_COMPLETE,
            to_object(&params)?,
            &CallOptions::default(),
        )
        .await
    }

    /// Sets the least severe log level the client wants: `logging/setLevel` in a legacy
    /// session; in the modern era every later request carries it in its `_meta`.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), Error> {
        *write(&self.inner.log_level) = Some(level);
        if !self.is_modern() {
            let params = SetLevelParams { level, meta: None };
            let _: Value = self
                .call(
                    methods::LOGGING_SET_LEVEL,
                    to_object(&params)?,
                    &CallOptions::default(),
                )
                .await?;
        }
        Ok(())
    }

    /// Tells a legacy server that the client's roots changed (`notifications/roots/list_changed`).
    pub async fn notify_roots_changed(&self) -> Result<(), Error> {
        if self.is_modern() {
            return Ok(()); // 2026-07-28 has no such notification; servers ask each time.
        }
        self.notify(methods::ROOTS_LIST_CHANGED, None).await
    }

    async fn list<R: DeserializeOwned>(
        &self,
        method: &str,
        cursor: Option<String>,
    ) -> Result<R, Error> {
        let params = PaginatedParams { cursor, meta: None };
        self.call(method, to_object(&params)?, &CallOptions::default())
            .await
    }
}

/// Every item of a paginated list: pages are fetched until one has no `nextCursor`.
async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, Error>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), Error>>,
{
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (items, next) = page(cursor).await?;
        out.extend(items);
        match next {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}
