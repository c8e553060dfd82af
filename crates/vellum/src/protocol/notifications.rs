//! Notification parameters, `logging/setLevel`, `subscriptions/listen`, and the method names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{LoggingLevel, Meta};
use super::jsonrpc::{ProgressToken, RequestId};

/// Method and notification names.
pub mod methods {
    /// Legacy handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// Legacy handshake completion.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Liveness check (legacy).
    pub const PING: &str = "ping";
    /// Modern discovery.
    pub const DISCOVER: &str = "server/discover";
    /// List tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// List resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// List resource templates.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Read a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Subscribe to a resource (legacy).
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Unsubscribe from a resource (legacy).
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// List prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Get a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Complete an argument.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Set the session's log level (legacy).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Listen for notifications (modern).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// Ask the client's model.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Ask the user.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Ask for the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Get a task (2025-11-25 / tasks extension).
    pub const TASKS_GET: &str = "tasks/get";
    /// Wait for a task's result (2025-11-25).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// List tasks (2025-11-25).
    pub const TASKS_LIST: &str = "tasks/list";
    /// Cancel a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// Send input to a task (tasks extension).
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// List skills (skills extension).
    pub const SKILLS_LIST: &str = "skills/list";
    /// Get one skill's entry (skills extension).
    pub const SKILLS_GET: &str = "skills/get";
    /// List a directory resource's children (skills extension).
    pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

    /// Cancel a request.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress of a request.
    pub const PROGRESS: &str = "notifications/progress";
    /// A log message.
    pub const MESSAGE: &str = "notifications/message";
    /// A resource changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// The resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// The tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// The prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// The client's roots changed (legacy).
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// A URL elicitation completed (2025-11-25).
    pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    /// A task's status changed (2025-11-25).
    pub const TASKS_STATUS: &str = "notifications/tasks/status";
    /// A task's state, on a listen stream that asked for its id (tasks extension).
    pub const TASKS: &str = "notifications/tasks";
    /// A listen stream is open (modern).
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
}

/// `notifications/progress` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token of the request in progress.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification.
    pub progress: f64,
    /// The total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `notifications/message` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    /// Severity.
    pub level: LoggingLevel,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON.
    pub data: Value,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `logging/setLevel` parameters (legacy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetLevelParams {
    /// The least severe level the client wants.
    pub level: LoggingLevel,
    /// Metadata.
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::common::request_meta",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Meta>,
}

/// `notifications/cancelled` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The request to cancel.
    pub request_id: RequestId,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `notifications/resources/updated` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedParams {
    /// The resource that changed.
    pub uri: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Which notifications a `subscriptions/listen` stream carries (2026-07-28).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
}

/// `subscriptions/listen` parameters (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenParams {
    /// What to listen for.
    pub notifications: SubscriptionFilter,
    /// Metadata.
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::common::request_meta",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Meta>,
}

/// `notifications/subscriptions/acknowledged` parameters (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedParams {
    /// The subset of the filter the server honours.
    pub notifications: SubscriptionFilter,
    /// Metadata (carries the subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of a notification that carries only `_meta` (the list-changed family).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
