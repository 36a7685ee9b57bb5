//! `ofc validate` end to end: the real binary against the shipped examples and the corpus of
//! invalid documents in `tests/fixtures/invalid/`.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn ofc(args: &[&str]) -> Output {
    Command::cargo_bin("ofc")
        .unwrap()
        .current_dir(repo())
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn examples_are_valid() {
    let o = ofc(&["validate", "examples/"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    let out = stdout(&o);
    // Five agents at least, some agent.yaml and some AgentCards, and the blueprints.
    assert!(out.matches("ok (agent.yaml)").count() >= 2, "{out}");
    assert!(out.matches("ok (AgentCard").count() >= 2, "{out}");
    assert!(out.matches("ok (blueprint)").count() >= 2, "{out}");
}

fn invalid_cases() -> Vec<(PathBuf, String)> {
    let root = repo().join("tests/fixtures/invalid");
    let mut cases = Vec::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = entry.unwrap();
        let p = entry.path();
        if !entry.file_type().is_file() || p.extension().is_some_and(|e| e == "expect") {
            continue;
        }
        let mut expect = p.as_os_str().to_owned();
        expect.push(".expect");
        let field = std::fs::read_to_string(&expect)
            .unwrap_or_else(|_| panic!("{} has no .expect file", p.display()));
        cases.push((p.to_path_buf(), field.trim().to_string()));
    }
    cases
}

#[test]
fn every_invalid_document_fails_naming_its_field() {
    let cases = invalid_cases();
    assert!(cases.len() >= 30, "only {} invalid fixtures", cases.len());
    let mut failures = Vec::new();
    for (path, field) in &cases {
        let p = path.to_str().unwrap();
        let o = ofc(&["validate", "--json", p]);
        if o.status.code() != Some(1) {
            failures.push(format!(
                "{p}: exit {:?}, expected 1\n{}",
                o.status.code(),
                stdout(&o)
            ));
            continue;
        }
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let errors = v["files"][0]["errors"].as_array().unwrap();
        // `(document)` names the document as a whole (syntax errors): `field` is null.
        let named = errors.iter().any(|e| match e["field"].as_str() {
            None => field == "(document)",
            Some(f) => {
                f == field
                    || f.starts_with(&format!("{field}."))
                    || f.starts_with(&format!("{field}["))
            }
        });
        if !named {
            failures.push(format!("{p}: no error names `{field}`: {errors:?}"));
        }
        // Human output carries file:line:col for text documents whose error has a position.
        let o = ofc(&["validate", p]);
        let human = stdout(&o);
        if !human.starts_with(p) || human.trim().is_empty() {
            failures.push(format!(
                "{p}: human output does not start with the path: {human}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn invalid_corpus_covers_every_kind() {
    let cases = invalid_cases();
    for kind in [
        "manifest",
        "envelope",
        "agent-yaml",
        "agent-card",
        "blueprint",
        "lockfile",
        "mcp-server-json",
    ] {
        let n = cases
            .iter()
            .filter(|(p, _)| p.parent().unwrap().file_name().unwrap() == kind)
            .count();
        assert!(n >= 3, "only {n} invalid {kind} fixtures");
    }
    // OpenAgents files are known by their folder: `openagents/<case>/.openagents/<file>`.
    let n = cases
        .iter()
        .filter(|(p, _)| p.components().any(|c| c.as_os_str() == "openagents"))
        .count();
    assert!(n >= 3, "only {n} invalid OpenAgents fixtures");
}

#[test]
fn errors_carry_line_and_column_for_yaml_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("team.blueprint.yaml");
    std::fs::write(
        &yaml,
        "name: t\nagents:\n  - id: \"@a\"\n    activation: sometimes\n",
    )
    .unwrap();
    let o = ofc(&["validate", yaml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let line = stdout(&o);
    let expected = format!("{}:4:", yaml.display());
    assert!(line.starts_with(&expected), "{line}");
    assert!(line.contains("agents[0].activation"), "{line}");

    let json = dir.path().join("a.manifest.json");
    std::fs::write(&json, "{\n  \"schemaVersion\": 1,\n  \"name\": 7\n}\n").unwrap();
    let o = ofc(&["validate", "--json", json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let errs = v["files"][0]["errors"].as_array().unwrap();
    assert!(
        errs.iter()
            .any(|e| e["line"].as_u64().is_some() && e["column"].as_u64().is_some()),
        "{errs:?}"
    );
}

#[test]
fn json_output_has_a_summary() {
    let o = ofc(&["validate", "--json", "examples/"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["ok"], true);
    let n = v["summary"]["checked"].as_u64().unwrap();
    assert_eq!(n as usize, v["files"].as_array().unwrap().len());
    assert_eq!(v["summary"]["invalid"], 0);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(ofc(&["validate"]).status.code(), Some(2));
    assert_eq!(
        ofc(&["validate", "--no-such-flag", "x"]).status.code(),
        Some(2)
    );
    let o = ofc(&["validate", "does/not/exist.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such file"), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("notes.txt");
    std::fs::write(&odd, "hello").unwrap();
    let o = ofc(&["validate", odd.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("hint:"), "{}", stderr(&o));
}

#[test]
fn a_mixed_run_exits_1_and_reports_each_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("good.md"),
        "---\nname: good\n---\nBe helpful.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.md"),
        "---\nname: bad\ninstruction: x\n---\nAlso a body.\n",
    )
    .unwrap();
    let o = ofc(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("good.md: ok"), "{out}");
    assert!(out.contains("bad.md:"), "{out}");
    assert!(stderr(&o).contains("1 ok, 1 invalid"), "{}", stderr(&o));
}

#[test]
fn duplicate_card_names_in_one_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "---\nname: same\n---\nOne.\n").unwrap();
    std::fs::write(dir.path().join("b.md"), "---\nname: same\n---\nTwo.\n").unwrap();
    let o = ofc(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("already used"), "{}", stdout(&o));
}

#[test]
fn cards_in_fast_agent_folders_are_found_and_skills_are_named_not_judged() {
    let dir = tempfile::tempdir().unwrap();
    let cards = dir.path().join(".fast-agent/agent-cards");
    let tools = dir.path().join(".fast-agent/tool-cards");
    let skill = dir.path().join(".fast-agent/skills/pdf");
    for d in [&cards, &tools, &skill] {
        std::fs::create_dir_all(d).unwrap();
    }
    // A YAML card without `instruction` or `type`: a card only because of where it lives.
    std::fs::write(cards.join("helper.yaml"), "name: helper\nmodel: sonnet\n").unwrap();
    std::fs::write(
        tools.join("fmt.md"),
        "---\ntool_only: true\nhistory_mode: fork\n---\nFormat.\n",
    )
    .unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: pdf\ndescription: Read PDFs.\n---\nUse pdftotext.\n",
    )
    .unwrap();
    // Other dot-folders stay skipped.
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/x.md"), "---\ncolour: red\n---\nx\n").unwrap();

    let o = ofc(&["validate", dir.path().to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("helper.yaml: ok (AgentCard .yaml)"), "{out}");
    assert!(
        out.contains("fmt.md:3:15: history_mode: field `history_mode` is no longer supported"),
        "{out}"
    );
    assert!(!out.contains("SKILL.md") && !out.contains(".git"), "{out}");
    assert!(
        err.contains("SKILL.md: an Agent Skill (SKILL.md), not an AgentCard; skipped"),
        "{err}"
    );
    assert!(err.contains("checked 2 files: 1 ok, 1 invalid"), "{err}");

    // Named on the command line, a skill is still not judged, and not an error.
    let o = ofc(&[
        "validate",
        "--json",
        skill.join("SKILL.md").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"], serde_json::json!([]));
    assert_eq!(v["skipped"][0]["kind"], "agent-skill");
}

#[test]
fn a2a_agent_cards_are_checked_with_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../index-schema/tests/fixtures/a2a-cards/ok-minimal.json");
    std::fs::copy(&good, dir.path().join("agent-card.json")).unwrap();
    let bad = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../index-schema/tests/fixtures/a2a-cards/bad-skill-no-tags.json");
    std::fs::copy(&bad, dir.path().join("broken.agent-card.json")).unwrap();
    let o = ofc(&["validate", dir.path().to_str().unwrap()]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("agent-card.json: ok (A2A agent card)"),
        "{out}"
    );
    assert!(
        out.contains("broken.agent-card.json:17:5: skills[0].tags: is required"),
        "{out}"
    );
}

/// What ofc accepts but does not act on is named in `warning:` lines (and in `--json`), and a
/// file with only warnings still passes; a field of another kind of entry is refused.
#[test]
fn warnings_are_printed_and_leave_the_exit_code_alone() {
    let dir = tempfile::tempdir().unwrap();
    let bp = dir.path().join("blueprint.yaml");
    std::fs::write(
        &bp,
        "agents:\n  - id: \"@a\"\n    model: m\nfurniture:\n  - name: b\n    type: taskboard\n    config: {columns: [a]}\n",
    )
    .unwrap();
    let card = dir.path().join("helper.md");
    std::fs::write(&card, "---\nname: helper\n---\n").unwrap();
    let o = ofc(&["validate", bp.to_str().unwrap(), card.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "warning: {}:7:13: furniture[0].config: `config` is accepted but not used by ofc",
            bp.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "warning: {}:1:1: instruction: the card has no instruction",
            card.display()
        )),
        "{out}"
    );
    assert!(
        stderr(&o).contains("2 ok, 0 invalid, 2 warnings"),
        "{}",
        stderr(&o)
    );
    let o = ofc(&["validate", "--json", bp.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"][0]["warnings"][0]["field"], "furniture[0].config");
    assert_eq!(v["files"][0]["warnings"][0]["line"], 7);
    assert_eq!(v["summary"]["warnings"], 1);

    std::fs::write(
        &bp,
        "agents:\n  - id: \"@claude\"\n    command: claude-code-acp\n",
    )
    .unwrap();
    let o = ofc(&["validate", bp.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("3:14: agents[0].command: `command` does not apply to an `llm` agent"),
        "{}",
        stdout(&o)
    );
}
