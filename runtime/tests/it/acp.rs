//! ACP agents through the official SDK: the test agent (`runtime/examples/acp_test_agent.rs`,
//! written with the same `agent-client-protocol` crate, agent side) is launched over stdio,
//! prompted, streams its reply, and asks two permissions that the blueprint's floor-manager
//! rules answer — the read allowed, the execute refused. Then it is stopped with the floor.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use index_schema::blueprint::{AgentEntry, Blueprint};
use index_schema::wire::{Activation, Message, RespondRequest, RespondResponse, Timestamp};
use runtime::Handle;
use runtime::agent::{AcpAgent, AcpCommand, Agent, Deltas, Permissions, expand_env};
use runtime::floor::{Floor, FloorAgent, FloorSettings};
use serde_json::json;

/// The test agent, built with the tests (cargo builds a package's examples for `cargo test`).
pub(crate) fn test_agent() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples/acp_test_agent");
    assert!(
        path.is_file(),
        "{} is missing: it is built by `cargo test -p runtime` (or `cargo build -p runtime --examples`)",
        path.display()
    );
    path
}

fn command(manager_yaml: &str) -> AcpCommand {
    let bp = Blueprint::from_yaml(&format!(
        "{manager_yaml}agents:\n  - {{id: \"@code\", type: acp, command: acp_test_agent, env: {{ACP_TEST_GREETING: \"hi ${{WHO}}\"}}, prompt: Keep it short.}}\n"
    ))
    .unwrap_or_else(|e| panic!("{e:?}"));
    let AgentEntry::Inline(a) = &bp.agents[0] else {
        panic!()
    };
    let env = a
        .env
        .iter()
        .map(|(k, v)| {
            let v = expand_env(v, |name| (name == "WHO").then(|| "floor".to_owned())).unwrap();
            (k.clone(), v)
        })
        .collect();
    AcpCommand {
        handle: "@code".into(),
        name: None,
        command: test_agent().display().to_string(),
        args: Vec::new(),
        env,
        working_dir: std::env::temp_dir(),
        prompt: a.prompt.clone(),
        activation: Activation::Mention,
        on_spawn: None,
        stderr_log: None,
        start_deadline: Duration::from_secs(20),
        permissions: Permissions::new(bp.floor_manager.clone(), a.id.clone()),
        mcp_servers: Vec::new(),
    }
}

const READ_ONLY: &str = "floor_manager:\n  policies:\n    - {access: read, agents: [\"@code\"], decision: approve}\n    - {access: execute, decision: deny}\n";

fn request(text: &str) -> RespondRequest {
    RespondRequest {
        floor_id: "f1".into(),
        user_id: None,
        messages: vec![Message::new(
            "m1",
            "@user",
            text,
            Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
        )],
        wake_reason: None,
        initiator: None,
        context: None,
    }
}

#[tokio::test]
async fn an_acp_agent_streams_and_the_grant_rules_answer_its_permission_requests() {
    let agent = AcpAgent::spawn(command(READ_ONLY))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let pgid = agent.pgid().unwrap();
    let (deltas, mut rx) = Deltas::channel();
    let reply = agent
        .respond(&request("@code? tidy the build"), Some(deltas))
        .await
        .unwrap();
    let RespondResponse::Reply(reply) = reply else {
        panic!("{reply:?}")
    };
    // The reply: what it heard, the expanded env value, and what the rules answered.
    assert_eq!(
        reply.content,
        "Heard: @user: @code? tidy the build (greeting: hi floor). read: allowed, execute: refused."
    );
    // It was streamed in pieces.
    let mut pieces = Vec::new();
    while let Ok(p) = rx.try_recv() {
        pieces.push(p);
    }
    assert!(pieces.len() >= 5, "{pieces:?}");
    assert_eq!(pieces.concat(), reply.content);
    // Both tool calls are on the reply: the allowed one with its output, the refused one
    // with the rule that refused it.
    assert_eq!(reply.tool_calls.len(), 2, "{reply:?}");
    assert_eq!(reply.tool_calls[0].name, "read notes.txt");
    assert_eq!(
        reply.tool_calls[0].arguments["title"],
        json!("read notes.txt")
    );
    assert_eq!(reply.tool_results[0], json!("notes: ship on friday"));
    assert_eq!(reply.tool_calls[1].name, "rm -rf build");
    assert_eq!(
        reply.tool_results[1],
        json!("refused: floor_manager.policies[1] denies execute access")
    );
    agent.shutdown().await;
    #[cfg(unix)]
    assert!(
        !runtime::agent::group_alive(pgid),
        "the ACP agent outlived its shutdown"
    );
}

#[tokio::test]
async fn without_a_floor_manager_everything_is_allowed_and_the_floor_keeps_the_reply() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Arc::new(AcpAgent::spawn(command("")).await.unwrap());
    let pgid = agent.pgid().unwrap();
    let floor = Floor::open(
        "f2",
        None,
        vec![FloorAgent::new(Handle::new("code").unwrap(), agent.clone())],
        FloorSettings {
            transcript_dir: Some(dir.path().to_owned()),
            ..FloorSettings::default()
        },
    )
    .unwrap();
    let summary = floor.post_and_wait("@code? first").await.unwrap();
    let stored = summary.messages.last().unwrap().clone();
    assert_eq!(stored.from, "@code");
    assert!(
        stored.content.ends_with("read: allowed, execute: allowed."),
        "{}",
        stored.content
    );
    assert_eq!(stored.tool_results[1], json!("removed build/"));
    // The second turn sends only what it has not seen.
    let summary = floor.post_and_wait("@code? second").await.unwrap();
    let stored = summary.messages.last().unwrap().clone();
    assert!(
        stored.content.starts_with("Heard: @user: @code? second"),
        "{}",
        stored.content
    );
    floor.close().await.unwrap();
    let transcript = std::fs::read_to_string(dir.path().join("f2.jsonl")).unwrap();
    assert!(transcript.contains("rm -rf build"), "{transcript}");
    // Closing the floor stopped the agent.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    #[cfg(unix)]
    while runtime::agent::group_alive(pgid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    #[cfg(unix)]
    assert!(
        !runtime::agent::group_alive(pgid),
        "the ACP agent outlived the floor"
    );
}

#[tokio::test]
async fn an_agent_that_is_not_acp_is_a_clear_start_error() {
    let mut cmd = command("");
    cmd.command = "sh".into();
    cmd.args = vec!["-c".into(), "echo not-an-acp-agent >&2; exit 3".into()];
    cmd.start_deadline = Duration::from_secs(5);
    let err = AcpAgent::spawn(cmd).await.unwrap_err().to_string();
    assert!(
        err.contains("@code") && err.contains("did not start"),
        "{err}"
    );
    assert!(err.contains("not-an-acp-agent"), "{err}");
}
