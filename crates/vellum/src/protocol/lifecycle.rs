//! Capabilities, the legacy `initialize` handshake and the modern `server/discover`.

use serde::{Deserialize, Serialize};

use super::common::{Implementation, JsonObject, Meta};
use super::version::ProtocolVersion;

/// What a client supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Roots (`roots/list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Sampling (`sampling/createMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Elicitation (`elicitation/create`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Tasks (2025-11-25, experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<JsonObject>,
    /// Extensions (2026-07-28), keyed by reverse-DNS id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

impl ClientCapabilities {
    /// True when the client declared elicitation in form mode (`{}` means form).
    pub fn supports_form_elicitation(&self) -> bool {
        match &self.elicitation {
            None => false,
            Some(e) => e.form.is_some() || e.url.is_none(),
        }
    }

    /// True when the client declared URL-mode elicitation.
    pub fn supports_url_elicitation(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// True when the client declared sampling.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// True when the client declared sampling with tools.
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// True when the client declared roots.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// True when the client declared the extension `id`.
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }
}

/// The client's roots capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// Whether the client notifies when its roots change (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The client's sampling capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Support for `includeContext` values other than `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Support for tools in sampling (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
}

/// The client's elicitation capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
}

/// What a server supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Log messages (`notifications/message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListCapability>,
    /// Tasks (2025-11-25, experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<JsonObject>,
    /// Extensions (2026-07-28), keyed by reverse-DNS id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

/// A capability whose only setting is list-change notifications.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListCapability {
    /// Whether the server notifies when the list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The resources capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether clients may subscribe to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server notifies when the list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `initialize` parameters (legacy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The newest version the client speaks (kept as a string: it may be one we don't).
    pub protocol_version: String,
    /// The client's capabilities.
    #[serde(default)]
    pub capabilities: ClientCapabilities,
    /// The client's identity.
    pub client_info: Implementation,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `initialize` result (legacy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The negotiated version.
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's identity.
    pub server_info: Implementation,
    /// How to use this server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `server/discover` result (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Every version the server speaks.
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// How to use this server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Metadata (carries the server's identity).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl DiscoverResult {
    /// The versions list for every version this SDK speaks.
    pub fn all_versions() -> Vec<String> {
        ProtocolVersion::ALL
            .iter()
            .map(|v| v.as_str().to_owned())
            .collect()
    }
}
