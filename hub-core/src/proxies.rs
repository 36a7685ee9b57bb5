//! The proxies in front of the hub (`trusted_proxies`): which peers may say, in
//! `X-Forwarded-For`, which client a request comes from. Behind a load balancer every
//! connection comes from the balancer; without this the failure limiter would count every
//! client as one address (one attacker would lock everyone out) and download counts would see
//! one client.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// An IP network (`10.0.0.0/8`, `fd00::/8`) or a single address (`127.0.0.1`).
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProxyNet {
    addr: IpAddr,
    prefix: u8,
}

impl ProxyNet {
    /// Whether `ip` is in this network (an IPv4-mapped IPv6 address counts as its IPv4 one).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl TryFrom<String> for ProxyNet {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "trusted_proxies: `{text}` {why} (give an IP address or a network such as \
                 `10.0.0.0/8`)"
            )
        };
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| bad("is not an IP address or network"))?;
        let addr = addr.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => return Err(bad(&format!("has a prefix length that is not 0..={max}"))),
            },
        };
        Ok(ProxyNet { addr, prefix })
    }
}

impl From<ProxyNet> for String {
    fn from(n: ProxyNet) -> String {
        n.to_string()
    }
}

impl fmt::Display for ProxyNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl fmt::Debug for ProxyNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The client a request comes from: `peer` itself unless it is a trusted proxy; then the
/// rightmost address of `forwarded_for` (the `X-Forwarded-For` values in header order, each a
/// comma-separated list) that is not itself a trusted proxy — the addresses left of it were
/// written by the client and prove nothing. An entry that is not an address stops the walk at
/// the last trusted hop (`peer` or the proxy right of it).
pub fn client_addr<'a>(
    trusted: &[ProxyNet],
    peer: IpAddr,
    forwarded_for: impl IntoIterator<Item = &'a str>,
) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<&str> = forwarded_for
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        client = ip.to_canonical();
        if !is_trusted(client) {
            break;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::{ProxyNet, client_addr};
    use std::net::IpAddr;

    fn net(s: &str) -> ProxyNet {
        ProxyNet::try_from(s.to_string()).unwrap()
    }
    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_parse_and_match() {
        assert!(net("10.0.0.0/8").contains(ip("10.9.8.7")));
        assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(net("127.0.0.1").contains(ip("127.0.0.1")));
        assert!(!net("127.0.0.1").contains(ip("127.0.0.2")));
        assert!(net("127.0.0.1").contains(ip("::ffff:127.0.0.1")));
        assert!(net("0.0.0.0/0").contains(ip("203.0.113.5")));
        assert!(net("fd00::/8").contains(ip("fd12::1")));
        assert!(!net("fd00::/8").contains(ip("10.0.0.1")));
        assert_eq!(net(" 192.168.1.0/24 ").to_string(), "192.168.1.0/24");
        for bad in ["", "10.0.0.0/33", "nope", "10.0.0.0/x", "::1/129"] {
            let e = ProxyNet::try_from(bad.to_string()).unwrap_err();
            assert!(e.starts_with("trusted_proxies: "), "{e}");
        }
    }

    #[test]
    fn the_client_is_the_rightmost_untrusted_hop() {
        let trusted = [net("10.0.0.0/8")];
        // Not from a proxy: the header is the client's own claim.
        assert_eq!(
            client_addr(&trusted, ip("198.51.100.1"), ["203.0.113.9"]),
            ip("198.51.100.1")
        );
        // From the proxy: what the proxy appended.
        assert_eq!(
            client_addr(&trusted, ip("10.0.0.2"), ["203.0.113.9"]),
            ip("203.0.113.9")
        );
        // A client's forged entry is left of the proxy's; proxies in a chain are skipped.
        assert_eq!(
            client_addr(
                &trusted,
                ip("10.0.0.2"),
                ["1.2.3.4, 203.0.113.9", "10.0.0.7"]
            ),
            ip("203.0.113.9")
        );
        // No header: the proxy itself.
        assert_eq!(client_addr(&trusted, ip("10.0.0.2"), []), ip("10.0.0.2"));
        // Garbage stops at the last trusted hop.
        assert_eq!(
            client_addr(&trusted, ip("10.0.0.2"), ["203.0.113.9, junk"]),
            ip("10.0.0.2")
        );
        // Nothing trusted: the peer, whatever the header says.
        assert_eq!(
            client_addr(&[], ip("10.0.0.2"), ["203.0.113.9"]),
            ip("10.0.0.2")
        );
    }
}
