//! Tools: definitions, `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Icon, InputResponses, JsonObject, Meta};
use super::content::ContentBlock;
use super::tasks::TaskMetadata;

/// A tool the client can call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name (1-128 of `A-Za-z0-9_.-`).
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; its root is `type: object`.
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution settings (2025-11-25 tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The scopes a caller must hold to call this tool (all of them), checked before the
    /// handler runs; never sent on the wire. See [`Tool::requires_scope`].
    #[serde(skip)]
    pub required_scopes: Vec<String>,
    /// Whether the handler gathers input by multi round-trip first and becomes a task only
    /// where it calls [`RequestContext::become_task`](crate::server::RequestContext::become_task)
    /// (2026-07-28 tasks extension); never sent on the wire. See [`Tool::with_input_before_task`].
    #[serde(skip)]
    pub input_before_task: bool,
}

impl Tool {
    /// A tool with a name, a description and an input schema accepting any object.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), Value::String("object".into()));
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: schema,
            output_schema: None,
            annotations: None,
            execution: None,
            icons: None,
            meta: None,
            required_scopes: Vec::new(),
            input_before_task: false,
        }
    }

    /// Requires `scope` (repeat for more: all are needed) of the caller. A call whose
    /// [`Caller`](crate::server::Caller) lacks one is refused before the handler runs: over
    /// HTTP with 403 and a `WWW-Authenticate: Bearer error="insufficient_scope"` challenge
    /// naming every scope the call needs (OAuth step-up), elsewhere with a JSON-RPC error.
    /// A call without any caller (no authentication layer, stdio) is refused too: a scope
    /// nobody checked is never assumed. `tools/list` still lists the tool.
    #[must_use]
    pub fn requires_scope(mut self, scope: impl Into<String>) -> Self {
        self.required_scopes.push(scope.into());
        self
    }

    /// Sets the display title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the annotations.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets an explicit input schema (used verbatim).
    #[must_use]
    pub fn with_input_schema(mut self, schema: JsonObject) -> Self {
        self.input_schema = schema;
        self
    }

    /// Sets an explicit output schema (used verbatim).
    #[must_use]
    pub fn with_output_schema(mut self, schema: JsonObject) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the icons.
    #[must_use]
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = Some(icons);
        self
    }

    /// Sets the task support (2025-11-25 tasks).
    #[must_use]
    pub fn with_task_support(mut self, support: TaskSupport) -> Self {
        self.execution = Some(ToolExecution {
            task_support: Some(support),
        });
        self
    }

    /// For a client that declares the 2026-07-28 tasks extension, the call starts as an
    /// ordinary request: the handler may ask the client by multi round-trip (each question
    /// an `InputRequiredResult`), and the call becomes a task only where the handler calls
    /// [`RequestContext::become_task`](crate::server::RequestContext::become_task) (SEP-2663
    /// "MRTR to tasks"). Without it, such a call is a task before the handler runs.
    #[must_use]
    pub fn with_input_before_task(mut self) -> Self {
        self.input_before_task = true;
        self
    }
}

/// Hints about a tool's behaviour. Clients treat them as untrusted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call has no extra effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// How a tool runs (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool may, must or must not run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// Task support of a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never as a task (the default).
    #[default]
    Forbidden,
    /// With or without a task.
    Optional,
    /// Only as a task.
    Required,
}

/// `tools/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools of this page.
    pub tools: Vec<Tool>,
    /// The cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `tools/call` parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool's name.
    pub name: String,
    /// The arguments (an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Run as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Answers to the server's input requests (MRTR retry, 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque state echoed back on an MRTR retry (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Metadata.
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::common::request_meta",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Meta>,
}

/// `tools/call` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured result (never `null`: an empty list at least).
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured result, conforming to the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed (a tool error the model can see, not a protocol error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool error with one text block (`isError: true`).
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// True when this is a tool error.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}
