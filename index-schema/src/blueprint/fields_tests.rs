//! The field tables of blueprint entries: a field of another kind is refused at its path with
//! what to write instead; a field ofc does not act on is accepted with a warning naming it.

use std::path::{Path, PathBuf};

use rstest::rstest;

use super::Blueprint;
use crate::source;

/// Every problem `text` has: path, line, message.
fn refused(text: &str) -> Vec<(String, Option<u32>, String)> {
    Blueprint::from_yaml(text)
        .expect_err("the blueprint should be refused")
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

/// The warnings of a valid blueprint, positioned.
fn warned(text: &str) -> Vec<(String, Option<u32>, String)> {
    let doc = source::parse_yaml(text).unwrap();
    let bp = Blueprint::from_doc(&doc).unwrap_or_else(|e| panic!("{e}"));
    doc.locate(bp.warnings())
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

const LLM: &str = "agents:\n  - id: \"@a\"\n    model: m\n";
const ACP: &str = "agents:\n  - id: \"@a\"\n    type: acp\n    command: c\n";

#[rstest]
// The newcomer's floor: an inline agent with a command and no `type: acp` was run as an LLM
// agent and its command dropped.
#[case(
    "agents:\n  - id: \"@claude\"\n    command: claude-code-acp\n",
    "agents[0].command",
    "only to an `acp` agent; to run a program, use a local agent file (`./x.agent.yaml` with `command`), or `type: acp`"
)]
#[case(&format!("{LLM}    command: c\n"), "agents[0].command", "does not apply to an `llm` agent")]
#[case(&format!("{LLM}    type: llm\n    args: [x]\n"), "agents[0].args", "or `type: acp`")]
#[case(&format!("{ACP}    model: m\n"), "agents[0].model", "does not apply to an `acp` agent, only to an `llm` agent")]
#[case(&format!("{ACP}    endpoint: http://x/v1\n"), "agents[0].endpoint", "brings its own model")]
#[case(&format!("{ACP}    temperature: 0.2\n"), "agents[0].temperature", "only to an `llm` agent")]
#[case(&format!("{ACP}    memory: 5\n"), "agents[0].memory", "only to an `llm` agent")]
#[case(&format!("{ACP}    context_window: 4096\n"), "agents[0].context_window", "only to an `llm` agent")]
#[case(&format!("{ACP}    api_key_env: KEY\n"), "agents[0].api_key_env", "only to an `llm` agent")]
#[case(&format!("{LLM}    colour: red\n"), "agents[0].colour", "unknown field `colour`")]
#[case(
    "workstations:\n  - type: sandbox\n    path: ./w\n",
    "workstations[0].path",
    "`path` does not apply to a `sandbox` workstation, only to a `filesystem` workstation"
)]
#[case(
    "workstations:\n  - type: filesystem\n    path: .\n    image: x\n",
    "workstations[0].image",
    "only to a `sandbox` workstation"
)]
#[case(
    "workstations:\n  - type: filesystem\n    path: .\n    dockerfile: ./D\n",
    "workstations[0].dockerfile",
    "only to a `sandbox` workstation"
)]
#[case(
    "workstations:\n  - type: filesystem\n    path: .\n    mount: ./w:/w\n",
    "workstations[0].mount",
    "only to a `sandbox` workstation"
)]
#[case(
    "workstations:\n  - type: sandbox\n    volume: ./w:/w\n",
    "workstations[0].volume",
    "unknown field `volume`"
)]
#[case(
    "furniture:\n  - name: b\n    type: taskboard\n    command: npx\n",
    "furniture[0].command",
    "does not apply to a `taskboard`, only to an `mcp` furniture; a `taskboard` is built in"
)]
#[case(
    "furniture:\n  - name: b\n    type: taskboard\n    args: [x]\n",
    "furniture[0].args",
    "does not apply to a `taskboard`"
)]
#[case(
    "furniture:\n  - name: b\n    type: taskboard\n    url: http://x/mcp\n",
    "furniture[0].url",
    "does not apply to a `taskboard`"
)]
#[case(
    "furniture:\n  - name: s\n    type: mcp\n    command: c\n    env: {A: b}\n",
    "furniture[0].env",
    "unknown field `env`"
)]
#[case(
    "defaults:\n  prompt: p\n",
    "defaults.prompt",
    "unknown field `prompt`"
)]
#[case(
    "floor_manager:\n  approve_all: true\n",
    "floor_manager.approve_all",
    "unknown field"
)]
#[case(
    "floor_manager:\n  policies:\n    - {access: read, decision: ask, why: x}\n",
    "floor_manager.policies[0].why",
    "unknown field"
)]
#[case("name: x\nmodel: m\n", "model", "unknown field `model`")]
// The reference CLI's fields ofc has no warning for: a `ref:` entry would run as a different
// agent, a `thinking` of another value is a typo, and an ACP agent has no reasoning to split.
#[case(
    "agents:\n  - ref: agents/coder.yaml\n",
    "agents[0].ref",
    "`ref` (an agent entry read from another YAML file, as the reference CLI loads it) is not supported by ofc yet"
)]
#[case(&format!("{LLM}    thinking: sometimes\n"), "agents[0].thinking", "unknown variant `sometimes`")]
#[case(&format!("{LLM}    thinking_tags: [\"<t>\"]\n"), "agents[0].thinking_tags", "")]
#[case(&format!("{ACP}    thinking: tags\n"), "agents[0].thinking", "only to an `llm` agent")]
#[case(
    "defaults:\n  thinking: maybe\n",
    "defaults.thinking",
    "unknown variant `maybe`"
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
#[case(
    "furniture:\n  - name: b\n    type: taskboard\n    config: {columns: [a, b]}\n",
    "furniture[0].config",
    4,
    "`config` is accepted but not used by ofc: the furniture starts without it"
)]
#[case(
    "furniture:\n  - name: s\n    type: mcp\n    command: npx\n    config: {max: 5}\n",
    "furniture[0].config",
    5,
    "not used by ofc"
)]
#[case(
    &format!("{LLM}    env: {{KEY: v}}\n"),
    "agents[0].env",
    4,
    "`env` is accepted but not used by ofc: an `llm` agent runs inside ofc"
)]
#[case(
    &format!("{ACP}    api_key: k\n"),
    "agents[0].api_key",
    5,
    "an ACP agent brings its own model and key"
)]
#[case(
    &format!("{ACP}    tool_context: none\n"),
    "agents[0].tool_context",
    5,
    "`tool_context` is accepted but not used by ofc: ofc sends an ACP agent the floor's messages without other agents' tool calls"
)]
#[case(
    &format!("defaults:\n  model: m\n  endpoint: http://x/v1\n{ACP}"),
    "defaults.model",
    2,
    "defaults serve inline `llm` agents, and this blueprint has none"
)]
#[case(
    "defaults:\n  endpoint: http://x/v1\nagents:\n  - acme/coder\n",
    "defaults.endpoint",
    2,
    "not used by ofc"
)]
// The reference CLI's fields ofc accepts and does not act on yet.
#[case(
    &format!("{LLM}    thinking: tags\n"),
    "agents[0].thinking",
    4,
    "`thinking` is accepted but not used by ofc: accepted from the reference CLI; ofc does not act on it yet"
)]
#[case(
    &format!("{LLM}    thinking_tags: [\"<think>\", \"</think>\"]\n"),
    "agents[0].thinking_tags",
    4,
    "ofc does not act on it yet"
)]
#[case(
    &format!("defaults:\n  thinking: none\n{LLM}"),
    "defaults.thinking",
    2,
    "`thinking` is accepted but not used by ofc: accepted from the reference CLI"
)]
#[case(
    &format!("config:\n  frontend: tui\n  store: {{type: jsonl}}\n{LLM}"),
    "config",
    2,
    "`config` is accepted but not used by ofc: accepted from the reference CLI; ofc does not act on it yet"
)]
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
    let text = format!(
        "{LLM}    tool_context: summary\n    temperature: 0.2\n  - id: \"@b\"\n    type: acp\n    command: c\n    args: [x]\n    env: {{A: b}}\n    prompt: p\n    can_use_tools: true\nworkstations:\n  - type: sandbox\n    image: i\n    mount: ./w:/w\n  - type: filesystem\n    path: .\nfurniture:\n  - name: b\n    type: taskboard\n    access: {{add_task: write}}\n"
    );
    assert_eq!(warned(&text), []);
    // Defaults with an LLM agent to serve are used.
    assert_eq!(warned(&format!("defaults:\n  model: m\n{LLM}")), []);
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n == "blueprint.yaml" || n.ends_with(".blueprint.yaml")
        }) {
            out.push(p);
        }
    }
}

/// The reference CLI's example shapes, ofc's examples and the blueprint fixtures still load;
/// what they get warned about is only what ofc does not act on.
#[test]
fn reference_shapes_examples_and_fixtures_still_load() {
    let mut files = Vec::new();
    yaml_files(&repo().join("tests/fixtures/reference-shapes"), &mut files);
    yaml_files(&repo().join("examples/blueprints"), &mut files);
    let fixtures = repo().join("index-schema/tests/fixtures/blueprint");
    for e in std::fs::read_dir(&fixtures).unwrap() {
        files.push(e.unwrap().path());
    }
    assert!(files.len() >= 14, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let doc = source::parse_yaml(&text).unwrap();
        let bp = Blueprint::from_doc(&doc).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for w in bp.warnings().iter() {
            let last = w.path.segments().last().cloned();
            assert!(
                matches!(&last, Some(crate::diagnostic::Segment::Key(k)) if k == "config" || k == "tool_context"),
                "{}: {w}",
                f.display()
            );
        }
    }
}

#[test]
fn prompt_file_is_accepted_but_not_beside_prompt() {
    let one = "agents:\n  - id: \"@a\"\n    model: m\n    prompt_file: prompts/a.md\n  - id: \"@b\"\n    type: acp\n    command: c\n    prompt_file: /abs/b.md\n";
    assert_eq!(warned(one), []);
    let both = "agents:\n  - id: \"@a\"\n    model: m\n    prompt: hi\n    prompt_file: a.md\n";
    let found = refused(both);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, "agents[0].prompt_file");
    assert_eq!(found[0].1, Some(5));
    assert!(
        found[0]
            .2
            .contains("`@a` has both `prompt` and `prompt_file`"),
        "{found:#?}"
    );
    assert!(
        refused("agents:\n  - {id: \"@a\", model: m, prompt_file: \" \"}\n")[0]
            .2
            .contains("must not be empty")
    );
}

#[test]
fn a_prompt_template_with_a_syntax_error_is_refused_at_its_field() {
    let found = refused(
        "agents:\n  - id: \"@a\"\n    model: m\n    prompt: \"Hi <% include \\\"x\\\" %>\"\n",
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1),
        ("agents[0].prompt", Some(4))
    );
    assert!(found[0].2.contains("unknown `include`"), "{found:#?}");
    assert_eq!(
        warned(
            "agents:\n  - id: \"@a\"\n    model: m\n    prompt: \"<% env \\\"X\\\" \\\"d\\\" %>\"\n"
        ),
        []
    );
}

#[test]
fn api_key_is_taken_but_not_with_api_key_env_and_never_shown() {
    let bp = Blueprint::from_yaml(
        "defaults: {model: m, api_key: sk-default-4711}\nagents:\n  - {id: \"@a\", api_key: sk-agent-4711}\n",
    )
    .unwrap();
    assert_eq!(
        bp.defaults
            .as_ref()
            .unwrap()
            .api_key
            .as_ref()
            .unwrap()
            .expose(),
        "sk-default-4711"
    );
    assert!(!format!("{bp:?}").contains("4711"));
    assert!(!bp.to_yaml().contains("4711"));
    let found = refused("agents:\n  - {id: \"@a\", model: m, api_key: k, api_key_env: K}\n");
    assert_eq!(found[0].0, "agents[0].api_key");
    assert!(found[0].2.contains("not both"), "{found:#?}");
}
