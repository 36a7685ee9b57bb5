//! AgentCards: agents written as Markdown (`.md`/`.markdown`, YAML front matter + body) or YAML
//! (`.yaml`/`.yml`) files, read as fast-agent (PyPI `fast-agent-mcp`, the format's main
//! implementation) reads them today, with the AgentCard RFC (`shared/seeds/003`) as the floor.
//! The rules were learned from fast-agent-mcp 0.10.48's card loader; the differential test
//! `ofc-pkg/tests/it/fast_agent_differential.rs` runs that loader on a corpus and checks
//! that both agree on every file.
//!
//! What the loader enforces, rule by rule:
//!
//! - `type` is one of `agent`, `chain`, `parallel`, `evaluator_optimizer`, `router`,
//!   `orchestrator`, `iterative_planner`, `MAKER`, `a2a`, in any case and with blanks around it,
//!   and defaults to `agent`. The legacy `smart` is an `agent` with `subagents` and
//!   `harness_tools` on unless the card says otherwise.
//! - Each type accepts exactly its field set (`agent` adds to the RFC's list `subagents`,
//!   `subagent_model`, `harness_tools`, `mcp_connect`, `save_trajectory`, `history_source`,
//!   `history_merge_target`, `lifecycle_hooks`, `commands`, `trim_tool_history`,
//!   `tool_input_schema`, `variables`; `router`/`orchestrator` add `save_trajectory`; `a2a` has
//!   `url`, `transport`, `streaming`, `polling`, `accepted_output_modes`, `headers`, `auth`,
//!   `relative_card_path`, `request_timeout_seconds`). Any other field is refused with a message
//!   naming the field and the type; `history_mode` is refused on every type, with a pointer to
//!   `history_source`/`history_merge_target`.
//! - Required: `sequence` (chain) and `fan_out` (parallel), not empty; `generator` and `evaluator`
//!   (evaluator_optimizer); `agents`, not empty (router, orchestrator, iterative_planner); `worker`
//!   (MAKER); `url` (a2a).
//! - `name` defaults to the file name without its extension; blanks in it become `_`.
//!   `schema_version` is an optional integer, default 1.
//! - `instruction` is optional (fast-agent then uses its default instruction; the RFC requires
//!   one, so [`AgentCard::warnings`] says so) and comes from at most one source: the Markdown body or the `instruction` attribute. Both is an error, and so is
//!   a blank attribute. A leading `---SYSTEM` line in the body is stripped. Inline `---USER`/
//!   `---ASSISTANT`/`---RESOURCE` lines in the body are refused (history is external only).
//! - `tool_only: true` excludes `default: true` and `harness_tools: true`; `save_trajectory: true`
//!   needs history off (`use_history: false`, or a type that keeps none by default).
//! - `messages` is a path or a list of paths, resolved against the card's directory when the card
//!   is loaded from a file ([`AgentCard::load_text`]); each file must exist. ofc also checks that a
//!   `.json` history file holds `{"messages": [...]}` (fast-agent reads it only when the agent
//!   starts) and that text history is UTF-8.
//! - Values are checked as fast-agent checks them (`agent_card/fields.rs`): booleans, integers, string lists,
//!   filter maps, `mcp_connect` in its list and mapping forms (entry keys, `name` matching its key,
//!   one of `target`/`connector_id`, provider-managed connectors), `function_tools` as strings or
//!   `{entrypoint, variant, code_arg, language}` objects, `tool_input_schema` (an `object`
//!   schema whose `required` names defined properties), `lifecycle_hooks` keys, `commands`,
//!   typed `request_params`. Fields fast-agent takes as written (`model`, `skills`, `variables`,
//!   …) are kept as written. The agents-as-tools options (`history_source`, `max_parallel`, …)
//!   are read only when an `agent` card has `agents`, as in fast-agent (and warned otherwise).
//!   A field set to `null` counts as absent, except where fast-agent refuses `null`
//!   (`subagents`, `k`, …).
//! - YAML is read with YAML 1.1 booleans (`yes`/`no`/`on`/`off`), as fast-agent's YAML loader
//!   does; a UTF-8 byte order mark is tolerated. Unlike fast-agent, a key written twice is refused
//!   (fast-agent keeps the last one).
//!
//! A parsed card keeps its common fields typed ([`AgentCard`]) and every other field in
//! [`AgentCard::attributes`], already validated, so it can be written back with
//! [`AgentCard::to_markdown`] or [`AgentCard::to_yaml`].
//!
//! `SKILL.md` is an Agent Skill, not a card ([`is_agent_skill`]); ofc's card folder walk skips
//! it.
//!
//! Nothing here reads files: ofc reads card files, their history files and card folders
//! (`ofc-pkg/src/cards.rs`) and hands the text to [`AgentCard::load_text`].

use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::agent_yaml::{ManifestDefaults, emit, finish_manifest};
use crate::diagnostic::{Diagnostic, Diagnostics, FieldPath, Position};
use crate::manifest::{self, Manifest, Requires};
use crate::name::{AgentHandle, AgentName};
use crate::source::{self, SourceDoc};

mod card_type;
mod fields;
#[cfg(test)]
mod fields_tests;
mod history;
mod warnings;

pub use card_type::CardType;
use card_type::{AGENTS_AS_TOOLS_OPTIONS, COMMON_FIELDS, NULL_IS_WRONG, RETIRED_FIELDS};
pub use history::{HistoryFile, HistoryFormat, LoadedCard, card_format, text_of};

use fields::{Kind, kind_of, string_list, truncate};

/// File extensions (lowercase) that hold AgentCards.
pub const CARD_EXTENSIONS: [&str; 4] = ["md", "markdown", "yaml", "yml"];

/// The file name of an Agent Skill, which looks like a Markdown card but is not one.
pub const SKILL_FILE_NAME: &str = "SKILL.md";

/// fast-agent's project folder, and the folders in it that it loads cards from on its own.
pub const FAST_AGENT_DIR: &str = ".fast-agent";
/// Card folders inside [`FAST_AGENT_DIR`]: agents, and agents used only as tools.
pub const FAST_AGENT_CARD_DIRS: [&str; 2] = ["agent-cards", "tool-cards"];

/// True for an Agent Skill manifest (`SKILL.md`, spelled so): front matter and a body like a
/// card, but a skill, not an agent. fast-agent refuses to load one as a card.
pub fn is_agent_skill(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()) == Some(SKILL_FILE_NAME)
}

/// True when `path` is directly inside `.fast-agent/agent-cards/` or `.fast-agent/tool-cards/`,
/// where every card file is a card whatever its name.
pub fn in_card_folder(path: &Path) -> bool {
    let mut parents = path.components().rev().skip(1).map(|c| c.as_os_str());
    let folder = parents.next();
    let project = parents.next();
    folder.is_some_and(|f| FAST_AGENT_CARD_DIRS.iter().any(|d| f == *d))
        && project.is_some_and(|p| p == FAST_AGENT_DIR)
}

/// Largest history file read when checking a card's `messages`.
pub const MAX_HISTORY_BYTES: u64 = 16 * 1024 * 1024;

/// Lines that start inline history blocks, which cards may not contain.
const HISTORY_DELIMITERS: [&str; 3] = ["---USER", "---ASSISTANT", "---RESOURCE"];
/// Optional first line of a card body that makes the system role explicit.
const SYSTEM_MARKER: &str = "---SYSTEM";

/// The text format a card was read from or is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardFormat {
    /// Front matter and a body (`.md`, `.markdown`).
    Markdown,
    /// One YAML mapping (`.yaml`, `.yml`).
    Yaml,
}

impl CardFormat {
    /// The format for a file name, from its extension (case-insensitive).
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" => Some(CardFormat::Markdown),
            "yaml" | "yml" => Some(CardFormat::Yaml),
            _ => None,
        }
    }
}

/// One validated AgentCard.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCard {
    /// `type`.
    pub card_type: CardType,
    /// `name`: given, or the file name without its extension.
    pub name: String,
    /// `schema_version` (1 when omitted).
    pub schema_version: i64,
    /// The system instruction, from the body or the `instruction` attribute, trimmed; `None`
    /// when the card gives none (fast-agent then uses its default instruction).
    pub instruction: Option<String>,
    /// `description`, used as the tool description when the agent is exposed as a tool.
    pub description: Option<String>,
    /// `default: true`.
    pub default: bool,
    /// `tool_only: true`.
    pub tool_only: bool,
    /// `messages`: history file paths as written (relative to the card's directory).
    pub messages: Vec<String>,
    /// Every other field the type allows, validated, in the order written.
    pub attributes: IndexMap<String, Value>,
}

/// The value rule of `field` on a card of type `t`.
fn field_kind(t: CardType, field: &str) -> Kind {
    match field {
        "name"
        | "description"
        | "subagent_model"
        | "generator"
        | "evaluator"
        | "worker"
        | "url"
        | "relative_card_path"
        | "min_rating"
        | "plan_type"
        | "match_strategy"
        | "history_source"
        | "history_merge_target" => Kind::Str,
        "instruction" | "cwd" | "fan_in" => Kind::AnyStr,
        "default" | "tool_only" | "subagents" | "harness_tools" | "save_trajectory"
        | "human_input" | "shell" | "trim_tool_history" | "cumulative" | "include_request"
        | "streaming" | "polling" => Kind::Bool,
        "schema_version"
        | "max_parallel"
        | "max_display_instances"
        | "max_refinements"
        | "plan_iterations"
        | "k"
        | "max_samples"
        | "red_flag_max_length" => Kind::Int,
        "child_timeout_sec" | "request_timeout_seconds" => Kind::Number,
        "agents" => Kind::StrList(t != CardType::Agent),
        "sequence" | "fan_out" => Kind::StrList(true),
        "servers" | "accepted_output_modes" => Kind::StrList(false),
        "messages" => Kind::Paths,
        "tools" | "resources" | "prompts" => Kind::FilterMap,
        "tool_hooks" => Kind::Mapping,
        "lifecycle_hooks" => Kind::LifecycleHooks,
        "function_tools" => Kind::FunctionTools,
        "commands" => Kind::Commands,
        "tool_input_schema" => Kind::ToolInputSchema,
        "request_params" => Kind::RequestParams,
        "mcp_connect" => Kind::McpConnect,
        "headers" => Kind::Headers,
        "auth" => Kind::Auth,
        "transport" => Kind::OneOf(&["JSONRPC", "HTTP+JSON"]),
        // `model`, `api_key`, `skills`, `variables`, `use_history`, `refinement_instruction`:
        // fast-agent takes them as written (a `use_history` that is not a boolean means the
        // type's default).
        _ => Kind::Any,
    }
}

/// The instruction taken from a Markdown body.
struct Body<'a> {
    text: &'a str,
    /// 1-based line of the body's first line in the file.
    first_line: u32,
}

/// Extracts the instruction from a body: drops a leading `---SYSTEM` line, refuses inline
/// history markers, trims.
fn body_instruction(body: &Body<'_>) -> Result<String, Diagnostic> {
    let lines: Vec<&str> = body.text.split('\n').collect();
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return Ok(String::new());
    };
    let start = if lines[first].trim() == SYSTEM_MARKER {
        first + 1
    } else {
        first
    };
    for (i, line) in lines.iter().enumerate().skip(start) {
        let t = line.trim();
        if HISTORY_DELIMITERS.contains(&t) {
            let line_no = body
                .first_line
                .saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
            return Err(Diagnostic::new(
                FieldPath::root().key("instruction"),
                format!(
                    "inline history (`{t}`) is not supported in an AgentCard body; put the \
                     conversation in a history file and reference it with `messages`"
                ),
            )
            .at(Some(Position {
                line: line_no,
                col: 1,
            })));
        }
    }
    let text = lines[start..].join("\n");
    Ok(text.trim().replace("\r\n", "\n"))
}

/// Splits a Markdown card into front matter text and body. Returns the front matter, the body
/// and the 1-based line on which the body starts.
fn split_front_matter(text: &str) -> Result<(&str, Body<'_>), Diagnostics> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(Diagnostics::from(
            Diagnostic::new(
                FieldPath::root(),
                "a Markdown AgentCard must start with a `---` line that opens its YAML front matter",
            )
            .at(Some(Position { line: 1, col: 1 })),
        ));
    }
    let fm_start = first.len();
    let mut offset = fm_start;
    let mut line_no: u32 = 2;
    for line in lines {
        if line.trim_end() == "---" {
            let fm = &text[fm_start..offset];
            let body = &text[offset + line.len()..];
            return Ok((
                fm,
                Body {
                    text: body,
                    first_line: line_no + 1,
                },
            ));
        }
        offset += line.len();
        line_no = line_no.saturating_add(1);
    }
    Err(Diagnostics::from(
        Diagnostic::new(
            FieldPath::root(),
            "the front matter is not closed by a `---` line",
        )
        .at(Some(Position { line: 1, col: 1 })),
    ))
}

/// Adds `lines` to every position (errors from a parser that saw only part of the file).
fn shift(mut diags: Diagnostics, lines: u32) -> Diagnostics {
    for d in &mut diags.0 {
        if let Some(p) = d.position.as_mut() {
            p.line = p.line.saturating_add(lines);
        }
    }
    diags
}

/// A card parsed from text together with the positions of its fields.
struct Parsed {
    card: AgentCard,
    doc: SourceDoc,
}

impl AgentCard {
    /// Parses a Markdown card (front matter between `---` lines, then the body).
    /// `file_stem` supplies the name when the card has none.
    pub fn from_markdown(text: &str, file_stem: Option<&str>) -> Result<AgentCard, Diagnostics> {
        parse_markdown(text, file_stem).map(|p| p.card)
    }

    /// Parses a YAML card. `file_stem` supplies the name when the card has none.
    pub fn from_yaml(text: &str, file_stem: Option<&str>) -> Result<AgentCard, Diagnostics> {
        parse_yaml_card(text, file_stem).map(|p| p.card)
    }

    /// Parses a card of either format.
    pub fn from_text(
        text: &str,
        format: CardFormat,
        file_stem: Option<&str>,
    ) -> Result<AgentCard, Diagnostics> {
        match format {
            CardFormat::Markdown => Self::from_markdown(text, file_stem),
            CardFormat::Yaml => Self::from_yaml(text, file_stem),
        }
    }

    /// Re-checks every rule on a card built or changed in code.
    pub fn validate(&self) -> Result<(), Diagnostics> {
        let map = self.to_mapping(true);
        let doc = SourceDoc::from_value(Value::Object(map));
        build(&doc, None, None).map(|_| ())
    }

    /// The `type` and attributes as a front matter mapping, with `instruction` when asked.
    fn to_mapping(&self, with_instruction: bool) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.card_type.as_str().into()));
        m.insert("name".into(), Value::String(self.name.clone()));
        if self.schema_version != 1 {
            m.insert("schema_version".into(), Value::from(self.schema_version));
        }
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::String(d.clone()));
        }
        if self.default {
            m.insert("default".into(), Value::Bool(true));
        }
        if self.tool_only {
            m.insert("tool_only".into(), Value::Bool(true));
        }
        for (k, v) in &self.attributes {
            m.insert(k.clone(), v.clone());
        }
        match self.messages.as_slice() {
            [] => {}
            [one] => {
                m.insert("messages".into(), Value::String(one.clone()));
            }
            many => {
                m.insert(
                    "messages".into(),
                    Value::Array(many.iter().cloned().map(Value::String).collect()),
                );
            }
        }
        if with_instruction && let Some(instruction) = &self.instruction {
            m.insert("instruction".into(), Value::String(instruction.clone()));
        }
        m
    }

    /// The card as Markdown: front matter, then the instruction as the body. An instruction that
    /// a body cannot carry unchanged (a line a body would read as a marker, or a carriage return,
    /// which body reading normalizes) goes in the front matter.
    pub fn to_markdown(&self) -> String {
        let Some(instruction) = &self.instruction else {
            let fm = emit::to_yaml(&Value::Object(self.to_mapping(false)));
            return format!("---\n{fm}---\n");
        };
        let in_body = !instruction.contains('\r')
            && instruction.split('\n').all(|l| {
                let t = l.trim();
                t != SYSTEM_MARKER && !HISTORY_DELIMITERS.contains(&t)
            });
        let fm = emit::to_yaml(&Value::Object(self.to_mapping(!in_body)));
        if in_body {
            format!("---\n{fm}---\n{instruction}\n")
        } else {
            format!("---\n{fm}---\n")
        }
    }

    /// The card as YAML, with the instruction in the `instruction` field.
    pub fn to_yaml(&self) -> String {
        emit::to_yaml(&Value::Object(self.to_mapping(true)))
    }

    /// `model`, when the type has one and it is set.
    pub fn model(&self) -> Option<&str> {
        self.attributes.get("model").and_then(Value::as_str)
    }

    /// `servers`: MCP server names.
    pub fn servers(&self) -> Vec<String> {
        self.attributes
            .get("servers")
            .map(string_list)
            .unwrap_or_default()
    }

    /// `agents`: child agents (agents-as-tools, router targets, orchestrator workers).
    pub fn agents(&self) -> Vec<String> {
        self.attributes
            .get("agents")
            .map(string_list)
            .unwrap_or_default()
    }

    /// `tools`: server name → allowed tool names or patterns.
    pub fn tools(&self) -> IndexMap<String, Vec<String>> {
        match self.attributes.get("tools") {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), string_list(v))).collect(),
            _ => IndexMap::new(),
        }
    }

    /// `shell: true`.
    pub fn shell(&self) -> bool {
        self.attributes.get("shell").and_then(Value::as_bool) == Some(true)
    }

    /// The manifest `ofc publish` signs for this card. A card has no hub metadata of its own, so
    /// `defaults` supplies the hub name (or the publisher, combined with the card's name), the
    /// version and the source (the bundle the packer built); the card gives the display name and
    /// handle (its `name`), the description, the model (`requires.model`) and its MCP servers
    /// (`requires.workstations`). The tagline is `defaults.tagline` or the first line of the
    /// description. Missing fields are reported under the card field they would come from
    /// (`name`, `description`) or under the manifest field (`version`, `source`).
    pub fn to_manifest(&self, defaults: ManifestDefaults) -> Result<Manifest, Diagnostics> {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        let name = defaults.name.clone().or_else(|| {
            let publisher = defaults.publisher.as_deref()?;
            match AgentName::new(publisher, &self.name) {
                Ok(n) => Some(n),
                Err(e) => {
                    d.push(
                        root.key("name"),
                        format!("cannot be used as the agent part of the hub name: {e}"),
                    );
                    None
                }
            }
        });
        if name.is_none() && d.is_empty() {
            d.push(
                root.key("name"),
                "publishing a card needs its hub name `publisher/agent` (or the publisher)",
            );
        }
        let id = match defaults.id.clone() {
            Some(h) => Some(h),
            None => {
                let from = name.as_ref().map_or(self.name.as_str(), AgentName::agent);
                match AgentHandle::new(from) {
                    Ok(h) => Some(h),
                    Err(e) => {
                        d.push(
                            root.key("name"),
                            format!("cannot be used as a floor handle: {e}"),
                        );
                        None
                    }
                }
            }
        };
        let version = defaults.version.clone();
        if version.is_none() {
            d.push(root.key("version"), "publishing needs a version");
        }
        let description = self.description.clone().or(defaults.description.clone());
        if description.is_none() {
            d.push(
                root.key("description"),
                "publishing needs a `description` (it is also the tool description)",
            );
        }
        let tagline = defaults.tagline.clone().or_else(|| {
            description
                .as_deref()
                .and_then(|s| s.lines().map(str::trim).find(|l| !l.is_empty()))
                .map(|l| l.chars().take(manifest::MAX_TAGLINE_CHARS).collect())
        });
        if defaults.source.is_none() {
            d.push(
                root.key("source"),
                "publishing needs a source (the bundle built from the card's directory)",
            );
        }
        let servers = self.servers();
        let requires = (self.model().is_some() || !servers.is_empty()).then(|| Requires {
            model: self.model().map(str::to_string),
            workstations: servers,
            tools: Vec::new(),
        });
        let origin = match &defaults.source {
            Some(manifest::Source::Bundle(b)) => Some(manifest::Origin {
                format: manifest::Origin::AGENT_CARD.to_string(),
                document: b.entrypoint.clone(),
                fields: self.unused_fields(),
            }),
            _ => None,
        };
        if let Some(o) = &origin {
            let len = serde_json::to_vec(&o.fields).map_or(0, |v| v.len());
            if len > manifest::MAX_ORIGIN_FIELDS_BYTES
                && let Some((big, _)) = o
                    .fields
                    .iter()
                    .max_by_key(|(_, v)| serde_json::to_vec(v).map_or(0, |v| v.len()))
            {
                d.push(
                    root.key(big.clone()),
                    format!(
                        "the fields kept in the manifest are {len} bytes as JSON, more than the \
                         limit of {} bytes; this is the largest",
                        manifest::MAX_ORIGIN_FIELDS_BYTES
                    ),
                );
            }
        }
        let (Some(name), Some(id), Some(version), Some(description), Some(source)) =
            (name, id, version, description, defaults.source)
        else {
            return Err(d);
        };
        let m = Manifest {
            schema_version: manifest::SCHEMA_VERSION,
            name,
            version,
            id,
            display_name: defaults.display_name.unwrap_or_else(|| self.name.clone()),
            tagline: tagline.unwrap_or_default(),
            description,
            readme: defaults.readme,
            license: defaults.license,
            homepage: defaults.homepage,
            repository: defaults.repository,
            keywords: defaults.keywords,
            examples: Vec::new(),
            activation: manifest::Activation::default(),
            capabilities: Vec::new(),
            provides_mcp: None,
            requires,
            pricing: None,
            origin,
            source,
        };
        finish_manifest(
            m,
            d,
            &[
                ("displayName", "name"),
                ("id", "name"),
                ("tagline", "description"),
                ("requires.model", "model"),
                ("requires.workstations", "servers"),
            ],
        )
    }

    /// The card's fields that its manifest holds nowhere else (everything but `name`,
    /// `description`, `model`, `servers` and the instruction, which stays in the card file), for
    /// [`manifest::Origin::fields`]. Secrets are left out: `api_key`, and `headers`, `auth` and
    /// `access_token` (of the card and of its `mcp_connect` entries).
    pub fn unused_fields(&self) -> Map<String, Value> {
        const SECRETS: [&str; 4] = ["api_key", "headers", "auth", "access_token"];
        const USED: [&str; 4] = ["name", "description", "model", "servers"];
        // Filtered rather than removed, so that the fields keep the order they were written in.
        let mut m: Map<String, Value> = self
            .to_mapping(false)
            .into_iter()
            .filter(|(k, _)| !USED.contains(&k.as_str()) && !SECRETS.contains(&k.as_str()))
            .collect();
        let scrub = |entry: &mut Value| {
            if let Value::Object(e) = entry {
                *e = std::mem::take(e)
                    .into_iter()
                    .filter(|(k, _)| !SECRETS.contains(&k.as_str()))
                    .collect();
            }
        };
        match m.get_mut("mcp_connect") {
            Some(Value::Array(entries)) => entries.iter_mut().for_each(scrub),
            Some(Value::Object(entries)) => entries.values_mut().for_each(scrub),
            _ => {}
        }
        m
    }

    /// A string-valued attribute.
    pub fn attribute_str(&self, field: &str) -> Option<&str> {
        self.attributes.get(field).and_then(Value::as_str)
    }
}

fn parse_markdown(text: &str, file_stem: Option<&str>) -> Result<Parsed, Diagnostics> {
    source::check_size(text)?;
    let text = source::strip_bom(text);
    let (fm, body) = split_front_matter(text)?;
    // The front matter starts on line 2 of the file.
    let doc = source::parse_yaml_yaml11_booleans(fm)
        .map_err(|d| shift(d, 1))?
        .with_line_offset(1);
    build(&doc, Some(&body), file_stem).map(|card| Parsed { card, doc })
}

fn parse_yaml_card(text: &str, file_stem: Option<&str>) -> Result<Parsed, Diagnostics> {
    let doc = source::parse_yaml_yaml11_booleans(text)?;
    build(&doc, None, file_stem).map(|card| Parsed { card, doc })
}

/// Applies every rule to a parsed front matter / YAML card.
fn build(
    doc: &SourceDoc,
    body: Option<&Body<'_>>,
    file_stem: Option<&str>,
) -> Result<AgentCard, Diagnostics> {
    let empty = Map::new();
    let map = match &doc.value {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(doc.locate(Diagnostics::one(
                FieldPath::root(),
                format!(
                    "an AgentCard must be a YAML mapping, not {}",
                    kind_of(other)
                ),
            )));
        }
    };
    let mut diags = Diagnostics::default();
    let root = FieldPath::root();

    let typed = match map.get("type") {
        None | Some(Value::Null) => Some((CardType::Agent, false)),
        Some(Value::String(s)) => match CardType::parse_legacy(s) {
            Some(t) => Some(t),
            None => {
                diags.push(
                    root.key("type"),
                    format!(
                        "unknown card type `{}`; expected one of {} (in any case)",
                        truncate(s, 40),
                        CardType::ALL.map(|t| t.as_str()).join(", ")
                    ),
                );
                None
            }
        },
        Some(other) => {
            diags.push(
                root.key("type"),
                format!("must be a string, not {}", kind_of(other)),
            );
            None
        }
    };

    // Without a known type there is no field set to check against; report the type alone.
    let Some((card_type, smart)) = typed else {
        return Err(doc.locate(diags));
    };
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let has_agents = card_type == CardType::Agent
        && get("agents")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());

    for (key, value) in map {
        let path = root.key(key.clone());
        if !card_type.allows(key) {
            if let Some((_, instead)) = RETIRED_FIELDS.iter().find(|(f, _)| f == key) {
                diags.push(
                    path,
                    format!("field `{key}` is no longer supported by AgentCards; {instead}"),
                );
                continue;
            }
            let others: Vec<&str> = CardType::ALL
                .iter()
                .filter(|t| t.allows(key))
                .map(|t| t.as_str())
                .collect();
            let hint = if others.is_empty() {
                String::new()
            } else {
                format!(" (it belongs to {})", others.join(", "))
            };
            diags.push(
                path,
                format!(
                    "field `{}` is not allowed for card type `{card_type}`{hint}",
                    truncate(key, 60)
                ),
            );
            continue;
        }
        if key == "type" || (value.is_null() && !NULL_IS_WRONG.contains(&key.as_str())) {
            continue;
        }
        // fast-agent reads the agents-as-tools options only when there are agents to call.
        if AGENTS_AS_TOOLS_OPTIONS.contains(&key.as_str()) && !has_agents {
            continue;
        }
        fields::check(field_kind(card_type, key), value, &path, &mut diags);
    }

    for field in card_type.required_fields() {
        if map.get(*field).is_none_or(Value::is_null) {
            diags.push(
                root.key(*field),
                format!("is required for card type `{card_type}`"),
            );
        }
    }

    // fast-agent turns blanks in a name into underscores.
    let name = match get("name") {
        Some(Value::String(s)) => s.trim().replace(' ', "_"),
        Some(_) => String::new(), // reported by the type check
        None => match file_stem {
            Some(stem) if !stem.trim().is_empty() => stem.replace(' ', "_"),
            _ => {
                diags.push(
                    root.key("name"),
                    "is required when the card is not read from a file",
                );
                String::new()
            }
        },
    };

    let schema_version = get("schema_version").and_then(Value::as_i64).unwrap_or(1);

    let attribute = get("instruction").and_then(Value::as_str);
    let body_text = match body {
        Some(b) => match body_instruction(b) {
            Ok(t) => t,
            Err(d) => {
                diags.0.push(d);
                String::new()
            }
        },
        None => String::new(),
    };
    // No instruction at all is fine: fast-agent gives the agent its default instruction.
    let instruction = match (attribute, body_text.is_empty()) {
        (Some(_), false) => {
            diags.push(
                root.key("instruction"),
                "the instruction is given both in the body and as the `instruction` attribute; \
                 use one source only",
            );
            None
        }
        (Some(a), true) => {
            if a.trim().is_empty() {
                diags.push(
                    root.key("instruction"),
                    "must not be empty (leave it out to use the default instruction)",
                );
            }
            Some(a.trim().to_string())
        }
        (None, false) => Some(body_text),
        (None, true) => None,
    };

    let flag = |k: &str| get(k).and_then(Value::as_bool) == Some(true);
    let default = flag("default");
    let tool_only = flag("tool_only");
    if default && tool_only {
        diags.push(
            root.key("tool_only"),
            "`tool_only: true` and `default: true` are mutually exclusive: a tool-only agent \
             cannot be the default agent",
        );
    }
    // The legacy `smart` type turns the harness tools on unless the card says otherwise.
    let harness_tools = get("harness_tools")
        .and_then(Value::as_bool)
        .unwrap_or(smart && !map.contains_key("harness_tools"));
    if harness_tools && tool_only {
        diags.push(
            root.key("harness_tools"),
            "the harness tools cannot be enabled on a tool-only agent",
        );
    }
    let use_history = get("use_history")
        .and_then(Value::as_bool)
        .unwrap_or(card_type.default_use_history());
    if flag("save_trajectory") && use_history {
        let why = if get("use_history").is_some_and(Value::is_boolean) {
            "`save_trajectory: true` needs `use_history: false`"
        } else {
            "`save_trajectory: true` needs `use_history: false` (this type keeps history by default)"
        };
        diags.push(root.key("save_trajectory"), why);
    }

    let description = get("description")
        .and_then(Value::as_str)
        .map(|s| s.trim().to_string());
    let messages = get("messages").map(string_list).unwrap_or_default();

    if !diags.is_empty() {
        // Report in the order the problems appear in the file.
        let mut located = doc.locate(diags);
        located
            .0
            .sort_by_key(|d| d.position.map_or((u32::MAX, u32::MAX), |p| (p.line, p.col)));
        return Err(located);
    }

    let mut attributes: IndexMap<String, Value> = map
        .iter()
        .filter(|(k, v)| !COMMON_FIELDS.contains(&k.as_str()) && *k != "messages" && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if smart {
        // Written back as what fast-agent makes of it: an agent with the smart defaults.
        for k in ["subagents", "harness_tools"] {
            if !map.contains_key(k) {
                attributes.insert(k.to_string(), Value::Bool(true));
            }
        }
    }

    Ok(AgentCard {
        card_type,
        name,
        schema_version,
        instruction,
        description,
        default,
        tool_only,
        messages,
        attributes,
    })
}

/// True when a Markdown file opens with front matter (first non-blank line is `---`): one
/// without is documentation (a README next to the cards), not a card.
pub fn has_front_matter(text: &str) -> bool {
    source::strip_bom(text)
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim() == "---")
}

/// The diagnostic of a whole file.
pub fn root_error(message: impl Into<String>) -> Diagnostics {
    Diagnostics::one(FieldPath::root(), message)
}

#[cfg(test)]
mod tests;
