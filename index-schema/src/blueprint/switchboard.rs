//! `type: switchboard` agents: a floor member whose turns are files in `.switchboard/` (seed
//! 004). Such an entry has `id`, `type`, `role` (one of the seed's roles) and optionally
//! `team` and `persona`; any other field would be ignored by the transport, so it is refused
//! with its path. `role`, `team` and `persona` on other agents are refused likewise.

use super::{InlineAgent, InlineAgentType};
use crate::diagnostic::{Diagnostics, FieldPath};
use crate::switchboard::{MAX_PERSONA_BYTES, Role, check_name};

/// Checks the Switchboard side of an inline agent. Answers whether it is a switchboard agent
/// (whose other checks are then done).
pub(super) fn check(a: &InlineAgent, p: &FieldPath, d: &mut Diagnostics) -> bool {
    // Which fields each kind of agent takes (`role` on an llm agent, `model` on a switchboard
    // one, …) is the field tables' rule (`fields.rs`); here only the values.
    if a.agent_type() != InlineAgentType::Switchboard {
        return false;
    }
    if a.role.is_none() {
        d.push(
            p.key("role"),
            format!(
                "a switchboard agent needs a `role`: one of {}",
                Role::listed()
            ),
        );
    }
    if let Err(e) = check_name(a.id.name()) {
        d.push(p.key("id"), format!("is not a Switchboard agent name: {e}"));
    }
    if let Some(team) = &a.team
        && let Err(e) = check_name(team)
    {
        d.push(p.key("team"), format!("`{team}` {e}"));
    }
    match &a.persona {
        Some(persona) if persona.trim().is_empty() => d.push(p.key("persona"), "must not be empty"),
        Some(persona) if persona.len() > MAX_PERSONA_BYTES => d.push(
            p.key("persona"),
            format!("is longer than {MAX_PERSONA_BYTES} bytes"),
        ),
        _ => {}
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::blueprint::{AgentEntry, Blueprint, InlineAgentType};
    use crate::switchboard::Role;

    fn errors(yaml: &str) -> Vec<(u32, String, String)> {
        Blueprint::from_yaml(yaml)
            .unwrap_err()
            .0
            .into_iter()
            .map(|d| (d.position.unwrap().line, d.path.to_string(), d.message))
            .collect()
    }

    #[test]
    fn a_switchboard_agent_has_an_id_a_role_and_optionally_a_team_and_a_persona() {
        let bp = Blueprint::from_yaml(
            "agents:\n  - {id: \"@lead\", model: m}\n  - id: \"@worker\"\n    type: switchboard\n    role: coder 1\n    team: backend\n    persona: You write tests first.\n",
        )
        .unwrap();
        let AgentEntry::Inline(w) = &bp.agents[1] else {
            panic!()
        };
        assert_eq!(w.agent_type(), InlineAgentType::Switchboard);
        assert_eq!(w.role, Some(Role::Coder1));
        assert_eq!(w.team.as_deref(), Some("backend"));
        let again = Blueprint::from_yaml(&bp.to_yaml()).unwrap();
        assert_eq!(again, bp);
    }

    #[test]
    fn fields_it_does_not_use_are_refused_with_their_path() {
        let e = errors(
            "agents:\n  - id: \"@worker\"\n    type: switchboard\n    role: tester\n    model: m\n    prompt: hi\n",
        );
        assert_eq!(e[0].0, 5);
        assert_eq!(e[0].1, "agents[0].model");
        assert!(
            e[0].2.contains("does not apply to a `switchboard` agent"),
            "{e:?}"
        );
        assert_eq!(e[1].1, "agents[0].prompt");
        let e = errors("agents:\n  - {id: \"@worker\", type: switchboard, role: boss}\n");
        assert_eq!(e[0].1, "agents[0].role", "{e:?}");
        let e = errors("agents:\n  - {id: \"@worker\", type: switchboard}\n");
        assert_eq!(e[0].1, "agents[0].role");
        assert!(e[0].2.contains("coder 1"), "{e:?}");
        let e =
            errors("agents:\n  - {id: \"@worker\", type: switchboard, role: lead, team: ../x}\n");
        assert_eq!(e[0].1, "agents[0].team");
        let e =
            errors("agents:\n  - {id: \"@worker\", type: switchboard, role: lead, colour: red}\n");
        assert_eq!(e[0].1, "agents[0].colour");
        let e = errors("agents:\n  - {id: \"@coder\", model: m, role: lead}\n");
        assert_eq!((e[0].0, e[0].1.as_str()), (2, "agents[0].role"));
        assert!(
            e[0].2.contains("does not apply to an `llm` agent")
                && e[0].2.contains("only to a `switchboard` agent"),
            "{e:?}"
        );
    }
}
