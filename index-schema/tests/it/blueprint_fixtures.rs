//! Committed blueprints: the reference CLI format and the OFC spec's example load unchanged and
//! round-trip; the invalid corpus fails naming the expected field.

use std::fs;
use std::path::{Path, PathBuf};

use index_schema::agent_yaml::Activation;
use index_schema::blueprint::{
    Access, AgentEntry, Blueprint, Decision, FurnitureType, InlineAgentType, ToolContext,
    WorkstationType,
};
use index_schema::name::{AgentHandle, VersionSelector};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blueprint")
}

fn load(name: &str) -> Blueprint {
    let text = fs::read_to_string(fixtures().join(name)).unwrap();
    Blueprint::from_yaml(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_fixture_loads_and_round_trips() {
    for entry in fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        let bp = Blueprint::from_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = bp.to_yaml();
        assert_eq!(
            Blueprint::from_yaml(&again).unwrap(),
            bp,
            "{}",
            path.display()
        );
    }
}

#[test]
fn reference_format_fields_are_all_read() {
    let bp = load("reference-format.yaml");
    let defaults = bp.defaults.as_ref().unwrap();
    assert_eq!(defaults.model.as_deref(), Some("qwen3:32b"));
    assert_eq!(
        defaults.endpoint.as_deref(),
        Some("http://localhost:11434/v1")
    );
    let coder = bp.agents[0].as_inline().unwrap();
    assert_eq!(coder.agent_type(), InlineAgentType::Llm);
    assert_eq!(coder.name.as_deref(), Some("Coder"));
    assert_eq!(coder.temperature, Some(0.2));
    assert_eq!(coder.tool_context, Some(ToolContext::Full));
    assert_eq!(coder.can_use_tools, Some(true));
    assert_eq!(coder.activation, Some(Activation::Mention));
    assert_eq!(coder.furniture, ["tasks", "search"]);
    assert!(coder.prompt.as_deref().unwrap().starts_with("You write"));
    let analyst = bp.agents[1].as_inline().unwrap();
    assert_eq!(analyst.agent_type, None);
    assert_eq!(analyst.activation, Some(Activation::Always));
    assert_eq!(analyst.tool_context, Some(ToolContext::Summary));
    let claude = bp.agents[2].as_inline().unwrap();
    assert_eq!(claude.agent_type(), InlineAgentType::Acp);
    assert_eq!(claude.command.as_deref(), Some("claude-code-acp"));
    assert_eq!(claude.args, ["--verbose"]);
    assert_eq!(claude.env["LOG_LEVEL"], "debug");
    assert_eq!(claude.tool_context, Some(ToolContext::None));
    let ws = &bp.workstations;
    assert_eq!(ws[0].workstation_type, WorkstationType::Sandbox);
    assert_eq!(
        ws[1].dockerfile.as_deref(),
        Some("./docker/node.Dockerfile")
    );
    assert_eq!(ws[2].path.as_deref(), Some("./workspace"));
    assert_eq!(bp.furniture[0].furniture_type, FurnitureType::Taskboard);
    assert_eq!(bp.furniture[1].furniture_type, FurnitureType::Mcp);
    assert_eq!(bp.furniture[1].args.len(), 2);
    assert_eq!(bp.furniture[1].config.as_ref().unwrap()["max_results"], 5);
}

#[test]
fn the_seed_example_loads_unchanged() {
    let bp = load("seed-example.yaml");
    assert!(matches!(bp.agents[0], AgentEntry::Hub(_)));
    assert!(matches!(bp.agents[1], AgentEntry::Local(_)));
    assert!(matches!(bp.agents[2], AgentEntry::Inline(_)));
    let fm = bp.floor_manager.as_ref().unwrap();
    assert_eq!(fm.auto_approve_read, Some(true));
    // `@analyst` comes from the local file, known once resolved.
    let ids: Vec<AgentHandle> = ["@coder", "@analyst", "@helper"]
        .iter()
        .map(|h| AgentHandle::parse(h).unwrap())
        .collect();
    bp.check_resolved(&ids).unwrap();
}

#[test]
fn hub_and_local_entries() {
    let bp = load("hub-and-local.yaml");
    let hubs: Vec<_> = bp
        .agents
        .iter()
        .filter_map(|a| match a {
            AgentEntry::Hub(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(hubs.len(), 5);
    assert!(matches!(hubs[1].selector(), VersionSelector::Req(_)));
    assert!(matches!(hubs[2].selector(), VersionSelector::Exact(_)));
    assert_eq!(hubs[3].host(), Some("hub.example.com:8443"));
    assert!(matches!(hubs[4].selector(), VersionSelector::Digest(_)));
    assert_eq!(
        bp.agents
            .iter()
            .filter(|a| matches!(a, AgentEntry::Local(_)))
            .count(),
        3
    );
}

#[test]
fn the_spec_policy_table_as_policies() {
    let bp = load("floor-manager-policies.yaml");
    let fm = bp.floor_manager.unwrap();
    let code = AgentHandle::parse("@code").unwrap();
    let data = AgentHandle::parse("@data").unwrap();
    assert_eq!(fm.decide(Access::Read, &data, "files"), Decision::Approve);
    assert_eq!(fm.decide(Access::Write, &data, "sandbox"), Decision::Ask);
    assert_eq!(
        fm.decide(Access::Execute, &code, "sandbox"),
        Decision::Approve
    );
    assert_eq!(fm.decide(Access::External, &code, "sandbox"), Decision::Ask);
    assert_eq!(fm.decide(Access::Grant, &code, "files"), Decision::Ask);
}

#[test]
fn invalid_corpus_names_the_expected_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/blueprint");
    let mut n = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "expect") {
            continue;
        }
        let expect = fs::read_to_string(format!("{}.expect", path.display())).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let e = Blueprint::from_yaml(&text).expect_err(&path.display().to_string());
        let d = &e.0[0];
        assert_eq!(d.path.to_string(), expect.trim(), "{}: {e}", path.display());
        assert!(d.position.is_some(), "{}: {e}", path.display());
        n += 1;
    }
    assert!(n >= 10);
}
