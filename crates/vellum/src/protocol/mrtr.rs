//! Multi round-trip requests (2026-07-28): how a modern server asks the client for input
//! without sending it a request.

use std::collections::BTreeMap;

use super::client_features::{CreateMessageParams, ElicitParams};
use super::common::Meta;
use serde::{Deserialize, Serialize};

/// An input the server needs, keyed in [`InputRequests`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum InputRequest {
    /// Ask the user (elicitation).
    #[serde(rename = "elicitation/create")]
    Elicit(ElicitParams),
    /// Ask the client's model (sampling).
    #[serde(rename = "sampling/createMessage")]
    CreateMessage(CreateMessageParams),
    /// Ask for the client's roots.
    #[serde(rename = "roots/list")]
    ListRoots,
}

/// Input requests by key.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// A result saying the server needs more input before it can finish.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// What to ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes on its retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
