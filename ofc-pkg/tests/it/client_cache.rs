//! The content-addressed cache: concurrent installs extract once, digests are checked on read,
//! hostile bundles leave nothing behind, and `ofc list`/`rm`/`gc`/`verify` work on it.

use std::fs;
use std::path::Path;
use std::sync::{Arc, Barrier};

use assert_cmd::Command;
use index_schema::agent_yaml::{AgentYaml, ManifestDefaults};
use index_schema::envelope::{Envelope, SecretKey, sign_manifest};
use index_schema::manifest::{BundleSource, Source};
use index_schema::media_types::AGENT_BUNDLE_V1;
use index_schema::name::Digest;
use ofc_pkg::cache::{Cache, CacheError};
use ofc_pkg::pack::{PackLimits, Packed, pack_dir};
use ofc_pkg::unpack::UnpackLimits;

fn bundle(content: &str) -> Packed {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("agent.yaml"), "id: \"@demo\"\n").unwrap();
    fs::create_dir(d.path().join("lib")).unwrap();
    fs::write(d.path().join("lib/data.txt"), content).unwrap();
    pack_dir(d.path(), &PackLimits::default()).unwrap()
}

fn envelope(name: &str, version: &str, b: &Packed) -> Envelope {
    let yaml = format!(
        "id: \"@demo\"\nname: Demo\npackage: {name}\nversion: {version}\ntagline: t\ndescription: d\nprompt: p\nmodel: m\n"
    );
    let m = AgentYaml::from_yaml(&yaml)
        .unwrap()
        .to_manifest(ManifestDefaults {
            source: Some(Source::Bundle(BundleSource {
                digest: b.digest,
                size: b.bytes.len() as u64,
                media_type: AGENT_BUNDLE_V1.into(),
                entrypoint: "agent.yaml".into(),
            })),
            ..ManifestDefaults::default()
        })
        .unwrap();
    sign_manifest(&m, &SecretKey::from_seed(&[7; 32]))
}

fn ofc(home: &Path) -> Command {
    let mut c = Command::cargo_bin("ofc").unwrap();
    c.env("OFC_HOME", home).env_remove("OFC_HUB");
    c
}

#[test]
fn sixteen_concurrent_installs_extract_once() {
    let home = tempfile::tempdir().unwrap();
    let cache = Cache::new(home.path().join("cache"));
    let b = Arc::new(bundle("shared"));
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (cache, b, barrier) = (cache.clone(), b.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                cache.install_bundle(&b.digest, &b.bytes, &UnpackLimits::default())
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert_eq!(results.iter().filter(|r| r.extracted).count(), 1);
    for r in &results {
        assert_eq!(
            fs::read_to_string(r.files.join("lib/data.txt")).unwrap(),
            "shared"
        );
    }
    // No temporaries left behind.
    let tmp = home.path().join("cache/tmp-v1");
    assert_eq!(fs::read_dir(&tmp).unwrap().count(), 0);
    let dir = home
        .path()
        .join("cache/bundles-v1/sha256")
        .join(b.digest.hex());
    assert_eq!(results[0].dir, dir);
}

#[test]
fn wrong_digest_and_hostile_bundles_leave_nothing() {
    let home = tempfile::tempdir().unwrap();
    let cache = Cache::new(home.path().join("cache"));
    let b = bundle("x");
    let wrong = Digest::of(b"something else");
    let e = cache
        .install_bundle(&wrong, &b.bytes, &UnpackLimits::default())
        .unwrap_err();
    assert!(matches!(e, CacheError::DigestMismatch { .. }), "{e}");

    let hostile = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile/tar-slip.tar.gz"),
    )
    .unwrap();
    let d = Digest::of(&hostile);
    let e = cache
        .install_bundle(&d, &hostile, &UnpackLimits::default())
        .unwrap_err();
    assert!(matches!(e, CacheError::Unpack { .. }), "{e}");
    assert!(cache.bundle(&d).unwrap().is_none());
    assert_eq!(
        fs::read_dir(home.path().join("cache/tmp-v1"))
            .unwrap()
            .count(),
        0
    );
    // Nothing escaped the cache: the only top-level entry of home is the cache.
    let top: Vec<_> = fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, ["cache"]);
}

/// A cache with two versions of one agent sharing a bundle, another agent, and a loose bundle.
fn populated(home: &Path) -> (Packed, Packed, Packed) {
    let cache = Cache::new(home.join("cache"));
    let (b1, b2, loose) = (bundle("one"), bundle("two"), bundle("loose"));
    for b in [&b1, &b2, &loose] {
        cache
            .install_bundle(&b.digest, &b.bytes, &UnpackLimits::default())
            .unwrap();
    }
    cache
        .put_manifest(&envelope("acme/alpha", "1.0.0", &b1))
        .unwrap();
    cache
        .put_manifest(&envelope("acme/alpha", "1.1.0", &b1))
        .unwrap();
    cache
        .put_manifest(&envelope("acme/beta", "0.2.0", &b2))
        .unwrap();
    (b1, b2, loose)
}

#[test]
fn list_shows_agents_and_loose_bundles() {
    let home = tempfile::tempdir().unwrap();
    populated(home.path());
    let out = ofc(home.path()).arg("list").assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("list", stdout);

    let out = ofc(home.path()).args(["list", "--json"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["agents"].as_array().unwrap().len(), 3);
    assert_eq!(v["bundles"].as_array().unwrap().len(), 3);
}

#[test]
fn empty_cache_lists_nothing() {
    let home = tempfile::tempdir().unwrap();
    ofc(home.path())
        .arg("list")
        .assert()
        .success()
        .stdout("")
        .stderr(predicates::str::contains("is empty"));
}

#[test]
fn rm_and_gc() {
    let home = tempfile::tempdir().unwrap();
    let (b1, b2, loose) = populated(home.path());
    let cache = Cache::new(home.path().join("cache"));

    // Removing one version keeps the bundle the other version uses.
    ofc(home.path())
        .args(["rm", "acme/alpha@1.0.0"])
        .assert()
        .success()
        .stdout(predicates::str::contains("removed acme/alpha@1.0.0"))
        .stdout(predicates::str::contains("removed bundle").not());
    assert!(cache.bundle(&b1.digest).unwrap().is_some());
    // Removing the last user removes the bundle.
    ofc(home.path())
        .args(["rm", "acme/alpha"])
        .assert()
        .success()
        .stdout(predicates::str::contains(format!(
            "removed bundle {}",
            b1.digest
        )));
    assert!(cache.bundle(&b1.digest).unwrap().is_none());

    let out = ofc(home.path())
        .args(["rm", "acme/nothere"])
        .assert()
        .failure()
        .code(1);
    insta::assert_snapshot!(
        "rm_missing",
        String::from_utf8(out.get_output().stderr.clone()).unwrap()
    );

    // gc removes the loose bundle only.
    let out = ofc(home.path()).args(["gc", "--json"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        v["removedBundles"],
        serde_json::json!([loose.digest.to_string()])
    );
    assert!(cache.bundle(&loose.digest).unwrap().is_none());
    assert!(cache.bundle(&b2.digest).unwrap().is_some());
}

use predicates::prelude::PredicateBooleanExt;

#[test]
fn verify_reports_corrupt_entries() {
    let home = tempfile::tempdir().unwrap();
    let (b1, b2, _) = populated(home.path());
    ofc(home.path())
        .arg("verify")
        .assert()
        .success()
        .stderr("checked 6 cache entries: all intact\n");

    let root = home.path().join("cache/bundles-v1/sha256");
    // Damage one unpacked file and one tar.gz.
    fs::write(
        root.join(b1.digest.hex()).join("files/lib/data.txt"),
        "evil",
    )
    .unwrap();
    let blob = root.join(b2.digest.hex()).join("bundle.tar.gz");
    let mut bytes = fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&blob, bytes).unwrap();

    let out = ofc(home.path()).arg("verify").assert().failure().code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let stderr = stderr
        .replace(&b1.digest.hex(), "<B1>")
        .replace(&b2.digest.hex(), "<B2>");
    let stderr = regex_hash(&stderr);
    insta::assert_snapshot!("verify_corrupt", stderr);

    // Reading a damaged bundle fails too.
    let e = Cache::new(home.path().join("cache"))
        .bundle(&b2.digest)
        .unwrap_err();
    assert!(matches!(e, CacheError::Corrupt { .. }), "{e}");
}

/// Replaces other sha256 hex strings (the damaged blob's new hash) with `<HASH>`.
fn regex_hash(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("sha256:") {
        out.push_str(&rest[..i + 7]);
        rest = &rest[i + 7..];
        let hex_len = rest.chars().take_while(|c| c.is_ascii_hexdigit()).count();
        if hex_len == 64 {
            out.push_str("<HASH>");
            rest = &rest[64..];
        }
    }
    out.push_str(rest);
    out
}
