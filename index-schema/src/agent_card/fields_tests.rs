//! Each card type takes exactly its fields: a field of another type (or of none) is refused at
//! its path, in Markdown and YAML cards alike; what a valid card says without effect is warned.

use rstest::rstest;

use super::{AgentCard, CardFormat};

fn refused(text: &str, format: CardFormat) -> Vec<(String, Option<u32>, String)> {
    AgentCard::from_text(text, format, Some("card"))
        .expect_err("the card should be refused")
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                d.position.map(|p| p.line),
                d.message.clone(),
            )
        })
        .collect()
}

/// The same front matter as a Markdown card (with a body) and as a YAML card.
fn both(front: &str) -> [(String, CardFormat); 2] {
    [
        (format!("---\n{front}---\nDo it.\n"), CardFormat::Markdown),
        (format!("{front}instruction: Do it.\n"), CardFormat::Yaml),
    ]
}

#[rstest]
#[case(
    "type: agent\nfan_out: [a]\n",
    "fan_out",
    "not allowed for card type `agent` (it belongs to parallel)"
)]
#[case(
    "type: agent\nurl: https://a.example\n",
    "url",
    "not allowed for card type `agent` (it belongs to a2a)"
)]
#[case(
    "type: chain\nsequence: [a]\nmodel: m\n",
    "model",
    "not allowed for card type `chain`"
)]
#[case(
    "type: parallel\nfan_out: [a]\nsequence: [b]\n",
    "sequence",
    "not allowed for card type `parallel` (it belongs to chain)"
)]
#[case(
    "type: evaluator_optimizer\ngenerator: g\nevaluator: e\nagents: [a]\n",
    "agents",
    "not allowed for card type `evaluator_optimizer`"
)]
#[case(
    "type: router\nagents: [a]\nworker: w\n",
    "worker",
    "(it belongs to MAKER)"
)]
#[case(
    "type: orchestrator\nagents: [a]\nservers: [s]\n",
    "servers",
    "not allowed for card type `orchestrator`"
)]
#[case(
    "type: iterative_planner\nagents: [a]\nuse_history: true\n",
    "use_history",
    "not allowed for card type `iterative_planner`"
)]
#[case(
    "type: MAKER\nworker: w\nservers: [s]\n",
    "servers",
    "not allowed for card type `MAKER`"
)]
#[case(
    "type: a2a\nurl: https://a.example\nmodel: m\n",
    "model",
    "not allowed for card type `a2a`"
)]
#[case(
    "type: agent\ncolour: red\n",
    "colour",
    "`colour` is not allowed for card type `agent`"
)]
#[case(
    "type: agent\nhistory_mode: scratch\n",
    "history_mode",
    "no longer supported"
)]
#[case(
    "type: agent\nmcp_connect:\n  - {target: \"https://a.example/mcp\", colour: red}\n",
    "mcp_connect[0].colour",
    ""
)]
#[case(
    "type: agent\nfunction_tools:\n  - {entrypoint: \"t.py:f\", colour: red}\n",
    "function_tools[0].colour",
    ""
)]
fn fields_of_another_type_are_refused_at_their_path(
    #[case] front: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    for (text, format) in both(front) {
        let found = refused(&text, format);
        assert!(
            found
                .iter()
                .any(|(p, line, m)| p == path && line.is_some() && m.contains(message)),
            "{format:?}: expected {path}: …{message}…, got {found:#?}"
        );
    }
}

fn warned(text: &str, format: CardFormat) -> Vec<(String, String)> {
    AgentCard::from_text(text, format, Some("card"))
        .unwrap_or_else(|e| panic!("{e}"))
        .warnings()
        .iter()
        .map(|d| (d.path.to_string(), d.message.clone()))
        .collect()
}

#[rstest]
// The RFC requires an instruction; fast-agent supplies a default one.
#[case(
    "---\ntype: agent\nname: a\n---\n",
    CardFormat::Markdown,
    "instruction",
    "the card has no instruction, which the AgentCard RFC requires: fast-agent gives the agent its default instruction"
)]
#[case(
    "---\nname: a\n---\n\n   \n",
    CardFormat::Markdown,
    "instruction",
    "AgentCard RFC requires"
)]
#[case(
    "type: chain\nsequence: [a]\n",
    CardFormat::Yaml,
    "instruction",
    "default instruction"
)]
#[case(
    "type: agent\ninstruction: x\nmax_parallel: 4\n",
    CardFormat::Yaml,
    "max_parallel",
    "`max_parallel` has no effect without `agents`"
)]
#[case(
    "---\nhistory_source: child\n---\nx\n",
    CardFormat::Markdown,
    "history_source",
    "no effect without `agents`"
)]
#[case(
    "type: agent\ninstruction: x\nagents: []\nchild_timeout_sec: 3\n",
    CardFormat::Yaml,
    "child_timeout_sec",
    "no effect without `agents`"
)]
#[case(
    "type: agent\ninstruction: x\nuse_history: sometimes\n",
    CardFormat::Yaml,
    "use_history",
    "is not true or false, so fast-agent ignores it and keeps the conversation"
)]
#[case(
    "type: router\ninstruction: x\nagents: [a]\nuse_history: 3\n",
    CardFormat::Yaml,
    "use_history",
    "does not keep the conversation (the default of a `router` card)"
)]
fn what_has_no_effect_is_warned(
    #[case] text: &str,
    #[case] format: CardFormat,
    #[case] path: &str,
    #[case] message: &str,
) {
    let found = warned(text, format);
    assert!(
        found.iter().any(|(p, m)| p == path && m.contains(message)),
        "expected {path}: …{message}…, got {found:#?}"
    );
}

#[rstest]
#[case("---\nname: a\n---\nDo it.\n", CardFormat::Markdown)]
#[case(
    "type: agent\ninstruction: x\nagents: [b]\nmax_parallel: 2\nuse_history: false\n",
    CardFormat::Yaml
)]
// An A2A card is a remote agent: its instruction is its own business, not the card's.
#[case("type: a2a\nurl: https://a.example\n", CardFormat::Yaml)]
fn a_card_with_nothing_idle_has_no_warnings(#[case] text: &str, #[case] format: CardFormat) {
    assert_eq!(warned(text, format), []);
}

#[test]
fn a_loaded_card_carries_its_warnings_with_lines() {
    // The card's text as a file named `helper.yaml` holds it (reading files is ofc's part).
    let loaded = AgentCard::load_text(
        std::path::Path::new("helper.yaml"),
        "type: agent\nname: helper\nmax_parallel: 2\n",
        &mut |p| panic!("no history file to read, asked for {}", p.display()),
    )
    .unwrap();
    let found: Vec<(String, Option<u32>)> = loaded
        .warnings
        .iter()
        .map(|d| (d.path.to_string(), d.position.map(|p| p.line)))
        .collect();
    assert_eq!(
        found,
        // No instruction is written anywhere: the warning points at the card's first line.
        [
            ("instruction".to_string(), Some(1)),
            ("max_parallel".to_string(), Some(3))
        ]
    );
}
