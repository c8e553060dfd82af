//! Reading the headers the transport cares about: `Content-Type`, `Accept`, the session
//! id, the protocol version, `Last-Event-ID`.
//!
//! Not here: what the values mean for routing (`post.rs`, `session_routing.rs`).

use http::header::AsHeaderName;
use http::{HeaderMap, header};

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
        let mut a = Accepts {
            json: false,
            sse: false,
        };
        for v in values {
            let Ok(v) = v.to_str() else { continue };
            for item in v.split(',') {
                let media = item.split(';').next().unwrap_or("").trim();
                if media.eq_ignore_ascii_case("*/*") {
                    a.json = true;
                    a.sse = true;
                } else if media.eq_ignore_ascii_case("application/json")
                    || media.eq_ignore_ascii_case("application/*")
                {
                    a.json = true;
                } else if media.eq_ignore_ascii_case("text/event-stream")
                    || media.eq_ignore_ascii_case("text/*")
                {
                    a.sse = true;
                }
            }
        }
        a
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
        assert_eq!(
            accept(&["text/html"]),
            Accepts {
                json: false,
                sse: false
            }
        );
    }
}
