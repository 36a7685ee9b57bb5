//! The fields each kind of `agent.yaml` takes (see [`crate::entry_fields`]). The kind is how
//! the agent runs: ofc's built-in LLM agent (`model`, no `command` or `source`), a local
//! process (`command`), a packaged agent (`source` pip, npm or docker) or a remote one (`source`
//! remote). The listing fields (`name`, `version`, `tagline`, `capabilities`, …) belong to every
//! kind: `ofc publish` puts them in the manifest.

use super::{AgentSource, AgentYaml};
use crate::diagnostic::{Diagnostics, FieldPath};
use crate::entry_fields::{self, EntryKind, Findings};

/// How an agent runs, which decides the fields it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunsAs {
    Llm,
    Process,
    Packaged,
    Remote,
}

/// What `tools` is, said when it is warned.
const TOOLS_UNUSED: (&str, &str) = (
    "tools",
    "it is published as what the agent needs (`requires.tools`), but `ofc run` grants no tools \
     by it (a blueprint gives furniture and workstations to its inline agents)",
);

/// What `model` is on an agent that does not run on ofc's LLM agent.
const MODEL_UNUSED: (&str, &str) = (
    "model",
    "it is published as the model the agent needs (`requires.model`); ofc does not pass it to \
     the agent, which runs its own",
);

/// The fields every kind takes: the floor handle, activation, and the listing.
macro_rules! with_listing {
    ($($field:literal),* $(,)?) => {
        &[
            "id", "name", "activation", "version", "publisher", "package", "tagline",
            "description", "keywords", "examples", "license", "homepage", "repository",
            "capabilities", $($field),*
        ]
    };
}

/// The kinds of `agent.yaml`.
const KINDS: &[(RunsAs, EntryKind)] = &[
    (
        RunsAs::Llm,
        EntryKind {
            label: "an LLM agent (`model`, run by ofc)",
            fields: with_listing!(
                "model",
                "endpoint",
                "prompt",
                "memory",
                "context_window",
                "temperature",
                "can_use_tools",
            ),
            unused: &[TOOLS_UNUSED],
            hint: "an LLM agent runs inside ofc; to run a program, give its `command`",
        },
    ),
    (
        RunsAs::Process,
        EntryKind {
            label: "a process agent (`command`)",
            fields: with_listing!("command", "args", "env"),
            unused: &[TOOLS_UNUSED, MODEL_UNUSED],
            hint: "a process agent brings its own model and settings (those fields configure \
                   ofc's LLM agent: `model` without `command` or `source`)",
        },
    ),
    (
        RunsAs::Packaged,
        EntryKind {
            label: "a packaged agent (`source` pip, npm or docker)",
            fields: with_listing!("source"),
            unused: &[TOOLS_UNUSED, MODEL_UNUSED],
            hint: "a packaged agent runs from its `source` as published, with its own settings",
        },
    ),
    (
        RunsAs::Remote,
        EntryKind {
            label: "a remote agent (`source` remote)",
            fields: with_listing!("source"),
            unused: &[TOOLS_UNUSED, MODEL_UNUSED],
            hint: "a remote agent runs elsewhere, with its own settings",
        },
    ),
];

impl AgentYaml {
    fn runs_as(&self) -> RunsAs {
        match (&self.source, &self.command) {
            (Some(AgentSource::Remote { .. }), _) => RunsAs::Remote,
            (Some(_), _) => RunsAs::Packaged,
            (None, Some(_)) => RunsAs::Process,
            (None, None) => RunsAs::Llm,
        }
    }

    /// The fields checked against how the agent runs: what is refused, and what is accepted
    /// but not acted on. An agent that says nothing of how it runs is refused here too.
    pub(super) fn entry_findings(&self) -> Findings {
        let mut found = Findings::default();
        let root = FieldPath::root();
        if self.model.is_none() && self.command.is_none() && self.source.is_none() {
            found.errors.push(
                root.key("model"),
                "the agent must say how it runs: `model` (an LLM agent), `command` (a local \
                 process) or `source` (a packaged agent)",
            );
            return found;
        }
        let all: Vec<&EntryKind> = KINDS.iter().map(|(_, k)| k).collect();
        let runs_as = self.runs_as();
        // Every kind has its entry in KINDS.
        if let Some((_, kind)) = KINDS.iter().find(|(k, _)| *k == runs_as) {
            // Every field of an agent.yaml serializes to JSON.
            let value = serde_json::to_value(self).unwrap_or_default();
            entry_fields::check(entry_fields::present(&value), kind, &all, &root, &mut found);
        }
        found
    }

    /// What the file has that ofc accepts but does not act on (`tools`; `model` on an agent
    /// that runs its own), one warning per field. Paths only: a caller holding the parsed
    /// text positions them with [`crate::source::SourceDoc::locate`].
    pub fn warnings(&self) -> Diagnostics {
        self.entry_findings().warnings
    }
}
