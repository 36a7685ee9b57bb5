//! `blueprint.yaml`: a floor — its agents, workstations, furniture and floor manager policies.
//!
//! The format is the OFC reference CLI's, which loads unchanged:
//!
//! ```yaml
//! name: data-analysis
//! description: "…"
//! defaults: {endpoint: http://localhost:11434/v1, model: qwen3:32b}
//! agents:
//!   - {id: "@coder", name: Coder, type: llm, model: …, endpoint: …, prompt: …, activation: mention,
//!      can_use_tools: true, temperature: 0.2, tool_context: summary, furniture: [board]}
//!   - {id: "@claude", type: acp, command: claude-code-acp, args: [], env: {KEY: value}}
//! workstations:
//!   - {type: sandbox, name: py, image: python:3.11, mount: ./workspace:/workspace}
//!   - {type: sandbox, dockerfile: ./Dockerfile}
//!   - {type: filesystem, path: ./workspace}
//! furniture:
//!   - {name: board, type: taskboard}
//!   - {name: search, type: mcp, command: npx, args: [...], config: {...}}
//! ```
//!
//! plus what the OFC spec's "Agent & Blueprint Configuration" adds:
//!
//! - an agent entry may be a string: a hub reference `[host/]publisher/agent[@version]` or a local
//!   file `./x.agent.yaml` (it starts with `./`, `../` or `/` and ends in `.yaml`, `.yml` or
//!   `.md`); or an inline agent mapping as above;
//! - a `floor_manager` block:
//!
//! ```yaml
//! floor_manager:
//!   auto_approve_read: true        # read access is granted without asking
//!   default_agent: "@analyst"      # who answers a message that names nobody
//!   policies:                      # access requests, first match wins
//!     - {access: execute, agents: ["@code"], workstation: sandbox, decision: approve}
//!     - {access: write, decision: ask}
//!     - {access: external, decision: deny}
//! ```
//!
//!   `access` is one of `read`, `write`, `execute`, `external` (outside APIs) and `grant`
//!   (giving access to another agent); `decision` is `approve`, `ask` (ask the user) or `deny`;
//!   `agents` (default: every agent) and `workstation` (default: every workstation or furniture)
//!   narrow the policy. A request no policy matches is approved when it is a read and
//!   `auto_approve_read` is true, and otherwise asked of the user.
//!
//! Rules checked here: unknown fields refused everywhere; inline agent ids unique and not
//! `@user`/`@floor-manager`; the same hub agent or local file not listed twice; `type` `llm`
//! (default) needs a `model` (its own or `defaults.model`), `acp` needs a `command`; `args`
//! needs `command`; `temperature` within 0..=2; `activation` `mention`|`always`; `tool_context`
//! `full`|`summary`|`none`; LLM agents' `memory` 1..=10000 messages (a number, or
//! `{window, summary}`), `context_window`
//! 256..=10000000 tokens, `api_key_env` a variable name (never the key), all three refused on
//! `acp` agents; furniture named by an agent exists; workstation and furniture names
//! unique (a workstation without a `name` is named by its type); endpoints are http(s) URLs.
//! A `switchboard` agent (seed 004: its turns are files in `.switchboard/`) has only `id`,
//! `type`, `role` (the seed's roles) and optionally `team` and `persona`; any other field on
//! it, and those three on other agents, are refused with their path.
//!
//! Workstation types are `sandbox` (a container: `image`, default [`DEFAULT_SANDBOX_IMAGE`];
//! with a `dockerfile` the image is built from it and tagged with `image`; optional `mount`
//! `host:container[:ro|rw]`) and `filesystem` (a directory: `path`). Other types are refused,
//! because the runtime could not provide them; any other MCP server goes in `furniture` with
//! `type: mcp`.
//!
//! `default_agent` (and the `agents` of a policy) must name an inline agent's id. When the
//! blueprint also has hub or local agents, whose ids are only known once they are resolved, the
//! check is left to [`Blueprint::check_resolved`], which the runtime calls with every agent's id.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent_yaml::{
    Activation, check_env, check_http_url, check_temperature, emit, env_map,
    point_at_missing_fields, refuse_lists_for_mappings,
};
use crate::diagnostic::{Diagnostics, FieldPath};
use crate::name::{AgentHandle, Reference};
use crate::source::{self, SourceDoc};

mod switchboard;

/// A parsed blueprint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Blueprint {
    /// Floor name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the floor is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Defaults for inline LLM agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Defaults>,
    /// The agents, in floor order (ties in should-wake polling go to the earlier one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentEntry>,
    /// Workstations (MCP servers the floor provides).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workstations: Vec<Workstation>,
    /// Furniture (task boards, other MCP servers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub furniture: Vec<Furniture>,
    /// Floor manager behaviour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_manager: Option<FloorManager>,
}

/// `defaults`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// OpenAI-compatible endpoint for agents that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Model for agents that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One entry of `agents`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AgentEntry {
    /// An agent from a hub.
    Hub(Reference),
    /// A local `agent.yaml` or AgentCard, relative to the blueprint's directory.
    Local(String),
    /// An agent defined here.
    Inline(InlineAgent),
}

/// How an inline agent is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InlineAgentType {
    /// A built-in LLM agent (OpenAI-compatible chat completions).
    Llm,
    /// A process speaking the Agent Client Protocol.
    Acp,
    /// An agent that takes part through seed 004's Switchboard: its turns are files in
    /// `.switchboard/` (or calls to the Switchboard MCP server).
    Switchboard,
}

/// How much of earlier tool calls an agent sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolContext {
    /// Calls and results in full.
    Full,
    /// A summary line per call.
    Summary,
    /// Nothing.
    None,
}

/// An agent defined in the blueprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineAgent {
    /// Floor handle.
    pub id: AgentHandle,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `llm` (default) or `acp`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<InlineAgentType>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// OpenAI-compatible endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Command (ACP agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Command arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment for the command.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty", with = "env_map")]
    pub env: IndexMap<String, String>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `mention` or `always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// Whether the model may call tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_use_tools: Option<bool>,
    /// Sampling temperature, 0 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// How much tool history the agent sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_context: Option<ToolContext>,
    /// Names of furniture this agent uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub furniture: Vec<String>,
    /// LLM agents: how much of the conversation the model sees — `memory: 20` (the latest 20
    /// floor messages) or `memory: {window: 20, summary: true}` (the latest 20, and a running
    /// summary of the older ones); all that the floor sends when absent. See [`Memory`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    /// LLM agents: the model's context window in tokens (256 to 10000000); the oldest messages
    /// are left out of a prompt that would not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// LLM agents: the environment variable holding the endpoint's API key (sent as a bearer
    /// token; the key itself never appears in a blueprint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Switchboard agents: the seed's role (`lead`, `coder 1`, `coder 2`, `reviewer`,
    /// `tester`, `researcher`, `execution`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<crate::switchboard::Role>,
    /// Switchboard agents: the team it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Switchboard agents: persona text put into every message it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
}

/// An LLM agent's memory: the latest `window` floor messages (1 to 10000) in full and, with
/// `summary`, a running summary of the messages before them, written by the agent's own model.
///
/// Written as a number (`memory: 20`, the window alone) or a mapping
/// (`memory: {window: 20, summary: true}`); it is written back in the shorter form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// How many of the latest floor messages are sent in full.
    pub window: u32,
    /// Whether older messages are kept as a running summary.
    pub summary: bool,
}

impl Memory {
    /// The latest `window` messages, no summary.
    pub fn window(window: u32) -> Self {
        Self {
            window,
            summary: false,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryMap {
    window: u32,
    #[serde(default)]
    summary: bool,
}

impl Serialize for Memory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.summary {
            MemoryMap {
                window: self.window,
                summary: true,
            }
            .serialize(s)
        } else {
            s.serialize_u32(self.window)
        }
    }
}

impl<'de> Deserialize<'de> for Memory {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Memory;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of messages, or a mapping with `window` and `summary`")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Memory, E> {
                u32::try_from(v)
                    .map(Memory::window)
                    .map_err(|_| E::custom("must be between 1 and 10000 messages"))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Memory, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom("must be between 1 and 10000 messages"))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Memory, A::Error> {
                let m = MemoryMap::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Memory {
                    window: m.window,
                    summary: m.summary,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl InlineAgent {
    /// `type`, defaulting to `llm`.
    pub fn agent_type(&self) -> InlineAgentType {
        self.agent_type.unwrap_or(InlineAgentType::Llm)
    }
}

/// Kinds of workstation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkstationType {
    /// A container to run code in.
    Sandbox,
    /// A directory to read and write.
    Filesystem,
}

impl WorkstationType {
    /// The spelling in blueprints.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkstationType::Sandbox => "sandbox",
            WorkstationType::Filesystem => "filesystem",
        }
    }
}

/// A workstation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workstation {
    /// `sandbox` or `filesystem`.
    #[serde(rename = "type")]
    pub workstation_type: WorkstationType,
    /// Name (tools are exposed as `name__tool`); defaults to the type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Sandbox image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Sandbox Dockerfile to build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
    /// Sandbox mount, `host:container[:ro|rw]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    /// Filesystem directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The image of a sandbox that names none (the reference CLI's default).
pub const DEFAULT_SANDBOX_IMAGE: &str = "python:3.11-slim";

impl Workstation {
    /// A sandbox's image: `image`, else [`DEFAULT_SANDBOX_IMAGE`]. With a `dockerfile`, the
    /// tag the built image gets.
    pub fn sandbox_image(&self) -> &str {
        self.image.as_deref().unwrap_or(DEFAULT_SANDBOX_IMAGE)
    }

    /// `name`, or the type when unnamed.
    pub fn effective_name(&self) -> &str {
        self.name
            .as_deref()
            .unwrap_or(self.workstation_type.as_str())
    }
}

/// Kinds of furniture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FurnitureType {
    /// The built-in shared task board.
    Taskboard,
    /// An MCP server started with `command`.
    Mcp,
}

/// A piece of furniture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Furniture {
    /// Name, referenced from agents' `furniture`.
    pub name: String,
    /// `taskboard` or `mcp`.
    #[serde(rename = "type")]
    pub furniture_type: FurnitureType,
    /// MCP server command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// MCP server arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// MCP server reached over streamable HTTP (instead of `command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The access class (`read`, `write`, `execute`) of named tools, overriding what the
    /// furniture says (an ofc extension; MCP tool annotations decide otherwise, `execute`
    /// when a tool has none).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub access: IndexMap<String, Access>,
    /// Free-form configuration passed to the furniture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Map<String, Value>>,
}

/// Kinds of access an agent can ask the floor manager for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Reading files or data.
    Read,
    /// Writing files.
    Write,
    /// Running code.
    Execute,
    /// Calling outside APIs.
    External,
    /// Granting access to another agent.
    Grant,
}

/// What the floor manager does with a matching request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Grant without asking.
    Approve,
    /// Ask the user.
    Ask,
    /// Refuse.
    Deny,
}

/// One access policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessPolicy {
    /// Which kind of access.
    pub access: Access,
    /// Only for these agents (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentHandle>,
    /// Only for this workstation or furniture (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workstation: Option<String>,
    /// What to do.
    pub decision: Decision,
}

/// `floor_manager`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorManager {
    /// Grant read access without asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_approve_read: Option<bool>,
    /// Who answers a message that names nobody.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_agent: Option<AgentHandle>,
    /// Access policies, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<AccessPolicy>,
}

impl FloorManager {
    /// The decision for a request no one has answered yet: the first matching policy, else
    /// `approve` for reads when `auto_approve_read`, else `ask`.
    pub fn decide(&self, access: Access, agent: &AgentHandle, workstation: &str) -> Decision {
        self.decide_why(access, agent, workstation).0
    }

    /// [`FloorManager::decide`], with the index of the policy that decided (`None`: no
    /// policy matched and the default applied).
    pub fn decide_why(
        &self,
        access: Access,
        agent: &AgentHandle,
        workstation: &str,
    ) -> (Decision, Option<usize>) {
        match self.policies.iter().position(|p| {
            p.access == access
                && (p.agents.is_empty() || p.agents.contains(agent))
                && p.workstation.as_deref().is_none_or(|w| w == workstation)
        }) {
            Some(i) => (self.policies[i].decision, Some(i)),
            None if access == Access::Read && self.auto_approve_read == Some(true) => {
                (Decision::Approve, None)
            }
            None => (Decision::Ask, None),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlueprint {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    defaults: Option<Defaults>,
    #[serde(default)]
    agents: Vec<Value>,
    #[serde(default)]
    workstations: Vec<Workstation>,
    #[serde(default)]
    furniture: Vec<Furniture>,
    #[serde(default)]
    floor_manager: Option<FloorManager>,
}

/// Extensions a local agent file may have.
const LOCAL_EXTENSIONS: [&str; 3] = [".yaml", ".yml", ".md"];

fn is_local_path(s: &str) -> bool {
    s.starts_with("./") || s.starts_with("../") || s.starts_with('/')
}

fn has_local_extension(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    LOCAL_EXTENSIONS.iter().any(|e| lower.ends_with(e))
}

impl AgentEntry {
    /// Reads one entry of `agents`.
    pub fn from_value(v: &Value) -> Result<AgentEntry, Diagnostics> {
        let root = FieldPath::root();
        match v {
            Value::String(s) => Self::parse_str(s),
            Value::Object(_) => source::deserialize_value::<InlineAgent>(v)
                .map(AgentEntry::Inline)
                .map_err(point_at_missing_fields),
            other => Err(Diagnostics::one(
                root,
                format!(
                    "an agent is a hub reference, a local file path or a mapping, not {}",
                    match other {
                        Value::Null => "null",
                        Value::Bool(_) => "a boolean",
                        Value::Number(_) => "a number",
                        _ => "a list",
                    }
                ),
            )),
        }
    }

    /// Reads a string entry: a local path or a hub reference.
    pub fn parse_str(s: &str) -> Result<AgentEntry, Diagnostics> {
        let root = FieldPath::root();
        if is_local_path(s) {
            if !has_local_extension(s) || s.ends_with('/') {
                return Err(Diagnostics::one(
                    root,
                    format!(
                        "local agent file `{s}` must end in .yaml, .yml (agent.yaml) or .md (AgentCard)"
                    ),
                ));
            }
            return Ok(AgentEntry::Local(s.to_string()));
        }
        if s.starts_with('@') {
            return Err(Diagnostics::one(
                root,
                format!(
                    "`{s}` is a floor handle, not an agent source: name a hub agent \
                     (`publisher/agent[@version]`), a local file (`./x.agent.yaml`) or define \
                     the agent inline with `id: \"{s}\"`"
                ),
            ));
        }
        Reference::parse(s).map(AgentEntry::Hub).map_err(|e| {
            let hint = if has_local_extension(s) {
                "; a local file path must start with `./`, `../` or `/`"
            } else {
                ""
            };
            Diagnostics::one(
                root,
                format!("not a hub reference (`publisher/agent[@version]`): {e}{hint}"),
            )
        })
    }

    /// The inline agent, when this entry is one.
    pub fn as_inline(&self) -> Option<&InlineAgent> {
        match self {
            AgentEntry::Inline(a) => Some(a),
            _ => None,
        }
    }
}

impl Blueprint {
    /// Parses and validates blueprint text.
    pub fn from_yaml(text: &str) -> Result<Blueprint, Diagnostics> {
        let doc = source::parse_yaml(text)?;
        Self::from_doc(&doc)
    }

    /// Validates an already parsed document (YAML or JSON).
    pub fn from_doc(doc: &SourceDoc) -> Result<Blueprint, Diagnostics> {
        if doc.value.is_null() {
            return Err(Diagnostics::one(
                FieldPath::root(),
                "the blueprint is empty",
            ));
        }
        let shapes = refuse_lists_for_mappings(
            &doc.value,
            &[
                "",
                "defaults",
                "workstations[]",
                "furniture[]",
                "floor_manager",
                "floor_manager.policies[]",
            ],
        );
        if !shapes.is_empty() {
            return Err(doc.locate(shapes));
        }
        let raw: RawBlueprint = doc.deserialize().map_err(point_at_missing_fields)?;
        let mut diags = Diagnostics::default();
        let mut agents = Vec::with_capacity(raw.agents.len());
        for (i, v) in raw.agents.iter().enumerate() {
            match AgentEntry::from_value(v) {
                Ok(a) => agents.push(a),
                Err(d) => diags.extend_under(&FieldPath::root().key("agents").index(i), d),
            }
        }
        if !diags.is_empty() {
            return Err(doc.locate(diags));
        }
        let bp = Blueprint {
            name: raw.name,
            description: raw.description,
            defaults: raw.defaults,
            agents,
            workstations: raw.workstations,
            furniture: raw.furniture,
            floor_manager: raw.floor_manager,
        };
        bp.validate().map_err(|d| doc.locate(d))?;
        Ok(bp)
    }

    /// Checks every rule (for blueprints built or changed in code, e.g. by the floor manager).
    pub fn validate(&self) -> Result<(), Diagnostics> {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        if let Some(defaults) = &self.defaults {
            if let Some(e) = &defaults.endpoint {
                check_http_url(e, &root.key("defaults").key("endpoint"), &mut d);
            }
            if defaults
                .model
                .as_deref()
                .is_some_and(|m| m.trim().is_empty())
            {
                d.push(root.key("defaults").key("model"), "must not be empty");
            }
        }
        let default_model = self
            .defaults
            .as_ref()
            .and_then(|x| x.model.as_ref())
            .is_some();
        let furniture_names: HashMap<&str, usize> = self
            .furniture
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();

        let mut ids: HashMap<&AgentHandle, usize> = HashMap::new();
        let mut hub: HashMap<String, usize> = HashMap::new();
        let mut local: HashMap<&str, usize> = HashMap::new();
        for (i, entry) in self.agents.iter().enumerate() {
            let p = root.key("agents").index(i);
            match entry {
                AgentEntry::Hub(r) => {
                    let key = format!("{}/{}", r.host().unwrap_or(""), r.name());
                    if let Some(prev) = hub.insert(key, i) {
                        d.push(p, format!("`{}` is already agents[{prev}]", r.name()));
                    }
                }
                AgentEntry::Local(path) => {
                    if let Err(e) = AgentEntry::parse_str(path) {
                        d.extend_under(&p, e);
                    } else if let Some(prev) = local.insert(path.as_str(), i) {
                        d.push(p, format!("`{path}` is already agents[{prev}]"));
                    }
                }
                AgentEntry::Inline(a) => {
                    if a.id.is_reserved() {
                        d.push(
                            p.key("id"),
                            format!(
                                "`{}` belongs to the floor and cannot be an agent's id",
                                a.id
                            ),
                        );
                    } else if let Some(prev) = ids.insert(&a.id, i) {
                        d.push(
                            p.key("id"),
                            format!("duplicate agent id `{}` (also agents[{prev}])", a.id),
                        );
                    }
                    check_inline(a, &p, default_model, &furniture_names, &mut d);
                }
            }
        }

        let mut station_names: HashMap<&str, String> = HashMap::new();
        for (i, w) in self.workstations.iter().enumerate() {
            let p = root.key("workstations").index(i);
            check_workstation(w, &p, &mut d);
            let name = w.effective_name();
            if let Some(prev) = station_names.insert(name, format!("workstations[{i}]")) {
                d.push(
                    p.key("name"),
                    format!(
                        "duplicate workstation name `{name}` (also {prev}); give each a `name`"
                    ),
                );
            }
        }
        for (i, f) in self.furniture.iter().enumerate() {
            let p = root.key("furniture").index(i);
            check_station_name(&f.name, &p.key("name"), &mut d);
            if let Some(prev) = station_names.insert(f.name.as_str(), format!("furniture[{i}]")) {
                d.push(
                    p.key("name"),
                    format!("duplicate name `{}` (also {prev})", f.name),
                );
            }
            match f.furniture_type {
                FurnitureType::Mcp if f.command.is_none() && f.url.is_none() => {
                    d.push(
                        p.key("command"),
                        "an `mcp` furniture needs the `command` that starts it or the `url` it is reached at",
                    );
                }
                FurnitureType::Mcp if f.command.is_some() && f.url.is_some() => {
                    d.push(p.key("url"), "give either `command` or `url`, not both");
                }
                FurnitureType::Taskboard if f.command.is_some() || f.url.is_some() => {
                    d.push(
                        p.key(if f.command.is_some() {
                            "command"
                        } else {
                            "url"
                        }),
                        "a `taskboard` is built in: it takes no `command` or `url`",
                    );
                }
                _ => {}
            }
            if let Some(url) = &f.url {
                check_http_url(url, &p.key("url"), &mut d);
            }
            for (tool, access) in &f.access {
                if !matches!(access, Access::Read | Access::Write | Access::Execute) {
                    d.push(
                        p.key("access").key(tool),
                        "a tool's class is `read`, `write` or `execute`",
                    );
                }
            }
            if f.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
                d.push(p.key("command"), "must not be empty");
            }
            if !f.args.is_empty() && f.command.is_none() {
                d.push(p.key("args"), "`args` needs a `command`");
            }
        }

        if let Some(fm) = &self.floor_manager {
            let p = root.key("floor_manager");
            let all_inline = self.agents.iter().all(|a| a.as_inline().is_some());
            if let Some(h) = &fm.default_agent {
                if h.is_reserved() {
                    d.push(
                        p.key("default_agent"),
                        format!("`{h}` cannot be the default agent"),
                    );
                } else if all_inline && !ids.contains_key(h) {
                    d.push(
                        p.key("default_agent"),
                        format!("`{h}` is not one of the blueprint's agents{}", known(&ids)),
                    );
                }
            }
            for (i, pol) in fm.policies.iter().enumerate() {
                let pp = p.key("policies").index(i);
                for (k, h) in pol.agents.iter().enumerate() {
                    if all_inline && !ids.contains_key(h) {
                        d.push(
                            pp.key("agents").index(k),
                            format!("`{h}` is not one of the blueprint's agents{}", known(&ids)),
                        );
                    }
                }
                if let Some(w) = &pol.workstation
                    && !station_names.contains_key(w.as_str())
                {
                    d.push(
                        pp.key("workstation"),
                        format!("no workstation or furniture is named `{w}`"),
                    );
                }
            }
        }
        d.into_result(())
    }

    /// Checks what needs every agent's id, once hub and local agents are resolved: `ids[i]` is
    /// the handle of `agents[i]`. Ids must be unique, and `default_agent` and policy agents must
    /// name one of them.
    pub fn check_resolved(&self, ids: &[AgentHandle]) -> Result<(), Diagnostics> {
        let mut d = Diagnostics::default();
        let root = FieldPath::root();
        if ids.len() != self.agents.len() {
            d.push(
                root.key("agents"),
                format!(
                    "{} agents resolved for {} entries",
                    ids.len(),
                    self.agents.len()
                ),
            );
            return Err(d);
        }
        let mut seen: HashMap<&AgentHandle, usize> = HashMap::new();
        for (i, h) in ids.iter().enumerate() {
            if h.is_reserved() {
                d.push(
                    root.key("agents").index(i),
                    format!("`{h}` belongs to the floor"),
                );
            } else if let Some(prev) = seen.insert(h, i) {
                d.push(
                    root.key("agents").index(i),
                    format!("agent id `{h}` is also the id of agents[{prev}]"),
                );
            }
        }
        if let Some(fm) = &self.floor_manager {
            let p = root.key("floor_manager");
            if let Some(h) = &fm.default_agent
                && !seen.contains_key(h)
            {
                d.push(
                    p.key("default_agent"),
                    format!("`{h}` is not one of the floor's agents{}", known(&seen)),
                );
            }
            for (i, pol) in fm.policies.iter().enumerate() {
                for (k, h) in pol.agents.iter().enumerate() {
                    if !seen.contains_key(h) {
                        d.push(
                            p.key("policies").index(i).key("agents").index(k),
                            format!("`{h}` is not one of the floor's agents"),
                        );
                    }
                }
            }
        }
        d.into_result(())
    }

    /// The blueprint as YAML text (what "save as blueprint" writes).
    pub fn to_yaml(&self) -> String {
        match serde_json::to_value(self) {
            Ok(v) => emit::to_yaml(&v),
            // Every field serializes to JSON; a failure here would be a bug in a Serialize impl.
            Err(e) => format!("# cannot serialize blueprint: {e}\n"),
        }
    }
}

fn known(ids: &HashMap<&AgentHandle, usize>) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let mut v: Vec<(usize, String)> = ids.iter().map(|(h, i)| (*i, h.to_string())).collect();
    v.sort();
    format!(
        " (agents: {})",
        v.into_iter().map(|(_, h)| h).collect::<Vec<_>>().join(", ")
    )
}

fn check_inline(
    a: &InlineAgent,
    p: &FieldPath,
    default_model: bool,
    furniture: &HashMap<&str, usize>,
    d: &mut Diagnostics,
) {
    if switchboard::check(a, p, d) {
        return;
    }
    for (field, value) in [
        ("name", &a.name),
        ("model", &a.model),
        ("command", &a.command),
        ("prompt", &a.prompt),
    ] {
        if value.as_deref().is_some_and(|s| s.trim().is_empty()) {
            d.push(p.key(field), "must not be empty");
        }
    }
    match a.agent_type() {
        InlineAgentType::Llm => {
            if a.model.is_none() && !default_model {
                d.push(
                    p.key("model"),
                    "an llm agent needs a `model` (or set `defaults.model`)",
                );
            }
        }
        InlineAgentType::Acp => {
            if a.command.is_none() {
                d.push(
                    p.key("command"),
                    "an acp agent needs the `command` that starts it",
                );
            }
        }
        // Checked by `switchboard::check`, which returned above.
        InlineAgentType::Switchboard => {}
    }
    if !a.args.is_empty() && a.command.is_none() {
        d.push(p.key("args"), "`args` needs a `command`");
    }
    if let Some(e) = &a.endpoint {
        check_http_url(e, &p.key("endpoint"), d);
    }
    if let Some(t) = a.temperature {
        check_temperature(t, &p.key("temperature"), d);
    }
    if a.memory.is_some_and(|m| !(1..=10_000).contains(&m.window)) {
        d.push(p.key("memory"), "must be between 1 and 10000 messages");
    }
    if a.context_window
        .is_some_and(|c| !(256..=10_000_000).contains(&c))
    {
        d.push(
            p.key("context_window"),
            "must be between 256 and 10000000 tokens",
        );
    }
    if let Some(name) = &a.api_key_env {
        let ok = !name.is_empty()
            && name.len() <= 128
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            d.push(
                p.key("api_key_env"),
                "must name an environment variable (letters, digits and `_`), not hold the key",
            );
        }
    }
    if a.agent_type() == InlineAgentType::Acp {
        for (field, set) in [
            ("memory", a.memory.is_some()),
            ("context_window", a.context_window.is_some()),
            ("api_key_env", a.api_key_env.is_some()),
        ] {
            if set {
                d.push(p.key(field), "applies only to `llm` agents");
            }
        }
    }
    check_env(&a.env, &p.key("env"), d);
    for (k, f) in a.furniture.iter().enumerate() {
        if !furniture.contains_key(f.as_str()) {
            d.push(
                p.key("furniture").index(k),
                format!("no furniture is named `{f}`; add it to the top-level `furniture`"),
            );
        }
    }
}

fn check_station_name(name: &str, p: &FieldPath, d: &mut Diagnostics) {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__");
    if !ok {
        d.push(
            p.clone(),
            "must be 1 to 64 letters, digits, `-` or `_` (tools are named `name__tool`, so no `__`)",
        );
    }
}

fn check_workstation(w: &Workstation, p: &FieldPath, d: &mut Diagnostics) {
    if let Some(n) = &w.name {
        check_station_name(n, &p.key("name"), d);
    }
    let not_for = |field: &str, d: &mut Diagnostics| {
        d.push(
            p.key(field),
            format!(
                "`{field}` does not apply to a {} workstation",
                w.workstation_type.as_str()
            ),
        );
    };
    match w.workstation_type {
        WorkstationType::Sandbox => {
            // As in the reference: no `image` means DEFAULT_SANDBOX_IMAGE; `image` with a
            // `dockerfile` names the image the Dockerfile is built into.
            for (field, v) in [("image", &w.image), ("dockerfile", &w.dockerfile)] {
                if v.as_deref()
                    .is_some_and(|s| s.trim().is_empty() || s.contains(char::is_whitespace))
                {
                    d.push(p.key(field), "must be non-empty and without spaces");
                }
            }
            if w.path.is_some() {
                not_for("path", d);
            }
            if let Some(m) = &w.mount {
                check_mount(m, &p.key("mount"), d);
            }
        }
        WorkstationType::Filesystem => {
            match &w.path {
                None => d.push(p.key("path"), "a filesystem workstation needs a `path`"),
                Some(s) if s.trim().is_empty() => d.push(p.key("path"), "must not be empty"),
                Some(_) => {}
            }
            for (field, v) in [
                ("image", &w.image),
                ("dockerfile", &w.dockerfile),
                ("mount", &w.mount),
            ] {
                if v.is_some() {
                    not_for(field, d);
                }
            }
        }
    }
}

/// `host:container` or `host:container:ro|rw`, the container side an absolute path.
fn check_mount(m: &str, p: &FieldPath, d: &mut Diagnostics) {
    let parts: Vec<&str> = m.split(':').collect();
    let ok = match parts.as_slice() {
        [host, container] => !host.is_empty() && container.starts_with('/'),
        [host, container, mode] => {
            !host.is_empty() && container.starts_with('/') && matches!(*mode, "ro" | "rw")
        }
        _ => false,
    };
    if !ok {
        d.push(
            p.clone(),
            format!("`{m}` is not a mount: expected `host-path:/container/path` (optionally `:ro` or `:rw`)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::{AgentName, VersionSelector};
    use proptest::prelude::*;
    use rstest::rstest;

    fn err(text: &str) -> (String, Option<u32>, String) {
        let e = Blueprint::from_yaml(text).unwrap_err();
        let d = &e.0[0];
        (
            d.path.to_string(),
            d.position.map(|p| p.line),
            d.message.clone(),
        )
    }

    const SEED: &str = r#"name: data-analysis
description: "Data analysis team with analyst and coder"

agents:
  - aioverlords/coder-qwen3       # From hub
  - ./my-analyst.agent.yaml       # Local file
  - id: "@helper"                 # Inline definition
    model: gpt-4o-mini
    prompt: "You help with small tasks"
    activation: mention

workstations:
  - type: sandbox
    image: python:3.11
    mount: ./workspace:/workspace
  - type: filesystem
    path: ./workspace

# Optional: floor-manager behavior
floor_manager:
  auto_approve_read: true         # Don't ask for read access
  default_agent: "@analyst"       # Who responds first
"#;

    #[test]
    fn seed_example_loads() {
        let bp = Blueprint::from_yaml(SEED).unwrap();
        assert_eq!(bp.name.as_deref(), Some("data-analysis"));
        match &bp.agents[0] {
            AgentEntry::Hub(r) => assert_eq!(
                r.name(),
                &AgentName::parse("aioverlords/coder-qwen3").unwrap()
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            bp.agents[1],
            AgentEntry::Local("./my-analyst.agent.yaml".into())
        );
        let helper = bp.agents[2].as_inline().unwrap();
        assert_eq!(helper.id.to_string(), "@helper");
        assert_eq!(helper.activation, Some(Activation::Mention));
        assert_eq!(
            bp.workstations[0].mount.as_deref(),
            Some("./workspace:/workspace")
        );
        assert_eq!(bp.workstations[1].effective_name(), "filesystem");
        let fm = bp.floor_manager.as_ref().unwrap();
        assert_eq!(fm.default_agent.as_ref().unwrap().to_string(), "@analyst");
        // The analyst comes from the local file; once resolved the check passes or fails.
        let ids = |names: &[&str]| {
            names
                .iter()
                .map(|n| AgentHandle::parse(n).unwrap())
                .collect::<Vec<_>>()
        };
        assert!(
            bp.check_resolved(&ids(&["@coder", "@analyst", "@helper"]))
                .is_ok()
        );
        let e = bp
            .check_resolved(&ids(&["@coder", "@analyst2", "@helper"]))
            .unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "floor_manager.default_agent");
        let e = bp
            .check_resolved(&ids(&["@helper", "@analyst", "@helper"]))
            .unwrap_err();
        assert_eq!(e.0[0].path.to_string(), "agents[2]");
    }

    #[test]
    fn hub_references_keep_their_selector() {
        let bp = Blueprint::from_yaml(
            "agents:\n  - acme/coder@^1.2\n  - hub.example.com/acme/viz@2.0.0\n",
        )
        .unwrap();
        let AgentEntry::Hub(r) = &bp.agents[0] else {
            panic!()
        };
        assert!(matches!(r.selector(), VersionSelector::Req(_)));
        let AgentEntry::Hub(r) = &bp.agents[1] else {
            panic!()
        };
        assert_eq!(r.host(), Some("hub.example.com"));
    }

    #[rstest]
    #[case("agents:\n  - acme\n", "agents[0]", "not a hub reference")]
    #[case("agents:\n  - acme/Bad Name\n", "agents[0]", "not a hub reference")]
    #[case("agents:\n  - acme/coder@not-a-version!\n", "agents[0]", "")]
    #[case(
        "agents:\n  - my-analyst.agent.yaml\n",
        "agents[0]",
        "must start with `./`"
    )]
    #[case("agents:\n  - ./analyst.json\n", "agents[0]", "must end in")]
    #[case("agents:\n  - \"@coder\"\n", "agents[0]", "floor handle")]
    #[case("agents:\n  - 3\n", "agents[0]", "not a number")]
    #[case("agents:\n  - id: coder\n    model: m\n", "agents[0].id", "")]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    colour: red\n",
        "agents[0].colour",
        "unknown field"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    activation: sometimes\n",
        "agents[0].activation",
        ""
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    tool_context: partial\n",
        "agents[0].tool_context",
        ""
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    type: http\n",
        "agents[0].type",
        ""
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    temperature: 2.5\n",
        "agents[0].temperature",
        "between 0 and 2"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    temperature: -0.1\n",
        "agents[0].temperature",
        "between 0 and 2"
    )]
    #[case("agents:\n  - id: \"@a\"\n", "agents[0].model", "defaults.model")]
    #[case("agents:\n  - id: \"@a\"\n    type: acp\n", "agents[0].command", "acp")]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    args: [x]\n",
        "agents[0].args",
        "command"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    endpoint: localhost:11434\n",
        "agents[0].endpoint",
        "http"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    env: {1X: y}\n",
        "agents[0].env.1X",
        "environment"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    furniture: [board]\n",
        "agents[0].furniture[0]",
        "board"
    )]
    #[case(
        "agents:\n  - id: \"@user\"\n    model: m\n",
        "agents[0].id",
        "belongs to the floor"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n  - id: \"@A\"\n    model: m\n",
        "agents[1].id",
        "duplicate agent id"
    )]
    #[case("agents:\n  - acme/x\n  - acme/x@1\n", "agents[1]", "already")]
    #[case("agents:\n  - ./a.md\n  - ./a.md\n", "agents[1]", "already")]
    #[case("furniture:\n  - type: taskboard\n", "furniture[0].name", "missing")]
    #[case("agents:\n  - model: m\n", "agents[0].id", "missing")]
    #[case(
        "workstations:\n  - type: kitchen\n",
        "workstations[0].type",
        "unknown variant"
    )]
    #[case(
        "workstations:\n  - type: sandbox\n    image: \" \"\n",
        "workstations[0].image",
        "non-empty"
    )]
    #[case(
        "workstations:\n  - type: sandbox\n    image: a\n    mount: ./w\n",
        "workstations[0].mount",
        "not a mount"
    )]
    #[case(
        "workstations:\n  - type: sandbox\n    image: a\n    mount: ./w:/w:rx\n",
        "workstations[0].mount",
        "not a mount"
    )]
    #[case(
        "workstations:\n  - type: sandbox\n    image: a\n    path: ./w\n",
        "workstations[0].path",
        "does not apply"
    )]
    #[case(
        "workstations:\n  - type: filesystem\n",
        "workstations[0].path",
        "needs a `path`"
    )]
    #[case(
        "workstations:\n  - type: filesystem\n    path: .\n    image: x\n",
        "workstations[0].image",
        "does not apply"
    )]
    #[case(
        "workstations:\n  - type: filesystem\n    path: a\n  - type: filesystem\n    path: b\n",
        "workstations[1].name",
        "duplicate"
    )]
    #[case(
        "workstations:\n  - type: filesystem\n    name: my__fs\n    path: a\n",
        "workstations[0].name",
        "__"
    )]
    #[case(
        "furniture:\n  - name: board\n    type: whiteboard\n",
        "furniture[0].type",
        "unknown variant"
    )]
    #[case(
        "furniture:\n  - name: s\n    type: mcp\n",
        "furniture[0].command",
        "command"
    )]
    #[case(
        "furniture:\n  - name: b\n    type: taskboard\n  - name: b\n    type: taskboard\n",
        "furniture[1].name",
        "duplicate"
    )]
    #[case(
        "furniture:\n  - name: b\n    type: taskboard\n    config: [1]\n",
        "furniture[0].config",
        ""
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\nfloor_manager:\n  default_agent: \"@b\"\n",
        "floor_manager.default_agent",
        "not one of"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\nfloor_manager:\n  default_agent: \"@floor-manager\"\n",
        "floor_manager.default_agent",
        "cannot be"
    )]
    #[case(
        "floor_manager:\n  auto_approve_read: sure\n",
        "floor_manager.auto_approve_read",
        ""
    )]
    #[case(
        "floor_manager:\n  ask_everything: true\n",
        "floor_manager.ask_everything",
        "unknown field"
    )]
    #[case(
        "floor_manager:\n  policies:\n    - access: read\n      decision: maybe\n",
        "floor_manager.policies[0].decision",
        ""
    )]
    #[case(
        "floor_manager:\n  policies:\n    - access: teleport\n      decision: ask\n",
        "floor_manager.policies[0].access",
        ""
    )]
    #[case(
        "floor_manager:\n  policies:\n    - access: write\n      workstation: nowhere\n      decision: ask\n",
        "floor_manager.policies[0].workstation",
        "nowhere"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\nfloor_manager:\n  policies:\n    - access: write\n      agents: [\"@z\"]\n      decision: ask\n",
        "floor_manager.policies[0].agents[0]",
        "not one of"
    )]
    #[case("defaults:\n  endpoint: ftp://x\n", "defaults.endpoint", "http")]
    #[case(
        "defaults:\n  temperature: 1\n",
        "defaults.temperature",
        "unknown field"
    )]
    #[case("agentz: []\n", "agentz", "unknown field")]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    memory: 0\n",
        "agents[0].memory",
        "between"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    memory: {window: 0, summary: true}\n",
        "agents[0].memory",
        "between"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    memory: -3\n",
        "agents[0].memory",
        "between"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    memory: {windw: 3}\n",
        "agents[0].memory.windw",
        "unknown field `windw`"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    memory: lots\n",
        "agents[0].memory",
        "a number of messages, or a mapping"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    context_window: 10\n",
        "agents[0].context_window",
        "between"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    model: m\n    api_key_env: sk-abc123\n",
        "agents[0].api_key_env",
        "environment variable"
    )]
    #[case(
        "agents:\n  - id: \"@a\"\n    type: acp\n    command: c\n    memory: 5\n",
        "agents[0].memory",
        "only to `llm`"
    )]
    #[case("", "(document)", "empty")]
    #[case("- a\n", "(document)", "")]
    fn rules(#[case] text: &str, #[case] path: &str, #[case] message: &str) {
        let (p, _, m) = err(text);
        assert_eq!(p, path, "{m}");
        assert!(m.contains(message), "{m}");
    }

    #[test]
    fn errors_point_at_lines() {
        let (p, line, _) =
            err("name: x\nagents:\n  - id: \"@a\"\n    model: m\n    temperature: 9\n");
        assert_eq!((p.as_str(), line), ("agents[0].temperature", Some(5)));
        let (_, line, _) = err("name: x\nagents:\n  - ok/fine\n  - not a reference\n");
        assert_eq!(line, Some(4));
    }

    /// Every field of the reference CLI's BLUEPRINT.md, in a floor written for this test.
    #[test]
    fn reference_format_with_every_field_loads() {
        let text = r#"
name: ledger-review
description: Two reviewers and a shell
defaults:
  endpoint: http://127.0.0.1:8080/v1
  model: small-model
agents:
  - id: "@auditor"
    name: Auditor
    type: llm
    prompt: |
      You check the ledger. Say [PASS] when you have nothing to add.
    activation: always
    can_use_tools: true
    tool_context: summary
    temperature: 0.3
    model: bigger-model
    endpoint: http://127.0.0.1:8081/v1
  - id: "@shell"
    type: acp
    command: my-acp-agent
    args: ["--quiet"]
    env:
      TOKEN: ${MY_TOKEN}
workstations:
  - type: sandbox
    name: built
    image: ledger-tools:dev
    dockerfile: ./sandbox/Dockerfile
    mount: ./workspace:/workspace
  - type: sandbox
    name: plain
"#;
        let bp = Blueprint::from_yaml(text).unwrap();
        assert_eq!(bp.workstations[0].sandbox_image(), "ledger-tools:dev");
        assert_eq!(
            bp.workstations[0].dockerfile.as_deref(),
            Some("./sandbox/Dockerfile")
        );
        assert_eq!(bp.workstations[1].sandbox_image(), DEFAULT_SANDBOX_IMAGE);
        assert_eq!(bp.workstations[1].image, None);
    }

    #[test]
    fn defaults_model_serves_llm_agents() {
        assert!(Blueprint::from_yaml("defaults: {model: m}\nagents:\n  - id: \"@a\"\n").is_ok());
    }

    #[test]
    fn env_values_may_be_scalars() {
        let bp = Blueprint::from_yaml("agents:\n  - id: \"@a\"\n    type: acp\n    command: x\n    env: {PORT: 8080, DEBUG: true, NAME: n}\n").unwrap();
        let a = bp.agents[0].as_inline().unwrap();
        assert_eq!(a.env["PORT"], "8080");
        assert_eq!(a.env["DEBUG"], "true");
    }

    #[test]
    fn floor_manager_decisions() {
        let bp = Blueprint::from_yaml(
            "agents:\n  - id: \"@code\"\n    model: m\n  - id: \"@data\"\n    model: m\nworkstations:\n  - type: sandbox\n    image: python:3.11\nfloor_manager:\n  auto_approve_read: true\n  default_agent: \"@data\"\n  policies:\n    - access: execute\n      agents: [\"@code\"]\n      workstation: sandbox\n      decision: approve\n    - access: external\n      decision: deny\n",
        )
        .unwrap();
        let fm = bp.floor_manager.unwrap();
        let code = AgentHandle::parse("@code").unwrap();
        let data = AgentHandle::parse("@data").unwrap();
        assert_eq!(
            fm.decide(Access::Execute, &code, "sandbox"),
            Decision::Approve
        );
        assert_eq!(fm.decide(Access::Execute, &data, "sandbox"), Decision::Ask);
        assert_eq!(fm.decide(Access::Read, &data, "sandbox"), Decision::Approve);
        assert_eq!(fm.decide(Access::External, &data, "x"), Decision::Deny);
        assert_eq!(fm.decide(Access::Write, &data, "sandbox"), Decision::Ask);
    }

    #[test]
    fn written_back_blueprints_parse_to_the_same_blueprint() {
        let bp = Blueprint::from_yaml(SEED).unwrap();
        let text = bp.to_yaml();
        assert_eq!(Blueprint::from_yaml(&text).unwrap(), bp, "{text}");
    }

    fn arb_handle() -> impl Strategy<Value = AgentHandle> {
        "[a-z][a-z0-9-]{0,10}".prop_filter_map("reserved", |s| {
            AgentHandle::new(&s).ok().filter(|h| !h.is_reserved())
        })
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9 :#.'\"-]{1,20}",
            "[a-z]{1,5}(\n[a-z ]{0,8}){1,3}\n?",
            "\\PC{1,12}"
        ]
        .prop_filter("non-blank", |s| !s.trim().is_empty())
    }

    fn arb_inline(furniture: Vec<String>) -> impl Strategy<Value = InlineAgent> {
        (
            arb_handle(),
            prop::option::of(arb_text()),
            any::<bool>(),
            prop::option::of("https?://[a-z]{1,8}(:[0-9]{2,4})?/v1"),
            prop::option::of(arb_text()),
            prop::option::of(prop::sample::select(vec![
                Activation::Mention,
                Activation::Always,
            ])),
            prop::option::of(any::<bool>()),
            prop::option::of((0u32..=20).prop_map(|t| f64::from(t) / 10.0)),
            prop::option::of(prop::sample::select(vec![
                ToolContext::Full,
                ToolContext::Summary,
                ToolContext::None,
            ])),
            prop::sample::subsequence(furniture.clone(), 0..=furniture.len()),
            prop::collection::vec("[a-z-]{1,6}", 0..3),
            prop::collection::vec(("[A-Z_][A-Z0-9_]{0,6}", "[ -~]{0,8}"), 0..3),
        )
            .prop_map(
                |(
                    id,
                    name,
                    acp,
                    endpoint,
                    prompt,
                    activation,
                    can_use_tools,
                    temperature,
                    tool_context,
                    furniture,
                    args,
                    env,
                )| {
                    InlineAgent {
                        id,
                        name,
                        agent_type: Some(if acp {
                            InlineAgentType::Acp
                        } else {
                            InlineAgentType::Llm
                        }),
                        model: if acp { None } else { Some("qwen3:32b".into()) },
                        endpoint,
                        command: if acp { Some("agent-acp".into()) } else { None },
                        args: if acp { args } else { Vec::new() },
                        env: env.into_iter().collect(),
                        prompt,
                        activation,
                        can_use_tools,
                        temperature,
                        tool_context,
                        furniture,
                        memory: if acp { None } else { Some(Memory::window(20)) },
                        context_window: if acp { None } else { Some(8192) },
                        api_key_env: if acp {
                            None
                        } else {
                            Some("OPENAI_API_KEY".into())
                        },
                        role: None,
                        team: None,
                        persona: None,
                    }
                },
            )
    }

    fn arb_blueprint() -> impl Strategy<Value = Blueprint> {
        let furniture = prop::collection::btree_set("[a-z][a-z0-9-]{0,6}", 0..3);
        furniture
            .prop_flat_map(|names| {
                let names: Vec<String> = names.into_iter().map(|n| format!("f-{n}")).collect();
                let furniture: Vec<Furniture> = names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| Furniture {
                        name: n.clone(),
                        furniture_type: if i % 2 == 0 {
                            FurnitureType::Taskboard
                        } else {
                            FurnitureType::Mcp
                        },
                        command: (i % 2 == 1).then(|| "npx".to_string()),
                        args: if i % 2 == 1 {
                            vec!["-y".into(), "@mcp/server".into()]
                        } else {
                            Vec::new()
                        },
                        url: None,
                        access: IndexMap::new(),
                        config: (i == 0).then(|| {
                            serde_json::json!({"columns": ["todo", "done"], "limit": 3})
                                .as_object()
                                .cloned()
                                .unwrap_or_default()
                        }),
                    })
                    .collect();
                (
                    prop::option::of(arb_text()),
                    prop::option::of(arb_text()),
                    prop::collection::vec(arb_inline(names), 0..4),
                    prop::collection::vec(
                        prop_oneof![
                            "[a-z][a-z0-9]{1,8}/[a-z][a-z0-9-]{1,8}(@\\^1\\.[0-9]|@2\\.0\\.[0-9])?"
                                .prop_filter_map("valid", |s| Reference::parse(&s)
                                    .ok()
                                    .map(AgentEntry::Hub)),
                            "\\./[a-z]{1,8}\\.agent\\.yaml".prop_map(AgentEntry::Local),
                        ],
                        0..3,
                    ),
                    Just(furniture),
                    any::<(bool, bool)>(),
                )
            })
            .prop_map(
                |(name, description, inline, external, furniture, (sandbox, fs))| {
                    let mut agents: Vec<AgentEntry> = Vec::new();
                    let mut seen = std::collections::HashSet::new();
                    for a in inline {
                        if seen.insert(a.id.clone()) {
                            agents.push(AgentEntry::Inline(a));
                        }
                    }
                    let mut ext_seen = std::collections::HashSet::new();
                    for e in external {
                        let key = match &e {
                            AgentEntry::Hub(r) => r.name().to_string(),
                            AgentEntry::Local(p) => p.clone(),
                            AgentEntry::Inline(_) => unreachable!(),
                        };
                        if ext_seen.insert(key) {
                            agents.push(e);
                        }
                    }
                    let mut workstations = Vec::new();
                    if sandbox {
                        workstations.push(Workstation {
                            workstation_type: WorkstationType::Sandbox,
                            name: Some("py".into()),
                            image: Some("python:3.11".into()),
                            dockerfile: None,
                            mount: Some("./workspace:/workspace".into()),
                            path: None,
                        });
                    }
                    if fs {
                        workstations.push(Workstation {
                            workstation_type: WorkstationType::Filesystem,
                            name: None,
                            image: None,
                            dockerfile: None,
                            mount: None,
                            path: Some("./workspace".into()),
                        });
                    }
                    let first_inline = agents
                        .iter()
                        .find_map(|a| a.as_inline())
                        .map(|a| a.id.clone());
                    let floor_manager = first_inline.map(|h| FloorManager {
                        auto_approve_read: Some(true),
                        default_agent: Some(h.clone()),
                        policies: vec![AccessPolicy {
                            access: Access::Execute,
                            agents: vec![h],
                            workstation: sandbox.then(|| "py".to_string()),
                            decision: Decision::Approve,
                        }],
                    });
                    Blueprint {
                        name,
                        description,
                        defaults: Some(Defaults {
                            endpoint: Some("http://localhost:11434/v1".into()),
                            model: None,
                        }),
                        agents,
                        workstations,
                        furniture,
                        floor_manager,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn blueprints_round_trip(bp in arb_blueprint()) {
            prop_assert!(bp.validate().is_ok(), "{:?}", bp.validate());
            let text = bp.to_yaml();
            let back = Blueprint::from_yaml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(back, bp);
        }

        #[test]
        fn parsing_never_panics(text in "(name|agents|workstations|furniture|floor_manager|  - |id|type|: |\"@a\"|acme/x|\\./a\\.md|\n|[\\PC]){0,40}") {
            let _ = Blueprint::from_yaml(&text);
        }
    }

    #[test]
    fn memory_is_a_window_or_a_window_with_a_summary() {
        let bp = Blueprint::from_yaml(
            "agents:\n  - id: \"@a\"\n    model: m\n    memory: 12\n  - id: \"@b\"\n    model: m\n    memory: {window: 8, summary: true}\n  - id: \"@c\"\n    model: m\n    memory: {window: 5}\n",
        )
        .unwrap();
        let mem: Vec<Option<Memory>> = bp
            .agents
            .iter()
            .map(|a| a.as_inline().unwrap().memory)
            .collect();
        assert_eq!(
            mem,
            [
                Some(Memory::window(12)),
                Some(Memory {
                    window: 8,
                    summary: true
                }),
                Some(Memory::window(5)),
            ]
        );
        // Written back in the shorter form, and read again the same.
        let json = serde_json::to_value(&bp.agents).unwrap();
        assert_eq!(json[0]["memory"], 12);
        assert_eq!(
            json[1]["memory"],
            serde_json::json!({"window": 8, "summary": true})
        );
        assert_eq!(json[2]["memory"], 5);
    }
}
