//! Committed `agent.yaml` fixtures load, round-trip and convert to manifests; every file of the
//! invalid corpus fails naming the field its `.expect` sidecar gives.

use std::fs;
use std::path::{Path, PathBuf};

use index_schema::agent_yaml::{AgentYaml, ManifestDefaults};
use index_schema::manifest::{BundleSource, Source};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::Digest;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent_yaml")
}

fn load(name: &str) -> AgentYaml {
    let text = fs::read_to_string(fixtures().join(name)).unwrap();
    AgentYaml::from_yaml(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_fixture_loads_and_round_trips() {
    let mut n = 0;
    for entry in fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        let a = AgentYaml::from_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back = AgentYaml::from_yaml(&a.to_yaml()).unwrap();
        assert_eq!(back, a, "{}", path.display());
        n += 1;
    }
    assert!(n >= 7);
}

#[test]
fn the_seed_example_is_an_llm_agent_without_hub_metadata() {
    let a = load("seed-coder.agent.yaml");
    assert_eq!(a.id.to_string(), "@coder");
    assert!(a.agent_name().is_none());
    assert!(a.source.is_none());
}

fn bundle() -> Source {
    Source::Bundle(BundleSource {
        digest: Digest::of(b"tar.gz bytes"),
        size: 12,
        media_type: AGENT_BUNDLE_V1.to_string(),
        entrypoint: "agent.yaml".to_string(),
    })
}

#[test]
fn publishable_fixtures_become_valid_manifests() {
    let defaults = || ManifestDefaults {
        source: Some(bundle()),
        ..ManifestDefaults::default()
    };
    for (file, kind) in [
        ("publishable.agent.yaml", "bundle"),
        ("process.agent.yaml", "bundle"),
        ("pip.agent.yaml", "pip"),
        ("npm.agent.yaml", "npm"),
        ("docker.agent.yaml", "docker"),
        ("remote.agent.yaml", "remote"),
    ] {
        let m = load(file)
            .to_manifest(defaults())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(m.source.kind(), kind, "{file}");
        assert!(m.validate().is_empty(), "{file}");
    }
    let m = load("publishable.agent.yaml")
        .to_manifest(defaults())
        .unwrap();
    assert_eq!(m.name.to_string(), "ailabs/data-analyst");
    assert_eq!(m.capabilities.len(), 2);
    assert_eq!(
        m.capabilities[1]
            .authorized_requesters
            .as_ref()
            .unwrap()
            .len(),
        2
    );
    let m = load("process.agent.yaml").to_manifest(defaults()).unwrap();
    assert_eq!(m.name.to_string(), "vizcorp/viz");
}

#[test]
fn the_seed_example_needs_defaults_to_publish() {
    let e = load("seed-coder.agent.yaml")
        .to_manifest(ManifestDefaults::default())
        .unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert_eq!(
        paths,
        ["package", "version", "tagline", "description", "source"]
    );
}

#[test]
fn invalid_corpus_names_the_expected_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/agent-yaml");
    let mut n = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "expect") {
            continue;
        }
        let expect = fs::read_to_string(format!("{}.expect", path.display())).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let e = AgentYaml::from_yaml(&text).expect_err(&path.display().to_string());
        let d = &e.0[0];
        assert_eq!(d.path.to_string(), expect.trim(), "{}: {e}", path.display());
        assert!(d.position.is_some(), "{}: {e}", path.display());
        n += 1;
    }
    assert!(n >= 10);
}
