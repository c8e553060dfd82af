//! Which paths the endpoint answers: MCP on its mount path (every path when none is set, as
//! in the seed), and never under `/.well-known/`, whose URIs name metadata documents: a
//! discovering client (the TypeScript SDK's OAuth discovery, RFC 8414 and OpenID probes)
//! takes only a 404 as "not here", and would otherwise get the endpoint's 400 or 406.
//!
//! Not here: the protected resource metadata itself (served by the authorization layer).

use super::options::StreamableHttpOptions;
use super::rejection::Rejection;

/// The prefix of well-known URIs (RFC 8615).
const WELL_KNOWN: &str = "/.well-known/";

/// Admits a request whose path the endpoint serves; 404 for any other.
pub(super) fn check_path(options: &StreamableHttpOptions, path: &str) -> Result<(), Rejection> {
    if path.starts_with(WELL_KNOWN) {
        return Err(Rejection::NotFound { mount: None });
    }
    match options.path.as_deref() {
        Some(mount) if mount != path => Err(Rejection::NotFound {
            mount: Some(mount.to_owned()),
        }),
        _ => Ok(()),
    }
}

/// The 404 of a well-known URI (RFC 8615), `None` for any other path: the authorization
/// layer answers it for those it does not serve, without asking for a token.
#[cfg(feature = "auth")]
pub(crate) fn well_known_not_found(
    path: &str,
) -> Option<http::Response<super::body::ResponseBody>> {
    path.starts_with(WELL_KNOWN)
        .then(|| Rejection::NotFound { mount: None }.into_response())
}
