//! The fields each kind of blueprint entry takes (see [`crate::entry_fields`]): inline agents
//! by `type`, workstations by `type`, furniture by `type`. A new kind is one entry in its table.

use serde::Serialize;

use super::{AgentEntry, Blueprint, FurnitureType, InlineAgentType, WorkstationType};
use crate::diagnostic::FieldPath;
use crate::entry_fields::{self, EntryKind, Findings};

/// Why a field the reference CLI defines is accepted without effect.
const NOT_YET: &str = "accepted from the reference CLI; ofc does not act on it yet";

/// The kinds of inline agent, by `type`.
const INLINE_AGENTS: &[(InlineAgentType, EntryKind)] = &[
    (
        InlineAgentType::Llm,
        EntryKind {
            label: "an `llm` agent (the default type)",
            fields: &[
                "id",
                "name",
                "type",
                "model",
                "endpoint",
                "api_key_env",
                "api_key",
                "prompt",
                "prompt_file",
                "activation",
                "can_use_tools",
                "temperature",
                "tool_context",
                "furniture",
                "memory",
                "context_window",
            ],
            unused: &[
                (
                    "env",
                    "an `llm` agent runs inside ofc, so there is no program to give an \
                     environment (the reference CLI ignores it too)",
                ),
                ("thinking", NOT_YET),
                ("thinking_tags", NOT_YET),
            ],
            hint: "to run a program, use a local agent file (`./x.agent.yaml` with `command`), \
                   or `type: acp`",
        },
    ),
    (
        InlineAgentType::Acp,
        EntryKind {
            label: "an `acp` agent",
            fields: &[
                "id",
                "name",
                "type",
                "command",
                "args",
                "env",
                "prompt",
                "prompt_file",
                "activation",
                "can_use_tools",
                "furniture",
            ],
            unused: &[
                (
                    "tool_context",
                    "ofc sends an ACP agent the floor's messages without other agents' tool \
                     calls (the reference CLI adds them as `tool_context` says)",
                ),
                (
                    "api_key",
                    "an ACP agent brings its own model and key (give it through `env`)",
                ),
            ],
            hint: "an ACP agent is a program that brings its own model and settings",
        },
    ),
    (
        InlineAgentType::Switchboard,
        EntryKind {
            label: "a `switchboard` agent",
            fields: &["id", "type", "role", "team", "persona"],
            unused: &[],
            hint: "a switchboard agent's turns are files in `.switchboard/` (seed 004): it \
                   brings its own model and program",
        },
    ),
];

/// The kinds of workstation, by `type`.
const WORKSTATIONS: &[(WorkstationType, EntryKind)] = &[
    (
        WorkstationType::Sandbox,
        EntryKind {
            label: "a `sandbox` workstation",
            fields: &["type", "name", "image", "dockerfile", "mount"],
            unused: &[],
            hint: "",
        },
    ),
    (
        WorkstationType::Filesystem,
        EntryKind {
            label: "a `filesystem` workstation",
            fields: &["type", "name", "path"],
            unused: &[],
            hint: "",
        },
    ),
];

/// What ofc does with a furniture's `config`.
const CONFIG_UNUSED: (&str, &str) = (
    "config",
    "the furniture starts without it (the reference CLI hands it to the furniture's type)",
);

/// The kinds of furniture, by `type`.
const FURNITURE: &[(FurnitureType, EntryKind)] = &[
    (
        FurnitureType::Taskboard,
        EntryKind {
            label: "a `taskboard`",
            fields: &["name", "type", "access"],
            unused: &[CONFIG_UNUSED],
            hint: "a `taskboard` is built in; an MCP server is furniture of `type: mcp`",
        },
    ),
    (
        FurnitureType::Mcp,
        EntryKind {
            label: "an `mcp` furniture",
            fields: &[
                "name", "type", "command", "args", "url", "headers", "oauth", "access",
            ],
            unused: &[CONFIG_UNUSED],
            hint: "",
        },
    ),
];

/// Checks the fields of every kind of entry of a group (`agents`, …): `entries` are each
/// entry's index, kind and serialized form.
fn check_group<'a, K: PartialEq + std::fmt::Debug + 'a>(
    table: &[(K, EntryKind)],
    group: &str,
    entries: impl Iterator<Item = (usize, K, serde_json::Value)>,
    found: &mut Findings,
) {
    let all: Vec<&EntryKind> = table.iter().map(|(_, k)| k).collect();
    for (i, kind, value) in entries {
        let path = FieldPath::root().key(group).index(i);
        match table.iter().find(|(k, _)| *k == kind) {
            Some((_, entry)) => {
                entry_fields::check(entry_fields::present(&value), entry, &all, &path, found);
            }
            // A kind added to the type but not to its table: said, never skipped.
            None => found.errors.push(
                path.key("type"),
                format!("ofc has no field table for `{kind:?}` (a bug in ofc)"),
            ),
        }
    }
}

fn serialized<T: Serialize>(v: &T) -> serde_json::Value {
    // Every blueprint type serializes to JSON (see `Blueprint::to_yaml`).
    serde_json::to_value(v).unwrap_or_default()
}

impl Blueprint {
    /// The fields of every entry checked against its kind: what is refused, and what is
    /// accepted but not acted on.
    pub(super) fn entry_findings(&self) -> Findings {
        let mut found = Findings::default();
        check_group(
            INLINE_AGENTS,
            "agents",
            self.agents
                .iter()
                .enumerate()
                .filter_map(|(i, a)| a.as_inline().map(|a| (i, a.agent_type(), serialized(a)))),
            &mut found,
        );
        check_group(
            WORKSTATIONS,
            "workstations",
            self.workstations
                .iter()
                .enumerate()
                .map(|(i, w)| (i, w.workstation_type, serialized(w))),
            &mut found,
        );
        check_group(
            FURNITURE,
            "furniture",
            self.furniture
                .iter()
                .enumerate()
                .map(|(i, f)| (i, f.furniture_type, serialized(f))),
            &mut found,
        );
        found
    }

    /// What the blueprint has that ofc accepts but does not act on (a furniture's `config`, an
    /// ACP agent's `tool_context`, `defaults` without an inline LLM agent), one warning per
    /// field. Paths only; a caller holding the
    /// parsed text positions them with [`crate::source::SourceDoc::locate`].
    pub fn warnings(&self) -> crate::Diagnostics {
        let mut warnings = self.entry_findings().warnings;
        // `defaults` serve inline LLM agents only: hub and local agents bring their own model.
        let served = self
            .agents
            .iter()
            .filter_map(AgentEntry::as_inline)
            .any(|a| a.agent_type() == InlineAgentType::Llm);
        if self.defaults.as_ref().is_some_and(|d| d.thinking.is_some()) {
            warnings.push(
                FieldPath::root().key("defaults").key("thinking"),
                format!("`thinking` is accepted but not used by ofc: {NOT_YET}"),
            );
        }
        if self.config.is_some() {
            warnings.push(
                FieldPath::root().key("config"),
                format!(
                    "`config` is accepted but not used by ofc: {NOT_YET} (ofc takes these \
                     settings as flags and environment variables: `ofc run --help`)"
                ),
            );
        }
        if let Some(d) = self.defaults.as_ref().filter(|_| !served) {
            for (field, set) in [("endpoint", &d.endpoint), ("model", &d.model)] {
                if set.is_some() {
                    warnings.push(
                        FieldPath::root().key("defaults").key(field),
                        format!(
                            "`{field}` is accepted but not used by ofc: defaults serve inline \
                             `llm` agents, and this blueprint has none"
                        ),
                    );
                }
            }
        }
        warnings
    }
}
