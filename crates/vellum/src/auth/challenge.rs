//! The `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1) and its `DPoP …`
//! form (RFC 9449 §7.1), with correct quoting. What goes into it is decided by the layer; this only writes it.
//!
//! Also the OAuth-style JSON body of the layer's refusals.
//!
//! Not here: deciding the status and error (`layer.rs`).

use std::fmt::Write as _;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use crate::transport::http::ResponseBody;

/// A Bearer challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The URL of the Protected Resource Metadata (RFC 9728).
    pub resource_metadata: Option<String>,
    /// Every scope the operation needs, space-separated.
    pub scope: Option<String>,
    /// `invalid_request`, `invalid_token` or `insufficient_scope`; none when the request
    /// carried no credentials.
    pub error: Option<&'static str>,
    /// A human-readable reason (never internal error text).
    pub error_description: Option<&'static str>,
}

impl Challenge {
    /// The header value.
    pub fn to_header_value(&self) -> String {
        self.render("Bearer", None)
    }

    /// The same challenge for the `DPoP` scheme (RFC 9449 §7.1), with the proof algorithms
    /// the server accepts (`algs`, space-separated).
    pub fn to_dpop_header_value(&self, algs: &str) -> String {
        self.render("DPoP", Some(algs))
    }

    fn render(&self, scheme: &str, algs: Option<&str>) -> String {
        let mut out = String::from(scheme);
        let mut sep = " ";
        let params = [
            ("algs", algs),
            ("resource_metadata", self.resource_metadata.as_deref()),
            ("scope", self.scope.as_deref()),
            ("error", self.error),
            ("error_description", self.error_description),
        ];
        for (name, value) in params {
            if let Some(v) = value {
                let _ = write!(out, "{sep}{name}=\"");
                quote_into(&mut out, v);
                out.push('"');
                sep = ", ";
            }
        }
        out
    }
}

/// 503 with `Retry-After`: the token (or proof) cannot be checked right now.
pub(crate) fn unavailable() -> Response<ResponseBody> {
    let mut r = oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "The access token cannot be verified right now",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

/// An OAuth-style JSON error body (`error`, `error_description`) with `status`.
pub(crate) fn oauth_error(
    status: StatusCode,
    error: &str,
    description: &str,
) -> Response<ResponseBody> {
    let body = serde_json::json!({ "error": error, "error_description": description });
    let mut r = Response::new(ResponseBody::full(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Writes `v` as the inside of a quoted-string: `"` and `\` escaped, other control
/// characters dropped (they cannot appear in a header).
fn quote_into(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_ascii_control() => {}
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders() {
        assert_eq!(Challenge::default().to_header_value(), "Bearer");
        let c = Challenge {
            resource_metadata: Some(
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp".into(),
            ),
            scope: Some("files:read files:write".into()),
            error: Some("insufficient_scope"),
            error_description: Some("needs \"more\" \\ scopes\r\n"),
        };
        assert_eq!(
            c.to_header_value(),
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", \
             scope=\"files:read files:write\", error=\"insufficient_scope\", \
             error_description=\"needs \\\"more\\\" \\\\ scopes\""
        );
        assert!(http::HeaderValue::from_str(&c.to_header_value()).is_ok());
        let d = Challenge {
            error: Some("invalid_dpop_proof"),
            ..Challenge::default()
        };
        assert_eq!(
            d.to_dpop_header_value("ES256 EdDSA"),
            "DPoP algs=\"ES256 EdDSA\", error=\"invalid_dpop_proof\""
        );
    }
}
