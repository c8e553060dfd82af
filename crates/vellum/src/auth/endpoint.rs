//! Configuration checks shared by the verifiers and the layer: which URLs may be fetched or
//! advertised (https, or http on loopback only), and the one HTTP client the verifiers use
//! (rustls with the platform's roots, no redirects, no proxy, 5 s timeout).
//!
//! Not here: verifying tokens (`jwt.rs`, `introspection.rs`).

use std::time::Duration;

use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::transport::http::is_loopback_host;

/// Checks that `url` may be fetched or advertised: https anywhere, http on loopback only.
pub(crate) fn check_url(what: &'static str, url: &str) -> Result<http::Uri, ConfigError> {
    let bad = || {
        ConfigError::from(ConfigKind::InsecureUrl {
            what,
            url: url.to_owned(),
        })
    };
    let uri: http::Uri = url.parse().map_err(|_| bad())?;
    let authority = uri.authority().ok_or_else(bad)?;
    if authority.as_str().contains('@') {
        return Err(bad());
    }
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if is_loopback_host(authority.as_str()) => Ok(uri),
        _ => Err(bad()),
    }
}

/// Checks a scope token (RFC 6749 §3.3: `%x21 / %x23-5B / %x5D-7E`).
pub(crate) fn check_scope(scope: &str) -> Result<(), ConfigError> {
    let ok = !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ConfigKind::Scope {
            scope: scope.to_owned(),
        }
        .into())
    }
}

/// How long a key-set or introspection call may take in all.
pub(crate) const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// The HTTP client of the verifiers: reqwest's rustls with the platform's roots, no
/// redirects, no proxy, a 5 s limit on every call.
pub(crate) fn http_client() -> Result<reqwest::Client, ConfigError> {
    crate::transport::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(HTTP_TIMEOUT)
        .timeout(HTTP_TIMEOUT)
        .build()
        .map_err(|e| ConfigError::with_source(ConfigKind::AuthHttpClient, e))
}

/// Reads a response body up to `limit` bytes (`None` beyond it).
pub(crate) async fn read_limited(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > limit {
            return Ok(None);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Some(out))
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for ok in [
            "https://as.example.com",
            "https://as.example.com/tenant/.well-known/jwks.json",
            "http://127.0.0.1:9000/jwks",
            "http://localhost/jwks",
            "http://[::1]:80/x",
        ] {
            assert!(check_url("x", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://as.example.com/jwks",
            "http://localhost.evil.com/jwks",
            "ftp://127.0.0.1/",
            "/relative",
            "https://user@host/",
            "",
        ] {
            assert!(check_url("x", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes() {
        assert!(check_scope("mcp:tools").is_ok());
        assert!(check_scope("read").is_ok());
        for bad in ["", "a b", "a\"b", "a\\b", "é"] {
            assert!(check_scope(bad).is_err(), "{bad}");
        }
    }
}
