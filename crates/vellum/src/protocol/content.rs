//! Content blocks: what tools return, prompts contain and sampling exchanges.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Annotations, Icon, JsonObject, Meta};

/// A block of content in a tool result or a prompt message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text(TextContent),
    /// A base64-encoded image.
    Image(ImageContent),
    /// Base64-encoded audio (2025-03-26+).
    Audio(AudioContent),
    /// A link to a resource the client may read (2025-06-18+).
    ResourceLink(ResourceLink),
    /// A resource embedded inline.
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block from base64 data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An audio block from base64 data.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An embedded resource block.
    pub fn resource(resource: ResourceContents) -> Self {
        ContentBlock::Resource(EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
        })
    }

    /// The text, for text blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Text content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextContent {
    /// Text content without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// Image content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// The image's MIME type.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Audio content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// The audio's MIME type.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A link to a resource (the same fields as a listed resource).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A resource embedded in content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The contents of a resource: text or a base64 blob.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents, base64-encoded.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: text.into(),
            meta: None,
        })
    }

    /// Base64 blob contents of `uri`.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, blob: impl Into<String>) -> Self {
        ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: blob.into(),
            meta: None,
        })
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }
}

/// Text contents of a resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Binary contents of a resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded bytes.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A content block in a sampling message (2025-11-25 adds tool use and tool results).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SamplingContent {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
    /// Audio.
    Audio(AudioContent),
    /// The model asks to call a tool.
    ToolUse(ToolUseContent),
    /// The result of a tool call the model asked for.
    ToolResult(ToolResultContent),
}

impl SamplingContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        SamplingContent::Text(TextContent::new(text))
    }

    /// The text, for text blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            SamplingContent::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// A tool call requested by the model during sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// The id the matching tool result refers to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    pub input: JsonObject,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The result of a tool call, sent back to the model during sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The id of the tool use it answers.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// One block or an array of blocks (sampling messages accept both since 2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single block.
    One(T),
    /// Several blocks.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The blocks as a slice.
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(t) => std::slice::from_ref(t),
            OneOrMany::Many(v) => v,
        }
    }
}
