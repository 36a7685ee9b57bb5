//! Which kind of document a file is: by its name first, then by a look at its content.
//!
//! | name | kind |
//! |---|---|
//! | `*.yaml`, `*.yml` in a `.fast-agent/agent-cards/` or `.fast-agent/tool-cards/` folder, whatever its name (`agent.yaml` too) | AgentCard (YAML) |
//! | `ofc.lock`, `*.lock` | lockfile |
//! | `agent.yaml`, `*.agent.yaml` (`.yml` too) | agent.yaml |
//! | `blueprint.yaml`, `*.blueprint.yaml` (`.yml` too) | blueprint |
//! | `*.manifest.json` | agent manifest |
//! | `*.envelope.json`, `*.dsse.json` | signed envelope |
//! | `agent-card.json`, `*.agent-card.json` | A2A agent card |
//! | `server.json`, `*.server.json` | MCP Registry server.json |
//! | `*.card.yaml`, `*.card.yml` | AgentCard (YAML) |
//! | `*.md`, `*.markdown` starting with `---` front matter | AgentCard (Markdown) |
//! | `project.json` in a `.openagents/` folder | OpenAgents project (seed 002) |
//! | `tasks.jsonl` in a `.openagents/` folder | OpenAgents tasks (seed 002) |
//! | other `*.json` | envelope if it has `payloadType`, manifest if it has `schemaVersion`, A2A agent card if it has `defaultInputModes` or `skills` and `url`, MCP server.json if its `$schema` is a server.json schema |
//! | other `*.yaml`/`*.yml` | blueprint if it has an `agents` list or `workstations`/`floor_manager`; AgentCard if it has `instruction` or a card `type` (any case); agent.yaml if it has `id`, `prompt` or `model` |
//!
//! Markdown files without front matter (READMEs, history files) are not documents, and neither
//! is `SKILL.md`: an Agent Skill, which `ofc validate` names as such and skips
//! ([`index_schema::agent_card::is_agent_skill`]).

use std::path::Path;

use index_schema::agent_card::{CardType, in_card_folder};
use index_schema::source;
use index_schema::{a2a_card, mcp_server_json};

/// The kinds of document `ofc validate` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum DocumentKind {
    /// A signed agent manifest's payload (JSON).
    Manifest,
    /// A DSSE envelope around a manifest (JSON).
    Envelope,
    /// An `agent.yaml`.
    AgentYaml,
    /// An AgentCard in Markdown (front matter + body).
    CardMd,
    /// An AgentCard in YAML.
    CardYaml,
    /// A `blueprint.yaml`.
    Blueprint,
    /// An `ofc.lock`.
    Lockfile,
    /// An A2A agent card (`agent-card.json`).
    A2aCard,
    /// An MCP Registry `server.json`.
    McpServerJson,
    /// An OpenAgents `.openagents/project.json`.
    OpenagentsProject,
    /// An OpenAgents `.openagents/tasks.jsonl`.
    OpenagentsTasks,
}

impl DocumentKind {
    /// A short human name.
    pub fn label(self) -> &'static str {
        match self {
            Self::Manifest => "agent manifest",
            Self::Envelope => "signed envelope",
            Self::AgentYaml => "agent.yaml",
            Self::CardMd => "AgentCard .md",
            Self::CardYaml => "AgentCard .yaml",
            Self::Blueprint => "blueprint",
            Self::Lockfile => "lockfile",
            Self::A2aCard => "A2A agent card",
            Self::McpServerJson => "MCP server.json",
            Self::OpenagentsProject => "OpenAgents project.json",
            Self::OpenagentsTasks => "OpenAgents tasks.jsonl",
        }
    }

    /// The stable identifier used in `--json` output and `--kind`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Manifest => "manifest",
            Self::Envelope => "envelope",
            Self::AgentYaml => "agent-yaml",
            Self::CardMd => "card-md",
            Self::CardYaml => "card-yaml",
            Self::Blueprint => "blueprint",
            Self::Lockfile => "lockfile",
            Self::A2aCard => "a2a-card",
            Self::McpServerJson => "mcp-server-json",
            Self::OpenagentsProject => "openagents-project",
            Self::OpenagentsTasks => "openagents-tasks",
        }
    }

    /// True for AgentCards.
    pub fn is_card(self) -> bool {
        matches!(self, Self::CardMd | Self::CardYaml)
    }
}

/// Whether `path` is in `.fast-agent/agent-cards/` or `.fast-agent/tool-cards/`, also when it is
/// written relative to that folder (`./agent.yaml` from inside it).
pub fn in_fast_agent_card_folder(path: &Path) -> bool {
    in_card_folder(path) || path.canonicalize().is_ok_and(|p| in_card_folder(&p))
}

/// Detects the kind of the file at `path` whose text is `text`; `None` when it is not an ofc
/// document.
pub fn detect(path: &Path, text: &str) -> Option<DocumentKind> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let ends = |suffixes: &[&str]| suffixes.iter().any(|s| name.ends_with(s));
    let in_openagents = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == index_schema::openagents::DIR);
    if in_openagents && name == index_schema::openagents::PROJECT_FILE {
        return Some(DocumentKind::OpenagentsProject);
    }
    if in_openagents && name == index_schema::openagents::TASKS_FILE {
        return Some(DocumentKind::OpenagentsTasks);
    }
    // Inside fast-agent's card folders every YAML file is a card, `agent.yaml` included.
    if ends(&[".yaml", ".yml"]) && in_fast_agent_card_folder(path) {
        return Some(DocumentKind::CardYaml);
    }
    if name == "ofc.lock" || name.ends_with(".lock") {
        return Some(DocumentKind::Lockfile);
    }
    if ends(&["agent.yaml", "agent.yml"])
        && (name.len() == 10 || ends(&[".agent.yaml", ".agent.yml"]))
    {
        return Some(DocumentKind::AgentYaml);
    }
    if name == "blueprint.yaml"
        || name == "blueprint.yml"
        || ends(&[".blueprint.yaml", ".blueprint.yml"])
    {
        return Some(DocumentKind::Blueprint);
    }
    if name.ends_with(".manifest.json") {
        return Some(DocumentKind::Manifest);
    }
    if ends(&[".envelope.json", ".dsse.json"]) {
        return Some(DocumentKind::Envelope);
    }
    if name == a2a_card::FILE_NAME || name.ends_with(".agent-card.json") {
        return Some(DocumentKind::A2aCard);
    }
    if name == mcp_server_json::FILE_NAME || name.ends_with(".server.json") {
        return Some(DocumentKind::McpServerJson);
    }
    if ends(&[".card.yaml", ".card.yml"]) {
        return Some(DocumentKind::CardYaml);
    }
    if ends(&[".md", ".markdown"]) {
        let body = source::strip_bom(text);
        let first = body.lines().next().unwrap_or("");
        return (first.trim_end() == "---").then_some(DocumentKind::CardMd);
    }
    if name.ends_with(".json") {
        let v: serde_json::Value = serde_json::from_str(source::strip_bom(text)).ok()?;
        let o = v.as_object()?;
        if o.contains_key("payloadType") {
            return Some(DocumentKind::Envelope);
        }
        if o.contains_key("schemaVersion") {
            return Some(DocumentKind::Manifest);
        }
        if o.get("$schema").and_then(|s| s.as_str()).is_some_and(|s| {
            s.starts_with(mcp_server_json::SCHEMA_PREFIX) && s.ends_with("server.schema.json")
        }) {
            return Some(DocumentKind::McpServerJson);
        }
        if o.contains_key("defaultInputModes")
            || (o.contains_key("skills") && o.contains_key("url"))
        {
            return Some(DocumentKind::A2aCard);
        }
        return None;
    }
    if ends(&[".yaml", ".yml"]) {
        let doc = source::parse_yaml(text).ok()?;
        let o = doc.value.as_object()?;
        let card_type = o
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| CardType::parse_legacy(t).is_some());
        if o.get("agents")
            .is_some_and(|a| a.is_array() && !o.contains_key("instruction") && !card_type)
            || o.contains_key("workstations")
            || o.contains_key("floor_manager")
            || o.contains_key("furniture")
        {
            return Some(DocumentKind::Blueprint);
        }
        if o.contains_key("instruction") || card_type {
            return Some(DocumentKind::CardYaml);
        }
        if o.contains_key("id") || o.contains_key("prompt") || o.contains_key("model") {
            return Some(DocumentKind::AgentYaml);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_name() {
        let k = |n: &str, t: &str| detect(Path::new(n), t);
        assert_eq!(k("ofc.lock", ""), Some(DocumentKind::Lockfile));
        assert_eq!(k("agent.yaml", ""), Some(DocumentKind::AgentYaml));
        assert_eq!(k("x.agent.yml", ""), Some(DocumentKind::AgentYaml));
        assert_eq!(k("myagent.yaml", "x: 1"), None);
        assert_eq!(k("team.blueprint.yaml", ""), Some(DocumentKind::Blueprint));
        assert_eq!(k("a.manifest.json", ""), Some(DocumentKind::Manifest));
        assert_eq!(k("a.dsse.json", ""), Some(DocumentKind::Envelope));
        assert_eq!(
            k("sizer.md", "---\nname: x\n---\nhi"),
            Some(DocumentKind::CardMd)
        );
        assert_eq!(k("README.md", "# hello"), None);
    }

    #[test]
    fn detects_by_content() {
        let k = |n: &str, t: &str| detect(Path::new(n), t);
        assert_eq!(
            k("x.json", r#"{"payloadType":"a"}"#),
            Some(DocumentKind::Envelope)
        );
        assert_eq!(
            k("x.json", r#"{"schemaVersion":1}"#),
            Some(DocumentKind::Manifest)
        );
        assert_eq!(k("x.json", r#"{"messages":[]}"#), None);
        assert_eq!(k("agent-card.json", "{}"), Some(DocumentKind::A2aCard));
        assert_eq!(k("server.json", "{}"), Some(DocumentKind::McpServerJson));
        assert_eq!(
            k(
                "weather.json",
                r#"{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"}"#
            ),
            Some(DocumentKind::McpServerJson)
        );
        assert_eq!(
            k("card.json", r#"{"url":"https://a.example","skills":[]}"#),
            Some(DocumentKind::A2aCard)
        );
        assert_eq!(
            k("team.yaml", "name: t\nagents: []\n"),
            Some(DocumentKind::Blueprint)
        );
        assert_eq!(
            k("c.yaml", "name: t\ninstruction: hi\n"),
            Some(DocumentKind::CardYaml)
        );
        assert_eq!(
            k("a.yaml", "id: '@a'\nprompt: hi\n"),
            Some(DocumentKind::AgentYaml)
        );
        assert_eq!(
            k("c.yaml", "type: Router\nagents: [a]\n"),
            Some(DocumentKind::CardYaml)
        );
    }

    #[test]
    fn openagents_files_are_known_in_their_folder() {
        let k = |n: &str| detect(Path::new(n), "{}");
        assert_eq!(
            k("repo/.openagents/project.json"),
            Some(DocumentKind::OpenagentsProject)
        );
        assert_eq!(
            k(".openagents/tasks.jsonl"),
            Some(DocumentKind::OpenagentsTasks)
        );
        assert_eq!(k("repo/project.json"), None);
        assert_eq!(k("repo/tasks.jsonl"), None);
    }

    #[test]
    fn yaml_in_fast_agent_card_folders_is_a_card() {
        for dir in [".fast-agent/agent-cards", "p/.fast-agent/tool-cards"] {
            let p = Path::new(dir).join("helper.yaml");
            assert_eq!(detect(&p, "model: x\n"), Some(DocumentKind::CardYaml));
        }
        assert_eq!(
            detect(Path::new("agent-cards/helper.yaml"), "model: x\n"),
            Some(DocumentKind::AgentYaml)
        );
    }

    /// A card folder's `agent.yaml` (or `blueprint.yaml`, `x.agent.yaml`) is a card, as every
    /// YAML file there is; outside such a folder the names keep their meaning.
    #[test]
    fn every_yaml_in_a_card_folder_is_a_card_whatever_its_name() {
        let a2a = "type: a2a\nurl: https://a.example/a2a\n";
        for dir in [".fast-agent/agent-cards", "p/.fast-agent/tool-cards"] {
            for name in ["agent.yaml", "agent.yml", "x.agent.yaml", "blueprint.yaml"] {
                let p = Path::new(dir).join(name);
                assert_eq!(detect(&p, a2a), Some(DocumentKind::CardYaml), "{p:?}");
            }
        }
        assert_eq!(
            detect(Path::new("p/agent.yaml"), a2a),
            Some(DocumentKind::AgentYaml)
        );
        assert_eq!(
            detect(Path::new(".fast-agent/agent.yaml"), a2a),
            Some(DocumentKind::AgentYaml)
        );
    }
}
