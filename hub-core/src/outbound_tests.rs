use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{SETTING, check_addr, check_settings, check_url_host, filter_addrs, refused_range};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Refused, with the words its reason must hold.
fn refused(s: &str, says: &str) {
    match refused_range(ip(s)) {
        Some(why) => assert!(why.contains(says), "{s}: `{why}` lacks `{says}`"),
        None => panic!("{s} was taken"),
    }
}

fn taken(s: &str) {
    assert_eq!(refused_range(ip(s)), None, "{s}");
}

#[test]
fn ipv4_ranges_that_are_not_global_are_refused_at_both_edges() {
    let cases = [
        ("0.0.0.0", "0.0.0.0/8"),
        ("0.255.255.255", "0.0.0.0/8"),
        ("10.0.0.0", "private"),
        ("10.255.255.255", "private"),
        ("100.64.0.0", "CGNAT"),
        ("100.127.255.255", "CGNAT"),
        ("127.0.0.1", "loopback"),
        ("127.0.0.0", "loopback"),
        ("127.255.255.255", "loopback"),
        ("169.254.0.0", "link-local"),
        ("169.254.169.254", "link-local"),
        ("169.254.255.255", "link-local"),
        ("172.16.0.0", "private"),
        ("172.31.255.255", "private"),
        ("192.0.0.0", "IETF"),
        ("192.0.0.255", "IETF"),
        ("192.0.2.0", "documentation"),
        ("192.0.2.255", "documentation"),
        ("192.88.99.1", "6to4"),
        ("192.168.0.0", "private"),
        ("192.168.255.255", "private"),
        ("198.18.0.0", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("198.51.100.7", "documentation"),
        ("203.0.113.255", "documentation"),
        ("224.0.0.0", "multicast"),
        ("239.255.255.255", "multicast"),
        ("240.0.0.0", "reserved"),
        ("255.255.255.254", "reserved"),
        ("255.255.255.255", "broadcast"),
    ];
    for (s, says) in cases {
        refused(s, says);
    }
}

#[test]
fn global_ipv4_addresses_are_taken_including_the_neighbours_of_refused_ranges() {
    for s in [
        "1.1.1.1",
        "8.8.8.8",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.1.0",
        "192.0.3.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "203.0.112.255",
        "223.255.255.255",
    ] {
        taken(s);
    }
}

#[test]
fn ipv6_ranges_that_are_not_global_are_refused() {
    let cases = [
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::2", "IPv4-compatible"),
        ("::10.0.0.1", "IPv4-compatible"),
        ("fc00::", "unique-local"),
        ("fd12:3456:789a::1", "unique-local"),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local"),
        ("fe80::", "link-local"),
        ("fe80::1", "link-local"),
        ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"),
        ("100::1", "discard"),
        ("2001:db8::", "documentation"),
        ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"),
        ("3fff::1", "documentation"),
        ("3fff:0fff:ffff::1", "documentation"),
        ("2001::1", "Teredo"),
        ("2001:0:ffff::1", "Teredo"),
        ("2001:2::1", "benchmarking"),
        ("2001:10::1", "ORCHID"),
        ("2001:20::1", "ORCHIDv2"),
        ("64:ff9b:1::1", "local-use NAT64"),
        ("1000::1", "outside 2000::/3"),
        ("4000::1", "outside 2000::/3"),
        ("e000::1", "outside 2000::/3"),
    ];
    for (s, says) in cases {
        refused(s, says);
    }
}

#[test]
fn global_ipv6_addresses_are_taken() {
    for s in [
        "2000::",
        "2001:4860:4860::8888",
        "2606:4700:4700::1111",
        "2001:1::1",
        "2001:3::1",
        "2001:db7:ffff::1",
        "2001:db9::1",
        "3ffe:ffff::1",
        "3fff:1000::1",
        "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    ] {
        taken(s);
    }
}

#[test]
fn ipv6_addresses_carrying_an_ipv4_address_are_judged_by_it() {
    // IPv4-mapped: the hub's socket would reach the IPv4 address.
    for (s, says) in [
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:7f00:1", "loopback"),
        ("::ffff:10.1.2.3", "private"),
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:100.64.0.1", "CGNAT"),
        ("::ffff:0.0.0.0", "0.0.0.0/8"),
        ("::ffff:255.255.255.255", "broadcast"),
        ("::ffff:192.168.1.1", "private"),
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry one too.
        ("64:ff9b::127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("2002:7f00:1::", "loopback"),
        ("2002:0a00:0001::1", "private"),
        ("2002:a9fe:a9fe::", "link-local"),
    ] {
        refused(s, says);
    }
    for s in ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"] {
        taken(s);
    }
}

#[test]
fn a_refusal_names_the_host_the_address_its_range_and_the_setting() {
    let e = check_addr("meta.example", ip("169.254.169.254"), false).unwrap_err();
    assert!(
        e.contains("`meta.example` resolves to 169.254.169.254")
            && e.contains("link-local address (169.254.0.0/16)")
            && e.contains("outbound address policy")
            && e.contains(SETTING),
        "{e}"
    );
    let e = check_addr("127.0.0.1", ip("127.0.0.1"), false).unwrap_err();
    assert!(e.starts_with("`127.0.0.1` is a loopback address"), "{e}");
    assert!(check_addr("x", ip("127.0.0.1"), true).is_ok());
    assert!(check_addr("x", ip("8.8.8.8"), false).is_ok());
}

#[test]
fn filtering_keeps_global_addresses_and_refuses_a_name_with_none() {
    let mixed = vec![ip("10.0.0.1"), ip("93.184.215.14"), ip("::1")];
    assert_eq!(
        filter_addrs("h.example", mixed.clone(), false).unwrap(),
        [ip("93.184.215.14")]
    );
    assert_eq!(
        filter_addrs("h.example", mixed.clone(), true).unwrap(),
        mixed
    );
    let e = filter_addrs("h.example", vec![ip("127.0.0.1")], false).unwrap_err();
    assert!(
        e.contains("`h.example` resolves to 127.0.0.1, a loopback"),
        "{e}"
    );
    let e = filter_addrs("h.example", vec![ip("127.0.0.1"), ip("::1")], false).unwrap_err();
    assert!(
        e.contains("`h.example` resolves only to addresses the hub refuses")
            && e.contains("127.0.0.1 (a loopback address (127.0.0.0/8))")
            && e.contains("::1 (the loopback address (::1))"),
        "{e}"
    );
    assert!(
        filter_addrs("h.example", Vec::new(), false)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn urls_naming_an_address_are_checked_names_are_left_to_the_resolver() {
    let url = |s: &str| url::Url::parse(s).unwrap();
    let e = check_url_host(&url("https://127.0.0.1:8443/x"), false).unwrap_err();
    assert!(e.contains("`127.0.0.1` is a loopback address"), "{e}");
    let e = check_url_host(&url("https://[::ffff:169.254.169.254]/"), false).unwrap_err();
    assert!(e.contains("link-local"), "{e}");
    assert!(check_url_host(&url("https://[fd00::1]/"), false).is_err());
    // The URL parser reads the other spellings of an IPv4 address as one.
    assert!(check_url_host(&url("https://2130706433/"), false).is_err());
    assert!(check_url_host(&url("https://0x7f.1/"), false).is_err());
    assert!(check_url_host(&url("https://127.0.0.1/"), true).is_ok());
    assert!(check_url_host(&url("https://8.8.8.8/"), false).is_ok());
    assert!(check_url_host(&url("https://localhost/"), false).is_ok());
    assert_eq!(
        refused_range(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        refused_range(IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()))
    );
    assert!(refused_range(IpAddr::V6(Ipv6Addr::LOCALHOST)).is_some());
}

#[test]
fn http_loopback_issuers_without_private_addresses_are_a_contradiction() {
    let mut c = crate::config::Config::default();
    assert!(!c.outbound_allow_private, "the policy is on by default");
    assert!(check_settings(&c).is_ok());
    c.oidc_allow_http_loopback = true;
    let e = check_settings(&c).unwrap_err();
    assert!(
        e.contains("oidc_allow_http_loopback") && e.contains("outbound_allow_private = true"),
        "{e}"
    );
    c.outbound_allow_private = true;
    assert!(check_settings(&c).is_ok());
}
