//! Reply framing: what serving a request produced ([`Outcome`]), and how a result is written
//! for the request's era: `resultType`, the cache hints and the server's identity in `_meta`
//! for 2026-07-28, the plain result before. Also where a handler's failure, once mapped
//! ([`WireFailure`]), becomes its answer.
//!
//! Not here: deciding what a failure becomes (`handler_error.rs`), and transports' framing
//! of messages (JSON bodies, SSE events).

use bytes::Bytes;
use serde::Serialize;

use super::handler_error::WireFailure;
use super::request::RequestShared;
use crate::protocol::{
    CacheHint, CacheScope, CallToolResult, CompleteResult, CreateTaskResult, DiscoverResult,
    EmptyResult, ErrorObject, GetPromptResult, InitializeResult, InputRequiredResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListTasksResult,
    ListToolsResult, Meta, ReadResourceResult, ResultType, meta_keys,
};
use crate::protocol::{encode_response_raw, encode_response_with};

/// What serving a request produced (what request middleware get back from
/// [`Next::run`](super::Next::run), and may return instead).
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
);

/// A modern result: `resultType`, the result's own fields, then the cache hints.
#[derive(Serialize)]
struct Modern<'a, T: Serialize> {
    #[serde(rename = "resultType")]
    result_type: &'a ResultType,
    #[serde(flatten)]
    inner: &'a T,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<CacheScope>,
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
        result.meta_mut().get_or_insert_with(Meta::new).insert(
            meta_keys::SERVER_INFO.to_owned(),
            shared.server.inner.info_json.clone(),
        );
        serde_json::to_writer(
            out,
            &Modern {
                result_type: &result_type,
                inner: &result,
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
    encode_result(
        shared,
        result,
        ResultType::Complete,
        Some(CacheHint::default()),
    )
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
