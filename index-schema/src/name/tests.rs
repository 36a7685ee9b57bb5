use super::*;
use proptest::prelude::*;
use rstest::rstest;

#[test]
fn names_are_normalized_to_lowercase() {
    let n = AgentName::parse("Acme/Code-Helper_2").unwrap();
    assert_eq!(n.publisher(), "acme");
    assert_eq!(n.agent(), "code-helper_2");
    assert_eq!(n, AgentName::parse("acme/code-helper_2").unwrap());
    assert_eq!(n.to_string(), "acme/code-helper_2");
}

#[rstest]
#[case("Foo Bar/x", "publisher `Foo Bar` contains a space")]
#[case("foo/Bar\tx", "agent name `Bar\\tx` contains a control character")]
#[case("foo/a\u{a0}b", "agent name `a\\u{a0}b` contains whitespace")]
#[case("foo/a\\b", "agent name `a\\\\b` contains a backslash")]
#[case("foo/a..b", "agent name `a..b` contains `..`")]
#[case("foo/..", "agent name `..` contains `..`")]
#[case("foo/bar/baz", "`foo/bar/baz` has more than one `/`")]
#[case("foo/../bar", "has more than one `/`")]
#[case("foobar", "`foobar` is not an agent name: expected `publisher/agent`")]
#[case("/bar", "publisher is empty")]
#[case("foo/", "agent name is empty")]
#[case("", "is not an agent name")]
#[case("-foo/bar", "publisher `-foo` must start with a letter or a digit")]
#[case("_foo/bar", "publisher `_foo` must start with a letter or a digit")]
#[case("foo/b.r", "agent name `b.r` contains '.'")]
#[case("foo/bär", "agent name `bär` contains 'ä'")]
#[case("ofc/bar", "publisher `ofc` is reserved")]
#[case("Admin/bar", "publisher `admin` is reserved")]
#[case("v2/bar", "publisher `v2` is reserved")]
#[case("localhost/bar", "publisher `localhost` is reserved")]
#[case("foo/con", "agent name `con` is reserved")]
#[case("foo/a\u{0}", "contains a control character")]
fn bad_names_are_refused_with_a_clear_message(#[case] input: &str, #[case] msg: &str) {
    let err = AgentName::parse(input).unwrap_err().to_string();
    assert!(err.contains(msg), "{input:?}: got {err:?}, wanted {msg:?}");
}

#[test]
fn length_limit_is_64() {
    let ok = "a".repeat(64);
    assert!(AgentName::new("pub", &ok).is_ok());
    let long = "a".repeat(65);
    let err = AgentName::new(&long, "x").unwrap_err();
    assert!(
        matches!(
            err,
            NameError::TooLong {
                len: 65,
                max: 64,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("65 characters long"));
}

#[test]
fn agent_part_may_use_publisher_reserved_words() {
    // Agent names live under their publisher, so hub route words do not collide.
    assert!(AgentName::parse("acme/admin").is_ok());
}

#[rstest]
#[case("acme/coder", None, "acme/coder", VersionSelector::Latest)]
#[case("acme/coder@latest", None, "acme/coder", VersionSelector::Latest)]
#[case(
        "hub.example.com/acme/coder@^1.2",
        Some("hub.example.com"),
        "acme/coder",
        VersionSelector::Req(VersionReq::parse("^1.2").unwrap())
    )]
#[case(
    "localhost:5000/acme/coder@1.2.3",
    Some("localhost:5000"),
    "acme/coder",
    VersionSelector::Exact(Version::new(1, 2, 3))
)]
#[case(
    "LOCALHOST/Acme/Coder@=1.2.3",
    Some("localhost"),
    "acme/coder",
    VersionSelector::Exact(Version::new(1, 2, 3))
)]
#[case(
        "[::1]:8080/acme/coder@~1",
        Some("[::1]:8080"),
        "acme/coder",
        VersionSelector::Req(VersionReq::parse("~1").unwrap())
    )]
#[case(
        "127.0.0.1/acme/coder@>=1, <2",
        Some("127.0.0.1"),
        "acme/coder",
        VersionSelector::Req(VersionReq::parse(">=1, <2").unwrap())
    )]
#[case(
    "acme/coder@*",
    None,
    "acme/coder",
    VersionSelector::Req(VersionReq::STAR)
)]
fn references_parse(
    #[case] input: &str,
    #[case] host: Option<&str>,
    #[case] name: &str,
    #[case] selector: VersionSelector,
) {
    let r = Reference::parse(input).unwrap();
    assert_eq!(r.host(), host);
    assert_eq!(r.name().to_string(), name);
    assert_eq!(r.selector(), &selector);
    assert_eq!(Reference::parse(&r.to_string()).unwrap(), r);
}

#[test]
fn exact_version_is_pinned_not_caret() {
    let r = Reference::parse("acme/coder@1.2.3").unwrap();
    let sel = r.selector();
    assert!(sel.matches_version(&Version::new(1, 2, 3)));
    assert!(!sel.matches_version(&Version::new(1, 2, 4)));
    // `=1.2.3` written as a requirement is the same selector.
    assert_eq!(
        VersionSelector::from_req(VersionReq::parse("= 1.2.3").unwrap()),
        *sel
    );
    assert_eq!(
        Reference::parse("acme/coder@= 1.2.3").unwrap().to_string(),
        "acme/coder@1.2.3"
    );
}

#[test]
fn digest_references() {
    let hex = "ab".repeat(32);
    let r = Reference::parse(&format!("acme/coder@sha256:{hex}")).unwrap();
    let VersionSelector::Digest(d) = r.selector() else {
        panic!("not a digest: {r:?}")
    };
    assert_eq!(d.hex(), hex);
    assert_eq!(r.to_string(), format!("acme/coder@sha256:{hex}"));
}

#[rstest]
#[case("acme/coder@", "version selector `` is empty")]
#[case("acme/coder@banana", "version selector `banana` is not valid")]
#[case("acme/coder@sha256:abc", "has 3 hex digits, a sha256 digest has 64")]
#[case("acme/coder@1.2.3@4", "version selector `1.2.3@4`")]
#[case(
    "hub.example.com/coder",
    "names hub `hub.example.com` but no `publisher/agent`"
)]
#[case(
    "hub..example/acme/coder",
    "hub host `hub..example` has an empty label"
)]
#[case("hub.example.com:0/acme/coder", "port outside 1-65535")]
#[case("hub.example.com:99999/acme/coder", "port outside 1-65535")]
#[case("hub.example.com:x/acme/coder", "port that is not a number")]
#[case("hub_x.com/acme/coder", "may contain only letters")]
#[case("[zz]/acme/coder", "is not a valid IPv6 address")]
#[case("hub.example.com/acme/co der", "agent name `co der` contains a space")]
#[case("a.b/c/d/e", "has more than one `/`")]
#[case("acme", "is not an agent name")]
fn bad_references_are_refused(#[case] input: &str, #[case] msg: &str) {
    let err = Reference::parse(input).unwrap_err().to_string();
    assert!(err.contains(msg), "{input:?}: got {err:?}, wanted {msg:?}");
}

#[test]
fn overlong_reference_is_refused_before_parsing() {
    let s = format!("acme/coder@{}", "1".repeat(MAX_REFERENCE_LEN));
    assert!(matches!(
        Reference::parse(&s),
        Err(NameError::ReferenceTooLong { .. })
    ));
}

#[rstest]
#[case("sha256:ABCD", "must be lowercase hex")]
#[case("sha512:abcd", "must start with `sha256:`")]
#[case("sha256:zz", "contains 'z', which is not a hex digit")]
#[case("sha256:", "has 0 hex digits")]
fn bad_digests(#[case] input: &str, #[case] msg: &str) {
    let err = Digest::parse(input).unwrap_err().to_string();
    assert!(err.contains(msg), "{input:?}: got {err:?}");
}

#[test]
fn digest_of_known_input() {
    // sha256("abc") from FIPS 180-2.
    let d = Digest::of(b"abc");
    assert_eq!(
        d.to_string(),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert!(d.matches(b"abc"));
    assert!(!d.matches(b"abd"));
    assert_eq!(Digest::parse(&d.to_string()).unwrap(), d);
    assert_eq!(Digest::from_bytes(*d.as_bytes()), d);
}

#[test]
fn handles() {
    let h = AgentHandle::parse("@Code").unwrap();
    assert_eq!(h.name(), "code");
    assert_eq!(h.to_string(), "@code");
    assert!(!h.is_reserved());
    assert!(AgentHandle::parse("@user").unwrap().is_reserved());
    assert!(AgentHandle::parse("@floor-manager").unwrap().is_reserved());
    for reserved in [
        "@ofc",
        "@Admin",
        "@all",
        "@here",
        "@everyone",
        "@tool-x",
        "@tool-",
    ] {
        if let Ok(h) = AgentHandle::parse(reserved) {
            assert!(h.is_reserved(), "{reserved}");
        }
    }
    for free in ["@tools", "@toolbox", "@allison", "@hereford", "@ofc-helper"] {
        assert!(!AgentHandle::parse(free).unwrap().is_reserved(), "{free}");
    }
    assert_eq!(AgentHandle::user().to_string(), "@user");
    assert_eq!(AgentHandle::floor_manager().to_string(), "@floor-manager");
    assert_eq!(
        AgentHandle::parse("code").unwrap_err().to_string(),
        "handle `code` must start with `@`"
    );
    assert_eq!(
        AgentHandle::parse("@").unwrap_err().to_string(),
        "handle is empty"
    );
    assert_eq!(
        AgentHandle::parse("@a b").unwrap_err().to_string(),
        "handle `a b` contains a space"
    );
    assert!(AgentHandle::parse("@a/b").is_err());
    assert!(AgentHandle::parse(&format!("@{}", "x".repeat(65))).is_err());
}

#[test]
fn serde_uses_text_and_explains_errors() {
    let n: AgentName = serde_json::from_str("\"Acme/Coder\"").unwrap();
    assert_eq!(serde_json::to_string(&n).unwrap(), "\"acme/coder\"");
    let err = serde_json::from_str::<AgentName>("\"Foo Bar/x\"").unwrap_err();
    assert!(
        err.to_string()
            .contains("publisher `Foo Bar` contains a space"),
        "{err}"
    );
    let err = serde_json::from_str::<AgentName>("12").unwrap_err();
    assert!(err.to_string().contains("an agent name"), "{err}");

    let h: AgentHandle = serde_json::from_str("\"@code\"").unwrap();
    assert_eq!(serde_json::to_string(&h).unwrap(), "\"@code\"");
    let r: Reference = serde_json::from_str("\"acme/coder@^1\"").unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), "\"acme/coder@^1\"");
    let d = Digest::of(b"");
    let back: Digest = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!(back, d);
    let err = serde_json::from_str::<Digest>("\"sha256:xyz\"").unwrap_err();
    assert!(err.to_string().contains("not a hex digit"), "{err}");
}

fn part() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}".prop_filter("reserved", |s| {
        let l = s.to_ascii_lowercase();
        !RESERVED_PUBLISHERS.contains(&l.as_str()) && !RESERVED_PATH_NAMES.contains(&l.as_str())
    })
}

fn host() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("localhost".to_string()),
        ("[a-z0-9]{1,10}", "[a-z]{2,6}").prop_map(|(a, b)| format!("{a}.{b}")),
        ("[a-z0-9]{1,10}", "[a-z]{2,6}", 1u16..).prop_map(|(a, b, p)| format!("{a}.{b}:{p}")),
        (0u8.., 0u8.., 0u8.., 1u8..).prop_map(|(a, b, c, d)| format!("{a}.{b}.{c}.{d}")),
        (1u16..).prop_map(|p| format!("[::1]:{p}")),
    ]
}

fn version() -> impl Strategy<Value = Version> {
    (
        0u64..1000,
        0u64..1000,
        0u64..1000,
        proptest::option::of("[a-z][a-z0-9]{0,5}"),
    )
        .prop_map(|(a, b, c, pre)| {
            let mut v = Version::new(a, b, c);
            if let Some(p) = pre {
                v.pre = semver::Prerelease::new(&p).unwrap();
            }
            v
        })
}

fn selector() -> impl Strategy<Value = VersionSelector> {
    let op = prop_oneof![
        Just("^"),
        Just("~"),
        Just(">="),
        Just("<"),
        Just(">"),
        Just("<="),
        Just("="),
        Just("")
    ];
    prop_oneof![
        Just(VersionSelector::Latest),
        version().prop_map(VersionSelector::Exact),
        any::<[u8; 32]>().prop_map(|b| VersionSelector::Digest(Digest::from_bytes(b))),
        (
            op,
            0u64..50,
            proptest::option::of(0u64..50),
            proptest::option::of(0u64..50)
        )
            .prop_map(|(op, a, b, c)| {
                let mut s = format!("{op}{a}");
                if let Some(b) = b {
                    s.push_str(&format!(".{b}"));
                    if let Some(c) = c {
                        s.push_str(&format!(".{c}"));
                    }
                }
                VersionSelector::from_req(VersionReq::parse(&s).unwrap())
            }),
        Just(VersionSelector::Req(VersionReq::STAR)),
        (0u64..10, 10u64..20).prop_map(|(a, b)| {
            VersionSelector::Req(VersionReq::parse(&format!(">={a}, <{b}")).unwrap())
        }),
    ]
}

proptest! {
    #[test]
    fn agent_name_round_trips(p in part(), a in part()) {
        let n = AgentName::new(&p, &a).unwrap();
        prop_assert_eq!(n.publisher(), p.to_ascii_lowercase());
        let back = AgentName::parse(&n.to_string()).unwrap();
        prop_assert_eq!(&back, &n);
        let upper = AgentName::parse(&n.to_string().to_ascii_uppercase()).unwrap();
        prop_assert_eq!(upper, n);
    }

    #[test]
    fn reference_round_trips(
        h in proptest::option::of(host()),
        p in part(),
        a in part(),
        sel in selector(),
    ) {
        let mut r = Reference::new(AgentName::new(&p, &a).unwrap()).with_selector(sel);
        if let Some(h) = h {
            r = r.with_host(&h).unwrap();
        }
        let text = r.to_string();
        let back = Reference::parse(&text).unwrap();
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(back.to_string(), text);
        let json = serde_json::to_string(&r).unwrap();
        prop_assert_eq!(serde_json::from_str::<Reference>(&json).unwrap(), r);
    }

    #[test]
    fn handle_round_trips(n in part()) {
        let h = AgentHandle::new(&n).unwrap();
        prop_assert_eq!(AgentHandle::parse(&h.to_string()).unwrap(), h);
    }

    #[test]
    fn digest_round_trips(b in any::<[u8; 32]>()) {
        let d = Digest::from_bytes(b);
        prop_assert_eq!(Digest::parse(&d.to_string()).unwrap(), d);
    }

    #[test]
    fn parsers_never_panic(s in "\\PC{0,80}") {
        let _ = Reference::parse(&s);
        let _ = AgentName::parse(&s);
        let _ = AgentHandle::parse(&s);
        let _ = Digest::parse(&s);
    }

    #[test]
    fn accepted_names_are_safe_path_components(s in "[ -~]{0,20}/[ -~]{0,20}") {
        if let Ok(n) = AgentName::parse(&s) {
            for part in [n.publisher(), n.agent()] {
                prop_assert!(!part.is_empty() && part != "." && part != "..");
                prop_assert!(part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'));
            }
        }
    }
}
