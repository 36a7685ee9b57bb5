//! The card types and the fields each accepts, as fast-agent's loader has them.

/// Fields every card type accepts.
pub(super) const COMMON_FIELDS: &[&str] = &[
    "type",
    "schema_version",
    "name",
    "instruction",
    "description",
    "default",
    "tool_only",
];

pub(super) const AGENT_FIELDS: &[&str] = &[
    "subagents",
    "subagent_model",
    "harness_tools",
    "agents",
    "servers",
    "tools",
    "resources",
    "prompts",
    "mcp_connect",
    "skills",
    "model",
    "use_history",
    "save_trajectory",
    "request_params",
    "human_input",
    "api_key",
    "history_source",
    "history_merge_target",
    "max_parallel",
    "child_timeout_sec",
    "max_display_instances",
    "function_tools",
    "tool_hooks",
    "lifecycle_hooks",
    "commands",
    "trim_tool_history",
    "tool_input_schema",
    "messages",
    "shell",
    "cwd",
    "variables",
];
pub(super) const CHAIN_FIELDS: &[&str] = &["sequence", "cumulative"];
pub(super) const PARALLEL_FIELDS: &[&str] = &["fan_out", "fan_in", "include_request"];
pub(super) const EVALUATOR_OPTIMIZER_FIELDS: &[&str] = &[
    "generator",
    "evaluator",
    "min_rating",
    "max_refinements",
    "refinement_instruction",
    "messages",
];
pub(super) const ROUTER_FIELDS: &[&str] = &[
    "agents",
    "servers",
    "tools",
    "resources",
    "prompts",
    "model",
    "use_history",
    "save_trajectory",
    "request_params",
    "human_input",
    "api_key",
    "messages",
];
pub(super) const ORCHESTRATOR_FIELDS: &[&str] = &[
    "agents",
    "model",
    "use_history",
    "save_trajectory",
    "request_params",
    "human_input",
    "api_key",
    "plan_type",
    "plan_iterations",
    "messages",
];
pub(super) const ITERATIVE_PLANNER_FIELDS: &[&str] = &[
    "agents",
    "model",
    "request_params",
    "api_key",
    "plan_iterations",
    "messages",
];
pub(super) const MAKER_FIELDS: &[&str] = &[
    "worker",
    "k",
    "max_samples",
    "match_strategy",
    "red_flag_max_length",
    "messages",
];
pub(super) const A2A_FIELDS: &[&str] = &[
    "url",
    "transport",
    "streaming",
    "polling",
    "accepted_output_modes",
    "headers",
    "auth",
    "relative_card_path",
    "request_timeout_seconds",
];

/// Options of agents-as-tools, which fast-agent reads only when an `agent` card has `agents`.
pub(super) const AGENTS_AS_TOOLS_OPTIONS: &[&str] = &[
    "history_source",
    "history_merge_target",
    "max_parallel",
    "child_timeout_sec",
    "max_display_instances",
];

/// Fields for which `null` is a wrong value rather than "absent": fast-agent checks them without
/// a default (`subagents`, `subagent_model`) or with a default that `null` replaces.
pub(super) const NULL_IS_WRONG: &[&str] = &[
    "schema_version",
    "subagents",
    "subagent_model",
    "min_rating",
    "max_refinements",
    "plan_type",
    "plan_iterations",
    "k",
    "max_samples",
    "match_strategy",
];

/// Fields fast-agent knows that no card type accepts any more, with what to write instead.
pub(super) const RETIRED_FIELDS: &[(&str, &str)] = &[(
    "history_mode",
    "use `history_source` and `history_merge_target` (on an `agent` card with `agents`)",
)];

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
    /// `a2a`: a remote agent reached over the A2A protocol at `url`.
    A2a,
}

impl CardType {
    /// Every type, in the RFC's order, then `a2a`.
    pub const ALL: [CardType; 9] = [
        CardType::Agent,
        CardType::Chain,
        CardType::Parallel,
        CardType::EvaluatorOptimizer,
        CardType::Router,
        CardType::Orchestrator,
        CardType::IterativePlanner,
        CardType::Maker,
        CardType::A2a,
    ];

    /// The canonical spelling, as written back.
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
            CardType::A2a => "a2a",
        }
    }

    /// The type named `s`, in any case and with surrounding blanks (`Chain`, ` maker `), as
    /// fast-agent reads it. The retired `smart` type is [`CardType::parse_legacy`]'s business.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().to_lowercase() == s.to_lowercase())
    }

    /// Like [`CardType::parse`], and also the legacy `smart` type, which fast-agent 0.10 still
    /// reads as an `agent` with `subagents` and `harness_tools` on by default. The flag says
    /// whether `s` was `smart`. A blank `s` is `agent`.
    pub fn parse_legacy(s: &str) -> Option<(Self, bool)> {
        // A blank type is the default type, as fast-agent reads it.
        if s.trim().is_empty() {
            return Some((CardType::Agent, false));
        }
        if s.trim().eq_ignore_ascii_case("smart") {
            return Some((CardType::Agent, true));
        }
        Self::parse(s).map(|t| (t, false))
    }

    pub(super) fn specific_fields(self) -> &'static [&'static str] {
        match self {
            CardType::Agent => AGENT_FIELDS,
            CardType::Chain => CHAIN_FIELDS,
            CardType::Parallel => PARALLEL_FIELDS,
            CardType::EvaluatorOptimizer => EVALUATOR_OPTIMIZER_FIELDS,
            CardType::Router => ROUTER_FIELDS,
            CardType::Orchestrator => ORCHESTRATOR_FIELDS,
            CardType::IterativePlanner => ITERATIVE_PLANNER_FIELDS,
            CardType::Maker => MAKER_FIELDS,
            CardType::A2a => A2A_FIELDS,
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
            CardType::A2a => &["url"],
        }
    }

    /// Whether the agent keeps its conversation when the card does not say (`use_history`).
    pub fn default_use_history(self) -> bool {
        !matches!(
            self,
            CardType::Router | CardType::Orchestrator | CardType::IterativePlanner
        )
    }
}

impl std::fmt::Display for CardType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
