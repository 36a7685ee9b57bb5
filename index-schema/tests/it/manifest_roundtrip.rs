//! Property: any valid manifest survives `to_json_bytes` → `from_json` unchanged, its bytes are
//! deterministic, and signing then verifying gives it back with the digest of those bytes.

use index_schema::envelope::{SecretKey, sign_manifest, verify_manifest};
use index_schema::manifest::{
    Activation, BundleSource, Capability, DockerSource, Manifest, NpmSource, Origin, PipSource,
    Pricing, ProvidesMcp, RemoteSource, Requires, Source,
};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::{AgentHandle, AgentName, Digest};
use proptest::collection::{btree_set, vec};
use proptest::option;
use proptest::prelude::*;
use semver::{Prerelease, Version};
use serde_json::json;

fn part() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9_-]{0,20}"
}

fn agent_name() -> impl Strategy<Value = AgentName> {
    (part(), part()).prop_filter_map("reserved", |(p, a)| AgentName::new(&p, &a).ok())
}

fn handle() -> impl Strategy<Value = AgentHandle> {
    part().prop_filter_map("reserved", |h| {
        AgentHandle::new(&h).ok().filter(|h| !h.is_reserved())
    })
}

fn version() -> impl Strategy<Value = Version> {
    (
        0u64..100,
        0u64..100,
        0u64..100,
        option::of("[a-z][a-z0-9]{0,4}(\\.[1-9][0-9]{0,2})?"),
    )
        .prop_map(|(a, b, c, pre)| {
            let mut v = Version::new(a, b, c);
            if let Some(p) = pre {
                v.pre = Prerelease::new(&p).unwrap();
            }
            v
        })
}

/// One line of printable text, not blank.
fn line(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("\\PC{{1,{max}}}"))
        .unwrap()
        .prop_filter("blank", |s| !s.trim().is_empty())
}

/// Text that may span lines.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[\\PC\n\t]{{1,{max}}}"))
        .unwrap()
        .prop_filter("blank", |s| !s.trim().is_empty())
}

fn url() -> impl Strategy<Value = String> {
    (
        // A host label; not one with `--` in its third and fourth places (`xn--…` is an
        // internationalised name's ASCII form, and `xn--0` is not a valid one — rightly
        // refused by the validator, so not a valid manifest for this property).
        "[a-z][a-z0-9-]{0,10}[a-z0-9]"
            .prop_filter("a reserved `??--` label", |h| h.get(2..4) != Some("--")),
        prop_oneof![Just("com"), Just("org")],
        "(/[a-z0-9_.~-]{1,8}){0,3}",
    )
        .prop_map(|(h, tld, path)| format!("https://{h}.{tld}{path}"))
}

fn keywords() -> impl Strategy<Value = Vec<String>> {
    btree_set("[a-z][a-z0-9 -]{0,15}[a-z]", 0..6).prop_map(|s| s.into_iter().collect())
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_.-]{0,20}"
}

fn schema() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!({"type": "string", "maxLength": 100})),
        Just(
            json!({"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}, "required": ["x"]})
        ),
        Just(
            json!({"$defs": {"n": {"type": "number"}}, "type": "array", "items": {"$ref": "#/$defs/n"}})
        ),
    ]
}

fn capabilities() -> impl Strategy<Value = Vec<Capability>> {
    vec(
        (
            ident(),
            text(200),
            schema(),
            schema(),
            keywords(),
            option::of(vec(handle(), 0..3)),
        ),
        0..4,
    )
    .prop_map(|caps| {
        caps.into_iter()
            .enumerate()
            .map(
                |(i, (name, description, input, output, keywords, auth))| Capability {
                    // The index keeps names unique.
                    name: format!("c{i}{name}"),
                    description,
                    input_schema: input,
                    output_schema: output,
                    keywords,
                    authorized_requesters: auth,
                },
            )
            .collect()
    })
}

fn unique_idents(max: usize) -> impl Strategy<Value = Vec<String>> {
    btree_set(ident(), 0..max).prop_map(|s| s.into_iter().collect())
}

fn price() -> impl Strategy<Value = f64> {
    // Whole cents: decimal fractions that JSON writes and reads back exactly.
    (0u64..100_000_000).prop_map(|cents| cents as f64 / 100.0)
}

fn pricing() -> impl Strategy<Value = Pricing> {
    (option::of(price()), option::of(price()), "[A-Z]{3}")
        .prop_filter("needs a price", |(h, t, _)| h.is_some() || t.is_some())
        .prop_map(|(per_hour, per_million_tokens, currency)| Pricing {
            per_hour,
            per_million_tokens,
            currency,
        })
}

fn digest() -> impl Strategy<Value = Digest> {
    any::<[u8; 32]>().prop_map(Digest::from_bytes)
}

fn source() -> impl Strategy<Value = Source> {
    prop_oneof![
        (
            digest(),
            1u64..,
            "[a-z0-9_-]{1,10}(/[a-z0-9_-]{1,10}){0,2}",
            prop_oneof![Just(".yaml"), Just(".yml"), Just(".md")]
        )
            .prop_map(|(digest, size, stem, ext)| Source::Bundle(BundleSource {
                digest,
                size,
                media_type: AGENT_BUNDLE_V1.into(),
                entrypoint: format!("{stem}{ext}"),
            })),
        (
            "[a-z0-9]([a-z0-9._-]{0,20}[a-z0-9])?",
            "[1-9][0-9]{0,2}(\\.(0|[1-9][0-9]{0,2})){0,3}(rc[0-9])?(\\.post[0-9])?",
            option::of(url()),
            "[a-z_][a-z0-9_]{0,10}(:[a-z_][a-z0-9_]{0,10})?"
        )
            .prop_map(
                |(package, version, index, entry_point)| Source::Pip(PipSource {
                    package,
                    version,
                    index,
                    entry_point,
                    sha256: None,
                })
            ),
        (
            option::of("[a-z0-9][a-z0-9-]{0,10}"),
            "[a-z0-9][a-z0-9._-]{0,20}",
            version(),
            option::of(url()),
            "[a-z0-9][a-z0-9_-]{0,10}"
        )
            .prop_map(
                |(scope, name, version, registry, bin)| Source::Npm(NpmSource {
                    package: match scope {
                        Some(s) => format!("@{s}/{name}"),
                        None => name,
                    },
                    version,
                    registry,
                    bin,
                    integrity: None,
                })
            ),
        (
            option::of(prop_oneof![
                Just("ghcr.io/"),
                Just("localhost:5000/"),
                Just("registry.example.com:443/")
            ]),
            "[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}",
            option::of("[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,10}"),
            digest(),
            1u16..
        )
            .prop_map(|(registry, repo, tag, digest, port)| {
                let tag = tag.map(|t| format!(":{t}")).unwrap_or_default();
                Source::Docker(DockerSource {
                    image: format!("{}{repo}{tag}@{digest}", registry.unwrap_or_default()),
                    port,
                })
            }),
        (url(), prop_oneof![Just(""), Just("/ofc")]).prop_map(|(u, suffix)| Source::Remote(
            RemoteSource {
                endpoint: format!("{}{suffix}", u.trim_end_matches('/')),
            }
        )),
    ]
}

prop_compose! {
    fn manifest()(
        name in agent_name(),
        version in version(),
        id in handle(),
        display_name in line(100),
        tagline in line(200),
        description in text(500),
        readme in option::of(text(1000)),
        license in option::of(prop_oneof![Just("MIT"), Just("Apache-2.0"), Just("MIT OR Apache-2.0"), Just("LicenseRef-Acme-1.0")]),
        homepage in option::of(url()),
        repository in option::of(url()),
        keywords in keywords(),
        examples in vec(text(100), 0..4),
        activation in prop_oneof![Just(Activation::Mention), Just(Activation::Always)],
        capabilities in capabilities(),
        provides_mcp in option::of((url(), unique_idents(4)).prop_map(|(url, capabilities)| ProvidesMcp { url, capabilities })),
        requires in option::of((option::of(line(50)), unique_idents(3), unique_idents(3)).prop_map(|(model, workstations, tools)| Requires { model, workstations, tools })),
        pricing in option::of(pricing()),
        source in source(),
        origin in option::of((line(40), vec((ident(), text(30)), 0..4)).prop_map(|(document, fields)| Origin {
            format: Origin::AGENT_CARD.to_string(),
            document,
            fields: fields.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect(),
        })),
    ) -> Manifest {
        Manifest {
            schema_version: 1,
            name,
            version,
            id,
            display_name,
            tagline,
            description,
            readme,
            license: license.map(String::from),
            homepage,
            repository,
            keywords,
            examples,
            activation,
            capabilities,
            provides_mcp,
            requires,
            pricing,
            source,
            origin,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn valid_manifests_round_trip(m in manifest()) {
        prop_assert_eq!(m.validate().0, vec![]);
        let bytes = m.to_json_bytes();
        let text = std::str::from_utf8(&bytes).unwrap();
        let back = Manifest::from_json(text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_json_bytes(), bytes);
    }

    #[test]
    fn signed_manifests_verify_to_themselves(m in manifest(), seed in any::<[u8; 32]>()) {
        let key = SecretKey::from_seed(&seed);
        let env = sign_manifest(&m, &key);
        let (back, keyid, digest) = verify_manifest(&env, &[key.public_key()]).unwrap();
        prop_assert_eq!(back, m.clone());
        prop_assert_eq!(keyid, key.key_id());
        prop_assert_eq!(digest, m.digest());
    }

    #[test]
    fn manifest_parser_never_panics(text in "\\PC{0,300}") {
        let _ = Manifest::from_json(&text);
    }
}

fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, child) in m {
                pointers(
                    child,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        serde_json::Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,40}".prop_map(serde_json::Value::from),
        Just(json!("https://x.org/ofc")),
        Just(json!("sha256:0000")),
        Just(json!({"$ref": "http://x/y"})),
        Just(json!({"type": "bundle"})),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map("[a-zA-Z$]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Structured fuzzing: replace one value of a full fixture with anything.
    #[test]
    fn mutated_fixtures_never_panic(which in any::<proptest::sample::Index>(), new in json_value()) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifest/full.json");
        let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut ptrs = Vec::new();
        pointers(&doc, String::new(), &mut ptrs);
        let p = which.get(&ptrs).clone();
        if let Some(slot) = doc.pointer_mut(&p) {
            *slot = new;
        }
        let text = serde_json::to_string_pretty(&doc).unwrap();
        if let Err(e) = Manifest::from_json(&text) {
            for d in e.iter() {
                prop_assert!(!d.message.is_empty());
                prop_assert!(d.position.is_some(), "no position: {}", d);
            }
        }
    }
}
