//! CORS for the trusted origins (when [`cors`](super::StreamableHttpOptions::cors) is on):
//! preflight answers and the headers a browser page needs to read MCP responses, including
//! `Mcp-Session-Id`.
//!
//! Not here: which origins are trusted and when CORS applies (`security_layer.rs`).

use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use super::body::ResponseBody;

const EXPOSE: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate";
const METHODS: &str = "GET, POST, DELETE, OPTIONS";
const DEFAULT_HEADERS: &str = "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID";

/// Adds the CORS response headers for `origin`.
pub(crate) fn decorate(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

/// The answer to a preflight `OPTIONS` from a trusted origin.
pub(crate) fn preflight(request: &HeaderMap, origin: &HeaderValue) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    decorate(h, origin);
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(METHODS),
    );
    // `Mcp-Param-*` names vary per tool, so mirror what the page asks for.
    let allow = request
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static(DEFAULT_HEADERS));
    h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allow);
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    r
}
