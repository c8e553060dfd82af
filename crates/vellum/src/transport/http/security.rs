//! The checks that run before anything else, as functions of one request: the localhost
//! DNS-rebinding defence ([`is_loopback_host`], judged against [`ConnectionInfo`]) and
//! cross-origin protection ([`CrossOriginProtection`]).
//!
//! Not here: running them around a service, and CORS (`security_layer.rs`).

use std::net::{IpAddr, SocketAddr};

use http::{HeaderMap, Method, header};

use super::rejection::Rejection;
use crate::config_error::{ConfigError, Kind as ConfigKind};

/// How the connection a request arrived on looks. [`serve`](super::serve) inserts it into
/// every request's extensions; when you serve the handler yourself, insert it too or set
/// [`StreamableHttpOptions::local_address`](super::StreamableHttpOptions::local_address),
/// or the handler judges requests as loopback ones (the safe assumption for the localhost
/// check: it cannot rule DNS rebinding out) and refuses public `Host`s saying why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The local address the connection was accepted on (`None` for Unix sockets).
    pub local: Option<SocketAddr>,
    /// The peer's address (`None` for Unix sockets).
    pub remote: Option<SocketAddr>,
}

/// What the localhost check knows of where a request arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// On a loopback address: the Host must be a loopback name (or an allowed host).
    Loopback,
    /// Elsewhere (another address, a Unix socket, which no browser reaches by DNS).
    Elsewhere,
    /// Nobody said: judged as loopback, and a refusal says how to tell the handler.
    Unknown,
}

impl ConnectionInfo {
    /// Where the request arrived: the connection's local address, else the configured one.
    fn arrival(info: Option<&ConnectionInfo>, configured: Option<SocketAddr>) -> Arrival {
        let local = match info {
            Some(ConnectionInfo { local: Some(a), .. }) => Some(*a),
            // A Unix socket: no browser can reach it by DNS, so nothing to rebind.
            Some(ConnectionInfo { local: None, .. }) => return Arrival::Elsewhere,
            None => configured,
        };
        match local {
            Some(a) if a.ip().is_loopback() || is_mapped_loopback(a.ip()) => Arrival::Loopback,
            Some(_) => Arrival::Elsewhere,
            None => Arrival::Unknown,
        }
    }
}

/// The settings of the localhost check beyond on/off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LocalhostPolicy {
    /// The address the handler is served on when connections do not say.
    pub(crate) local_address: Option<SocketAddr>,
    /// Hosts accepted besides loopback names, lowercase, without ports.
    pub(crate) allowed_hosts: Vec<String>,
}

impl LocalhostPolicy {
    /// The policy of these options' `local_address` and `allowed_hosts`.
    pub(crate) fn new(local_address: Option<SocketAddr>, allowed_hosts: &[String]) -> Self {
        LocalhostPolicy {
            local_address,
            allowed_hosts: allowed_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    fn allows(&self, authority: &str) -> bool {
        !self.allowed_hosts.is_empty()
            && host_part(authority)
                .is_some_and(|h| self.allowed_hosts.iter().any(|a| a.eq_ignore_ascii_case(h)))
    }
}

fn is_mapped_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        IpAddr::V4(_) => false,
    }
}

/// Splits `host[:port]` (with `[v6]` brackets) and returns the host part; `None` when the
/// authority is malformed (anything but an optional `:digits` after a bracketed literal).
fn host_part(authority: &str) -> Option<&str> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        let port_ok = tail.is_empty()
            || tail
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
        return port_ok.then_some(host);
    }
    Some(match authority.rsplit_once(':') {
        Some((h, port)) if !h.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    })
}

/// True for `localhost`, `127.x.y.z`, `[::1]`, each with an optional port.
pub fn is_loopback_host(authority: &str) -> bool {
    let Some(host) = host_part(authority) else {
        return false;
    };
    if authority.starts_with('[') {
        // Brackets hold an IPv6 literal, and only that.
        return host
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback() || is_mapped_loopback(IpAddr::V6(ip)));
    }
    if host == "127.0.0.1" || host == "localhost" {
        return true; // the common cases, without parsing
    }
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<IpAddr>()
        .is_ok_and(|ip| ip.is_loopback() || is_mapped_loopback(ip))
}

/// The DNS-rebinding defence: a loopback connection must name a loopback host (or one the
/// policy allows).
pub(crate) fn check_localhost(
    headers: &HeaderMap,
    uri: &http::Uri,
    info: Option<&ConnectionInfo>,
    policy: &LocalhostPolicy,
) -> Result<(), Rejection> {
    let arrival = ConnectionInfo::arrival(info, policy.local_address);
    if arrival == Arrival::Elsewhere {
        return Ok(());
    }
    let host = request_host(headers, uri);
    match host {
        Some(h) if is_loopback_host(h) || policy.allows(h) => Ok(()),
        Some(_) if arrival == Arrival::Unknown => Err(Rejection::Forbidden(
            "Forbidden: invalid Host header (this handler does not know the address it is served on, so it accepts loopback hosts only: serve it with vellum's serve, or set StreamableHttpOptions::local_address)",
        )),
        Some(_) => Err(Rejection::Forbidden("Forbidden: invalid Host header")),
        None => Err(Rejection::Forbidden("Forbidden: missing Host header")),
    }
}

/// A request of HTTP/1.1 or later must name its authority, in the target or in `Host`: RFC
/// 9112 §3.2 has a server answer 400 to an HTTP/1.1 request without `Host` (and RFC 9113
/// §8.3.1 makes an HTTP/2 `http`/`https` request without `:authority` or `Host` malformed),
/// on any connection, whatever the other checks. HTTP/1.0 predates `Host` and is left to the
/// localhost check. What is named must be well formed: a `Host` of visible ASCII, a port
/// that fits 16 bits, and on HTTP/2 a `host` that agrees with `:authority` (RFC 9113
/// §8.3.1: a request where they differ is malformed).
pub(crate) fn check_host_present(
    version: http::Version,
    headers: &HeaderMap,
    uri: &http::Uri,
) -> Result<(), Rejection> {
    let bad = |message: &'static str| Rejection::BadRequest {
        id: None,
        message: message.into(),
    };
    let host = match headers.get(header::HOST).map(|v| v.to_str()) {
        Some(Ok(h)) => Some(h),
        Some(Err(_)) => return Err(bad("Bad Request: the Host header is not ASCII")),
        None => None,
    };
    let authority = uri.authority().map(|a| a.as_str());
    if version >= http::Version::HTTP_2
        && let (Some(a), Some(h)) = (authority, host)
        && !a.eq_ignore_ascii_case(h)
    {
        return Err(bad("Bad Request: :authority and Host differ"));
    }
    match authority.or(host) {
        Some(named) if !port_fits(named) => Err(bad("Bad Request: invalid port in Host")),
        Some(_) => Ok(()),
        None if matches!(version, http::Version::HTTP_09 | http::Version::HTTP_10) => Ok(()),
        None => Err(bad("Bad Request: missing Host header")),
    }
}

/// Whether the port of `authority` (`host[:port]`, `[v6][:port]`), if it names one, fits
/// 16 bits. Only a port of digits is judged here: anything else after the host makes it a
/// host no check matches, which the localhost check refuses.
fn port_fits(authority: &str) -> bool {
    let port = match authority.rsplit_once(']') {
        Some((_, tail)) => tail.strip_prefix(':').unwrap_or(""),
        None if authority.matches(':').count() == 1 => {
            authority.rsplit_once(':').map_or("", |(_, p)| p)
        }
        None => "",
    };
    port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || port.parse::<u16>().is_ok()
}

/// The authority of the request target when it has one (absolute form, HTTP/2's
/// `:authority`), else the `Host` header: RFC 9112 §3.2.2 has a server ignore `Host` for
/// an absolute-form target.
fn request_host<'a>(headers: &'a HeaderMap, uri: &'a http::Uri) -> Option<&'a str> {
    uri.authority()
        .map(|a| a.as_str())
        .or_else(|| headers.get(header::HOST).and_then(|v| v.to_str().ok()))
}

/// Cross-origin request protection with the semantics of Go's `http.CrossOriginProtection`:
/// safe methods (GET, HEAD, OPTIONS) pass; otherwise `Sec-Fetch-Site` decides when present
/// (`same-origin` and `none` pass), else the `Origin` header must match `Host`; trusted
/// origins and bypassed paths are exempt. A request with neither header (any non-browser
/// client) passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossOriginProtection {
    enabled: bool,
    trusted: Vec<String>,
    bypass: Vec<String>,
}

impl Default for CrossOriginProtection {
    fn default() -> Self {
        CrossOriginProtection {
            enabled: true,
            trusted: Vec::new(),
            bypass: Vec::new(),
        }
    }
}

impl CrossOriginProtection {
    /// The default policy (on, nothing trusted).
    pub fn new() -> Self {
        Self::default()
    }

    /// No cross-origin checks beyond the spec's rule on a present `Origin` header.
    pub fn disabled() -> Self {
        CrossOriginProtection {
            enabled: false,
            ..Self::default()
        }
    }

    /// True unless [`CrossOriginProtection::disabled`].
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Trusts requests from `origin` (exact match, e.g. `https://app.example.com`).
    pub fn add_trusted_origin(&mut self, origin: &str) -> Result<&mut Self, ConfigError> {
        let valid = origin.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && !rest.is_empty()
                && !rest.contains(['/', '?', '#'])
        });
        if !valid {
            return Err(ConfigKind::Origin {
                origin: origin.to_owned(),
            }
            .into());
        }
        self.trusted.push(origin.to_ascii_lowercase());
        Ok(self)
    }

    /// Exempts requests whose path starts with `prefix` (use sparingly).
    pub fn add_insecure_bypass_prefix(&mut self, prefix: impl Into<String>) -> &mut Self {
        self.bypass.push(prefix.into());
        self
    }

    /// The trusted origins.
    pub fn trusted_origins(&self) -> &[String] {
        &self.trusted
    }

    /// True when `origin` is trusted.
    pub fn is_trusted(&self, origin: &str) -> bool {
        self.trusted.iter().any(|t| t.eq_ignore_ascii_case(origin))
    }

    /// Checks a request.
    pub(crate) fn check(
        &self,
        method: &Method,
        uri: &http::Uri,
        headers: &HeaderMap,
    ) -> Result<(), Rejection> {
        let origin = headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or("\u{0}"));
        let host = request_host(headers, uri);
        // The spec's rule holds in every mode: a present Origin must be ours or trusted.
        if let Some(o) = origin
            && !self.is_trusted(o)
            && !same_origin(o, host)
        {
            return Err(Rejection::Forbidden(
                "Forbidden: cross-origin request (Origin not allowed)",
            ));
        }
        if !self.enabled || matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return Ok(());
        }
        if self
            .bypass
            .iter()
            .any(|p| uri.path().starts_with(p.as_str()))
        {
            return Ok(());
        }
        match headers
            .get(super::headers::names::SEC_FETCH_SITE)
            .map(|v| v.to_str().unwrap_or(""))
        {
            Some("same-origin" | "none") => Ok(()),
            Some(_) => match origin {
                Some(o) if self.is_trusted(o) => Ok(()),
                _ => Err(Rejection::Forbidden(
                    "Forbidden: cross-origin request detected from Sec-Fetch-Site header",
                )),
            },
            // No Sec-Fetch-Site: the Origin rule above already decided.
            None => Ok(()),
        }
    }
}

/// True when `origin` (`scheme://host[:port]`) names the same host and port as `host`.
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    match origin.split_once("://") {
        Some((_, authority)) if !authority.is_empty() => authority.eq_ignore_ascii_case(host),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_check(version: http::Version, uri: &str, host: &[u8]) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        if !host.is_empty() {
            headers.insert(header::HOST, http::HeaderValue::from_bytes(host).unwrap());
        }
        let uri: http::Uri = uri.parse().unwrap();
        check_host_present(version, &headers, &uri).map_err(|r| match r {
            Rejection::BadRequest { message, .. } => message,
            other => format!("{other:?}"),
        })
    }

    #[test]
    fn the_named_authority_must_be_well_formed() {
        use http::Version as V;
        assert!(host_check(V::HTTP_11, "/mcp", b"127.0.0.1:8080").is_ok());
        assert!(host_check(V::HTTP_11, "/mcp", b"[::1]:65535").is_ok());
        assert!(host_check(V::HTTP_11, "/mcp", b"example.com:").is_ok());
        // Not a port of digits: left to the localhost check.
        assert!(host_check(V::HTTP_11, "/mcp", b"[::1]evil.com").is_ok());
        assert!(host_check(V::HTTP_11, "/mcp", b"h:8x").is_ok());
        for bad in [&b"127.0.0.1:99999"[..], b"[::1]:70000", b"h:000000065536"] {
            let e = host_check(V::HTTP_11, "/mcp", bad).unwrap_err();
            assert!(e.contains("invalid port"), "{e}");
        }
        let e = host_check(V::HTTP_11, "/mcp", "caf\u{e9}.example".as_bytes()).unwrap_err();
        assert!(e.contains("not ASCII"), "{e}");
        let e = host_check(V::HTTP_11, "/mcp", b"").unwrap_err();
        assert!(e.contains("missing Host"), "{e}");
        // HTTP/2: `host` must agree with `:authority`; HTTP/1.1's absolute form ignores it.
        let e = host_check(V::HTTP_2, "http://127.0.0.1/mcp", b"evil.com").unwrap_err();
        assert!(e.contains(":authority and Host differ"), "{e}");
        assert!(host_check(V::HTTP_2, "http://127.0.0.1/mcp", b"127.0.0.1").is_ok());
        assert!(host_check(V::HTTP_11, "http://127.0.0.1/mcp", b"evil.com").is_ok());
        let e = host_check(V::HTTP_2, "http://127.0.0.1:99999/mcp", b"").unwrap_err();
        assert!(e.contains("invalid port"), "{e}");
    }

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:8000",
            "LOCALHOST",
            "127.0.0.1",
            "127.0.0.1:1",
            "127.9.9.9",
            "[::1]",
            "[::1]:80",
            "::1",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "localhost.evil.com",
            "localhost.",
            "10.0.0.1",
            "0.0.0.0",
            "[::2]:80",
            "[::1]evil.com",
            "[::1]:80x",
            "[::1].evil.com:80",
            "[::1",
            "[127.0.0.1]",
            "evil.com:8000",
            "",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    fn h(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        m
    }

    #[test]
    fn cross_origin_matrix() {
        let uri: http::Uri = "/mcp".parse().unwrap();
        let p = CrossOriginProtection::default();
        let post = Method::POST;
        // Non-browser clients: no Origin, no Sec-Fetch-Site.
        assert!(
            p.check(&post, &uri, &h(&[("host", "localhost:8000")]))
                .is_ok()
        );
        // Same origin.
        assert!(
            p.check(
                &post,
                &uri,
                &h(&[
                    ("host", "localhost:8000"),
                    ("origin", "http://localhost:8000")
                ])
            )
            .is_ok()
        );
        // Cross origin.
        assert!(
            p.check(
                &post,
                &uri,
                &h(&[("host", "localhost:8000"), ("origin", "http://evil.com")])
            )
            .is_err()
        );
        assert!(
            p.check(
                &post,
                &uri,
                &h(&[("host", "localhost:8000"), ("origin", "null")])
            )
            .is_err()
        );
        assert!(
            p.check(
                &post,
                &uri,
                &h(&[("host", "localhost:8000"), ("sec-fetch-site", "cross-site")])
            )
            .is_err()
        );
        assert!(
            p.check(
                &post,
                &uri,
                &h(&[
                    ("host", "localhost:8000"),
                    ("sec-fetch-site", "same-origin")
                ])
            )
            .is_ok()
        );
        // Safe methods skip Sec-Fetch-Site, but never the Origin rule.
        assert!(
            p.check(
                &Method::GET,
                &uri,
                &h(&[("host", "x"), ("sec-fetch-site", "cross-site")])
            )
            .is_ok()
        );
        assert!(
            p.check(
                &Method::GET,
                &uri,
                &h(&[("host", "x"), ("origin", "http://evil.com")])
            )
            .is_err()
        );
        // Trusted.
        let mut t = CrossOriginProtection::default();
        t.add_trusted_origin("http://app.test:3000").unwrap();
        assert!(
            t.check(
                &post,
                &uri,
                &h(&[
                    ("host", "localhost:8000"),
                    ("origin", "http://app.test:3000"),
                    ("sec-fetch-site", "cross-site")
                ])
            )
            .is_ok()
        );
        assert!(t.add_trusted_origin("http://x/path").is_err());
        // Disabled keeps the Origin rule.
        let d = CrossOriginProtection::disabled();
        assert!(
            d.check(
                &post,
                &uri,
                &h(&[("host", "a"), ("sec-fetch-site", "cross-site")])
            )
            .is_ok()
        );
        assert!(
            d.check(&post, &uri, &h(&[("host", "a"), ("origin", "http://b")]))
                .is_err()
        );
    }
}
