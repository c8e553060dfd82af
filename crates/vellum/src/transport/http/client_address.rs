//! [`ClientAddresses`]: which address a request comes from, for the limits counted per
//! client address (the rate limit without a principal, failed authentications, sessions
//! without authentication).
//!
//! The derivation, in order:
//! 1. The TCP peer's address (an IPv4-mapped IPv6 address counts as the IPv4 one).
//! 2. Only when the peer is a trusted proxy: the hops it forwarded, from the one header the
//!    operator picked ([`ForwardedHeader`]: `X-Forwarded-For` by default, or `Forwarded`,
//!    RFC 7239, its `for=` parameters), read from the right: the first hop that is not itself a trusted proxy is the client.
//!    A hop that cannot be read (`unknown`, an obfuscated name) ends the walk at the last
//!    trusted hop: that proxy's address is then the client's. When every hop is trusted,
//!    the leftmost is the client. An untrusted peer's headers are never read, so a client
//!    cannot choose its own key. The other header is never read: a proxy that appends to
//!    one passes the client's own copy of the other through, and reading it would let the
//!    client choose its key.
//! 3. The key: an IPv4 address as is, an IPv6 address cut to its prefix (`/64` by default:
//!    one subscriber's network is one client, not 2^64 of them).
//!
//! Not here: the limits themselves (`rate_limit.rs`, the session caps, the auth layer).

use std::net::{IpAddr, Ipv6Addr};

use http::HeaderMap;
use ipnet::IpNet;

use super::security::ConnectionInfo;

/// How the handler tells clients apart by address (see the module documentation of
/// `client_address.rs` for the derivation): set as `StreamableHttpOptions::client_addresses`;
/// the authorization layer takes the same (`AuthLayerBuilder::request_checks_of`).
///
/// ```
/// use vellum::transport::http::ClientAddresses;
///
/// let clients = ClientAddresses::default()
///     .trust_proxy("10.0.0.0/8".parse().unwrap())
///     .ipv6_prefix(56);
/// let mut headers = http::HeaderMap::new();
/// headers.insert("x-forwarded-for", "203.0.113.7, 10.1.2.3".parse().unwrap());
/// let client = clients.client_ip(&headers, "10.0.0.1".parse().unwrap());
/// assert_eq!(client, "203.0.113.7".parse::<std::net::IpAddr>().unwrap());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientAddresses {
    /// The proxies whose `Forwarded` / `X-Forwarded-For` are believed (addresses or ranges).
    /// Default: none (the TCP peer is the client).
    pub trusted_proxies: Vec<IpNet>,
    /// The leading bits of an IPv6 address that make one client (0 to 128; IPv4 addresses
    /// count whole). Default: [`ClientAddresses::DEFAULT_IPV6_PREFIX`] (64).
    pub ipv6_prefix: u8,
    /// The one header a trusted proxy's hops are read from (the other is ignored).
    /// Default: [`ForwardedHeader::XForwardedFor`].
    pub forwarded_header: ForwardedHeader,
}

/// Which header carries the hops a trusted proxy forwarded: the one the proxy in front
/// appends to (nginx, AWS ALB, most ingresses: `X-Forwarded-For`). Only that one is read, as
/// the other arrives as the client wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardedHeader {
    /// `X-Forwarded-For` (the default).
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239), its `for=` parameters.
    Forwarded,
}

impl Default for ClientAddresses {
    fn default() -> Self {
        ClientAddresses {
            trusted_proxies: Vec::new(),
            ipv6_prefix: Self::DEFAULT_IPV6_PREFIX,
            forwarded_header: ForwardedHeader::default(),
        }
    }
}

impl ClientAddresses {
    /// The default IPv6 prefix of one client: a /64, the smallest network a subscriber gets.
    pub const DEFAULT_IPV6_PREFIX: u8 = 64;

    /// Adds a trusted proxy (an address is a `/32` or `/128` range).
    #[must_use]
    pub fn trust_proxy(mut self, proxy: IpNet) -> Self {
        self.trusted_proxies.push(proxy);
        self
    }

    /// Sets the IPv6 prefix of one client (more than 128 counts as 128).
    #[must_use]
    pub fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.ipv6_prefix = bits.min(128);
        self
    }

    /// Reads the hops from `header` only (see [`ForwardedHeader`]).
    #[must_use]
    pub fn forwarded_header(mut self, header: ForwardedHeader) -> Self {
        self.forwarded_header = header;
        self
    }

    /// True when `ip` is a trusted proxy (an IPv4-mapped address or range, such as
    /// `::ffff:10.0.0.0/104`, counts as the IPv4 one).
    pub fn is_trusted(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.trusted_proxies
            .iter()
            .any(|net| canonical_net(*net).contains(&ip))
    }

    /// The client's address of a request that came from `peer` with `headers`.
    pub fn client_ip(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.is_trusted(client) {
            return client;
        }
        for hop in forwarded_hops(headers, self.forwarded_header)
            .into_iter()
            .rev()
        {
            let Some(hop) = hop else { return client };
            client = hop.to_canonical();
            if !self.is_trusted(client) {
                return client;
            }
        }
        client
    }

    /// The address a per-client limit counts `ip` under: IPv4 whole, IPv6 cut to the prefix.
    pub fn key_of(&self, ip: IpAddr) -> IpAddr {
        match ip.to_canonical() {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => {
                let bits = u32::from(self.ipv6_prefix.min(128));
                let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }

    /// The key of the client of a request, or `None` when the connection has no address (a
    /// Unix socket, or a server that does not say).
    pub(crate) fn key_of_request(
        &self,
        headers: &HeaderMap,
        connection: Option<&ConnectionInfo>,
    ) -> Option<IpAddr> {
        let peer = connection?.remote?.ip();
        Some(self.key_of(self.client_ip(headers, peer)))
    }
}

/// The client's address key, put in a POST's extensions by the endpoint for a caller
/// without a principal: for the session routing (which has no connection to read it from)
/// and the server core (tasks are counted per address).
pub(super) use crate::server::ClientKey;

/// A range of IPv4-mapped IPv6 addresses (`::ffff:0:0/96` and narrower) as the IPv4 range,
/// since the peer and the hops are compared in their canonical form.
fn canonical_net(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.network().to_ipv4_mapped() {
            Some(v4) => ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96).map_or(net, IpNet::V4),
            None => net,
        },
        other => other,
    }
}

/// The hops of the operator's header, leftmost first; `None` for one that is not an address.
fn forwarded_hops(headers: &HeaderMap, header: ForwardedHeader) -> Vec<Option<IpAddr>> {
    if header == ForwardedHeader::Forwarded {
        return headers
            .get_all(http::header::FORWARDED)
            .iter()
            .flat_map(|v| v.to_str().unwrap_or("").split(','))
            .map(|element| {
                element.split(';').find_map(|pair| {
                    let (name, value) = pair.split_once('=')?;
                    name.trim()
                        .eq_ignore_ascii_case("for")
                        .then(|| node_address(value.trim().trim_matches('"')))
                })?
            })
            .collect();
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("").split(','))
        .map(|hop| node_address(hop.trim()))
        .collect()
}

/// An address with or without a port (`192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:80`).
fn node_address(s: &str) -> Option<IpAddr> {
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    s.parse().ok().or_else(|| {
        let (host, port) = s.rsplit_once(':')?;
        port.parse::<u16>().ok()?;
        host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        let c = ClientAddresses::default();
        let h = headers(&[("x-forwarded-for", "1.2.3.4")]);
        assert_eq!(c.client_ip(&h, ip("127.0.0.1")), ip("127.0.0.1"));
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let c = ClientAddresses::default()
            .trust_proxy("10.0.0.0/8".parse().unwrap())
            .trust_proxy("127.0.0.1/32".parse().unwrap());
        // The client forged the first hop; 10.0.0.2 is a proxy of ours.
        let h = headers(&[
            ("x-forwarded-for", "6.6.6.6, 203.0.113.9"),
            ("x-forwarded-for", "10.0.0.2"),
        ]);
        assert_eq!(c.client_ip(&h, ip("127.0.0.1")), ip("203.0.113.9"));
        // Every hop trusted: the leftmost.
        let h = headers(&[("x-forwarded-for", "10.0.0.3, 10.0.0.2")]);
        assert_eq!(c.client_ip(&h, ip("127.0.0.1")), ip("10.0.0.3"));
        // An unreadable hop ends the walk at the last trusted one.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, garbage, 10.0.0.2")]);
        assert_eq!(c.client_ip(&h, ip("127.0.0.1")), ip("10.0.0.2"));
    }

    #[test]
    fn only_the_operators_header_is_read() {
        // A proxy that appends to X-Forwarded-For passes the client's own `Forwarded` on.
        let xff = ClientAddresses::default().trust_proxy("127.0.0.1/32".parse().unwrap());
        let h = headers(&[
            ("forwarded", "for=6.6.6.6"),
            ("x-forwarded-for", "203.0.113.9"),
        ]);
        assert_eq!(xff.client_ip(&h, ip("127.0.0.1")), ip("203.0.113.9"));
        let h = headers(&[("forwarded", "for=6.6.6.6")]);
        assert_eq!(xff.client_ip(&h, ip("127.0.0.1")), ip("127.0.0.1"));
        // And the other way round.
        let fwd = xff.forwarded_header(ForwardedHeader::Forwarded);
        let h = headers(&[
            ("forwarded", "for=203.0.113.9"),
            ("x-forwarded-for", "6.6.6.6"),
        ]);
        assert_eq!(fwd.client_ip(&h, ip("127.0.0.1")), ip("203.0.113.9"));
    }

    #[test]
    fn a_mapped_trusted_range_matches_ipv4_peers() {
        let c = ClientAddresses::default().trust_proxy("::ffff:10.0.0.0/104".parse().unwrap());
        assert!(c.is_trusted(ip("10.1.2.3")));
        assert!(c.is_trusted(ip("::ffff:10.1.2.3")));
        assert!(!c.is_trusted(ip("11.1.2.3")));
        let one = ClientAddresses::default().trust_proxy("::ffff:10.0.0.1/128".parse().unwrap());
        assert!(one.is_trusted(ip("10.0.0.1")));
        assert!(!one.is_trusted(ip("10.0.0.2")));
    }

    #[test]
    fn the_forwarded_header_when_picked() {
        let c = ClientAddresses::default()
            .trust_proxy("127.0.0.1/32".parse().unwrap())
            .forwarded_header(ForwardedHeader::Forwarded);
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            (
                "forwarded",
                r#"for=192.0.2.60;proto=http, For="[2001:db8:cafe::17]:4711""#,
            ),
        ]);
        assert_eq!(c.client_ip(&h, ip("127.0.0.1")), ip("2001:db8:cafe::17"));
        let h = headers(&[("forwarded", "for=192.0.2.60:8080")]);
        assert_eq!(c.client_ip(&h, ip("::ffff:127.0.0.1")), ip("192.0.2.60"));
        let h = headers(&[("forwarded", "for=unknown")]);
        assert_eq!(c.client_ip(&h, ip("127.0.0.1")), ip("127.0.0.1"));
    }

    #[test]
    fn ipv6_keys_are_cut_to_the_prefix() {
        let c = ClientAddresses::default();
        assert_eq!(c.key_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(c.key_of(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
        assert_eq!(c.key_of(ip("192.0.2.1")), ip("192.0.2.1"));
        let whole = ClientAddresses::default().ipv6_prefix(200);
        assert_eq!(whole.key_of(ip("2001:db8::1")), ip("2001:db8::1"));
        let none = ClientAddresses::default().ipv6_prefix(0);
        assert_eq!(none.key_of(ip("2001:db8::1")), ip("::"));
    }
}
