//! `ofc run` with an ACP agent, end to end: the real `ofc` binary launches the test agent
//! written with the official ACP SDK (`runtime/examples/acp_test_agent.rs`), prompts it, shows
//! its streamed reply, answers its two permission requests by the blueprint's floor-manager
//! rules (the read allowed, the execute refused), expands `${VAR}` in its `env`, and stops it
//! with the floor (and when `ofc run` is killed).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Ofc;
use crate::common::run::{blueprint, processes_with, tag};
use crate::run_e2e::start_interactive;

/// `target/<profile>/examples/acp_test_agent`, which `cargo test`/`nextest` build with the
/// runtime's tests.
pub(crate) fn acp_test_agent() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/acp_test_agent");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p runtime --examples` (same profile and \
         CARGO_TARGET_DIR as the tests), or run `cargo nextest run --workspace`",
        path.display()
    );
    path
}

/// A copy of the test agent whose file name carries `t`, so that its processes can be found.
pub(crate) fn tagged_agent(dir: &Path, t: &str) -> PathBuf {
    let path = dir.join(format!("acp-{t}"));
    std::fs::copy(acp_test_agent(), &path).unwrap();
    path
}

#[test]
fn an_acp_agent_streams_onto_the_floor_and_the_policies_answer_its_permissions() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("acp");
    let agent = tagged_agent(proj.path(), &t);
    blueprint(
        proj.path(),
        &format!(
            "agents:\n  - id: \"@code\"\n    type: acp\n    command: {:?}\n    env: {{ACP_TEST_GREETING: \"from ${{OFC_E2E_WHO}}\"}}\nfloor_manager:\n  policies:\n    - {{access: read, agents: [\"@code\"], decision: approve}}\n    - {{access: execute, decision: deny}}\n",
            agent.display()
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .env("OFC_E2E_WHO", "the e2e test")
            .args(["--json", "run", "@code? tidy the build"]),
    );
    r.assert_code(0);
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let message = events
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["from"] == "@code")
        .map(|e| &e["message"])
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(
        message["content"],
        "Heard: @user: @code? tidy the build (greeting: from the e2e test). read: allowed, execute: refused."
    );
    assert_eq!(message["tool_calls"][0]["name"], "read notes.txt");
    assert_eq!(message["tool_results"][0], "notes: ship on friday");
    assert_eq!(message["tool_calls"][1]["name"], "rm -rf build");
    assert_eq!(
        message["tool_results"][1],
        "refused: floor_manager.policies[1] denies execute access"
    );
    // The reply was streamed onto the floor before it was stored.
    let deltas = events.iter().filter(|e| e["type"] == "delta").count();
    assert!(deltas >= 2, "no streamed pieces in {}", r.stdout);
    assert!(
        processes_with(&t).is_empty(),
        "the ACP agent outlived the floor"
    );
}

#[test]
fn an_env_variable_that_is_not_set_is_refused_at_its_line() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let agent = acp_test_agent();
    blueprint(
        proj.path(),
        &format!(
            "agents:\n  - id: \"@code\"\n    type: acp\n    command: {:?}\n    env:\n      KEY: ${{OFC_E2E_NOT_SET_ANYWHERE}}\n",
            agent.display()
        ),
    );
    let ofc = Ofc::new(home.path(), "http://127.0.0.1:9");
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .args(["run", "@code? hi"]),
    );
    r.assert_code(1);
    assert!(
        r.stderr.contains("agents[0].env.KEY")
            && r.stderr
                .contains("the environment variable OFC_E2E_NOT_SET_ANYWHERE is not set"),
        "{}",
        r.stderr
    );
}

#[test]
fn sigkill_of_ofc_run_leaves_no_acp_agent_alive() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let t = tag("acpkill");
    let agent = tagged_agent(proj.path(), &t);
    blueprint(
        proj.path(),
        &format!(
            "agents:\n  - {{id: \"@code\", type: acp, command: {:?}}}\n",
            agent.display()
        ),
    );
    let mut child = start_interactive(proj.path(), home.path());
    assert_eq!(processes_with(&t).len(), 1, "the ACP agent runs");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&t).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        processes_with(&t),
        Vec::<u32>::new(),
        "the ACP agent outlived ofc"
    );
}
