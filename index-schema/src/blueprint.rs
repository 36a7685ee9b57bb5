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
//! Rules checked here: unknown fields refused everywhere, and each entry takes only the fields
//! of its kind (`blueprint/fields.rs`: an `llm` agent's `command`, `args` or `env`, an `acp`
//! agent's `model`, a sandbox's `path`… are refused; a furniture's `config` and an `acp` agent's
//! `tool_context`, which ofc does not act on, are accepted and named by
//! [`Blueprint::warnings`]); inline agent ids unique and not `@user`/`@floor-manager`; the
//! same hub agent or local file not listed twice; `type` `llm` (default) needs a `model` (its
//! own or `defaults.model`), `acp` needs a `command`; an `mcp` furniture's `args` needs its
//! `command`; `temperature` within 0..=2; `activation` `mention`|`always`; `tool_context`
//! `full`|`summary`|`none`; LLM agents' `memory` 1..=10000 messages (a number, or
//! `{window, summary}`), `context_window` 256..=10000000 tokens, `api_key_env` a variable name
//! (never the key) and not beside `api_key` (the key itself, as the reference CLI takes it:
//! never shown, see [`ApiKey`]); `prompt` or `prompt_file`, not both, a prompt holding `<%` a
//! valid [`template`]; furniture named by an agent exists; workstation and furniture names
//! unique (a workstation without a `name` is named by its type); endpoints are http(s) URLs.
//! A `switchboard` agent (seed 004: its turns are files in `.switchboard/`) has only `id`,
//! `type`, `role` (the seed's roles) and optionally `team` and `persona`; any other field on
//! it, and those three on other agents, are refused with their path.
//!
//! `${VAR}`, `${VAR-default}` and `${VAR:-default}` in any string are expanded before these
//! checks by the loader, through [`vars::expand`] (this crate looks up no variable).
//!
//! Workstation types are `sandbox` (a container: `image`, default [`DEFAULT_SANDBOX_IMAGE`];
//! with a `dockerfile` the image is built from it under a tag of its own, not `image`, as
//! the runtime's sandbox says; optional `mount` `host:container[:ro|rw]`) and `filesystem` (a
//! directory: `path`). Other types are refused,
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
    Activation, check_http_url, emit, env_map, point_at_missing_fields, refuse_lists_for_mappings,
};
use crate::diagnostic::{Diagnostics, FieldPath};
use crate::name::{AgentHandle, Reference};
use crate::source::{self, SourceDoc};

mod api_key;
mod fields;
#[cfg(test)]
mod fields_tests;
mod inline;
mod memory;
mod oauth;
mod switchboard;
pub mod template;
mod thinking;
pub mod vars;

pub use api_key::ApiKey;
pub use memory::Memory;
pub use oauth::{Grant, OAuth};
pub use thinking::Thinking;

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
    /// The reference CLI's runtime knobs (`frontend`, `store`, `web`, …): accepted with a
    /// warning, not acted on yet (ofc takes them as flags and environment variables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
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
    /// API key for agents that give none (never shown, see [`ApiKey`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<ApiKey>,
    /// `thinking` for agents that give none (accepted with a warning; not acted on yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
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
    /// A file holding the system prompt instead of `prompt`: relative to the blueprint's
    /// directory (and inside it), or absolute. The loader reads it into `prompt` (its text is
    /// not `${VAR}`-expanded) and clears this field; see `ofc run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_file: Option<String>,
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
    /// LLM agents: the endpoint's API key itself, as the reference CLI takes it (sent as a
    /// bearer token; empty sends none; never shown, see [`ApiKey`]). `defaults.api_key` when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<ApiKey>,
    /// LLM agents: how the reference CLI separates reasoning from the answer (accepted with a
    /// warning; ofc does not act on it yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// LLM agents: the reference CLI's inline reasoning tag pair (accepted with a warning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tags: Option<[String; 2]>,
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
    /// Headers sent with every request to the MCP server at `url` (e.g. `Authorization: Bearer
    /// ${MCP_TOKEN}`); their values are never logged.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// How ofc obtains a bearer token for the MCP server at `url` (see [`OAuth`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuth>,
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
    #[serde(default)]
    config: Option<Value>,
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
            // The reference CLI replaces such an entry with another file's agent; running the
            // entry without it would be a different agent.
            Value::Object(m) if m.contains_key("ref") => Err(Diagnostics::one(
                root.key("ref"),
                "`ref` (an agent entry read from another YAML file, as the reference CLI \
                 loads it) is not supported by ofc yet; write the agent's fields in the entry, \
                 or use a local agent file (`- ./x.agent.yaml`)",
            )),
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
            config: raw.config,
        };
        bp.validate().map_err(|d| doc.locate(d))?;
        Ok(bp)
    }

    /// Checks every rule (for blueprints built or changed in code, e.g. by the floor manager).
    pub fn validate(&self) -> Result<(), Diagnostics> {
        // First what does not belong to its entry's kind (an llm agent's `command`, …).
        let mut d = self.entry_findings().errors;
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
                    inline::check_inline(a, &p, default_model, &furniture_names, &mut d);
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
                // A taskboard's `command`, `url` or `args`: refused by its field table.
                _ => {}
            }
            if let Some(url) = &f.url {
                check_http_url(url, &p.key("url"), &mut d);
            }
            if !f.headers.is_empty() && f.url.is_none() {
                d.push(
                    p.key("headers"),
                    "`headers` are sent to an MCP server reached by `url`; this furniture has none",
                );
            }
            for (name, value) in &f.headers {
                let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
                if name.is_empty() || !name.chars().all(token) {
                    d.push(p.key("headers").key(name), "not a valid HTTP header name");
                } else if value.chars().any(|c| c.is_control() && c != '\t') {
                    d.push(
                        p.key("headers").key(name),
                        "a header value must not hold control characters (a line break, …)",
                    );
                }
            }
            oauth::check(f, &p, &mut d);
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
            if f.furniture_type == FurnitureType::Mcp && !f.args.is_empty() && f.command.is_none() {
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
    // A field of the other type is refused by the field tables (`fields.rs`).
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
            if let Some(m) = &w.mount {
                check_mount(m, &p.key("mount"), d);
            }
        }
        WorkstationType::Filesystem => match &w.path {
            None => d.push(p.key("path"), "a filesystem workstation needs a `path`"),
            Some(s) if s.trim().is_empty() => d.push(p.key("path"), "must not be empty"),
            Some(_) => {}
        },
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
mod tests;
