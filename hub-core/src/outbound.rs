//! The outbound address policy: which addresses the hub may connect to when a user's input
//! names the place — an OIDC issuer and its `jwks_uri` (trusted publishing), a claimed
//! domain's `https://DOMAIN/.well-known/ofc-namespace.txt` (verified namespaces). Without it
//! a namespace owner could make the hub connect to its own network: the cloud's metadata
//! service (169.254.169.254), a database on 10.x, an admin port on 127.0.0.1.
//!
//! Only globally routable addresses are taken. Refused, each named by [`refused_range`]:
//! IPv4 `0.0.0.0/8` (this network, with the unspecified 0.0.0.0), private `10/8`,
//! `172.16/12`, `192.168/16`, shared (CGNAT) `100.64/10`, loopback `127/8`, link-local
//! `169.254/16`, IETF protocol assignments `192.0.0.0/24`, the documentation ranges
//! `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, the 6to4 relay `192.88.99.0/24`,
//! benchmarking `198.18/15`, multicast `224/4`, reserved `240/4` and the broadcast address;
//! IPv6 everything outside the global unicast `2000::/3` (unspecified, loopback, unique-local
//! `fc00::/7`, link-local `fe80::/10`, multicast `ff00::/8`, discard-only `100::/64`, …) and,
//! inside it, Teredo `2001::/32`, benchmarking `2001:2::/48`, ORCHID `2001:10::/28` and
//! `2001:20::/28`, documentation `2001:db8::/32` and `3fff::/20`. An IPv6 address carrying
//! an IPv4 one — IPv4-mapped `::ffff:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16` — is
//! judged by the IPv4 address it carries (a mapped 127.0.0.1 is loopback); the deprecated
//! IPv4-compatible `::/96` and the local-use NAT64 prefix `64:ff9b:1::/48` are refused.
//!
//! The rules are here; the hub server enforces them where it connects (a DNS resolver that
//! drops refused addresses, so a name re-pointed after it was registered cannot get through;
//! and [`check_url_host`] for URLs naming an address, which are not resolved). The hub setting
//! [`SETTING`] lifts the policy, for tests (their servers are on 127.0.0.1) and hubs whose
//! issuers or domains live on a private network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The hub setting that lets private addresses through.
pub const SETTING: &str = "outbound_allow_private";

/// Why the policy refuses `ip` — the kind of address and its range — or `None` when the hub
/// may connect to it.
pub fn refused_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], bits: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 8, "a \"this network\" address (0.0.0.0/8)"),
        ([10, 0, 0, 0], 8, "a private address (10.0.0.0/8)"),
        (
            [100, 64, 0, 0],
            10,
            "a shared (CGNAT) address (100.64.0.0/10)",
        ),
        ([127, 0, 0, 0], 8, "a loopback address (127.0.0.0/8)"),
        (
            [169, 254, 0, 0],
            16,
            "a link-local address (169.254.0.0/16)",
        ),
        ([172, 16, 0, 0], 12, "a private address (172.16.0.0/12)"),
        (
            [192, 0, 0, 0],
            24,
            "an IETF protocol assignment (192.0.0.0/24)",
        ),
        ([192, 0, 2, 0], 24, "a documentation address (192.0.2.0/24)"),
        (
            [192, 88, 99, 0],
            24,
            "a 6to4 relay address (192.88.99.0/24)",
        ),
        ([192, 168, 0, 0], 16, "a private address (192.168.0.0/16)"),
        (
            [198, 18, 0, 0],
            15,
            "a benchmarking address (198.18.0.0/15)",
        ),
        (
            [198, 51, 100, 0],
            24,
            "a documentation address (198.51.100.0/24)",
        ),
        (
            [203, 0, 113, 0],
            24,
            "a documentation address (203.0.113.0/24)",
        ),
        ([224, 0, 0, 0], 4, "a multicast address (224.0.0.0/4)"),
        (
            [255, 255, 255, 255],
            32,
            "the broadcast address (255.255.255.255)",
        ),
        ([240, 0, 0, 0], 4, "a reserved address (240.0.0.0/4)"),
    ];
    RANGES
        .iter()
        .find(|(net, bits, _)| in_v4(ip, *net, *bits))
        .map(|(_, _, why)| *why)
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], bits: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

/// The IPv4 address in the low 32 bits.
fn low_v4(ip: Ipv6Addr) -> Ipv4Addr {
    Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32)
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("the unspecified address (::)");
    }
    if ip.is_loopback() {
        return Some("the loopback address (::1)");
    }
    // Addresses carrying an IPv4 address answer for it: a mapped 127.0.0.1 is loopback.
    if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96)
        || in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96)
    {
        return refused_v4(low_v4(ip));
    }
    if in_v6(ip, [0; 8], 96) {
        return Some("an IPv4-compatible address (::/96, deprecated)");
    }
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let [_, a, b, ..] = ip.segments();
        return refused_v4(Ipv4Addr::from((u32::from(a) << 16) | u32::from(b)));
    }
    const RANGES: &[([u16; 8], u32, &str)] = &[
        (
            [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
            48,
            "a local-use NAT64 address (64:ff9b:1::/48)",
        ),
        (
            [0x100, 0, 0, 0, 0, 0, 0, 0],
            64,
            "a discard-only address (100::/64)",
        ),
        (
            [0xfc00, 0, 0, 0, 0, 0, 0, 0],
            7,
            "a unique-local address (fc00::/7)",
        ),
        (
            [0xfe80, 0, 0, 0, 0, 0, 0, 0],
            10,
            "a link-local address (fe80::/10)",
        ),
        (
            [0xfec0, 0, 0, 0, 0, 0, 0, 0],
            10,
            "a site-local address (fec0::/10)",
        ),
        (
            [0xff00, 0, 0, 0, 0, 0, 0, 0],
            8,
            "a multicast address (ff00::/8)",
        ),
        (
            [0x2001, 0, 0, 0, 0, 0, 0, 0],
            32,
            "a Teredo address (2001::/32)",
        ),
        (
            [0x2001, 2, 0, 0, 0, 0, 0, 0],
            48,
            "a benchmarking address (2001:2::/48)",
        ),
        (
            [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
            28,
            "an ORCHID address (2001:10::/28)",
        ),
        (
            [0x2001, 0x20, 0, 0, 0, 0, 0, 0],
            28,
            "an ORCHIDv2 address (2001:20::/28)",
        ),
        (
            [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
            32,
            "a documentation address (2001:db8::/32)",
        ),
        (
            [0x3fff, 0, 0, 0, 0, 0, 0, 0],
            20,
            "a documentation address (3fff::/20)",
        ),
    ];
    if let Some((_, _, why)) = RANGES.iter().find(|(net, bits, _)| in_v6(ip, *net, *bits)) {
        return Some(why);
    }
    if !in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return Some("not a global unicast address (outside 2000::/3)");
    }
    None
}

/// What the hub says when it refuses `ip` for `host`.
fn refusal(host: &str, ip: IpAddr, why: &str) -> String {
    let named = if host == ip.to_string() {
        format!("`{host}` is {why}")
    } else {
        format!("`{host}` resolves to {ip}, {why}")
    };
    format!(
        "{named}: the hub's outbound address policy refuses addresses that are not globally \
         routable (the hub setting {SETTING} = true lets them through)"
    )
}

/// Checks `ip`, an address of `host`: the refusal's message, naming both, when the policy
/// refuses it and `allow_private` is off.
pub fn check_addr(host: &str, ip: IpAddr, allow_private: bool) -> Result<(), String> {
    match refused_range(ip) {
        Some(why) if !allow_private => Err(refusal(host, ip, why)),
        _ => Ok(()),
    }
}

/// Keeps the addresses of `host` the policy takes; none left is an error naming the refused
/// ones (a name with no address at all is the resolver's error, not this one).
pub fn filter_addrs(
    host: &str,
    ips: Vec<IpAddr>,
    allow_private: bool,
) -> Result<Vec<IpAddr>, String> {
    if allow_private {
        return Ok(ips);
    }
    let (taken, refused): (Vec<IpAddr>, Vec<IpAddr>) =
        ips.into_iter().partition(|ip| refused_range(*ip).is_none());
    match (taken.is_empty(), refused.as_slice()) {
        (false, _) | (true, []) => Ok(taken),
        (true, [one]) => Err(refusal(host, *one, refused_range(*one).unwrap_or_default())),
        (true, many) => {
            let listed: Vec<String> = many
                .iter()
                .map(|ip| format!("{ip} ({})", refused_range(*ip).unwrap_or_default()))
                .collect();
            Err(format!(
                "`{host}` resolves only to addresses the hub refuses: {}: the hub's outbound \
                 address policy refuses addresses that are not globally routable (the hub \
                 setting {SETTING} = true lets them through)",
                listed.join(", ")
            ))
        }
    }
}

/// Checks the host of `url` when it is an IP address (connecting to one asks no resolver, so
/// the resolver's filter never sees it). Names pass: their addresses are checked when
/// resolved.
pub fn check_url_host(url: &url::Url, allow_private: bool) -> Result<(), String> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(_)) | None => return Ok(()),
    };
    check_addr(&ip.to_string(), ip, allow_private)
}

/// Refuses settings that contradict the policy: `oidc_allow_http_loopback` asks for
/// `http://127.0.0.1` issuers, which the policy refuses unless [`SETTING`] is on.
pub fn check_settings(config: &crate::config::Config) -> Result<(), String> {
    if config.oidc_allow_http_loopback && !config.outbound_allow_private {
        return Err(format!(
            "oidc_allow_http_loopback = true takes http://127.0.0.1 issuers, but 127.0.0.1 is \
             a loopback address the outbound address policy refuses: set {SETTING} = true too, \
             or drop oidc_allow_http_loopback"
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "outbound_tests.rs"]
mod tests;
