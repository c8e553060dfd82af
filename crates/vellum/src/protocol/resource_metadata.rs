//! Protected Resource Metadata (RFC 9728): the document a client reads to learn which
//! authorization servers issue tokens for this MCP server, and where it is served.
//!
//! Not here: serving it (the resource server's auth layer) and reading it (the OAuth
//! client's discovery).

use serde::{Deserialize, Serialize};

/// The well-known prefix of the metadata (RFC 9728 §3). The path-aware URL appends the
/// resource's path: `/.well-known/oauth-protected-resource/mcp` for `https://host/mcp`.
pub const PROTECTED_RESOURCE_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The Protected Resource Metadata document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The canonical URI of the MCP server (the resource indicator clients send).
    pub resource: String,
    /// The issuers of tokens this server accepts (at least one).
    pub authorization_servers: Vec<String>,
    /// Scopes a client may request (kept minimal; never `offline_access`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How tokens may be presented: only the `Authorization` header.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bearer_methods_supported: Vec<String>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// The algorithms DPoP proofs may be signed with (RFC 9728 §2); empty without DPoP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dpop_signing_alg_values_supported: Vec<String>,
    /// Only DPoP-bound tokens are accepted (RFC 9728 §2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop_bound_access_tokens_required: bool,
}

impl ProtectedResourceMetadata {
    /// The document for `resource`, naming `authorization_servers`.
    pub fn new(resource: impl Into<String>, authorization_servers: Vec<String>) -> Self {
        ProtectedResourceMetadata {
            resource: resource.into(),
            authorization_servers,
            scopes_supported: Vec::new(),
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: None,
            dpop_signing_alg_values_supported: Vec::new(),
            dpop_bound_access_tokens_required: false,
        }
    }

    /// The path-aware well-known path for a resource path (`/mcp` →
    /// `/.well-known/oauth-protected-resource/mcp`; `/` or empty → the root form).
    pub fn well_known_path(resource_path: &str) -> String {
        let trimmed = resource_path.trim_end_matches('/');
        if trimmed.is_empty() {
            PROTECTED_RESOURCE_WELL_KNOWN.to_owned()
        } else if trimmed.starts_with('/') {
            format!("{PROTECTED_RESOURCE_WELL_KNOWN}{trimmed}")
        } else {
            format!("{PROTECTED_RESOURCE_WELL_KNOWN}/{trimmed}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            ProtectedResourceMetadata::well_known_path("/mcp"),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            ProtectedResourceMetadata::well_known_path("/a/b/"),
            "/.well-known/oauth-protected-resource/a/b"
        );
        assert_eq!(
            ProtectedResourceMetadata::well_known_path("/"),
            PROTECTED_RESOURCE_WELL_KNOWN
        );
        assert_eq!(
            ProtectedResourceMetadata::well_known_path(""),
            PROTECTED_RESOURCE_WELL_KNOWN
        );
    }

    #[test]
    fn serializes() {
        let m = ProtectedResourceMetadata::new(
            "https://mcp.example.com/mcp",
            vec!["https://as.example.com".into()],
        );
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://as.example.com"],
                "bearer_methods_supported": ["header"],
            })
        );
    }
}
