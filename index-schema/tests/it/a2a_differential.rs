//! Differential test against the A2A SDK (PyPI `a2a-sdk` 0.3, whose pydantic `AgentCard` models
//! the A2A v0.3 JSON agent card): the SDK (run by `scripts/a2a-card-verdicts` in the venv that
//! `scripts/peers/a2a-sdk` installs) and ofc judge every card of `tests/fixtures/a2a-cards/`, and
//! must agree on each. File names say what the author expected (`ok-…`/`bad-…`), which is
//! checked too. Also: every valid card converts to a `remote` manifest, and conversion errors
//! name the card's field and line.
//!
//! Without the venv this test fails (it does not skip): run `scripts/install-test-deps`.

use std::path::{Path, PathBuf};
use std::process::Command;

use index_schema::a2a_card::A2aCard;
use index_schema::agent_yaml::ManifestDefaults;
use index_schema::manifest::Source;
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a-cards")
}

fn sdk_python() -> PathBuf {
    let peers = std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from);
    let python = peers.join("a2a-sdk-venv/bin/python");
    assert!(
        python.exists(),
        "the A2A SDK is not installed ({} is missing): run `scripts/install-test-deps` \
         (or `scripts/peers/a2a-sdk`), which installs a2a-sdk into that venv",
        python.display()
    );
    python
}

fn pinned_version() -> String {
    let script = std::fs::read_to_string(repo_root().join("scripts/peers/a2a-sdk")).unwrap();
    let start = script.find("A2A_SDK_VERSION:-").unwrap() + "A2A_SDK_VERSION:-".len();
    script[start..].split('}').next().unwrap().to_string()
}

fn files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    files
}

#[test]
fn ofc_and_the_a2a_sdk_agree_on_every_card() {
    let files = files();
    assert!(files.len() >= 30, "only {} cards", files.len());
    let out = Command::new(sdk_python())
        .arg(repo_root().join("scripts/a2a-card-verdicts"))
        .args(&files)
        .current_dir(corpus())
        .output()
        .expect("run scripts/a2a-card-verdicts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["a2aSdkVersion"].as_str(),
        Some(pinned_version().as_str()),
        "the venv holds another a2a-sdk than scripts/peers/a2a-sdk pins: rerun it"
    );
    let verdicts = doc["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), files.len());

    let mut disagreements = Vec::new();
    for v in verdicts {
        let file = v["file"].as_str().unwrap();
        let sdk_ok = v["verdict"] == "accept";
        let text = std::fs::read_to_string(corpus().join(file)).unwrap();
        let ofc = A2aCard::from_json(&text);
        if ofc.is_ok() != sdk_ok {
            disagreements.push(format!(
                "{file}: ofc {}, the SDK {}",
                match &ofc {
                    Ok(_) => "accepts".to_string(),
                    Err(d) => format!("refuses ({d})"),
                },
                if sdk_ok {
                    "accepts".to_string()
                } else {
                    format!("refuses ({})", v["error"])
                }
            ));
        }
        if sdk_ok != file.starts_with("ok-") {
            disagreements.push(format!(
                "{file}: the SDK's verdict is not what the name says"
            ));
        }
        if let Err(d) = &ofc {
            for x in d.iter() {
                let document_level = matches!(file, "bad-not-object.json" | "bad-syntax.json");
                if x.position.is_none() || (x.path.is_root() && !document_level) {
                    disagreements.push(format!("{file}: refusal without a line or a field: {x}"));
                }
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} cards disagree:\n{}",
        disagreements.len(),
        files.len(),
        disagreements.join("\n")
    );
}

fn publisher() -> ManifestDefaults {
    ManifestDefaults {
        publisher: Some("acme".into()),
        ..ManifestDefaults::default()
    }
}

#[test]
fn valid_cards_become_remote_manifests_that_keep_the_rest() {
    let mut converted = 0;
    for file in files().iter().filter(|f| f.starts_with("ok-")) {
        let text = std::fs::read_to_string(corpus().join(file)).unwrap();
        let card = A2aCard::from_json(&text).unwrap();
        if file == "ok-empty-strings.json" {
            // Valid A2A, but an empty name makes no hub name: the error names the card field.
            let e = card.to_manifest(publisher(), file).unwrap_err();
            assert_eq!(e.0[0].path.to_string(), "name", "{e}");
            assert_eq!(e.0[0].position.map(|p| p.line), Some(2), "{e}");
            continue;
        }
        let m = card
            .to_manifest(publisher(), file)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(m.name.to_string(), "acme/currency-agent");
        assert_eq!(m.display_name, "Currency Agent");
        assert_eq!(m.tagline, "Converts between currencies.");
        assert_eq!(m.version.to_string(), "1.2.0");
        assert!(
            matches!(&m.source, Source::Remote(r) if r.endpoint == "https://agents.example.com/currency")
        );
        let skills = card.value["skills"].as_array().unwrap();
        assert_eq!(m.capabilities.len(), skills.len());
        for (cap, skill) in m.capabilities.iter().zip(skills) {
            assert_eq!(cap.name, skill["id"].as_str().unwrap());
            assert_eq!(cap.description, skill["description"].as_str().unwrap());
        }
        let origin = m.origin.as_ref().unwrap();
        assert_eq!(
            (origin.format.as_str(), origin.document.as_str()),
            ("a2a-agent-card", file.as_str())
        );
        // The fields the manifest has no place for are kept as written.
        for (k, v) in &card.value {
            if !matches!(
                k.as_str(),
                "name" | "description" | "version" | "url" | "skills"
            ) {
                assert_eq!(origin.fields.get(k), Some(v), "{file}: {k}");
            }
        }
        converted += 1;
    }
    assert!(converted >= 8);
}

#[test]
fn conversion_errors_name_the_card_field_and_line() {
    let text = std::fs::read_to_string(corpus().join("ok-minimal.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["version"] = "v1".into();
    v["url"] = "ftp://agents.example.com".into();
    v["skills"][0]["id"] = "convert currency!".into();
    let text = serde_json::to_string_pretty(&v).unwrap();
    let e = A2aCard::from_json(&text)
        .unwrap()
        .to_manifest(publisher(), "agent-card.json")
        .unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert!(paths.contains(&"version".to_string()), "{e}");
    let e = A2aCard::from_json(&text)
        .unwrap()
        .to_manifest(
            ManifestDefaults {
                version: Some(semver::Version::new(1, 0, 0)),
                ..publisher()
            },
            "agent-card.json",
        )
        .unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert!(paths.contains(&"url".to_string()), "{e}");
    assert!(paths.contains(&"skills[0].id".to_string()), "{e}");
    assert!(e.iter().all(|d| d.position.is_some()), "{e}");
}

/// Card → manifest → card gives back the card (every field the manifest can hold, and the rest
/// through `origin`), and the A2A SDK parses every card ofc exports, including those of remote
/// manifests that did not come from an A2A card.
#[test]
fn a2a_cards_round_trip_and_exported_cards_parse_with_the_sdk() {
    let python = sdk_python();
    let out_dir = tempfile_dir();
    let mut exported = Vec::new();
    for file in files().iter().filter(|f| f.starts_with("ok-")) {
        if file == "ok-empty-strings.json" {
            continue;
        }
        let text = std::fs::read_to_string(corpus().join(file)).unwrap();
        let card = A2aCard::from_json(&text).unwrap();
        let m = card.to_manifest(publisher(), file).unwrap();
        let back = index_schema::a2a_card::from_manifest(&m).unwrap();
        let mut want = card.value.clone();
        // Trimmed on the way in.
        want["description"] = want["description"].as_str().unwrap().trim().into();
        assert_eq!(Value::Object(back.clone()), Value::Object(want), "{file}");
        exported.push((format!("exported-{file}"), back));
    }
    // A remote manifest written by hand (no origin) exports too.
    let plain = index_schema::manifest::Manifest::from_value(&serde_json::json!({
        "schemaVersion": 1, "name": "acme/echo", "version": "0.1.0", "id": "@echo",
        "displayName": "Echo", "tagline": "Echoes.", "description": "Echoes what it gets.",
        "capabilities": [{"name": "echo", "description": "Echo a text", "inputSchema": {}, "outputSchema": {}}],
        "source": {"type": "remote", "endpoint": "https://echo.example/ofc"}
    }))
    .unwrap();
    exported.push((
        "exported-plain.json".into(),
        index_schema::a2a_card::from_manifest(&plain).unwrap(),
    ));
    let mut names = Vec::new();
    for (name, card) in &exported {
        std::fs::write(
            out_dir.join(name),
            serde_json::to_string_pretty(card).unwrap(),
        )
        .unwrap();
        names.push(name.clone());
    }
    let out = Command::new(python)
        .arg(repo_root().join("scripts/a2a-card-verdicts"))
        .args(&names)
        .current_dir(&out_dir)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let refused: Vec<&Value> = doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["verdict"] != "accept")
        .collect();
    assert_eq!(doc["verdicts"].as_array().unwrap().len(), names.len());
    assert!(
        refused.is_empty(),
        "the SDK refuses exported cards: {refused:?}"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ofc-a2a-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
