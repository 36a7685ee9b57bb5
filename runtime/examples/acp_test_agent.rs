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
//! It says it takes MCP servers over HTTP (`mcpCapabilities.http`). When the prompt's last line
//! is `TOOL <server>__<tool> <json arguments>`, it instead calls that tool on the MCP server of
//! that name `session/new` gave it (with the official MCP SDK, `rmcp`, sending the headers it
//! was given) and answers `tool <server>__<tool>: <result text>` (or `tool error: …`).
//!
//! Run it: `cargo run -p runtime --example acp_test_agent` (it then waits for a client).

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse,
    McpCapabilities, McpServer, McpServerHttp, NewSessionRequest, NewSessionResponse,
    PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, TextContent, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
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

/// Calls `tool` with `arguments` on the MCP server at `server` (streamable HTTP).
async fn call_tool(server: &McpServerHttp, tool: &str, arguments: &str) -> Result<String, String> {
    use rmcp::ServiceExt as _;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
    for h in &server.headers {
        if h.name.eq_ignore_ascii_case("authorization") {
            let token = h.value.strip_prefix("Bearer ").unwrap_or(&h.value);
            config = config.auth_header(token.to_owned());
        }
    }
    let client = ()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", server.url))?;
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = Some(arguments);
    let result = client
        .peer()
        .call_tool(params)
        .await
        .map_err(|e| format!("{e}"));
    let _ = client.cancel().await;
    let result = result?;
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> agent_client_protocol::Result<()> {
    let servers: Arc<Mutex<Vec<McpServerHttp>>> = Arc::default();
    let (given, used) = (servers.clone(), servers);
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
                    InitializeResponse::new(init.protocol_version).agent_capabilities(
                        AgentCapabilities::new()
                            .mcp_capabilities(McpCapabilities::new().http(true)),
                    ),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |new: NewSessionRequest, responder, _cx| {
                *given.lock().unwrap() = new
                    .mcp_servers
                    .into_iter()
                    .filter_map(|m| match m {
                        McpServer::Http(h) => Some(h),
                        _ => None,
                    })
                    .collect();
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
                if let Some(call) = last.strip_prefix("TOOL ") {
                    let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
                    let (name, args) = (name.to_owned(), args.to_owned());
                    let server = name.split_once("__").and_then(|(s, t)| {
                        used.lock()
                            .unwrap()
                            .iter()
                            .find(|m| m.name == s)
                            .cloned()
                            .map(|m| (m, t.to_owned()))
                    });
                    return cx.spawn(async move {
                        let text = match server {
                            None => format!("tool error: no MCP server for {name}"),
                            Some((server, tool)) => match call_tool(&server, &tool, &args).await {
                                Ok(out) => format!("tool {name}: {out}"),
                                Err(e) => format!("tool error: {e}"),
                            },
                        };
                        conn.send_notification(chunk(&session, &text))?;
                        responder.respond(PromptResponse::new(StopReason::EndTurn))
                    });
                }
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
