//! The callbacks a client application gives for what the server asks it (sampling,
//! elicitation, roots) or tells it (progress, logs, list changes, resource updates), and the
//! decoded [`ServerNotification`] they receive.
//!
//! Both eras use the same callbacks: a legacy server sends a JSON-RPC request, a modern one
//! returns an `InputRequiredResult` and the client answers on its retry (MRTR). Running them
//! is `answers.rs`'s job; this file only says what they are.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::protocol::{
    CancelledParams, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    ElicitationCompleteParams, ErrorObject, ListRootsResult, LoggingMessageParams, Notification,
    ProgressParams, ResourceUpdatedParams, SubscriptionsAcknowledgedParams, methods,
};

/// Answers `sampling/createMessage`: runs the client's model.
pub type SamplingHandler = Arc<
    dyn Fn(CreateMessageParams) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers `elicitation/create`: asks the user.
pub type ElicitationHandler = Arc<
    dyn Fn(ElicitParams) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>> + Send + Sync,
>;

/// Answers `roots/list`.
pub type RootsHandler =
    Arc<dyn Fn() -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>> + Send + Sync>;

/// Receives every notification the server sends.
pub type NotificationHandler = Arc<dyn Fn(ServerNotification) + Send + Sync>;

/// Receives the progress of one call.
pub type ProgressHandler = Arc<dyn Fn(&ProgressParams) + Send + Sync>;

/// The values a form elicitation's schema gives as defaults (SEP-1034), for a client that
/// accepts a form without asking, or pre-fills it: `{property: default}` for every property
/// of `requested_schema` that has a `default`.
pub fn form_defaults(
    requested_schema: &crate::protocol::JsonObject,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    if let Some(props) = requested_schema
        .get("properties")
        .and_then(|p| p.as_object())
    {
        for (name, schema) in props {
            if let Some(d) = schema.get("default") {
                out.insert(name.clone(), d.clone());
            }
        }
    }
    out
}

/// A notification from the server, decoded.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/progress`.
    Progress(ProgressParams),
    /// `notifications/message`: a log message.
    Log(LoggingMessageParams),
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated(ResourceUpdatedParams),
    /// `notifications/cancelled`: the server cancelled one of its requests (legacy), or ended a
    /// `subscriptions/listen` stream (modern).
    Cancelled(CancelledParams),
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete(ElicitationCompleteParams),
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged(SubscriptionsAcknowledgedParams),
    /// Any other notification, or one whose params did not decode.
    Other(Notification),
}

impl ServerNotification {
    /// Decodes a notification; unknown or malformed ones become [`ServerNotification::Other`].
    pub fn decode(n: Notification) -> ServerNotification {
        fn parse<T: serde::de::DeserializeOwned>(n: &Notification) -> Option<T> {
            match &n.params {
                Some(p) => p.parse().ok(),
                None => serde_json::from_str("{}").ok(),
            }
        }
        let decoded = match n.method.as_str() {
            methods::PROGRESS => parse(&n).map(ServerNotification::Progress),
            methods::MESSAGE => parse(&n).map(ServerNotification::Log),
            methods::TOOLS_LIST_CHANGED => Some(ServerNotification::ToolsListChanged),
            methods::PROMPTS_LIST_CHANGED => Some(ServerNotification::PromptsListChanged),
            methods::RESOURCES_LIST_CHANGED => Some(ServerNotification::ResourcesListChanged),
            methods::RESOURCES_UPDATED => parse(&n).map(ServerNotification::ResourceUpdated),
            methods::CANCELLED => parse(&n).map(ServerNotification::Cancelled),
            methods::ELICITATION_COMPLETE => parse(&n).map(ServerNotification::ElicitationComplete),
            methods::SUBSCRIPTIONS_ACKNOWLEDGED => {
                parse(&n).map(ServerNotification::SubscriptionsAcknowledged)
            }
            _ => None,
        };
        decoded.unwrap_or(ServerNotification::Other(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_schema() {
        let schema = serde_json::json!({"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},
            "age":{"type":"integer","default":30},
            "free":{"type":"string"}}});
        let d = form_defaults(schema.as_object().unwrap());
        assert_eq!(
            serde_json::Value::Object(d),
            serde_json::json!({"name":"John Doe","age":30})
        );
    }
}
