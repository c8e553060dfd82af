//! The URLs of OAuth discovery: which may be fetched at all, the canonical form of a resource
//! (RFC 8707), the well-known locations of RFC 9728 and RFC 8414 / OpenID Discovery, and when a
//! metadata document's `resource` covers the server.

use reqwest::Url;

use super::AuthError;

/// Parses `url` and checks it may be contacted: absolute `https://`, or `http://` on a
/// loopback host (local development and tests), with no user info.
pub(crate) fn checked(what: &'static str, url: &str) -> Result<Url, AuthError> {
    let bad = || AuthError::InsecureUrl {
        what,
        url: url.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|_| bad())?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad());
    }
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(parsed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        _ => Err(bad()),
    }
}

/// The canonical URI of an MCP server (RFC 8707 §2, MCP authorization §"Canonical Server
/// URI"): scheme and host lowercased, default port dropped, no fragment, no trailing slash.
pub fn canonical_resource(url: &Url) -> String {
    let mut out = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push_str(url.path().trim_end_matches('/'));
    if let Some(q) = url.query() {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `scheme://host[:port]` of `url`.
pub(crate) fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The protected-resource metadata locations of RFC 9728 §3.1 for a server URL, in the order
/// MCP clients try them: path-inserted, then the root.
pub(crate) fn protected_resource_urls(server: &Url) -> Vec<Url> {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let path = server.path().trim_end_matches('/');
    let mut paths = Vec::new();
    if !path.is_empty() {
        paths.push(format!("{WELL_KNOWN}{path}"));
    }
    paths.push(WELL_KNOWN.to_owned());
    paths
        .into_iter()
        .filter_map(|p| server.join(&p).ok())
        .collect()
}

/// The authorization-server metadata locations for an issuer, in the order of the MCP
/// authorization spec (2025-11-25): for `https://h/p`, RFC 8414 path-inserted, OpenID
/// path-inserted, OpenID path-appended; for `https://h`, RFC 8414 then OpenID.
pub(crate) fn authorization_server_urls(issuer: &Url) -> Vec<Url> {
    const OAUTH: &str = "/.well-known/oauth-authorization-server";
    const OPENID: &str = "/.well-known/openid-configuration";
    let path = issuer.path().trim_end_matches('/');
    let paths = if path.is_empty() {
        vec![OAUTH.to_owned(), OPENID.to_owned()]
    } else {
        vec![
            format!("{OAUTH}{path}"),
            format!("{OPENID}{path}"),
            format!("{path}{OPENID}"),
        ]
    };
    paths
        .into_iter()
        .filter_map(|p| issuer.join(&p).ok())
        .collect()
}

/// True when a protected-resource metadata `resource` covers `server`: same origin, and its
/// path is the server's path or a parent of it on a segment boundary (a server at
/// `https://h/mcp` may be described by metadata for `https://h`).
pub(crate) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some() || origin(&r) != origin(server) {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    sp == rp || (sp.starts_with(rp) && sp.as_bytes().get(rp.len()) == Some(&b'/'))
}

/// True when two issuer identifiers name the same issuer: equal, or equal but for one
/// trailing slash (issuers in protected-resource metadata and in the server's own metadata
/// are often written one with and one without).
pub(crate) fn same_issuer(a: &str, b: &str) -> bool {
    a == b || a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// True when `url` names a loopback host: `localhost`, 127.0.0.0/8, `::1` or `::ffff:127.x`.
pub(crate) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    // The URL parser has already checked the address; IPv6 hosts keep their brackets.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn only_https_or_loopback_http() {
        for ok in [
            "https://as.example.com/x",
            "http://127.0.0.1:9/x",
            "http://localhost:1/",
            "http://[::1]/",
        ] {
            assert!(checked("x", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://as.example.com/",
            "http://localhost.evil.com/",
            "https://user:pw@as.example.com/",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/plain,x",
            "relative/path",
        ] {
            assert!(checked("x", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(
            canonical_resource(&u("HTTPS://MCP.Example.com:443/mcp/#frag")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource(&u("https://mcp.example.com/")),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource(&u("http://127.0.0.1:8000/mcp")),
            "http://127.0.0.1:8000/mcp"
        );
    }

    #[test]
    fn well_known_orders() {
        let prm: Vec<String> = protected_resource_urls(&u("https://h/public/mcp"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            prm,
            [
                "https://h/.well-known/oauth-protected-resource/public/mcp",
                "https://h/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(protected_resource_urls(&u("https://h/")).len(), 1);
        let with_path: Vec<String> = authorization_server_urls(&u("https://as/tenant1"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            with_path,
            [
                "https://as/.well-known/oauth-authorization-server/tenant1",
                "https://as/.well-known/openid-configuration/tenant1",
                "https://as/tenant1/.well-known/openid-configuration"
            ]
        );
        let root: Vec<String> = authorization_server_urls(&u("https://as/"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            root,
            [
                "https://as/.well-known/oauth-authorization-server",
                "https://as/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn resource_coverage() {
        let server = u("https://h:8443/api/mcp");
        assert!(resource_covers("https://h:8443/api/mcp", &server));
        assert!(resource_covers("https://h:8443/api/mcp/", &server));
        assert!(resource_covers("https://h:8443", &server));
        assert!(resource_covers("https://h:8443/api", &server));
        assert!(!resource_covers("https://h:8443/ap", &server));
        assert!(!resource_covers("https://h:8443/api/mcp/more", &server));
        assert!(!resource_covers(
            "https://evil.example.com/api/mcp",
            &server
        ));
        assert!(!resource_covers("http://h:8443/api/mcp", &server));
        assert!(!resource_covers("not a url", &server));
        assert!(same_issuer("https://as/", "https://as"));
        assert!(!same_issuer("https://as/x", "https://as"));
    }
}
