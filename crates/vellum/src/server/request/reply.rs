//! Reply framing: what serving a request produced ([`Outcome`]), and how a result is written
//! for the request's era: `resultType`, the cache hints and the server's identity in `_meta`
//! for 2026-07-28, the plain result before. Also where a handler's failure, once mapped
//! ([`WireFailure`]), becomes its answer.
//!
//! Not here: deciding what a failure becomes (`handler_error.rs`), and transports' framing
//! of messages (JSON bodies, SSE events).

use bytes::Bytes;
use serde::Serialize;
use serde::ser::SerializeMap as _;
use serde_json::value::RawValue;

use super::request::RequestShared;
use crate::protocol::{
    CacheHint, CacheScope, CallToolResult, CompleteResult, CreateTaskResult, DiscoverResult,
    EmptyResult, ErrorObject, GetPromptResult, GetSkillResult, InitializeResult,
    InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, ListTasksResult, ListToolsResult, Meta, ReadDirectoryResult,
    ReadResourceResult, ResultType, meta_keys,
};
use crate::protocol::{encode_response_raw, encode_response_with};
use crate::server::handler_error::WireFailure;

/// What serving a request produced (what request middleware get back from
/// [`Next::run`](crate::server::Next::run), and may return instead).
#[derive(Debug)]
pub enum Outcome {
    /// The encoded JSON-RPC success response (the whole message, ready to send).
    Reply(Bytes),
    /// A JSON-RPC error for the request.
    Error(ErrorObject),
    /// Nothing is sent (the request was cancelled).
    Silent,
}

impl Outcome {
    /// The error, when the request failed.
    pub fn error(&self) -> Option<&ErrorObject> {
        match self {
            Outcome::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// Results that can carry server info in their `_meta` (2026-07-28).
pub(crate) trait HasMeta {
    /// The result's `_meta`.
    fn meta_mut(&mut self) -> &mut Option<Meta>;
}

macro_rules! has_meta {
    ($($t:ty),* $(,)?) => {
        $(impl HasMeta for $t {
            fn meta_mut(&mut self) -> &mut Option<Meta> { &mut self.meta }
        })*
    };
}

has_meta!(
    EmptyResult,
    InitializeResult,
    DiscoverResult,
    ListToolsResult,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    GetPromptResult,
    CompleteResult,
    InputRequiredResult,
    CreateTaskResult,
    ListTasksResult,
    ListSkillsResult,
    GetSkillResult,
    ReadDirectoryResult,
);

/// A modern result: `resultType`, the result's own fields, its `_meta` with the server's
/// identity, then the cache hints.
#[derive(Serialize)]
struct Modern<'a, T: Serialize> {
    #[serde(rename = "resultType")]
    result_type: &'a ResultType,
    #[serde(flatten)]
    inner: &'a T,
    #[serde(rename = "_meta")]
    meta: ModernResultMeta<'a>,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<CacheScope>,
}

/// A modern result's `_meta`: the handler's entries, then the server's identity (encoded
/// once per server, written as is; it replaces a handler's entry of that name).
struct ModernResultMeta<'a> {
    own: Option<&'a Meta>,
    server_info: &'a RawValue,
}

impl Serialize for ModernResultMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let own = self
            .own
            .into_iter()
            .flat_map(|m| m.0.iter())
            .filter(|(k, _)| k.as_str() != meta_keys::SERVER_INFO);
        let mut map = s.serialize_map(None)?;
        for (k, v) in own {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry(meta_keys::SERVER_INFO, self.server_info)?;
        map.end()
    }
}

/// Serializes a result for the request's era into `out`. `cache` is given for cacheable
/// results.
pub(crate) fn write_result<T: Serialize + HasMeta>(
    shared: &RequestShared,
    mut result: T,
    result_type: ResultType,
    cache: Option<CacheHint>,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    if shared.is_modern() {
        // The result's own `_meta` is written by the wrapper, merged with the server's.
        let own = result.meta_mut().take();
        serde_json::to_writer(
            out,
            &Modern {
                result_type: &result_type,
                inner: &result,
                meta: ModernResultMeta {
                    own: own.as_ref(),
                    server_info: shared.server.announced_info(),
                },
                ttl_ms: cache.map(|c| c.ttl_ms),
                cache_scope: cache.map(|c| c.scope),
            },
        )
    } else {
        serde_json::to_writer(out, &result)
    }
}

/// Encodes the response message of a result for the request's era.
pub(crate) fn encode_result<T: Serialize + HasMeta>(
    shared: &RequestShared,
    result: T,
    result_type: ResultType,
    cache: Option<CacheHint>,
) -> Outcome {
    let encoded = encode_response_with(&shared.id, |out| {
        write_result(shared, result, result_type, cache, out)
    });
    match encoded {
        Ok(b) => Outcome::Reply(b),
        Err(e) => Outcome::Error(ErrorObject::internal(format!(
            "the result could not be encoded: {e}"
        ))),
    }
}

/// A complete result (no cache hints).
pub(crate) fn complete<T: Serialize + HasMeta>(shared: &RequestShared, result: T) -> Outcome {
    encode_result(shared, result, ResultType::Complete, None)
}

/// A complete result that modern clients may cache (the default hints).
pub(crate) fn cacheable<T: Serialize + HasMeta>(shared: &RequestShared, result: T) -> Outcome {
    cacheable_with(shared, result, CacheHint::default())
}

/// A complete result that modern clients may cache, with the application's hints.
pub(crate) fn cacheable_with<T: Serialize + HasMeta>(
    shared: &RequestShared,
    result: T,
    hint: CacheHint,
) -> Outcome {
    encode_result(shared, result, ResultType::Complete, Some(hint))
}

/// Exactly `{}` (`ping`, and the legacy methods whose result is empty).
pub(crate) fn empty(shared: &RequestShared) -> Outcome {
    Outcome::Reply(encode_response_raw(&shared.id, b"{}"))
}

/// A handler's failure, as the answer to its request.
pub(crate) fn failure(shared: &RequestShared, failure: WireFailure) -> Outcome {
    match failure {
        WireFailure::Error(e) => Outcome::Error(e),
        WireFailure::ToolError(message) => complete(shared, CallToolResult::error(message)),
        WireFailure::InputRequired(r) => encode_result(shared, *r, ResultType::InputRequired, None),
    }
}
