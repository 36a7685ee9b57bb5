//! Committed AgentCard fixtures (index-schema's), read from disk by [`ofc_pkg::cards`]: a
//! directory with every card type loads, history files resolve,
//! duplicate names across a directory are refused, and the invalid corpus fails as expected.

use std::fs;
use std::path::{Path, PathBuf};

use index_schema::agent_card::{AgentCard, CardFormat, CardType, HistoryFormat};
use index_schema::agent_yaml::ManifestDefaults;
use index_schema::manifest::{BundleSource, Manifest, Source};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::{AgentName, Digest};
use ofc_pkg::cards::{load_dir, load_file};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../index-schema/tests/fixtures/agent_card")
}

#[test]
fn the_valid_directory_loads_every_type() {
    let dir = load_dir(&fixtures().join("valid")).unwrap();
    assert!(dir.is_ok(), "{:#?}", dir.failed);
    assert_eq!(dir.skipped.len(), 1, "README.md is not a card");
    let names: Vec<&str> = dir.cards.iter().map(|c| c.card.name.as_str()).collect();
    // Sorted by file name.
    let files: Vec<&Path> = dir.cards.iter().map(|c| c.path.as_path()).collect();
    assert!(files.windows(2).all(|w| w[0] < w[1]), "{files:?}");
    for t in CardType::ALL {
        assert!(
            dir.cards.iter().any(|c| c.card.card_type == t),
            "no {t} card in {names:?}"
        );
    }
    for format in [CardFormat::Markdown, CardFormat::Yaml] {
        assert!(dir.cards.iter().any(|c| c.format == format));
    }
    let by_name = |n: &str| &dir.cards.iter().find(|c| c.card.name == n).unwrap().card;
    assert_eq!(
        by_name("with_bom").instruction.as_deref(),
        Some("This card starts with a byte order mark\nand uses CRLF line endings.")
    );
    assert_eq!(
        by_name("terse").instruction.as_deref(),
        Some("You are terse. Answer in one sentence.")
    );
    assert!(by_name("code_formatter").tool_only);
    // Every `agent` field except the typed common ones and `messages` stays an attribute
    // (`history_mode` gave way to `history_source` + `history_merge_target`).
    let full = by_name("full_agent");
    assert_eq!(full.attributes.len(), 20);
    assert_eq!(full.messages, ["./history/analyst.md"]);
    assert!(full.default && full.shell());
}

#[test]
fn history_files_are_resolved_against_the_card_directory() {
    let dir = load_dir(&fixtures().join("valid")).unwrap();
    let router = dir
        .cards
        .iter()
        .find(|c| c.card.name == "dispatcher")
        .unwrap();
    let formats: Vec<HistoryFormat> = router.history.iter().map(|h| h.format).collect();
    assert_eq!(formats, [HistoryFormat::Text, HistoryFormat::Json]);
    assert!(router.history.iter().all(|h| h.path.is_file()));
    assert_eq!(router.history[0].written, "./history/analyst.md");
}

#[test]
fn cards_round_trip_through_both_formats() {
    let dir = load_dir(&fixtures().join("valid")).unwrap();
    for loaded in &dir.cards {
        let c = &loaded.card;
        assert_eq!(
            &AgentCard::from_markdown(&c.to_markdown(), None).unwrap(),
            c,
            "{}",
            c.name
        );
        assert_eq!(
            &AgentCard::from_yaml(&c.to_yaml(), None).unwrap(),
            c,
            "{}",
            c.name
        );
    }
}

#[test]
fn names_must_be_unique_across_a_directory() {
    let dir = load_dir(&fixtures().join("duplicate_names")).unwrap();
    assert_eq!(dir.cards.len(), 1);
    assert_eq!(dir.failed.len(), 1);
    let f = &dir.failed[0];
    assert!(f.path.ends_with("b.yaml"));
    let d = &f.diagnostics.0[0];
    assert_eq!(d.path.to_string(), "name");
    assert_eq!(d.position.map(|p| p.line), Some(1));
    assert!(d.message.contains("a.md"), "{}", d.message);
}

#[test]
fn one_broken_card_does_not_hide_the_others() {
    let dir = load_dir(&fixtures().join("mixed")).unwrap();
    assert_eq!(dir.cards.len(), 1);
    let f = &dir.failed[0];
    assert!(f.path.ends_with("broken.md"));
    let d = &f.diagnostics.0[0];
    assert_eq!(d.path.to_string(), "fan_out");
    assert_eq!(d.position.map(|p| p.line), Some(3));
    assert!(dir.into_result().is_err());
}

#[test]
fn load_file_and_load_dir_refuse_what_is_not_there() {
    assert!(load_file(&fixtures().join("valid/nope.md")).is_err());
    assert!(load_file(&fixtures().join("valid/history/fewshot.json")).is_err());
    assert!(load_dir(&fixtures().join("no-such-dir")).is_err());
}

#[test]
fn cards_convert_to_manifests_with_defaults() {
    let loaded = load_file(&fixtures().join("valid/code_formatter.md")).unwrap();
    let defaults = ManifestDefaults {
        publisher: Some("acme".into()),
        version: Some(semver::Version::new(0, 1, 0)),
        source: Some(Source::Bundle(BundleSource {
            digest: Digest::of(b"bundle"),
            size: 6,
            media_type: AGENT_BUNDLE_V1.into(),
            entrypoint: "code_formatter.md".into(),
        })),
        ..ManifestDefaults::default()
    };
    let m = loaded.card.to_manifest(defaults.clone()).unwrap();
    assert_eq!(m.name, AgentName::parse("acme/code_formatter").unwrap());
    assert_eq!(m.id.to_string(), "@code_formatter");
    assert_eq!(
        m.tagline,
        "Formats code according to project style guidelines."
    );

    // A card without a description cannot be published.
    let sizer = load_file(&fixtures().join("valid/sizer.md")).unwrap();
    let e = sizer.card.to_manifest(defaults).unwrap_err();
    assert_eq!(e.0[0].path.to_string(), "description");
    // Nor without a version and a source.
    let e = loaded
        .card
        .to_manifest(ManifestDefaults::default())
        .unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert_eq!(paths, ["name", "version", "source"]);

    // Model and servers become requirements.
    let pmo = load_file(&fixtures().join("valid/full_agent.md")).unwrap();
    let m = pmo
        .card
        .to_manifest(ManifestDefaults {
            name: Some(AgentName::parse("acme/full").unwrap()),
            version: Some(semver::Version::new(1, 0, 0)),
            source: Some(Source::Remote(index_schema::manifest::RemoteSource {
                endpoint: "https://full.example/ofc".into(),
            })),
            ..ManifestDefaults::default()
        })
        .unwrap();
    let r = m.requires.unwrap();
    assert_eq!(r.model.as_deref(), Some("sonnet"));
    assert_eq!(r.workstations, ["time", "github", "filesystem"]);
}

#[test]
fn invalid_corpus_names_the_expected_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/agent-card");
    let mut n = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "expect") {
            continue;
        }
        let expect = fs::read_to_string(format!("{}.expect", path.display())).unwrap();
        let e = load_file(&path).expect_err(&path.display().to_string());
        let d = &e.0[0];
        assert_eq!(d.path.to_string(), expect.trim(), "{}: {e}", path.display());
        assert!(d.position.is_some(), "{}: {e}", path.display());
        n += 1;
    }
    assert!(n >= 10);
}

#[test]
fn a_published_card_keeps_its_unused_fields_and_points_at_itself() {
    let card = AgentCard::from_markdown(
        "---\nname: connector\ndescription: Connects.\nmodel: sonnet\nservers: [time]\napi_key: sk-secret\nsubagents: true\nvariables: {topic: whales}\nmcp_connect:\n  docs:\n    target: https://docs.example.com/mcp\n    access_token: tok\n    headers: {X-Key: k}\ntool_input_schema:\n  type: object\nmessages: ./h.md\n---\nConnect.\n",
        None,
    )
    .unwrap();
    let m = card
        .to_manifest(ManifestDefaults {
            publisher: Some("acme".into()),
            version: Some(semver::Version::new(1, 0, 0)),
            source: Some(Source::Bundle(BundleSource {
                digest: Digest::of(b"bundle"),
                size: 6,
                media_type: AGENT_BUNDLE_V1.into(),
                entrypoint: "connector.md".into(),
            })),
            ..ManifestDefaults::default()
        })
        .unwrap();
    let origin = m.origin.as_ref().unwrap();
    assert_eq!(origin.format, "agent-card");
    assert_eq!(origin.document, "connector.md");
    let kept: Vec<&str> = origin.fields.keys().map(String::as_str).collect();
    assert_eq!(
        kept,
        [
            "type",
            "subagents",
            "variables",
            "mcp_connect",
            "tool_input_schema",
            "messages"
        ]
    );
    assert_eq!(
        origin.fields["mcp_connect"],
        serde_json::json!({"docs": {"target": "https://docs.example.com/mcp"}}),
        "secrets are not copied"
    );
    // The manifest, origin included, survives its own JSON form.
    let json = String::from_utf8(m.to_json_bytes()).unwrap();
    assert_eq!(Manifest::from_json(&json).unwrap(), m);
}
