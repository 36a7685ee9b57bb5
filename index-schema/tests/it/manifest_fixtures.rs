//! Committed manifest fixtures: every valid one parses and round-trips; every document of the
//! invalid corpus (`tests/fixtures/invalid/manifest/` at the workspace root, used by
//! `ofc validate`) is refused with a diagnostic naming the field its `.expect` file names.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use index_schema::manifest::{Manifest, SOURCE_KINDS};

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn valid_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifest")
}

fn invalid_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/manifest")
}

#[test]
fn valid_fixtures_parse_and_cover_every_source_kind() {
    let mut kinds = BTreeSet::new();
    let fixtures = files(&valid_dir(), ".json");
    assert!(fixtures.len() >= SOURCE_KINDS.len());
    for path in fixtures {
        let text = fs::read_to_string(&path).unwrap();
        let m = Manifest::from_json(&text).unwrap_or_else(|e| panic!("{}:\n{e}", path.display()));
        assert!(m.validate().is_empty());
        kinds.insert(m.source.kind());
        // Written bytes parse back to the same manifest, and writing is deterministic.
        let bytes = m.to_json_bytes();
        let back = Manifest::from_json(std::str::from_utf8(&bytes).unwrap()).unwrap();
        assert_eq!(back, m, "{}", path.display());
        assert_eq!(back.to_json_bytes(), bytes);
        // The fixture text itself (pretty, any key order) reads to the same value as the bytes.
        let a: serde_json::Value = serde_json::from_str(&text).unwrap();
        let b: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            Manifest::from_value(&a).unwrap(),
            Manifest::from_value(&b).unwrap()
        );
    }
    let all: BTreeSet<&str> = SOURCE_KINDS.iter().copied().collect();
    assert_eq!(kinds, all);
}

#[test]
fn fixture_names_are_normalized() {
    let text = fs::read_to_string(valid_dir().join("bundle-card.json")).unwrap();
    let m = Manifest::from_json(&text).unwrap();
    assert_eq!(m.name.to_string(), "acme/reviewer");
    assert_eq!(m.id.to_string(), "@reviewer");
}

#[test]
fn invalid_corpus_names_the_expected_field() {
    let docs = files(&invalid_dir(), ".manifest.json");
    assert!(docs.len() >= 8, "only {} invalid manifests", docs.len());
    for path in docs {
        let text = fs::read_to_string(&path).unwrap();
        let expect_path = PathBuf::from(format!("{}.expect", path.display()));
        let expected = fs::read_to_string(&expect_path)
            .unwrap_or_else(|e| panic!("{}: {e}", expect_path.display()));
        let expected = expected.trim();
        let err = match Manifest::from_json(&text) {
            Ok(_) => panic!("{} was accepted", path.display()),
            Err(e) => e,
        };
        assert!(
            err.iter().any(|d| d.path.to_string() == expected),
            "{}: wanted a diagnostic at `{expected}`, got:\n{err}",
            path.display()
        );
        for d in err.iter() {
            assert!(!d.message.is_empty());
            assert!(
                d.position.is_some(),
                "{}: no position for {d}",
                path.display()
            );
        }
    }
}
