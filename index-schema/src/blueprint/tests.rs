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
    let bp =
        Blueprint::from_yaml("agents:\n  - acme/coder@^1.2\n  - hub.example.com/acme/viz@2.0.0\n")
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
    "agents:\n  - id: \"@a\"\n    type: acp\n    command: c\n    env: {1X: y}\n",
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
    "only to an `llm` agent"
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
    let (p, line, _) = err("name: x\nagents:\n  - id: \"@a\"\n    model: m\n    temperature: 9\n");
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
    // `<%` opens a prompt template and `${` a variable: text with either is not plain text
    // (a lone `<%` is refused as an unclosed template, as it should be).
    .prop_filter("non-blank plain text", |s| {
        !s.trim().is_empty() && !s.contains("<%") && !s.contains("${")
    })
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
                    endpoint: endpoint.filter(|_| !acp),
                    command: if acp { Some("agent-acp".into()) } else { None },
                    args: if acp { args } else { Vec::new() },
                    env: if acp {
                        env.into_iter().collect()
                    } else {
                        IndexMap::new()
                    },
                    prompt,
                    prompt_file: None,
                    activation,
                    can_use_tools,
                    temperature: temperature.filter(|_| !acp),
                    tool_context,
                    furniture,
                    memory: if acp { None } else { Some(Memory::window(20)) },
                    context_window: if acp { None } else { Some(8192) },
                    api_key_env: if acp {
                        None
                    } else {
                        Some("OPENAI_API_KEY".into())
                    },
                    api_key: None,
                    thinking: None,
                    thinking_tags: None,
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
                    headers: IndexMap::new(),
                    oauth: None,
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
                        api_key: None,
                        thinking: None,
                    }),
                    agents,
                    workstations,
                    furniture,
                    floor_manager,
                    config: None,
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

#[test]
fn furniture_headers_go_with_a_url_and_must_be_sendable() {
    let bp = Blueprint::from_yaml(
        "furniture:\n  - name: m\n    type: mcp\n    url: http://127.0.0.1:9/mcp\n    headers: {Authorization: Bearer t0k, X-Team: a}\n",
    )
    .unwrap();
    assert_eq!(bp.furniture[0].headers["X-Team"], "a");
    // Headers for a server ofc starts itself would be ignored: refused.
    let (p, _, m) =
        err("furniture:\n  - name: m\n    type: mcp\n    command: c\n    headers: {X-A: b}\n");
    assert_eq!(p, "furniture[0].headers", "{m}");
    assert!(m.contains("reached by `url`"), "{m}");
    // A taskboard has no headers at all.
    let (p, _, m) = err("furniture:\n  - name: t\n    type: taskboard\n    headers: {A: b}\n");
    assert!(p.starts_with("furniture[0].headers"), "{p}: {m}");
    // A name HTTP cannot carry, a value with a line break.
    let (p, _, m) = err(
        "furniture:\n  - name: m\n    type: mcp\n    url: http://127.0.0.1:9/mcp\n    headers: {\"bad name\": b}\n",
    );
    assert!(p.starts_with("furniture[0].headers"), "{p}");
    assert!(m.contains("header name"), "{m}");
    let (p, _, m) = err(
        "furniture:\n  - name: m\n    type: mcp\n    url: http://127.0.0.1:9/mcp\n    headers: {X-A: \"a\\r\\nX-Evil: 1\"}\n",
    );
    assert!(p.starts_with("furniture[0].headers"), "{p}");
    assert!(m.contains("control characters"), "{m}");
}

#[test]
fn furniture_oauth_goes_with_an_mcp_url_and_a_grant_ofc_knows() {
    let mcp = "furniture:\n  - name: docs\n    type: mcp\n    url: http://127.0.0.1:9/mcp\n";
    let bp = Blueprint::from_yaml(&format!("{mcp}    oauth: {{}}\n")).unwrap();
    let o = bp.furniture[0].oauth.as_ref().unwrap();
    assert_eq!(o.grant, Grant::AuthorizationCode);
    let bp = Blueprint::from_yaml(&format!(
        "{mcp}    oauth: {{grant: client_credentials, client_id: c1, client_secret: s3cr3t-x, scopes: [docs.read, \"a:b\"]}}\n"
    ))
    .unwrap();
    let o = bp.furniture[0].oauth.as_ref().unwrap();
    assert_eq!(o.grant, Grant::ClientCredentials);
    assert_eq!(o.client_secret.as_ref().unwrap().expose(), "s3cr3t-x");
    assert_eq!(o.scopes, ["docs.read", "a:b"]);
    // The secret is never shown, in Debug or serialized.
    assert!(!format!("{bp:?}").contains("s3cr3t-x"));
    assert!(!serde_json::to_string(&bp).unwrap().contains("s3cr3t-x"));
    // The reference's empty grant is the default.
    let bp = Blueprint::from_yaml(&format!("{mcp}    oauth: {{grant: \"\"}}\n")).unwrap();
    assert_eq!(
        bp.furniture[0].oauth.as_ref().unwrap().grant,
        Grant::AuthorizationCode
    );

    // A grant ofc does not know.
    let (p, _, m) = err(&format!("{mcp}    oauth: {{grant: password}}\n"));
    assert!(p.starts_with("furniture[0].oauth"), "{p}: {m}");
    assert!(m.contains("`password` is not a grant"), "{m}");
    // client_credentials without its id or secret.
    let (p, _, m) = err(&format!(
        "{mcp}    oauth: {{grant: client_credentials, client_secret: s}}\n"
    ));
    assert_eq!(p, "furniture[0].oauth.client_id", "{m}");
    assert!(
        m.contains("furniture `docs`") && m.contains("client_credentials"),
        "{m}"
    );
    let (p, _, m) = err(&format!(
        "{mcp}    oauth: {{grant: client_credentials, client_id: c}}\n"
    ));
    assert_eq!(p, "furniture[0].oauth.client_secret", "{m}");
    // No url: a server ofc starts gets no token.
    let (p, _, m) = err(
        "furniture:\n  - name: local\n    type: mcp\n    command: srv\n    oauth: {grant: client_credentials, client_id: c, client_secret: s}\n",
    );
    assert_eq!(p, "furniture[0].oauth", "{m}");
    assert!(
        m.contains("furniture `local`") && m.contains("reached by `url`"),
        "{m}"
    );
    // A taskboard has no oauth.
    let e = Blueprint::from_yaml("furniture:\n  - name: t\n    type: taskboard\n    oauth: {}\n")
        .unwrap_err();
    assert!(
        e.0.iter()
            .any(|d| d.path.to_string().starts_with("furniture[0].oauth")),
        "{e:?}"
    );
    // A field the block does not have, a scope with a space.
    let (p, _, m) = err(&format!("{mcp}    oauth: {{token_url: http://x/t}}\n"));
    assert!(p.starts_with("furniture[0].oauth"), "{p}: {m}");
    let (p, _, m) = err(&format!("{mcp}    oauth: {{scopes: [\"a b\"]}}\n"));
    assert_eq!(p, "furniture[0].oauth.scopes[0]", "{m}");
}
