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
        c.instruction.as_deref(),
        Some("Given an object, respond only with an estimate of its size.")
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
        c.instruction.as_deref(),
        Some("Given an object, respond only with an estimate of its size.")
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
fn unknown_type_is_refused_with_the_known_ones() {
    let e = md("---\ntype: makers\nworker: w\n---\nx\n").unwrap_err();
    let (path, line, msg) = first(&e);
    assert_eq!((path.as_str(), line), ("type", Some(2)));
    assert!(msg.contains("MAKER") && msg.contains("any case"), "{msg}");
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
fn sample(t: CardType, field: &str) -> Value {
    match field_kind(t, field) {
        Kind::Str | Kind::AnyStr | Kind::Any => json!("x"),
        Kind::Bool => json!(false),
        Kind::Int => json!(2),
        Kind::Number => json!(1.5),
        Kind::StrList(_) => json!(["a"]),
        Kind::Paths => json!([]),
        Kind::FilterMap => json!({"time": ["get_time"]}),
        Kind::Mapping => json!({"before": "hooks.py:f"}),
        Kind::Headers => json!({"X-Team": "blue"}),
        Kind::LifecycleHooks => json!({"on_start": "hooks.py:start"}),
        Kind::FunctionTools => {
            json!(["tools.py:f", {"entrypoint": "tools.py:g", "variant": "code"}])
        }
        Kind::Commands => {
            json!({"deploy": {"description": "Deploy", "handler": "c.py:deploy"}})
        }
        Kind::ToolInputSchema => {
            json!({"type": "object", "properties": {"q": {"type": "string"}}})
        }
        Kind::RequestParams => json!({"maxTokens": 100}),
        Kind::McpConnect => json!([{"target": "uvx mcp-server-fetch"}]),
        Kind::Auth => json!({"oauth": false}),
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
#[case(CardType::A2a)]
fn each_type_accepts_exactly_its_fields(#[case] t: CardType) {
    let mut m = Map::new();
    for f in t.allowed_fields() {
        let v = match f {
            "type" => json!(t.as_str()),
            "default" | "tool_only" => json!(false),
            "schema_version" => json!(1),
            other => sample(t, other),
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
        m2.insert(f.to_string(), sample(t, f));
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
fn history_mode_is_refused_everywhere_and_its_successors_accepted() {
    for fm in [
        "history_mode: fork",
        "type: router\nagents: [a]\nhistory_mode: fork",
    ] {
        let e = md(&format!("---\n{fm}\n---\nx\n")).unwrap_err();
        assert_eq!(first(&e).0, "history_mode");
        assert!(first(&e).2.contains("history_source"), "{e}");
    }
    let c =
        md("---\nagents: [a]\nhistory_source: orchestrator\nhistory_merge_target: none\n---\nx\n")
            .unwrap();
    assert_eq!(c.attribute_str("history_source"), Some("orchestrator"));
}

#[test]
fn agents_as_tools_options_are_read_only_with_agents() {
    // As in fast-agent: without agents to call, the options are not looked at.
    assert!(md("---\nmax_parallel: many\n---\nx\n").is_ok());
    let e = md("---\nagents: [a]\nmax_parallel: many\n---\nx\n").unwrap_err();
    assert_eq!(first(&e).0, "max_parallel");
}

#[rstest]
#[case("Chain", CardType::Chain)]
#[case(" maker ", CardType::Maker)]
#[case("A2A", CardType::A2a)]
#[case("EVALUATOR_OPTIMIZER", CardType::EvaluatorOptimizer)]
fn types_are_read_in_any_case(#[case] written: &str, #[case] t: CardType) {
    assert_eq!(CardType::parse(written), Some(t));
}

#[test]
fn legacy_smart_type_is_an_agent_with_subagents_and_harness_tools() {
    let c = md("---\ntype: smart\n---\nx\n").unwrap();
    assert_eq!(c.card_type, CardType::Agent);
    assert_eq!(c.attributes["subagents"], json!(true));
    assert_eq!(c.attributes["harness_tools"], json!(true));
    let e = md("---\ntype: smart\ntool_only: true\n---\nx\n").unwrap_err();
    assert_eq!(first(&e).0, "harness_tools");
}

#[test]
fn save_trajectory_needs_history_off() {
    let e = md("---\nsave_trajectory: true\n---\nx\n").unwrap_err();
    assert_eq!(first(&e).0, "save_trajectory");
    assert!(md("---\nsave_trajectory: true\nuse_history: false\n---\nx\n").is_ok());
    // A router keeps no history by default.
    assert!(md("---\ntype: router\nagents: [a]\nsave_trajectory: true\n---\nx\n").is_ok());
}

#[test]
fn yaml11_booleans_are_booleans_in_cards() {
    let c = md("---\nshell: yes\nhuman_input: off\n---\nx\n").unwrap();
    assert!(c.shell());
    assert_eq!(c.attributes["human_input"], json!(false));
}

#[test]
fn names_lose_their_blanks() {
    assert_eq!(
        md("---\nname: my helper\n---\nx\n").unwrap().name,
        "my_helper"
    );
}

#[rstest]
#[case("chain", "sequence")]
#[case("parallel", "fan_out")]
#[case("evaluator_optimizer", "generator")]
#[case("router", "agents")]
#[case("orchestrator", "agents")]
#[case("iterative_planner", "agents")]
#[case("MAKER", "worker")]
#[case("a2a", "url")]
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
#[case("schema_version: ~", "schema_version")]
#[case("servers: time", "servers")]
#[case("servers: [time, 3]", "servers[1]")]
#[case("tools: [a]", "tools")]
#[case("tools: {time: get_time}", "tools.time")]
#[case("tools: {time: [1]}", "tools.time[0]")]
#[case("shell: \"yes\"", "shell")]
#[case("cwd: 3", "cwd")]
#[case("request_params: 3", "request_params")]
#[case("request_params: {maxTokens: lots}", "request_params.maxTokens")]
#[case("tool_hooks: [x]", "tool_hooks")]
#[case("messages: {a: b}", "messages")]
#[case("messages: [\"\"]", "messages[0]")]
#[case("description: \"  \"", "description")]
#[case("name: [a]", "name")]
#[case("default: 1", "default")]
#[case("subagents: ~", "subagents")]
#[case("subagent_model: \"\"", "subagent_model")]
#[case("trim_tool_history: sometimes", "trim_tool_history")]
#[case("lifecycle_hooks: {on_message: h.py:f}", "lifecycle_hooks.on_message")]
#[case(
    "function_tools: [{entrypoint: t.py:f, timeout: 3}]",
    "function_tools[0].timeout"
)]
#[case("function_tools: [{variant: code}]", "function_tools[0].entrypoint")]
#[case(
    "function_tools: [{entrypoint: t.py:f, variant: shell}]",
    "function_tools[0].variant"
)]
#[case("tool_input_schema: {type: array}", "tool_input_schema.type")]
#[case(
    "tool_input_schema: {type: object, required: [q]}",
    "tool_input_schema.required[0]"
)]
#[case("commands: {deploy: {description: d}}", "commands.deploy.handler")]
#[case("mcp_connect: uvx x", "mcp_connect")]
#[case("mcp_connect: [uvx x]", "mcp_connect[0]")]
#[case("mcp_connect: [{target: uvx x, port: 1}]", "mcp_connect[0].port")]
#[case(
    "mcp_connect: {docs: {target: uvx x, name: other}}",
    "mcp_connect.docs.name"
)]
#[case(
    "mcp_connect: [{connector_id: connector_gmail, name: g}]",
    "mcp_connect[0].connector_id"
)]
#[case(
    "mcp_connect: [{target: uvx x, protocol_mode: newest}]",
    "mcp_connect[0].protocol_mode"
)]
fn field_types_are_checked(#[case] line: &str, #[case] path: &str) {
    let e = md(&format!("---\n{line}\n---\nx\n")).unwrap_err();
    assert_eq!(first(&e).0, path, "{e}");
    assert_eq!(first(&e).1, Some(2), "{e}");
}

#[rstest]
#[case("type: a2a\nurl: https://a.example\ntransport: grpc", "transport")]
#[case("type: a2a\nurl: https://a.example\nheaders: {X: 1}", "headers.X")]
#[case(
    "type: a2a\nurl: https://a.example\nauth: {persist: disk}",
    "auth.persist"
)]
#[case("type: MAKER\nworker: w\nk: three", "k")]
#[case(
    "type: orchestrator\nagents: [a]\nplan_iterations: ~",
    "plan_iterations"
)]
#[case("type: router\nagents: []", "agents")]
fn type_specific_values_are_checked(#[case] fm: &str, #[case] path: &str) {
    let e = md(&format!("---\n{fm}\n---\nx\n")).unwrap_err();
    assert_eq!(first(&e).0, path, "{e}");
}

#[rstest]
#[case("type: evaluator_optimizer\ngenerator: g\nevaluator: e\nmin_rating: great")]
#[case("type: orchestrator\nagents: [a]\nplan_type: partial")]
#[case("type: MAKER\nworker: w\nmatch_strategy: fuzzy\nk: 0")]
#[case("mcp_connect: [{target: npx}]")]
fn values_fast_agent_takes_as_written_are_accepted(#[case] fm: &str) {
    md(&format!("---\n{fm}\n---\nx\n")).unwrap();
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
    assert_eq!(c.instruction.as_deref(), Some("a"));
    // No instruction at all: fast-agent's default instruction.
    assert_eq!(md("---\nname: a\n---\n   \n").unwrap().instruction, None);
    assert_eq!(
        AgentCard::from_yaml("name: a\n", None).unwrap().instruction,
        None
    );
    let e = AgentCard::from_yaml("name: a\ninstruction: \" \"\n", None).unwrap_err();
    assert_eq!(first(&e).0, "instruction");
}

#[test]
fn system_marker_is_stripped() {
    let c = md("---\nname: a\n---\n\n---SYSTEM\nYou are terse.\n").unwrap();
    assert_eq!(c.instruction.as_deref(), Some("You are terse."));
    // Only a leading marker is one.
    let c = md("---\nname: a\n---\nHi\n---SYSTEM\n").unwrap();
    assert_eq!(c.instruction.as_deref(), Some("Hi\n---SYSTEM"));
    // A marker with nothing after it leaves no instruction (the default one).
    assert_eq!(
        md("---\nname: a\n---\n---SYSTEM\n").unwrap().instruction,
        None
    );
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
    assert_eq!(c.instruction.as_deref(), Some("Line 1\nLine 2"));
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
    "[A-Za-z][A-Za-z0-9_-]{0,20}[A-Za-z0-9]"
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
        prop::option::of(arb_text()),
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
                    let include = t.required_fields().contains(f) || (seed >> (i % 64)) & 1 == 1;
                    if include {
                        attributes.insert(f.to_string(), sample(t, f));
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
