//! AgentCards: agents written as Markdown (`.md`/`.markdown`, YAML front matter + body) or YAML
//! (`.yaml`/`.yml`) files, following the AgentCard RFC (`shared/seeds/003`).
//!
//! What the loader enforces, rule by rule:
//!
//! - `type` is one of `agent`, `chain`, `parallel`, `evaluator_optimizer`, `router`,
//!   `orchestrator`, `iterative_planner`, `MAKER` (spelled exactly so) and defaults to `agent`.
//! - Each type accepts exactly the fields of its decorator in the RFC's "1:1 Card ↔ Decorator
//!   Mapping", plus `type` and `schema_version`; any other field is refused with a message naming
//!   the field and the type. `messages` is allowed only where the RFC lists it (not on `chain` or
//!   `parallel`).
//! - `history_mode` stays accepted on `agent`: the RFC's appendix says it is removed, but the
//!   normative allowed-field list still has it, and the list is what the strict validator follows.
//!   `history_source`/`history_merge_target` are "proposed and not yet part of the validator", so
//!   they are refused.
//! - The arguments a decorator cannot do without are required: `sequence` (chain), `fan_out`
//!   (parallel), `generator` and `evaluator` (evaluator_optimizer), `agents` (router,
//!   orchestrator, iterative_planner), `worker` (MAKER).
//! - `name` defaults to the file name without its extension; `schema_version` is an optional
//!   integer, default 1.
//! - `instruction` is required and comes from exactly one source: the Markdown body or the
//!   `instruction` attribute. Both is an error; an attribute with a whitespace-only body is fine.
//!   A leading `---SYSTEM` line in the body is stripped. Inline `---USER`/`---ASSISTANT`/
//!   `---RESOURCE` lines in the body are refused (history is external only).
//! - `tool_only: true` and `default: true` are mutually exclusive.
//! - `messages` is a path or a list of paths, resolved against the card's directory when the card
//!   is loaded from a file ([`AgentCard::load_file`]); each file must exist. `.json` history files
//!   must hold `{"messages": [...]}`; any other file is delimited text and must be UTF-8.
//! - Field values are type-checked (`servers` a list of strings, `tools` a map of server to a list
//!   of tool names or patterns, `max_parallel` a positive integer, `shell` a boolean, …). A field
//!   set to `null` counts as absent, as in the reference loader.
//! - A UTF-8 byte order mark is tolerated.
//!
//! A parsed card keeps its common fields typed ([`AgentCard`]) and every other field in
//! [`AgentCard::attributes`], already validated, so it can be written back with
//! [`AgentCard::to_markdown`] or [`AgentCard::to_yaml`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::agent_yaml::{ManifestDefaults, emit, finish_manifest};
use crate::diagnostic::{Diagnostic, Diagnostics, FieldPath, Position};
use crate::manifest::{self, Manifest, Requires};
use crate::name::{AgentHandle, AgentName};
use crate::source::{self, SourceDoc};

/// File extensions (lowercase) that hold AgentCards.
pub const CARD_EXTENSIONS: [&str; 4] = ["md", "markdown", "yaml", "yml"];

/// Largest history file read when checking a card's `messages`.
pub const MAX_HISTORY_BYTES: u64 = 16 * 1024 * 1024;

/// Lines that start inline history blocks, which cards may not contain.
const HISTORY_DELIMITERS: [&str; 3] = ["---USER", "---ASSISTANT", "---RESOURCE"];
/// Optional first line of a card body that makes the system role explicit.
const SYSTEM_MARKER: &str = "---SYSTEM";

/// Fields every card type accepts.
const COMMON_FIELDS: &[&str] = &[
    "type",
    "schema_version",
    "name",
    "instruction",
    "description",
    "default",
    "tool_only",
];

const AGENT_FIELDS: &[&str] = &[
    "agents",
    "servers",
    "tools",
    "resources",
    "prompts",
    "skills",
    "model",
    "use_history",
    "request_params",
    "human_input",
    "api_key",
    "history_mode",
    "max_parallel",
    "child_timeout_sec",
    "max_display_instances",
    "function_tools",
    "tool_hooks",
    "shell",
    "cwd",
    "messages",
];
const CHAIN_FIELDS: &[&str] = &["sequence", "cumulative"];
const PARALLEL_FIELDS: &[&str] = &["fan_out", "fan_in", "include_request"];
const EVALUATOR_OPTIMIZER_FIELDS: &[&str] = &[
    "generator",
    "evaluator",
    "min_rating",
    "max_refinements",
    "refinement_instruction",
    "messages",
];
const ROUTER_FIELDS: &[&str] = &[
    "agents",
    "servers",
    "tools",
    "resources",
    "prompts",
    "model",
    "use_history",
    "request_params",
    "human_input",
    "api_key",
    "messages",
];
const ORCHESTRATOR_FIELDS: &[&str] = &[
    "agents",
    "model",
    "use_history",
    "request_params",
    "human_input",
    "api_key",
    "plan_type",
    "plan_iterations",
    "messages",
];
const ITERATIVE_PLANNER_FIELDS: &[&str] = &[
    "agents",
    "model",
    "request_params",
    "api_key",
    "plan_iterations",
    "messages",
];
const MAKER_FIELDS: &[&str] = &[
    "worker",
    "k",
    "max_samples",
    "match_strategy",
    "red_flag_max_length",
    "messages",
];

/// The kind of agent a card defines; decides which fields it may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CardType {
    /// `agent` (`@fast.agent`).
    Agent,
    /// `chain` (`@fast.chain`).
    Chain,
    /// `parallel` (`@fast.parallel`).
    Parallel,
    /// `evaluator_optimizer` (`@fast.evaluator_optimizer`).
    EvaluatorOptimizer,
    /// `router` (`@fast.router`).
    Router,
    /// `orchestrator` (`@fast.orchestrator`).
    Orchestrator,
    /// `iterative_planner` (`@fast.iterative_planner`).
    IterativePlanner,
    /// `MAKER` (`@fast.maker`).
    Maker,
}

impl CardType {
    /// Every type, in the RFC's order.
    pub const ALL: [CardType; 8] = [
        CardType::Agent,
        CardType::Chain,
        CardType::Parallel,
        CardType::EvaluatorOptimizer,
        CardType::Router,
        CardType::Orchestrator,
        CardType::IterativePlanner,
        CardType::Maker,
    ];

    /// The spelling used in cards.
    pub fn as_str(self) -> &'static str {
        match self {
            CardType::Agent => "agent",
            CardType::Chain => "chain",
            CardType::Parallel => "parallel",
            CardType::EvaluatorOptimizer => "evaluator_optimizer",
            CardType::Router => "router",
            CardType::Orchestrator => "orchestrator",
            CardType::IterativePlanner => "iterative_planner",
            CardType::Maker => "MAKER",
        }
    }

    /// The type spelled exactly `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    fn specific_fields(self) -> &'static [&'static str] {
        match self {
            CardType::Agent => AGENT_FIELDS,
            CardType::Chain => CHAIN_FIELDS,
            CardType::Parallel => PARALLEL_FIELDS,
            CardType::EvaluatorOptimizer => EVALUATOR_OPTIMIZER_FIELDS,
            CardType::Router => ROUTER_FIELDS,
            CardType::Orchestrator => ORCHESTRATOR_FIELDS,
            CardType::IterativePlanner => ITERATIVE_PLANNER_FIELDS,
            CardType::Maker => MAKER_FIELDS,
        }
    }

    /// Whether a card of this type may have `field`.
    pub fn allows(self, field: &str) -> bool {
        COMMON_FIELDS.contains(&field) || self.specific_fields().contains(&field)
    }

    /// Every field a card of this type may have.
    pub fn allowed_fields(self) -> Vec<&'static str> {
        COMMON_FIELDS
            .iter()
            .chain(self.specific_fields())
            .copied()
            .collect()
    }

    /// Fields a card of this type must have (the decorator's required arguments).
    pub fn required_fields(self) -> &'static [&'static str] {
        match self {
            CardType::Agent => &[],
            CardType::Chain => &["sequence"],
            CardType::Parallel => &["fan_out"],
            CardType::EvaluatorOptimizer => &["generator", "evaluator"],
            CardType::Router | CardType::Orchestrator | CardType::IterativePlanner => &["agents"],
            CardType::Maker => &["worker"],
        }
    }
}

impl std::fmt::Display for CardType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// The system instruction, from the body or the `instruction` attribute, trimmed.
    pub instruction: String,
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

/// What kind of value a field holds.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A non-empty string.
    Str,
    /// A boolean.
    Bool,
    /// An integer of at least this value.
    Int(i64),
    /// A number greater than zero.
    PositiveNumber,
    /// A list of non-empty strings; `true` when it must not be empty.
    StrList(bool),
    /// A non-empty string or a list of them.
    StrOrList,
    /// A mapping of name to a list of non-empty strings (`tools`, `resources`, `prompts`).
    FilterMap,
    /// A mapping of name to string.
    StrMap,
    /// Any mapping.
    Mapping,
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

fn field_kind(field: &str) -> Kind {
    match field {
        "name"
        | "instruction"
        | "description"
        | "model"
        | "api_key"
        | "history_mode"
        | "cwd"
        | "fan_in"
        | "generator"
        | "evaluator"
        | "refinement_instruction"
        | "worker" => Kind::Str,
        "default" | "tool_only" | "use_history" | "human_input" | "shell" | "cumulative"
        | "include_request" => Kind::Bool,
        "schema_version" | "plan_iterations" => Kind::Int(i64::MIN),
        "max_parallel" | "max_display_instances" | "k" | "max_samples" | "red_flag_max_length" => {
            Kind::Int(1)
        }
        "max_refinements" => Kind::Int(0),
        "child_timeout_sec" => Kind::PositiveNumber,
        "agents" | "servers" => Kind::StrList(false),
        "sequence" | "fan_out" => Kind::StrList(true),
        "skills" | "function_tools" | "messages" => Kind::StrOrList,
        "tools" | "resources" | "prompts" => Kind::FilterMap,
        "tool_hooks" => Kind::StrMap,
        "request_params" => Kind::Mapping,
        "min_rating" => Kind::OneOf(&["POOR", "FAIR", "GOOD", "EXCELLENT"]),
        "plan_type" => Kind::OneOf(&["full", "iterative"]),
        "match_strategy" => Kind::OneOf(&["exact", "normalized", "structured"]),
        _ => Kind::Mapping,
    }
}

fn check_kind(kind: Kind, v: &Value, path: &FieldPath, diags: &mut Diagnostics) {
    let non_empty_str = |v: &Value| matches!(v, Value::String(s) if !s.trim().is_empty());
    match kind {
        Kind::Str => match v {
            Value::String(s) if s.trim().is_empty() => {
                diags.push(path.clone(), "must not be empty")
            }
            Value::String(_) => {}
            other => diags.push(
                path.clone(),
                format!("must be a string, not {}", kind_of(other)),
            ),
        },
        Kind::Bool => {
            if !v.is_boolean() {
                diags.push(
                    path.clone(),
                    format!("must be true or false, not {}", kind_of(v)),
                );
            }
        }
        Kind::Int(min) => match v.as_i64() {
            Some(n) if n >= min => {}
            Some(_) if min == 1 => diags.push(path.clone(), "must be a positive integer"),
            Some(_) => diags.push(path.clone(), format!("must be at least {min}")),
            None => diags.push(
                path.clone(),
                format!("must be an integer, not {}", kind_of(v)),
            ),
        },
        Kind::PositiveNumber => match v.as_f64() {
            Some(f) if f > 0.0 => {}
            Some(_) => diags.push(path.clone(), "must be greater than zero"),
            None => diags.push(
                path.clone(),
                format!("must be a number, not {}", kind_of(v)),
            ),
        },
        Kind::StrList(required_items) => match v {
            Value::Array(items) => {
                if required_items && items.is_empty() {
                    diags.push(path.clone(), "must name at least one agent");
                }
                for (i, item) in items.iter().enumerate() {
                    if !non_empty_str(item) {
                        diags.push(path.index(i), "must be a non-empty string");
                    }
                }
            }
            other => diags.push(
                path.clone(),
                format!("must be a list of strings, not {}", kind_of(other)),
            ),
        },
        Kind::StrOrList => match v {
            Value::String(s) if s.trim().is_empty() => {
                diags.push(path.clone(), "must not be empty")
            }
            Value::String(_) => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if !non_empty_str(item) {
                        diags.push(path.index(i), "must be a non-empty string");
                    }
                }
            }
            other => diags.push(
                path.clone(),
                format!(
                    "must be a string or a list of strings, not {}",
                    kind_of(other)
                ),
            ),
        },
        Kind::FilterMap => match v {
            Value::Object(m) => {
                for (k, items) in m {
                    let p = path.key(k.clone());
                    match items {
                        Value::Array(items) => {
                            for (i, item) in items.iter().enumerate() {
                                if !non_empty_str(item) {
                                    diags.push(p.index(i), "must be a non-empty string");
                                }
                            }
                        }
                        other => diags.push(
                            p,
                            format!(
                                "must be a list of names or patterns, not {}",
                                kind_of(other)
                            ),
                        ),
                    }
                }
            }
            other => diags.push(
                path.clone(),
                format!(
                    "must be a mapping of server name to a list of names, not {}",
                    kind_of(other)
                ),
            ),
        },
        Kind::StrMap => match v {
            Value::Object(m) => {
                for (k, item) in m {
                    if !item.is_string() {
                        diags.push(path.key(k.clone()), "must be a string");
                    }
                }
            }
            other => diags.push(
                path.clone(),
                format!("must be a mapping, not {}", kind_of(other)),
            ),
        },
        Kind::Mapping => {
            if !v.is_object() {
                diags.push(
                    path.clone(),
                    format!("must be a mapping, not {}", kind_of(v)),
                );
            }
        }
        Kind::OneOf(choices) => match v.as_str() {
            Some(s) if choices.contains(&s) => {}
            _ => diags.push(
                path.clone(),
                format!(
                    "must be one of {}, not {}",
                    choices
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    describe(v)
                ),
            ),
        },
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{}`", truncate(s, 40)),
        other => kind_of(other).to_string(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

fn string_list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
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
        if with_instruction {
            m.insert(
                "instruction".into(),
                Value::String(self.instruction.clone()),
            );
        }
        m
    }

    /// The card as Markdown: front matter, then the instruction as the body. An instruction that
    /// a body cannot carry unchanged (a line a body would read as a marker, or a carriage return,
    /// which body reading normalizes) goes in the front matter.
    pub fn to_markdown(&self) -> String {
        let in_body = !self.instruction.contains('\r')
            && self.instruction.split('\n').all(|l| {
                let t = l.trim();
                t != SYSTEM_MARKER && !HISTORY_DELIMITERS.contains(&t)
            });
        let fm = emit::to_yaml(&Value::Object(self.to_mapping(!in_body)));
        if in_body {
            format!("---\n{fm}---\n{}\n", self.instruction)
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
    let doc = source::parse_yaml(fm)
        .map_err(|d| shift(d, 1))?
        .with_line_offset(1);
    build(&doc, Some(&body), file_stem).map(|card| Parsed { card, doc })
}

fn parse_yaml_card(text: &str, file_stem: Option<&str>) -> Result<Parsed, Diagnostics> {
    let doc = source::parse_yaml(text)?;
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

    let card_type = match map.get("type") {
        None | Some(Value::Null) => Some(CardType::Agent),
        Some(Value::String(s)) => match CardType::parse(s) {
            Some(t) => Some(t),
            None => {
                let hint = CardType::ALL
                    .iter()
                    .find(|t| t.as_str().eq_ignore_ascii_case(s))
                    .map(|t| format!(" (did you mean `{t}`?)"))
                    .unwrap_or_default();
                diags.push(
                    root.key("type"),
                    format!(
                        "unknown card type `{}`{hint}; expected one of {}",
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
    let Some(card_type) = card_type else {
        return Err(doc.locate(diags));
    };

    for (key, value) in map {
        let path = root.key(key.clone());
        if !card_type.allows(key) {
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
        if key == "type" || value.is_null() {
            continue;
        }
        check_kind(field_kind(key), value, &path, &mut diags);
    }

    for field in card_type.required_fields() {
        if map.get(*field).is_none_or(Value::is_null) {
            diags.push(
                root.key(*field),
                format!("is required for card type `{card_type}`"),
            );
        }
    }

    let get = |k: &str| map.get(k).filter(|v| !v.is_null());

    let name = match get("name") {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(_) => String::new(), // reported by the type check
        None => match file_stem.map(str::trim) {
            Some(stem) if !stem.is_empty() => stem.to_string(),
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
    let mut body_refused = false;
    let body_text = match body {
        Some(b) => match body_instruction(b) {
            Ok(t) => t,
            Err(d) => {
                diags.0.push(d);
                body_refused = true;
                String::new()
            }
        },
        None => String::new(),
    };
    let instruction = match (attribute, body_text.is_empty()) {
        (Some(_), false) => {
            diags.push(
                root.key("instruction"),
                "the instruction is given both in the body and as the `instruction` attribute; \
                 use one source only",
            );
            String::new()
        }
        (Some(a), true) => a.trim().to_string(),
        (None, false) => body_text,
        (None, true) => {
            if get("instruction").is_none() && !body_refused {
                let message = if body.is_some() {
                    "is required: write it in the body or as the `instruction` attribute"
                } else {
                    "is required"
                };
                diags.push(root.key("instruction"), message);
            }
            String::new()
        }
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

    let attributes = map
        .iter()
        .filter(|(k, v)| !COMMON_FIELDS.contains(&k.as_str()) && *k != "messages" && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();

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

/// The format of a history file named by `messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryFormat {
    /// `{"messages": [...]}` (`.json`).
    Json,
    /// Text with `---USER` / `---ASSISTANT` / `---RESOURCE` delimiters (any other extension).
    Text,
}

/// A history file a card's `messages` names, resolved against the card's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryFile {
    /// The path as written in the card.
    pub written: String,
    /// The resolved path.
    pub path: PathBuf,
    /// How it is read.
    pub format: HistoryFormat,
}

/// A card read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCard {
    /// The card file.
    pub path: PathBuf,
    /// Its format.
    pub format: CardFormat,
    /// The card.
    pub card: AgentCard,
    /// The checked history files, in the order of `messages`.
    pub history: Vec<HistoryFile>,
    /// Where `name` is written in the file; `None` when the name came from the file name.
    pub name_position: Option<Position>,
}

/// Problems with one file of a card directory.
#[derive(Debug, Clone, PartialEq)]
pub struct FileDiagnostics {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub diagnostics: Diagnostics,
}

/// The result of loading a directory of cards.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardDir {
    /// Cards that loaded, sorted by file name; names are unique.
    pub cards: Vec<LoadedCard>,
    /// Files that did not load (or whose name repeats an earlier card's), sorted by file name.
    pub failed: Vec<FileDiagnostics>,
    /// Markdown files without front matter (a README next to the cards), which are not cards.
    pub skipped: Vec<PathBuf>,
}

impl CardDir {
    /// True when every card file loaded.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }

    /// The cards, or every file's problems.
    pub fn into_result(self) -> Result<Vec<LoadedCard>, Vec<FileDiagnostics>> {
        if self.failed.is_empty() {
            Ok(self.cards)
        } else {
            Err(self.failed)
        }
    }
}

fn root_error(message: impl Into<String>) -> Diagnostics {
    Diagnostics::one(FieldPath::root(), message)
}

// File system access of this module lives below: reading card files, their history files and
// card directories. Everything above works on text.

impl AgentCard {
    /// Reads and validates one card file (`.md`, `.markdown`, `.yaml`, `.yml`), including the
    /// history files its `messages` name.
    pub fn load_file(path: &Path) -> Result<LoadedCard, Diagnostics> {
        let Some(format) = CardFormat::from_path(path) else {
            return Err(root_error(format!(
                "not an AgentCard file: the extension must be one of {}",
                CARD_EXTENSIONS.map(|e| format!(".{e}")).join(", ")
            )));
        };
        let text = read_text(path, source::MAX_DOCUMENT_BYTES as u64)?;
        let stem = path.file_stem().and_then(|s| s.to_str());
        let parsed = match format {
            CardFormat::Markdown => parse_markdown(&text, stem)?,
            CardFormat::Yaml => parse_yaml_card(&text, stem)?,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let (history, diags) = check_history(dir, &parsed);
        if !diags.is_empty() {
            return Err(parsed.doc.locate(diags));
        }
        let name_position = if parsed.doc.value.get("name").is_some_and(|v| !v.is_null()) {
            parsed.doc.position(&FieldPath::root().key("name"))
        } else {
            None
        };
        Ok(LoadedCard {
            path: path.to_path_buf(),
            format,
            card: parsed.card,
            history,
            name_position,
        })
    }
}

fn read_text(path: &Path, limit: u64) -> Result<String, Diagnostics> {
    let meta =
        std::fs::metadata(path).map_err(|e| root_error(format!("cannot read the file: {e}")))?;
    if !meta.is_file() {
        return Err(root_error("not a regular file"));
    }
    if meta.len() > limit {
        return Err(root_error(format!(
            "file is {} bytes, more than the limit of {limit} bytes",
            meta.len()
        )));
    }
    let bytes =
        std::fs::read(path).map_err(|e| root_error(format!("cannot read the file: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        root_error(format!(
            "the file is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Resolves and lightly validates the history files of a parsed card.
fn check_history(dir: &Path, parsed: &Parsed) -> (Vec<HistoryFile>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let mut out = Vec::new();
    let field = FieldPath::root().key("messages");
    let as_list = parsed
        .doc
        .value
        .get("messages")
        .is_some_and(Value::is_array);
    for (i, written) in parsed.card.messages.iter().enumerate() {
        let path_of_entry = if as_list {
            field.index(i)
        } else {
            field.clone()
        };
        let resolved = dir.join(written);
        let format = match resolved.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => HistoryFormat::Json,
            _ => HistoryFormat::Text,
        };
        match read_text(&resolved, MAX_HISTORY_BYTES) {
            Err(e) => {
                let why = e.0.first().map_or(String::new(), |d| d.message.clone());
                let why = if resolved.exists() {
                    why
                } else {
                    "the file does not exist".to_string()
                };
                diags.push(
                    path_of_entry,
                    format!("history file `{}`: {why}", resolved.display()),
                );
            }
            Ok(text) => {
                if format == HistoryFormat::Json
                    && let Err(why) = check_json_history(&text)
                {
                    diags.push(
                        path_of_entry,
                        format!("history file `{}`: {why}", resolved.display()),
                    );
                    continue;
                }
                out.push(HistoryFile {
                    written: written.clone(),
                    path: resolved,
                    format,
                });
            }
        }
    }
    (out, diags)
}

/// A JSON history file is `{"messages": [...]}` with an object per message.
fn check_json_history(text: &str) -> Result<(), String> {
    let doc = source::parse_json(text).map_err(|d| {
        d.0.first()
            .map_or_else(|| "invalid JSON".to_string(), ToString::to_string)
    })?;
    match doc.value.get("messages") {
        Some(Value::Array(items)) => match items.iter().position(|m| !m.is_object()) {
            Some(i) => Err(format!("messages[{i}] must be an object")),
            None => Ok(()),
        },
        Some(_) => Err("`messages` must be a list".to_string()),
        None => Err("a JSON history file must be an object with a `messages` list".to_string()),
    }
}

/// True when a Markdown file opens with front matter (first non-blank line is `---`).
fn has_front_matter(text: &str) -> bool {
    source::strip_bom(text)
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim() == "---")
}

/// Loads every card file directly inside `dir` (not recursive), sorted by file name, and checks
/// that card names are unique across the directory. `Err` only when the directory itself cannot
/// be read.
pub fn load_dir(dir: &Path) -> Result<CardDir, Diagnostics> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| root_error(format!("cannot read directory `{}`: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && CardFormat::from_path(p).is_some())
        .collect();
    files.sort();

    let mut out = CardDir::default();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for path in files {
        if CardFormat::from_path(&path) == Some(CardFormat::Markdown) {
            // A Markdown file without front matter is documentation, not a card (as in the
            // reference loader); one that cannot be read is reported by `load_file`.
            if let Ok(text) = read_text(&path, source::MAX_DOCUMENT_BYTES as u64)
                && !has_front_matter(&text)
            {
                out.skipped.push(path);
                continue;
            }
        }
        match AgentCard::load_file(&path) {
            Ok(loaded) => {
                if let Some(first) = seen.get(&loaded.card.name) {
                    let d = Diagnostic::new(
                        FieldPath::root().key("name"),
                        format!(
                            "duplicate card name `{}`: `{}` already defines it",
                            loaded.card.name,
                            first.display()
                        ),
                    )
                    .at(loaded.name_position);
                    out.failed.push(FileDiagnostics {
                        path,
                        diagnostics: d.into(),
                    });
                } else {
                    seen.insert(loaded.card.name.clone(), path);
                    out.cards.push(loaded);
                }
            }
            Err(diagnostics) => out.failed.push(FileDiagnostics { path, diagnostics }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;
    use serde_json::json;

    fn md(text: &str) -> Result<AgentCard, Diagnostics> {
        AgentCard::from_markdown(text, Some("stem"))
    }

    fn first(e: &Diagnostics) -> (String, Option<u32>, String) {
        let d = &e.0[0];
        (
            d.path.to_string(),
            d.position.map(|p| p.line),
            d.message.clone(),
        )
    }

    #[test]
    fn rfc_basic_markdown_card() {
        let c = md("---\ntype: agent\nname: sizer\n---\nGiven an object, respond only with an estimate of its size.\n")
            .unwrap();
        assert_eq!(c.card_type, CardType::Agent);
        assert_eq!(c.name, "sizer");
        assert_eq!(c.schema_version, 1);
        assert_eq!(
            c.instruction,
            "Given an object, respond only with an estimate of its size."
        );
        assert!(c.attributes.is_empty());
    }

    #[test]
    fn rfc_yaml_card() {
        let c = AgentCard::from_yaml(
            "type: agent\nname: sizer\ninstruction: |\n  Given an object, respond only with an estimate of its size.\n",
            None,
        )
        .unwrap();
        assert_eq!(
            c.instruction,
            "Given an object, respond only with an estimate of its size."
        );
    }

    #[test]
    fn type_defaults_to_agent_and_name_to_the_file_stem() {
        let c = md("---\n---\nDo things.\n").unwrap();
        assert_eq!(c.card_type, CardType::Agent);
        assert_eq!(c.name, "stem");
        let e = AgentCard::from_markdown("---\n---\nDo things.\n", None).unwrap_err();
        assert_eq!(first(&e).0, "name");
    }

    #[test]
    fn unknown_type_is_refused_with_a_hint() {
        let e = md("---\ntype: maker\nworker: w\n---\nx\n").unwrap_err();
        let (path, line, msg) = first(&e);
        assert_eq!((path.as_str(), line), ("type", Some(2)));
        assert!(msg.contains("did you mean `MAKER`"), "{msg}");
        assert_eq!(first(&md("---\ntype: 3\n---\nx\n").unwrap_err()).0, "type");
    }

    #[test]
    fn unknown_field_names_field_and_type() {
        let e = md("---\nname: a\nfan_out: [x]\n---\nx\n").unwrap_err();
        let (path, line, msg) = first(&e);
        assert_eq!((path.as_str(), line), ("fan_out", Some(3)));
        assert!(
            msg.contains("`fan_out`") && msg.contains("`agent`") && msg.contains("parallel"),
            "{msg}"
        );
        let e = md("---\nwhatever: 1\n---\nx\n").unwrap_err();
        assert!(
            first(&e)
                .2
                .contains("`whatever` is not allowed for card type `agent`")
        );
    }

    /// A valid value for every field, so that each type can be tried with its whole field set.
    fn sample(field: &str) -> Value {
        match field_kind(field) {
            Kind::Str => json!("x"),
            Kind::Bool => json!(false),
            Kind::Int(_) => json!(2),
            Kind::PositiveNumber => json!(1.5),
            Kind::StrList(_) => json!(["a"]),
            Kind::StrOrList => json!(["a"]),
            Kind::FilterMap => json!({"time": ["get_time"]}),
            Kind::StrMap => json!({"before": "hooks.py:f"}),
            Kind::Mapping => json!({"maxTokens": 100}),
            Kind::OneOf(c) => json!(c[0]),
        }
    }

    #[rstest]
    #[case(CardType::Agent)]
    #[case(CardType::Chain)]
    #[case(CardType::Parallel)]
    #[case(CardType::EvaluatorOptimizer)]
    #[case(CardType::Router)]
    #[case(CardType::Orchestrator)]
    #[case(CardType::IterativePlanner)]
    #[case(CardType::Maker)]
    fn each_type_accepts_exactly_its_fields(#[case] t: CardType) {
        let mut m = Map::new();
        for f in t.allowed_fields() {
            let v = match f {
                "type" => json!(t.as_str()),
                "default" | "tool_only" => json!(false),
                "schema_version" => json!(1),
                "messages" => json!([]),
                other => sample(other),
            };
            m.insert(f.to_string(), v);
        }
        let text = emit::to_yaml(&Value::Object(m.clone()));
        let card = AgentCard::from_yaml(&text, None).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(card.card_type, t);
        // Any field of another type that this one does not list is refused.
        let every: Vec<&str> = CardType::ALL
            .iter()
            .flat_map(|t| t.allowed_fields())
            .collect();
        for f in every.into_iter().filter(|f| !t.allows(f)) {
            let mut m2 = m.clone();
            m2.insert(f.to_string(), sample(f));
            let e = AgentCard::from_yaml(&emit::to_yaml(&Value::Object(m2)), None).unwrap_err();
            assert!(
                e.iter()
                    .any(|d| d.path.to_string() == f && d.message.contains(t.as_str())),
                "{t} should refuse {f}: {e}"
            );
        }
    }

    #[test]
    fn messages_is_not_a_chain_or_parallel_field() {
        assert!(!CardType::Chain.allows("messages"));
        assert!(!CardType::Parallel.allows("messages"));
        assert!(CardType::Maker.allows("messages"));
    }

    #[test]
    fn history_mode_follows_the_allowed_list() {
        assert!(md("---\nhistory_mode: fork\n---\nx\n").is_ok());
        let e = md("---\ntype: router\nagents: [a]\nhistory_mode: fork\n---\nx\n").unwrap_err();
        assert_eq!(first(&e).0, "history_mode");
        let e = md("---\nhistory_source: none\n---\nx\n").unwrap_err();
        assert_eq!(first(&e).0, "history_source");
    }

    #[rstest]
    #[case("chain", "sequence")]
    #[case("parallel", "fan_out")]
    #[case("evaluator_optimizer", "generator")]
    #[case("router", "agents")]
    #[case("orchestrator", "agents")]
    #[case("iterative_planner", "agents")]
    #[case("MAKER", "worker")]
    fn decorator_arguments_are_required(#[case] t: &str, #[case] field: &str) {
        let e = md(&format!("---\ntype: {t}\n---\nx\n")).unwrap_err();
        assert!(
            e.iter()
                .any(|d| d.path.to_string() == field && d.message.contains("required")),
            "{e}"
        );
    }

    #[test]
    fn empty_sequence_is_refused() {
        let e = md("---\ntype: chain\nsequence: []\n---\nx\n").unwrap_err();
        assert_eq!(first(&e).0, "sequence");
    }

    #[rstest]
    #[case("schema_version: 1.5", "schema_version")]
    #[case("schema_version: \"1\"", "schema_version")]
    #[case("schema_version: true", "schema_version")]
    #[case("servers: time", "servers")]
    #[case("servers: [time, 3]", "servers[1]")]
    #[case("tools: [a]", "tools")]
    #[case("tools: {time: get_time}", "tools.time")]
    #[case("tools: {time: [1]}", "tools.time[0]")]
    #[case("max_parallel: 0", "max_parallel")]
    #[case("max_parallel: two", "max_parallel")]
    #[case("child_timeout_sec: -1", "child_timeout_sec")]
    #[case("shell: yes", "shell")]
    #[case("cwd: 3", "cwd")]
    #[case("request_params: 3", "request_params")]
    #[case("tool_hooks: {before: [x]}", "tool_hooks.before")]
    #[case("messages: {a: b}", "messages")]
    #[case("messages: [\"\"]", "messages[0]")]
    #[case("description: \"  \"", "description")]
    #[case("name: [a]", "name")]
    #[case("default: 1", "default")]
    fn field_types_are_checked(#[case] line: &str, #[case] path: &str) {
        let e = md(&format!("---\n{line}\n---\nx\n")).unwrap_err();
        assert_eq!(first(&e).0, path, "{e}");
        assert_eq!(first(&e).1, Some(2), "{e}");
    }

    #[rstest]
    #[case(
        "type: evaluator_optimizer\ngenerator: g\nevaluator: e\nmin_rating: great",
        "min_rating"
    )]
    #[case("type: orchestrator\nagents: [a]\nplan_type: partial", "plan_type")]
    #[case("type: MAKER\nworker: w\nmatch_strategy: fuzzy", "match_strategy")]
    #[case("type: MAKER\nworker: w\nk: 0", "k")]
    #[case(
        "type: evaluator_optimizer\ngenerator: g\nevaluator: e\nmax_refinements: -1",
        "max_refinements"
    )]
    fn type_specific_values_are_checked(#[case] fm: &str, #[case] path: &str) {
        let e = md(&format!("---\n{fm}\n---\nx\n")).unwrap_err();
        assert_eq!(first(&e).0, path, "{e}");
    }

    #[test]
    fn schema_version_is_kept() {
        assert_eq!(
            md("---\nschema_version: 2\n---\nx\n")
                .unwrap()
                .schema_version,
            2
        );
    }

    #[test]
    fn instruction_from_one_source_only() {
        let e = md("---\ninstruction: a\n---\nb\n").unwrap_err();
        assert_eq!(first(&e).0, "instruction");
        assert!(first(&e).2.contains("both"));
        let c = md("---\ninstruction: a\n---\n  \n\t\n").unwrap();
        assert_eq!(c.instruction, "a");
        let e = md("---\nname: a\n---\n   \n").unwrap_err();
        assert_eq!(first(&e).0, "instruction");
        let e = AgentCard::from_yaml("name: a\n", None).unwrap_err();
        assert_eq!(first(&e).0, "instruction");
        let e = AgentCard::from_yaml("name: a\ninstruction: \" \"\n", None).unwrap_err();
        assert_eq!(first(&e).0, "instruction");
    }

    #[test]
    fn system_marker_is_stripped() {
        let c = md("---\nname: a\n---\n\n---SYSTEM\nYou are terse.\n").unwrap();
        assert_eq!(c.instruction, "You are terse.");
        // Only a leading marker is one.
        let c = md("---\nname: a\n---\nHi\n---SYSTEM\n").unwrap();
        assert_eq!(c.instruction, "Hi\n---SYSTEM");
        // A marker with nothing after it leaves no instruction.
        assert!(md("---\nname: a\n---\n---SYSTEM\n").is_err());
        // With an attribute, a body holding only the marker is empty.
        assert!(md("---\ninstruction: a\n---\n---SYSTEM\n").is_ok());
    }

    #[rstest]
    #[case("---USER")]
    #[case("---ASSISTANT")]
    #[case("---RESOURCE")]
    fn inline_history_is_refused(#[case] marker: &str) {
        let e = md(&format!(
            "---\nname: a\n---\n---SYSTEM\nBe nice.\n{marker}\nhello\n"
        ))
        .unwrap_err();
        let (path, line, msg) = first(&e);
        assert_eq!((path.as_str(), line), ("instruction", Some(6)));
        assert!(msg.contains(marker));
    }

    #[test]
    fn tool_only_and_default_are_exclusive() {
        let e = md("---\ndefault: true\ntool_only: true\n---\nx\n").unwrap_err();
        assert_eq!(first(&e).0, "tool_only");
        assert!(
            md("---\ndefault: false\ntool_only: true\n---\nx\n")
                .unwrap()
                .tool_only
        );
    }

    #[test]
    fn front_matter_positions_are_file_lines() {
        let e = md("---\nname: a\nservers:\n  - time\n  - [x]\n---\nx\n").unwrap_err();
        assert_eq!(first(&e).0, "servers[1]");
        assert_eq!(first(&e).1, Some(5));
        // YAML syntax errors too.
        let e = md("---\nname: a\nservers: [time\n---\nx\n").unwrap_err();
        assert!(first(&e).1.unwrap() >= 3, "{e}");
        let e = md("---\nname: a\nname: b\n---\nx\n").unwrap_err();
        assert_eq!(first(&e).1, Some(3));
    }

    #[test]
    fn front_matter_must_open_and_close() {
        assert_eq!(first(&md("name: a\n").unwrap_err()).0, "(document)");
        assert!(
            first(&md("---\nname: a\n").unwrap_err())
                .2
                .contains("not closed")
        );
        assert!(
            first(&md("---\n- a\n---\nx\n").unwrap_err())
                .2
                .contains("mapping")
        );
    }

    #[test]
    fn bom_and_crlf_are_tolerated() {
        let c = md("\u{feff}---\r\nname: a\r\n---\r\nLine 1\r\nLine 2\r\n").unwrap();
        assert_eq!(c.name, "a");
        assert_eq!(c.instruction, "Line 1\nLine 2");
        let c = AgentCard::from_yaml("\u{feff}name: a\ninstruction: x\n", None).unwrap();
        assert_eq!(c.name, "a");
    }

    #[test]
    fn null_fields_count_as_absent() {
        let c = md("---\nname: a\nmodel: ~\ndescription:\n---\nx\n").unwrap();
        assert_eq!(c.model(), None);
        assert_eq!(c.description, None);
    }

    #[test]
    fn typed_accessors() {
        let c = md("---\nname: PMO-orchestrator\nservers: [time, github]\nagents: [NY, London]\ntools:\n  time: [get_time]\n  github: [search_*]\nmodel: sonnet\nshell: true\nmessages: ./h.md\n---\nGet reports.\n")
            .unwrap();
        assert_eq!(c.servers(), ["time", "github"]);
        assert_eq!(c.agents(), ["NY", "London"]);
        assert_eq!(c.tools()["github"], ["search_*"]);
        assert_eq!(c.model(), Some("sonnet"));
        assert!(c.shell());
        assert_eq!(c.messages, ["./h.md"]);
        assert!(!c.attributes.contains_key("messages"));
    }

    #[test]
    fn written_back_cards_parse_to_the_same_card() {
        let c = md("---\ntype: router\nname: r\ndescription: routes\nagents: [a, b]\nmessages: [./x.md, ./y.json]\nrequest_params: {maxTokens: 10}\n---\nRoute well.\n").unwrap();
        assert_eq!(md(&c.to_markdown()).unwrap(), c);
        assert_eq!(AgentCard::from_yaml(&c.to_yaml(), None).unwrap(), c);
        // An instruction a body cannot carry goes in the front matter.
        let c = AgentCard::from_yaml("name: a\ninstruction: \"a\\n---USER\\nb\"\n", None).unwrap();
        let text = c.to_markdown();
        assert_eq!(md(&text).unwrap(), c, "{text}");
    }

    #[test]
    fn validate_rechecks_changed_cards() {
        let mut c = md("---\nname: a\n---\nx\n").unwrap();
        assert!(c.validate().is_ok());
        c.default = true;
        c.tool_only = true;
        assert_eq!(first(&c.validate().unwrap_err()).0, "tool_only");
        c.tool_only = false;
        c.attributes.insert("fan_in".into(), json!("x"));
        assert_eq!(first(&c.validate().unwrap_err()).0, "fan_in");
    }

    fn arb_name() -> impl Strategy<Value = String> {
        "[A-Za-z][A-Za-z0-9_ -]{0,20}[A-Za-z0-9]"
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z][a-zA-Z .,:#'\"-]{0,40}",
            "[a-z]{1,8}(\n[a-z ]{0,10}){0,4}",
            "[a-z]{1,4}((\r\n|\r|\n)(---SYSTEM|---USER|---|[a-z ]{0,6})){0,4}",
            "[a-z]\\PC{0,30}",
        ]
        .prop_map(|s| s.trim().to_string())
        .prop_filter("non-empty", |s| !s.is_empty())
    }

    fn arb_card() -> impl Strategy<Value = AgentCard> {
        let ty = prop::sample::select(CardType::ALL.to_vec());
        (
            ty,
            arb_name(),
            1i64..4,
            arb_text(),
            prop::option::of(arb_text()),
            any::<(bool, bool)>(),
            prop::collection::vec("\\./[a-z]{1,8}\\.(md|json|txt)", 0..3),
            any::<u64>(),
        )
            .prop_map(
                |(t, name, sv, instruction, description, (default, tool_only), messages, seed)| {
                    let mut attributes = IndexMap::new();
                    let fields: Vec<&str> = t
                        .specific_fields()
                        .iter()
                        .copied()
                        .filter(|f| *f != "messages")
                        .collect();
                    for (i, f) in fields.iter().enumerate() {
                        let include =
                            t.required_fields().contains(f) || (seed >> (i % 64)) & 1 == 1;
                        if include {
                            attributes.insert(f.to_string(), sample(f));
                        }
                    }
                    AgentCard {
                        card_type: t,
                        name,
                        schema_version: sv,
                        instruction,
                        description,
                        default: default && !tool_only,
                        tool_only,
                        messages: if t.allows("messages") {
                            messages
                        } else {
                            Vec::new()
                        },
                        attributes,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn cards_round_trip_through_markdown_and_yaml(card in arb_card()) {
            prop_assert!(card.validate().is_ok(), "{:?}", card.validate());
            let text = card.to_markdown();
            let back = AgentCard::from_markdown(&text, None)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(&back, &card);
            let text = card.to_yaml();
            let back = AgentCard::from_yaml(&text, None)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(&back, &card);
        }

        #[test]
        fn markdown_parsing_never_panics(text in "(---\n)?[a-z_]{0,8}(: )?[\\PC\n]{0,60}(\n---\n)?[\\PC\n]{0,40}") {
            let _ = AgentCard::from_markdown(&text, Some("x"));
            let _ = AgentCard::from_yaml(&text, None);
        }
    }
}
