//! What a valid card says that has no effect, as fast-agent reads it: accepted (fast-agent
//! loads the card), and named in a warning so that it is not ignored silently.

use serde_json::Value;

use super::{AGENTS_AS_TOOLS_OPTIONS, AgentCard, CardType};
use crate::diagnostic::{Diagnostic, Diagnostics, FieldPath, Position};

impl AgentCard {
    /// The card's warnings: no instruction (the AgentCard RFC requires one; fast-agent gives
    /// the agent its default instruction), agents-as-tools options on an `agent` card without
    /// `agents` (fast-agent reads them only when there are agents to call), and a `use_history`
    /// that is not true or false (fast-agent then keeps the type's default). Paths only; a
    /// loaded card's [`super::LoadedCard::warnings`] carry their lines.
    pub fn warnings(&self) -> Diagnostics {
        let mut w = Diagnostics::default();
        let root = FieldPath::root();
        // `a2a` is fast-agent's, not the RFC's: a remote agent, whose instruction is its own.
        // Nothing is written for it, so it is reported at the card's first line.
        if self.instruction.is_none() && self.card_type != CardType::A2a {
            w.0.push(
                Diagnostic::new(
                    root.key("instruction"),
                    "the card has no instruction, which the AgentCard RFC requires: fast-agent \
                     gives the agent its default instruction (write one in the body, or as \
                     `instruction`)",
                )
                .at(Some(Position { line: 1, col: 1 })),
            );
        }
        let has_agents = self
            .attributes
            .get("agents")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if self.card_type == CardType::Agent && !has_agents {
            for option in AGENTS_AS_TOOLS_OPTIONS {
                if self.attributes.contains_key(*option) {
                    w.push(
                        root.key(*option),
                        format!(
                            "`{option}` has no effect without `agents`: fast-agent reads it only \
                             for an agent that calls other agents as tools"
                        ),
                    );
                }
            }
        }
        if let Some(v) = self.attributes.get("use_history")
            && !v.is_boolean()
        {
            w.push(
                root.key("use_history"),
                format!(
                    "is not true or false, so fast-agent ignores it and {} the conversation (the \
                     default of a `{}` card)",
                    if self.card_type.default_use_history() {
                        "keeps"
                    } else {
                        "does not keep"
                    },
                    self.card_type
                ),
            );
        }
        w
    }
}
