//! The field tables of `agent.yaml`: a field of another kind of agent is refused at its path
//! with what to write instead; a field ofc does not act on is accepted with a warning.

use std::path::Path;

use rstest::rstest;

use super::AgentYaml;
use crate::source;

fn refused(text: &str) -> Vec<(String, Option<u32>, String)> {
    AgentYaml::from_yaml(text)
        .expect_err("the file should be refused")
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                d.position.map(|p| p.line),
                d.message.clone(),
            )
        })
        .collect()
}

fn warned(text: &str) -> Vec<(String, Option<u32>, String)> {
    let doc = source::parse_yaml(text).unwrap();
    let a = AgentYaml::from_yaml(text).unwrap_or_else(|e| panic!("{e}"));
    doc.locate(a.warnings())
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                d.position.map(|p| p.line),
                d.message.clone(),
            )
        })
        .collect()
}

const LLM: &str = "id: \"@a\"\nmodel: m\n";
const PROCESS: &str = "id: \"@a\"\ncommand: ./serve\n";
const PIP: &str = "id: \"@a\"\nsource: {type: pip, package: p, version: \"1.0\", entry_point: e}\n";
const REMOTE: &str = "id: \"@a\"\nsource: {type: remote, endpoint: \"https://a.example/ofc\"}\n";

#[rstest]
#[case(&format!("{LLM}env: {{KEY: v}}\n"), "env", "`env` does not apply to an LLM agent (`model`, run by ofc), only to a process agent (`command`); an LLM agent runs inside ofc")]
#[case(&format!("{LLM}args: [x]\n"), "args", "only to a process agent (`command`)")]
#[case(&format!("{PROCESS}prompt: p\n"), "prompt", "`prompt` does not apply to a process agent (`command`), only to an LLM agent (`model`, run by ofc); a process agent brings its own model")]
#[case(&format!("{PROCESS}endpoint: http://x/v1\n"), "endpoint", "only to an LLM agent")]
#[case(&format!("{PROCESS}temperature: 0.2\n"), "temperature", "only to an LLM agent")]
#[case(&format!("{PROCESS}memory: window\n"), "memory", "only to an LLM agent")]
#[case(&format!("{PROCESS}context_window: 20\n"), "context_window", "only to an LLM agent")]
#[case(&format!("{PROCESS}can_use_tools: true\n"), "can_use_tools", "only to an LLM agent")]
#[case(&format!("{PIP}env: {{A: b}}\n"), "env", "does not apply to a packaged agent (`source` pip, npm or docker), only to a process agent")]
#[case(&format!("{PIP}args: [x]\n"), "args", "runs from its `source` as published")]
#[case(&format!("{PIP}prompt: p\n"), "prompt", "only to an LLM agent")]
#[case(&format!("{PIP}command: x\n"), "command", "only to a process agent")]
#[case(&format!("{REMOTE}command: x\n"), "command", "does not apply to a remote agent (`source` remote)")]
#[case(&format!("{REMOTE}env: {{A: b}}\n"), "env", "a remote agent runs elsewhere")]
#[case(&format!("{REMOTE}temperature: 1\n"), "temperature", "only to an LLM agent")]
#[case(&format!("{LLM}colour: red\n"), "colour", "unknown field `colour`")]
#[case(&format!("{PIP}source_hash: x\n"), "source_hash", "unknown field")]
#[case(
    "id: \"@a\"\nsource: {type: pip, package: p, version: \"1\", entry_point: e, bin: x}\n",
    "source.bin",
    "unknown field `bin`"
)]
#[case(
    "id: \"@a\"\nsource: {type: remote, endpoint: \"https://a.example/ofc\", port: 80}\n",
    "source.port",
    "unknown field `port`"
)]
#[case(
    &format!("{LLM}capabilities:\n  - name: c\n    inputSchema: {{}}\n"),
    "capabilities[0].inputSchema",
    "unknown field"
)]
fn fields_of_another_kind_are_refused_at_their_path(
    #[case] text: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    let found = refused(text);
    assert!(
        found
            .iter()
            .any(|(p, line, m)| p == path && line.is_some() && m.contains(message)),
        "expected {path}: …{message}…, got {found:#?}"
    );
}

#[rstest]
#[case(&format!("{LLM}tools: [bash]\n"), "tools", 3, "`tools` is accepted but not used by ofc: it is published as what the agent needs (`requires.tools`), but `ofc run` grants no tools by it")]
#[case(&format!("{PROCESS}model: qwen3\n"), "model", 3, "`model` is accepted but not used by ofc: it is published as the model the agent needs (`requires.model`); ofc does not pass it to the agent")]
#[case(&format!("{PIP}model: qwen3\n"), "model", 3, "not used by ofc")]
#[case(&format!("{REMOTE}tools: [x]\n"), "tools", 3, "not used by ofc")]
fn fields_ofc_does_not_act_on_are_warned_by_name(
    #[case] text: &str,
    #[case] path: &str,
    #[case] line: u32,
    #[case] message: &str,
) {
    let found = warned(text);
    assert!(
        found
            .iter()
            .any(|(p, l, m)| p == path && *l == Some(line) && m.contains(message)),
        "expected {path} at line {line}: …{message}…, got {found:#?}"
    );
}

#[test]
fn what_each_kind_acts_on_is_not_warned() {
    for text in [
        format!(
            "{LLM}endpoint: http://x/v1\nprompt: p\nmemory: window\ncontext_window: 9\ntemperature: 0.1\ncan_use_tools: true\n"
        ),
        format!("{PROCESS}args: [x]\nenv: {{A: b}}\nactivation: always\n"),
        format!("{PIP}name: N\nversion: 1.0.0\ntagline: t\n"),
    ] {
        assert_eq!(warned(&text), [], "{text}");
    }
}

/// The OFC spec's example, the fixtures and ofc's example agents still load; what they are
/// warned about is only what ofc does not act on.
#[test]
fn fixtures_and_examples_still_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/fixtures/agent_yaml"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for e in std::fs::read_dir(root.join("../examples/agents")).unwrap() {
        let p = e.unwrap().path().join("agent.yaml");
        if p.is_file() {
            files.push(p);
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let a = AgentYaml::from_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for w in a.warnings().iter() {
            let field = w.path.to_string();
            assert!(field == "tools" || field == "model", "{}: {w}", f.display());
        }
    }
}
