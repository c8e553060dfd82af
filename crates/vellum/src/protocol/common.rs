//! Types shared by every feature: `_meta`, implementation info, icons, annotations, roles,
//! log levels, result types and cache hints.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::jsonrpc::ProgressToken;

/// Builder methods for the display fields (`title`, `description`, `icons`) that resources,
/// templates and prompts share.
macro_rules! display_builders {
    ($($t:ty),* $(,)?) => {$(
        impl $t {
            /// Sets the display title.
            #[must_use]
            pub fn with_title(mut self, title: impl Into<String>) -> Self {
                self.title = Some(title.into());
                self
            }

            /// Sets the description.
            #[must_use]
            pub fn with_description(mut self, description: impl Into<String>) -> Self {
                self.description = Some(description.into());
                self
            }

            /// Sets the icons.
            #[must_use]
            pub fn with_icons(mut self, icons: Vec<$crate::protocol::Icon>) -> Self {
                self.icons = Some(icons);
                self
            }
        }
    )*};
}
pub(crate) use display_builders;

/// Well-known `_meta` keys.
pub mod meta_keys {
    /// The request's protocol version (2026-07-28, required on every request).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for this request (2026-07-28, required on every request).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's identity (2026-07-28, recommended on every request).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The log level wanted for this request (2026-07-28).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's identity on every result (2026-07-28).
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The id of the `subscriptions/listen` request a notification belongs to (2026-07-28).
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The task a message relates to (2025-11-25 tasks).
    pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    /// The progress token of a request.
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

/// The `_meta` object: an open map that round-trips every key, with typed accessors for the
/// keys the protocol defines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(pub Map<String, Value>);

impl Meta {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Meta(Map::new())
    }

    /// The request's progress token, if it carries a valid one.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.0
            .get(meta_keys::PROGRESS_TOKEN)
            .and_then(|v| ProgressToken::deserialize(v).ok())
    }

    /// Decodes one key into a type; `None` when absent, `Some(Err)` when malformed.
    pub fn get_as<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Option<Result<T, serde_json::Error>> {
        self.0.get(key).map(T::deserialize)
    }

    /// Sets a key to a serializable value.
    pub fn insert<T: Serialize>(&mut self, key: impl Into<String>, value: T) {
        if let Ok(v) = serde_json::to_value(value) {
            self.0.insert(key.into(), v);
        }
    }
}

impl Deref for Meta {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Meta {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// The 2026-07-28 request context a client repeats in every request's `_meta`.
const CONTEXT_KEYS: [&str; 4] = [
    meta_keys::PROTOCOL_VERSION,
    meta_keys::CLIENT_CAPABILITIES,
    meta_keys::CLIENT_INFO,
    meta_keys::LOG_LEVEL,
];

thread_local! {
    /// Whether request params decoded on this thread leave out the context members of
    /// `_meta` (see [`without_context_meta`]).
    static WITHOUT_CONTEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `decode` (a synchronous decode of request params) with the 2026-07-28 context members
/// of `_meta` (version, capabilities, client info, log level) left out, and a `_meta` with
/// nothing else decoded as `None`.
///
/// The server's dispatcher decodes this way: it has read that context once, borrowed, for
/// the request's context, and handlers reach it through typed accessors; kept in the params
/// too, it would be built into a map, copied into the request and dropped on every call (a
/// seventh of a 2026-07-28 `tools/call`). Everywhere else the params types round-trip every
/// member, as the spec's examples require.
pub(crate) fn without_context_meta<T>(decode: impl FnOnce() -> T) -> T {
    /// Puts the flag back even if `decode` unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            WITHOUT_CONTEXT.set(self.0);
        }
    }
    let _restore = Restore(WITHOUT_CONTEXT.replace(true));
    decode()
}

/// Decodes a request's `_meta`: every member, or without the context members inside
/// [`without_context_meta`].
pub(crate) fn request_meta<'de, D>(d: D) -> Result<Option<Meta>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    if !WITHOUT_CONTEXT.get() {
        return Option::<Meta>::deserialize(d);
    }
    struct Members;
    impl<'de> serde::de::Visitor<'de> for Members {
        type Value = Option<Meta>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut a: A,
        ) -> Result<Self::Value, A::Error> {
            let mut kept = Map::new();
            while let Some(key) = a.next_key::<MemberName>()? {
                match key.0 {
                    None => {
                        a.next_value::<serde::de::IgnoredAny>()?;
                    }
                    Some(name) => {
                        kept.insert(name, a.next_value()?);
                    }
                }
            }
            Ok((!kept.is_empty()).then_some(Meta(kept)))
        }
    }
    d.deserialize_option(Members)
}

/// A `_meta` member's name, `None` for a context member (compared before any copy).
struct MemberName(Option<String>);

impl<'de> Deserialize<'de> for MemberName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = MemberName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<MemberName, E> {
                Ok(MemberName(
                    (!CONTEXT_KEYS.contains(&s)).then(|| s.to_owned()),
                ))
            }
        }
        d.deserialize_str(Name)
    }
}

/// Name and version of an MCP implementation (client or server).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version string.
    pub version: String,
    /// Human-readable description (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Website (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            ..Default::default()
        }
    }
}

/// An icon a client may display.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// `https:` or `data:` URI.
    pub src: String,
    /// MIME type, e.g. `image/png`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `48x48` or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

/// The theme an icon suits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// For light backgrounds.
    Light,
    /// For dark backgrounds.
    Dark,
}

/// The sender or recipient of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (model).
    Assistant,
}

/// Hints about how to use or display a piece of content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last modification (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// RFC 5424 log severities, least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug-level messages.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant conditions.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// System is unusable.
    Emergency,
}

impl LoggingLevel {
    /// All levels, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        LoggingLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of result a modern (2026-07-28) response carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum ResultType {
    /// The final result.
    #[default]
    Complete,
    /// More input is needed (MRTR).
    InputRequired,
    /// A task was created (tasks extension).
    Task,
    /// A value defined by an extension this SDK does not know.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(s) => s,
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            "task" => ResultType::Task,
            _ => ResultType::Other(s),
        })
    }
}

/// Who may reuse a cached result (2026-07-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Not user-specific: shareable across users and tokens.
    #[default]
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// Cache hints a modern server attaches to discover, list and read results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CacheHint {
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub scope: CacheScope,
}

/// The common fields of every result, for results this SDK has no type for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of a request that may carry only `_meta` (and, for lists, a cursor).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedParams {
    /// The opaque cursor of the page to fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Metadata.
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::common::request_meta",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Meta>,
}

/// A JSON object, as used for open-ended capability settings.
pub type JsonObject = Map<String, Value>;

/// An ordered map of string keys, used where the protocol has string-keyed objects.
pub type StringMap<V> = BTreeMap<String, V>;

/// The client's answers to a server's input requests (2026-07-28 multi round-trip), by key,
/// kept as JSON until the asker decodes them.
pub type InputResponses = BTreeMap<String, Value>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CallToolParams;

    fn meta_of(params: &str) -> Option<Meta> {
        without_context_meta(|| serde_json::from_str::<CallToolParams>(params).unwrap().meta)
    }

    #[test]
    fn request_meta_keeps_all_but_the_context() {
        let meta = meta_of(
            r#"{"name":"t","_meta":{
                "io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"roots":{}},
                "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
                "io.modelcontextprotocol/logLevel":"info",
                "progressToken":7,
                "example.com/trace":{"id":"a\"b"}
            }}"#,
        )
        .unwrap();
        assert_eq!(meta.len(), 2, "{meta:?}");
        assert_eq!(meta.progress_token(), Some(ProgressToken::Number(7)));
        assert_eq!(meta["example.com/trace"]["id"], "a\"b");
        // Only the context, an empty object, or null: no `_meta` at all.
        let only_context =
            r#"{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        assert_eq!(meta_of(only_context), None);
        assert_eq!(meta_of(r#"{"name":"t","_meta":{}}"#), None);
        assert_eq!(meta_of(r#"{"name":"t","_meta":null}"#), None);
        assert_eq!(meta_of(r#"{"name":"t"}"#), None);
        // Not an object: refused as before.
        assert!(
            without_context_meta(|| serde_json::from_str::<CallToolParams>(
                r#"{"name":"t","_meta":1}"#
            ))
            .is_err()
        );
        // Outside the dispatcher's decode, every member round-trips, an empty `_meta` too.
        let full = serde_json::from_str::<CallToolParams>(
            r#"{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":7}}"#,
        )
        .unwrap();
        assert_eq!(full.meta.unwrap().len(), 2);
        let empty = serde_json::from_str::<CallToolParams>(r#"{"name":"t","_meta":{}}"#).unwrap();
        assert_eq!(empty.meta, Some(Meta::new()));
    }
}
