//! The shipped example agents are publishable: each converts into a valid agent manifest (what
//! `ofc publish` will send), which signs and verifies.

use std::path::{Path, PathBuf};

use index_schema::agent_card::AgentCard;
use index_schema::agent_yaml::{AgentYaml, ManifestDefaults};
use index_schema::envelope::{SecretKey, sign_manifest, verify_manifest};
use index_schema::manifest::{BundleSource, Manifest, Source};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::{AgentName, Digest};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/agents")
}

/// What the packer will supply: the name from the folder, a version, and a bundle source whose
/// digest stands in for the tar.gz the packer builds (issue [client]).
fn defaults(dir: &Path, entrypoint: &str) -> ManifestDefaults {
    let folder = dir.file_name().unwrap().to_str().unwrap();
    ManifestDefaults {
        name: Some(AgentName::new("ofc-examples", folder).unwrap()),
        version: Some(semver::Version::new(1, 0, 0)),
        source: Some(Source::Bundle(BundleSource {
            digest: Digest::of(folder.as_bytes()),
            size: 1024,
            media_type: AGENT_BUNDLE_V1.to_string(),
            entrypoint: entrypoint.to_string(),
        })),
        ..ManifestDefaults::default()
    }
}

fn manifest_for(dir: &Path) -> Manifest {
    let agent_yaml = dir.join("agent.yaml");
    if agent_yaml.exists() {
        let text = std::fs::read_to_string(&agent_yaml).unwrap();
        let a = AgentYaml::from_yaml(&text)
            .unwrap_or_else(|d| panic!("{}:\n{d}", agent_yaml.display()));
        return a
            .to_manifest(defaults(dir, "agent.yaml"))
            .unwrap_or_else(|d| panic!("{} does not convert:\n{d}", agent_yaml.display()));
    }
    let card = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".card.yaml")
                || (n.ends_with(".md") && std::fs::read_to_string(p).unwrap().starts_with("---\n"))
        })
        .unwrap_or_else(|| panic!("{} has neither agent.yaml nor an AgentCard", dir.display()));
    // Read as ofc reads it (`ofc_pkg::cards::load_file`): the text, and any history file.
    let text = std::fs::read_to_string(&card).unwrap();
    let loaded = AgentCard::load_text(&card, &text, &mut |p| {
        std::fs::read_to_string(p).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|d| panic!("{}:\n{d}", card.display()));
    let entry = card.file_name().unwrap().to_str().unwrap().to_string();
    loaded
        .card
        .to_manifest(defaults(dir, &entry))
        .unwrap_or_else(|d| panic!("{} does not convert:\n{d}", card.display()))
}

#[test]
fn every_example_agent_becomes_a_valid_signed_manifest() {
    let key = SecretKey::from_seed(&[42; 32]);
    let mut dirs: Vec<_> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "only {} example agents", dirs.len());
    let mut kinds = std::collections::BTreeSet::new();
    for dir in &dirs {
        let m = manifest_for(dir);
        let problems = m.validate();
        assert!(problems.is_empty(), "{}: {problems}", dir.display());
        let text = String::from_utf8(m.to_json_bytes()).unwrap();
        assert_eq!(Manifest::from_json(&text).unwrap(), m);
        let env = sign_manifest(&m, &key);
        let (verified, _, _) = verify_manifest(&env, &[key.public_key()]).unwrap();
        assert_eq!(verified, m);
        kinds.insert(m.source.kind());
    }
    assert!(kinds.len() >= 2, "examples use only {kinds:?}");
}

#[test]
fn the_data_analysis_example_says_so() {
    let m = manifest_for(&examples().join("data-analyst"));
    let text = format!("{} {} {:?}", m.tagline, m.description, m.keywords).to_lowercase();
    assert!(
        text.contains("data analysis") || text.contains("data analyst"),
        "{text}"
    );
}
