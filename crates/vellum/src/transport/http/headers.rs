//! Reading the headers the transport cares about: `Content-Type`, `Accept`, the session
//! id, the protocol version, `Last-Event-ID`.
//!
//! Not here: what the values mean for routing (`post.rs`, `session_routing.rs`).

use http::header::AsHeaderName;
use http::{HeaderMap, HeaderName, header};

use super::rejection::Rejection;

/// The headers a request may carry once at most: a second value would let two readers
/// (a proxy, this server) see two different requests.
const SINGLETONS: [HeaderName; 7] = [
    header::HOST,
    header::CONTENT_TYPE,
    header::ORIGIN,
    names::SEC_FETCH_SITE,
    names::SESSION_ID,
    names::PROTOCOL_VERSION,
    names::LAST_EVENT_ID,
];

/// The most bytes of request head (target and header lines) a request may have: what the
/// accept loop's read buffer holds. Checked on the parsed head, so the limit is the same
/// whatever the packets the head came in (the buffer alone cut at different points).
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Refuses (431) a request whose head is larger than [`MAX_HEAD_BYTES`].
pub(crate) fn check_head_size(uri: &http::Uri, headers: &HeaderMap) -> Result<(), Rejection> {
    // The target's length as sent, without formatting it: `scheme://authority` then the
    // path and query (origin form has only those).
    let mut size = uri.path_and_query().map_or(1, |p| p.as_str().len());
    if let Some(a) = uri.authority() {
        size += a.as_str().len() + uri.scheme_str().map_or(0, |s| s.len() + 3);
    }
    for (name, value) in headers {
        // `name: value\r\n`
        size += name.as_str().len() + value.len() + 4;
        if size > MAX_HEAD_BYTES {
            return Err(Rejection::HeadersTooLarge);
        }
    }
    Ok(())
}

/// Refuses (400) a request that repeats a singleton header, or whose `Last-Event-ID` is not
/// visible ASCII (the only form event ids take).
pub(crate) fn check_singletons(headers: &HeaderMap) -> Result<(), Rejection> {
    // As many values as names: no header is repeated, so no singleton is (the common case,
    // answered without a lookup per singleton).
    let repeats = headers.len() != headers.keys_len();
    for name in SINGLETONS.iter().filter(|_| repeats) {
        let mut values = headers.get_all(name).iter();
        if values.next().is_some() && values.next().is_some() {
            return Err(Rejection::BadRequest {
                id: None,
                message: format!("Bad Request: the {name} header is repeated"),
            });
        }
    }
    if let Some(v) = headers.get(names::LAST_EVENT_ID)
        && v.to_str().is_err()
    {
        return Err(Rejection::BadLastEventId(
            "Bad Request: malformed Last-Event-ID",
        ));
    }
    Ok(())
}

/// Header names of the MCP transport (prebuilt, so lookups need no parsing).
pub mod names {
    use http::HeaderName;

    /// The legacy session id.
    pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
    /// The protocol version.
    pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    /// The JSON-RPC method (2026-07-28).
    pub const METHOD: HeaderName = HeaderName::from_static("mcp-method");
    /// The tool, prompt or resource name (2026-07-28).
    pub const NAME: HeaderName = HeaderName::from_static("mcp-name");
    /// Resumption cursor.
    pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
    /// Tells nginx-like proxies not to buffer a stream.
    pub const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");
    /// The fetch metadata header browsers send.
    pub const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");
}

/// Which bodies the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    /// Reads every `Accept` header. A missing header accepts anything.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Accepts {
        let mut values = headers.get_all(header::ACCEPT).iter().peekable();
        if values.peek().is_none() {
            return Accepts {
                json: true,
                sse: true,
            };
        }
        // The most specific media range that matches decides each type (RFC 9110 §12.5.1),
        // and a quality of 0 excludes it.
        let (mut json, mut sse) = ((0u8, false), (0u8, false));
        for v in values {
            let Ok(v) = v.to_str() else { continue };
            for item in v.split(',') {
                let mut params = item.split(';');
                let media = params.next().unwrap_or("").trim();
                let acceptable = params
                    .filter_map(|p| p.split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                    .is_none_or(|(_, q)| q.trim().parse::<f32>().map_or(true, |q| q > 0.0));
                let (for_json, for_sse) = if media.eq_ignore_ascii_case("*/*") {
                    (1, 1)
                } else if media.eq_ignore_ascii_case("application/*") {
                    (2, 0)
                } else if media.eq_ignore_ascii_case("text/*") {
                    (0, 2)
                } else if media.eq_ignore_ascii_case("application/json") {
                    (3, 0)
                } else if media.eq_ignore_ascii_case("text/event-stream") {
                    (0, 3)
                } else {
                    (0, 0)
                };
                for (specificity, slot) in [(for_json, &mut json), (for_sse, &mut sse)] {
                    // Equally specific ranges: any acceptable one accepts.
                    if specificity > slot.0
                        || (specificity == slot.0 && specificity > 0 && acceptable)
                    {
                        *slot = (specificity, acceptable);
                    }
                }
            }
        }
        Accepts {
            json: json.1,
            sse: sse.1,
        }
    }
}

/// True when `Content-Type` is `application/json` (parameters and case ignored).
pub(crate) fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(v) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    if v.as_bytes() == b"application/json" {
        return true;
    }
    Some(v)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
}

/// A header's value as trimmed text (`None` if absent or not visible ASCII).
pub(crate) fn text<K: AsHeaderName>(headers: &HeaderMap, name: K) -> Option<&str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim_matches([' ', '\t']))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &[&str]) -> Accepts {
        let mut h = HeaderMap::new();
        for x in v {
            h.append(header::ACCEPT, x.parse().unwrap());
        }
        Accepts::from_headers(&h)
    }

    #[test]
    fn accept_variants() {
        assert_eq!(
            accept(&[]),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accept(&["application/json, text/event-stream"]),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accept(&["text/event-stream, application/json"]),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accept(&["text/event-stream"]),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accept(&["application/json;q=0.9"]),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accept(&["application/json", "text/event-stream"]),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accept(&["*/*"]),
            Accepts {
                json: true,
                sse: true
            }
        );
        // q=0 excludes, and the most specific range decides.
        assert_eq!(
            accept(&["application/json;q=0, text/event-stream"]),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accept(&["*/*;q=0"]),
            Accepts {
                json: false,
                sse: false
            }
        );
        assert_eq!(
            accept(&["application/json; q=0.0, */*"]),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accept(&["*/*;q=0, application/json;q=0.5"]),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accept(&["text/html"]),
            Accepts {
                json: false,
                sse: false
            }
        );
    }
}
