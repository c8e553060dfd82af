//! HTTP caching of the 2026-07-28 results a client may cache (the four lists and
//! `resources/read`): a plain JSON answer gets `Cache-Control` from the result's own
//! `ttlMs` and `cacheScope` (`public`/`private`, `max-age` = `ttlMs` / 1000, rounded down)
//! and a strong `ETag`, and a request whose `If-None-Match` names the answer's tag is
//! answered 304 with no body.
//!
//! The tag is a hash (SHA-256, 128 bits kept) of the result's bytes, the JSON-RPC `id` left
//! out, so that a client's next request (with a new id) can match it. The hints are read
//! from the answer itself, not from the server's settings, so that a middleware that
//! rewrites them is honoured and the headers never disagree with the body.
//!
//! Legacy answers, SSE answers, batches and errors are left as they are.
//!
//! Not here: where the hints come from (`server::CacheHints`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use sha2::{Digest, Sha256};

use crate::protocol::{CacheHint, CacheScope, Request as RpcRequest, methods};

use super::body::ResponseBody;

/// The methods whose 2026-07-28 results carry cache hints the HTTP answer maps.
const CACHEABLE: [&str; 5] = [
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
];

/// A POST whose JSON answer may carry caching headers: what the client already holds.
pub(super) struct Conditional {
    /// The client's `If-None-Match` (every line of it), if any.
    if_none_match: Vec<HeaderValue>,
}

impl Conditional {
    /// For a modern POST of a single request of a cacheable method; `None` otherwise (and
    /// then nothing is read or hashed).
    pub(super) fn of(
        headers: &HeaderMap,
        requests: &[RpcRequest],
        modern: bool,
    ) -> Option<Conditional> {
        let [request] = requests else {
            return None;
        };
        if !modern || !CACHEABLE.contains(&request.method.as_str()) {
            return None;
        }
        Some(Conditional {
            if_none_match: headers
                .get_all(header::IF_NONE_MATCH)
                .iter()
                .cloned()
                .collect(),
        })
    }

    /// `response`, the JSON answer whose one message is `message`, with `Cache-Control` and
    /// `ETag` when the message is a result with cache hints; a 304 instead when the client's
    /// `If-None-Match` names its tag.
    pub(super) fn answer(
        self,
        message: Option<&Bytes>,
        mut response: Response<ResponseBody>,
    ) -> Response<ResponseBody> {
        let Some((hint, result)) = message.and_then(|m| hinted_result(m)) else {
            return response;
        };
        let tag = entity_tag(result);
        let control = cache_control(hint);
        if self.if_none_match.iter().any(|v| matches_tag(v, &tag)) {
            response = Response::new(ResponseBody::empty());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
        }
        let h = response.headers_mut();
        h.insert(header::CACHE_CONTROL, control);
        h.insert(header::ETAG, tag);
        response
    }
}

/// The cache hints and the result bytes of an encoded success response
/// (`{"jsonrpc":"2.0","id":…,"result":{…,"ttlMs":N,"cacheScope":"…"}}`), or `None` for
/// anything else (an error, a result without hints).
///
/// The hints are the result's last two members: `reply::write_result` writes them after
/// everything else, so they are read from the end, whatever the result's size.
fn hinted_result(message: &[u8]) -> Option<(CacheHint, &[u8])> {
    // The key cannot occur earlier: in the id, a string, every `"` is escaped.
    const KEY: &[u8] = br#""result":"#;
    let start = message.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let result = message.get(start..message.len().checked_sub(1)?)?;
    let rest = result.strip_suffix(b"}")?;
    let (rest, scope) = if let Some(r) = rest.strip_suffix(br#","cacheScope":"public""#) {
        (r, CacheScope::Public)
    } else {
        (
            rest.strip_suffix(br#","cacheScope":"private""#)?,
            CacheScope::Private,
        )
    };
    let digits = rest.len() - rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let ttl_ms = std::str::from_utf8(&rest[digits..]).ok()?.parse().ok()?;
    let before = rest[..digits].strip_suffix(br#""ttlMs":"#)?;
    if !matches!(before.last(), Some(b',' | b'{')) {
        return None;
    }
    Some((CacheHint { ttl_ms, scope }, result))
}

/// `public, max-age=N` or `private, max-age=N`.
fn cache_control(hint: CacheHint) -> HeaderValue {
    let scope = match hint.scope {
        CacheScope::Public => "public",
        CacheScope::Private => "private",
    };
    let value = format!("{scope}, max-age={}", hint.ttl_ms / 1000);
    // Only ASCII letters, digits, spaces and punctuation: always a valid value.
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("no-cache"))
}

/// The strong entity tag of a result: 128 bits of its SHA-256, base64url, quoted.
fn entity_tag(result: &[u8]) -> HeaderValue {
    let digest = Sha256::digest(result);
    let tag = format!("\"{}\"", URL_SAFE_NO_PAD.encode(&digest[..16]));
    HeaderValue::from_str(&tag).unwrap_or(HeaderValue::from_static("\"\""))
}

/// True when one `If-None-Match` line names `tag` or is `*` (RFC 9110 §13.1.2: the weak
/// comparison, so `W/"x"` matches `"x"`).
fn matches_tag(line: &HeaderValue, tag: &HeaderValue) -> bool {
    let Ok(line) = line.to_str() else {
        return false;
    };
    let tag = tag.as_bytes();
    line.split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t).as_bytes() == tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_read_from_the_end_of_a_result() {
        let m = br#"{"jsonrpc":"2.0","id":"a\"result\":1","result":{"tools":[],"_meta":{},"ttlMs":30000,"cacheScope":"private"}}"#;
        let (hint, result) = hinted_result(m).expect("a hinted result");
        assert_eq!(hint.ttl_ms, 30_000);
        assert_eq!(hint.scope, CacheScope::Private);
        assert!(result.starts_with(br#"{"tools""#) && result.ends_with(b"\"private\"}"));
        let public =
            br#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"ttlMs":0,"cacheScope":"public"}}"#;
        assert_eq!(hinted_result(public).map(|(h, _)| h.ttl_ms), Some(0));
    }

    #[test]
    fn errors_and_results_without_hints_are_not_cached() {
        for m in [
            &br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"x":"ttlMs","cacheScope":"public"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"ttlMs":-1,"cacheScope":"public"}}"#,
            b"",
        ] {
            assert!(hinted_result(m).is_none(), "{}", String::from_utf8_lossy(m));
        }
    }

    #[test]
    fn the_tag_ignores_the_id_and_follows_the_result() {
        let a = br#"{"jsonrpc":"2.0","id":1,"result":{"ttlMs":0,"cacheScope":"public"}}"#;
        let b = br#"{"jsonrpc":"2.0","id":"x","result":{"ttlMs":0,"cacheScope":"public"}}"#;
        let c = br#"{"jsonrpc":"2.0","id":1,"result":{"ttlMs":1,"cacheScope":"public"}}"#;
        let tag = |m: &[u8]| hinted_result(m).map(|(_, r)| entity_tag(r)).expect("a tag");
        assert_eq!(tag(a), tag(b));
        assert_ne!(tag(a), tag(c));
    }

    #[test]
    fn if_none_match_lists_and_weak_tags() {
        let tag = HeaderValue::from_static("\"abc\"");
        let yes = ["\"abc\"", "\"x\", \"abc\"", "W/\"abc\"", "*"];
        let no = ["\"abcd\"", "abc", "\"x\""];
        for v in yes {
            assert!(matches_tag(&HeaderValue::from_static(v), &tag), "{v}");
        }
        for v in no {
            assert!(!matches_tag(&HeaderValue::from_static(v), &tag), "{v}");
        }
    }

    #[test]
    fn max_age_is_whole_seconds() {
        let h = |ttl_ms, scope| cache_control(CacheHint { ttl_ms, scope });
        assert_eq!(h(30_999, CacheScope::Public), "public, max-age=30");
        assert_eq!(h(500, CacheScope::Private), "private, max-age=0");
    }
}
