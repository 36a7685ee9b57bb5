//! Differential test against fast-agent, the main AgentCard implementation: fast-agent's own
//! card loader (PyPI `fast-agent-mcp`, run by `scripts/fast-agent-card-verdicts` in the venv that
//! `scripts/peers/fast-agent` installs) and ofc's validator judge every card of
//! `index-schema/tests/fixtures/fast-agent-cards/` and must agree on each file. The corpus was written for this
//! test: every card type, every field fast-agent knows, valid and broken cards. File names say
//! what the author expected (`ok-…` loads, `bad-…` is refused), which the test checks too, so that
//! two validators that accepted everything would not pass.
//!
//! Without the venv this test fails (it does not skip): run `scripts/install-test-deps`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use index_schema::agent_card::{CardType, is_agent_skill};
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn corpus() -> PathBuf {
    repo_root().join("index-schema/tests/fixtures/fast-agent-cards")
}

/// The venv's python; panics with the way to install it when it is missing.
fn fast_agent_python() -> PathBuf {
    let peers = std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from);
    let python = peers.join("fast-agent-venv/bin/python");
    assert!(
        python.exists(),
        "fast-agent is not installed ({} is missing): run `scripts/install-test-deps` \
         (or `scripts/peers/fast-agent`), which installs fast-agent-mcp into that venv",
        python.display()
    );
    python
}

/// The fast-agent-mcp version `scripts/peers/fast-agent` pins.
fn pinned_version() -> String {
    let script = std::fs::read_to_string(repo_root().join("scripts/peers/fast-agent")).unwrap();
    let start = script.find("FAST_AGENT_VERSION:-").unwrap() + "FAST_AGENT_VERSION:-".len();
    script[start..].split('}').next().unwrap().to_string()
}

/// The corpus files, relative to the corpus folder: every card file at the top, and the skills.
fn corpus_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md") || n.ends_with(".yaml") || n.ends_with(".yml"))
        .collect();
    files.sort();
    files.push("skill/SKILL.md".to_string());
    files
}

/// What fast-agent makes of each file: `Ok(names)` or `Err(message)`.
fn fast_agent_verdicts(files: &[String]) -> BTreeMap<String, Result<Vec<String>, String>> {
    let out = Command::new(fast_agent_python())
        .arg(repo_root().join("scripts/fast-agent-card-verdicts"))
        .args(files)
        .current_dir(corpus())
        .output()
        .expect("run scripts/fast-agent-card-verdicts");
    assert!(
        out.status.success(),
        "scripts/fast-agent-card-verdicts failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the verdict script printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(
        doc["fastAgentVersion"].as_str(),
        Some(pinned_version().as_str()),
        "the venv holds another fast-agent-mcp than scripts/peers/fast-agent pins: rerun it"
    );
    doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let file = v["file"].as_str().unwrap().to_string();
            let verdict = match v["verdict"].as_str().unwrap() {
                "accept" => Ok(v["names"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_str().unwrap().to_string())
                    .collect()),
                "refuse" => Err(v["error"].as_str().unwrap_or_default().to_string()),
                other => panic!("unknown verdict {other}"),
            };
            (file, verdict)
        })
        .collect()
}

#[test]
fn ofc_and_fast_agent_agree_on_every_card() {
    let files = corpus_files();
    assert!(
        files.len() >= 60,
        "the corpus has only {} files",
        files.len()
    );
    let theirs = fast_agent_verdicts(&files);
    assert_eq!(theirs.len(), files.len());

    let mut disagreements = Vec::new();
    let mut accepted_types = Vec::new();
    for file in &files {
        let path = corpus().join(file);
        let fast_agent = &theirs[file];
        if is_agent_skill(&path) {
            // ofc names it a skill instead of judging it; fast-agent refuses it for that reason.
            match fast_agent {
                Err(e) if e.contains("SKILL.md") => {}
                other => disagreements.push(format!(
                    "{file}: ofc sees an Agent Skill, fast-agent says {other:?}"
                )),
            }
            continue;
        }
        let ofc = ofc_pkg::cards::load_file(&path);
        match (&ofc, fast_agent) {
            (Ok(card), Ok(names)) => {
                accepted_types.push(card.card.card_type);
                if names != &vec![card.card.name.clone()] {
                    disagreements.push(format!(
                        "{file}: both accept, but ofc names it `{}` and fast-agent {names:?}",
                        card.card.name
                    ));
                }
            }
            (Err(_), Err(_)) => {}
            (Ok(_), Err(e)) => {
                disagreements.push(format!("{file}: ofc accepts, fast-agent refuses: {e}"))
            }
            (Err(d), Ok(_)) => {
                disagreements.push(format!("{file}: ofc refuses, fast-agent accepts: {d}"))
            }
        }
        let expected_ok = file.starts_with("ok-");
        assert!(
            expected_ok || file.starts_with("bad-"),
            "{file}: corpus files are named ok-… or bad-…"
        );
        if fast_agent.is_ok() != expected_ok {
            disagreements.push(format!(
                "{file}: fast-agent's verdict is not what the file name says: {fast_agent:?}"
            ));
        }
        // Every refusal names a line and, unless the document itself is broken, a field.
        if let Err(d) = &ofc {
            for diag in d.iter() {
                if diag.position.is_none()
                    || (diag.path.is_root()
                        && !matches!(
                            file.as_str(),
                            "bad-not-mapping.yaml" | "bad-yaml-syntax.yaml"
                        ))
                {
                    disagreements
                        .push(format!("{file}: refusal without a line or a field: {diag}"));
                }
            }
        }
    }
    for t in CardType::ALL {
        assert!(
            accepted_types.contains(&t),
            "the corpus has no valid `{t}` card"
        );
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} files disagree:\n{}",
        disagreements.len(),
        files.len(),
        disagreements.join("\n")
    );
}
