//! Committed lockfiles: a hand-written one reads, and writes exactly the committed canonical
//! bytes; the invalid corpus fails naming the expected field.

use std::fs;
use std::path::{Path, PathBuf};

use index_schema::lockfile::{LockedSource, Lockfile};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lockfile")
}

fn read(name: &str) -> String {
    fs::read_to_string(fixtures().join(name)).unwrap()
}

#[test]
fn hand_written_lockfile_writes_the_canonical_bytes() {
    let hand = Lockfile::from_toml(&read("all-sources.hand.ofc.lock")).unwrap();
    let canonical = read("all-sources.ofc.lock");
    assert_eq!(hand.to_toml_string(), canonical);
    let again = Lockfile::from_toml(&canonical).unwrap();
    assert_eq!(again, hand);
    assert_eq!(again.to_toml_string(), canonical);
}

#[test]
fn every_source_kind_is_present() {
    let l = Lockfile::from_toml(&read("all-sources.ofc.lock")).unwrap();
    let kinds: Vec<&str> = l.agents().iter().map(|a| a.source.kind()).collect();
    for k in ["bundle", "pip", "npm", "docker", "remote", "local"] {
        assert!(kinds.contains(&k), "{k}");
    }
    let crawler = l
        .agents()
        .iter()
        .find(|a| a.source.kind() == "docker")
        .unwrap();
    assert!(
        crawler
            .source
            .docker_reference()
            .unwrap()
            .starts_with("ofc/crawler:3.0.1@sha256:")
    );
    let local = l
        .agents()
        .iter()
        .find(|a| matches!(a.source, LockedSource::Local { .. }))
        .unwrap();
    assert!(local.hub.is_none() && local.manifest_digest.is_none());
}

#[test]
fn invalid_corpus_names_the_expected_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/lockfile");
    let mut n = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "expect") {
            continue;
        }
        let expect = fs::read_to_string(format!("{}.expect", path.display())).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let e = Lockfile::from_toml(&text).expect_err(&path.display().to_string());
        let d = &e.0[0];
        assert_eq!(d.path.to_string(), expect.trim(), "{}: {e}", path.display());
        assert!(d.position.is_some(), "{}: {e}", path.display());
        n += 1;
    }
    assert!(n >= 8);
}
