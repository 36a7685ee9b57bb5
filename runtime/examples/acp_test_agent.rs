//! A small ACP agent written with the official ACP SDK (`agent-client-protocol`, the agent
//! side), for the tests of ofc's ACP client (`runtime/tests/it/acp.rs`,
//! `tests/tests/it/run_acp_e2e.rs`). Over stdin/stdout it answers `initialize` and
//! `session/new`, and for each `session/prompt`:
//!
//! 1. streams `Heard: <the prompt's last line>` and the value of `$ACP_TEST_GREETING` in
//!    several message chunks;
//! 2. announces a `read` tool call (`read notes.txt`) and asks permission for it, then an
//!    `execute` one (`rm -rf build`) and asks again; each is completed (with output) when
//!    allowed and failed when refused;
//! 3. ends its message with what it was told (`read: allowed, execute: refused`) and the
//!    turn with `end_turn`.
//!
//! Run it: `cargo run -p runtime --example acp_test_agent` (it then waits for a client).

use agent_client_protocol::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse,
    NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Agent, ByteStreams};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn chunk(session: &str, text: &str) -> SessionNotification {
    SessionNotification::new(
        session.to_owned(),
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
            text,
        )))),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> agent_client_protocol::Result<()> {
    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    Agent
        .v1()
        .name("acp-test-agent")
        .on_receive_request(
            async move |init: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(init.protocol_version)
                        .agent_capabilities(AgentCapabilities::new()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_new: NewSessionRequest, responder, _cx| {
                responder.respond(NewSessionResponse::new("test-session".to_owned()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |prompt: PromptRequest, responder, cx| {
                let session = prompt.session_id.to_string();
                let text: String = prompt
                    .prompt
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    })
                    .collect();
                let last = text.trim().lines().last().unwrap_or("").to_owned();
                let greeting = std::env::var("ACP_TEST_GREETING").unwrap_or_default();
                let conn = cx.clone();
                // The turn runs in a task: asking permission waits for the client, which the
                // dispatch loop must stay free to deliver.
                cx.spawn(async move {
                    for piece in ["Heard: ", last.as_str(), " (greeting: ", greeting.as_str(), ")."] {
                        conn.send_notification(chunk(&session, piece))?;
                    }
                    let mut told = Vec::new();
                    for (id, title, kind, output) in [
                        ("t1", "read notes.txt", ToolKind::Read, "notes: ship on friday"),
                        ("t2", "rm -rf build", ToolKind::Execute, "removed build/"),
                    ] {
                        conn.send_notification(SessionNotification::new(
                            session.clone(),
                            SessionUpdate::ToolCall(
                                ToolCall::new(id, title)
                                    .kind(kind)
                                    .status(ToolCallStatus::Pending)
                                    .raw_input(serde_json::json!({"title": title})),
                            ),
                        ))?;
                        let ask = RequestPermissionRequest::new(
                            session.clone(),
                            ToolCallUpdate::new(
                                id,
                                ToolCallUpdateFields::new().title(title.to_owned()).kind(kind),
                            ),
                            vec![
                                PermissionOption::new("allow", "Allow once", PermissionOptionKind::AllowOnce),
                                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                            ],
                        );
                        let answer = conn.send_request(ask).block_task().await?;
                        let allowed = matches!(
                            &answer.outcome,
                            RequestPermissionOutcome::Selected(s) if s.option_id.to_string() == "allow"
                        );
                        let fields = if allowed {
                            ToolCallUpdateFields::new()
                                .status(ToolCallStatus::Completed)
                                .content(vec![ToolCallContent::from(output.to_owned())])
                        } else {
                            ToolCallUpdateFields::new().status(ToolCallStatus::Failed)
                        };
                        conn.send_notification(SessionNotification::new(
                            session.clone(),
                            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields)),
                        ))?;
                        let kind_name = if kind == ToolKind::Read { "read" } else { "execute" };
                        told.push(format!(
                            "{kind_name}: {}",
                            if allowed { "allowed" } else { "refused" }
                        ));
                    }
                    conn.send_notification(chunk(&session, &format!(" {}.", told.join(", "))))?;
                    responder.respond(PromptResponse::new(StopReason::EndTurn))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport)
        .await
}
