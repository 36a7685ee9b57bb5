//! Agents speaking the Agent Client Protocol (`type: acp`), through the official Rust SDK
//! (`agent-client-protocol`, protocol v1): ofc is the ACP client.
//!
//! The command is started (in its own process group, reported to the supervisor, its stderr
//! appended to the agents' log) and spoken to over its stdin/stdout: `initialize`, then one
//! `session/new` for the floor. Each time the floor wakes the agent, the floor messages it has
//! not seen yet go in one `session/prompt` (the first one opens with the agent's `prompt` and
//! who it is on the floor); the agent's `session/update`s stream out — message chunks as the
//! reply's deltas, tool calls and their results into the reply's `tool_calls` and
//! `tool_results` — until the prompt's response ends the turn.
//!
//! A `session/request_permission` is answered by the floor's rules ([`Permissions`]): the tool
//! call's kind gives the access it needs (`read`/`search`/`think` read, `edit`/`delete`/`move`
//! write, `fetch` external, `execute` and anything else execute), which the blueprint's
//! `floor_manager` decides for the agent like any other access (policies, first match wins;
//! `auto_approve_read`); `approve` selects the agent's "allow once" option, anything else its
//! "reject once" option (nobody can be asked during a turn), and the decision is recorded as the
//! tool call's result. Without a `floor_manager` everything is approved, as in the reference.
//!
//! `ofc run` builds the command (`plan::acp_agent` in `ofc-pkg`): the program looked up, `env`
//! expanded from ofc's environment (`${VAR}`; an unset variable is an error at its `env.KEY`
//! line, where the reference expands it to empty). `initialize` and `session/new` must answer
//! within 30 s, else the start fails with the agent's stderr tail. `shutdown` closes the
//! session's pipe, then SIGTERM and SIGKILL go to the process group.
//!
//! **Furniture**: when the floor has furniture, `ofc run` serves the floor's MCP endpoints on
//! 127.0.0.1 ([`crate::furniture::McpEndpoints`]), issues each ACP agent a bearer token, and
//! passes the pieces it holds a grant on in `session/new`'s `mcpServers` as `http` servers with
//! `Authorization: Bearer …` ([`AcpCommand::mcp_servers`]; the token is never printed). The
//! endpoints' guard is the LLM agents': `tools/list` shows what the agent holds, a call outside
//! its grants is a tool error saying why. An agent that does not announce `mcpCapabilities.http`
//! starts without them, and its log says so (the reference falls back to SSE; ofc serves no SSE
//! MCP). Not done: the client `fs`/`terminal` capabilities, `session/cancel` when the floor's
//! deadline passes.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, HttpHeader, InitializeRequest, McpServer, McpServerHttp, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, TextContent, ToolCallContent, ToolCallStatus, ToolKind,
};
use agent_client_protocol::{ByteStreams, Client};
use async_trait::async_trait;
use index_schema::blueprint::{Access, Decision, FloorManager};
use index_schema::name::AgentHandle;
use index_schema::wire::{
    Activation, AgentInfo, AgentReply, RespondRequest, RespondResponse, ShouldWakeRequest,
    ShouldWakeResponse, ToolCall,
};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::{Agent, AgentError, Deltas, SpawnHook};

/// How an ACP agent's tool permission requests are answered: the blueprint's `floor_manager`
/// (none: everything is approved).
#[derive(Debug, Clone)]
pub struct Permissions {
    manager: Option<FloorManager>,
    agent: AgentHandle,
}

impl Permissions {
    /// The rules of `manager` for `agent`.
    pub fn new(manager: Option<FloorManager>, agent: AgentHandle) -> Self {
        Self { manager, agent }
    }

    /// The access a tool call of `kind` needs.
    pub fn access_of(kind: Option<ToolKind>) -> Access {
        match kind {
            Some(ToolKind::Read | ToolKind::Search | ToolKind::Think) => Access::Read,
            Some(ToolKind::Edit | ToolKind::Delete | ToolKind::Move) => Access::Write,
            Some(ToolKind::Fetch) => Access::External,
            _ => Access::Execute,
        }
    }

    /// `Ok` when `access` is approved for the agent, else why not. The agent's own tools are
    /// not floor workstations: only policies without a `workstation` apply to them.
    pub fn decide(&self, access: Access) -> Result<(), String> {
        let Some(manager) = &self.manager else {
            return Ok(());
        };
        let own = format!("@{} (own tools)", self.agent.name());
        let what = serde_json::to_value(access)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("{access:?}"));
        match manager.decide_why(access, &self.agent, &own) {
            (Decision::Approve, _) => Ok(()),
            (Decision::Deny, Some(i)) => {
                Err(format!("floor_manager.policies[{i}] denies {what} access"))
            }
            (Decision::Deny, None) => Err(format!("{what} access is denied")),
            (Decision::Ask, Some(i)) => Err(format!(
                "floor_manager.policies[{i}] wants the user asked for {what} access, and nobody can be asked during a turn"
            )),
            (Decision::Ask, None) => Err(format!(
                "no floor_manager policy approves {what} access, and nobody can be asked during a turn"
            )),
        }
    }
}

/// How to start an ACP agent.
#[derive(Debug, Clone)]
pub struct AcpCommand {
    /// Its floor handle (`@code`).
    pub handle: String,
    /// Display name.
    pub name: Option<String>,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment added to ofc's (values already expanded, see [`expand_env`]).
    pub env: Vec<(String, String)>,
    /// Where it runs, and the session's `cwd` (absolute).
    pub working_dir: PathBuf,
    /// The blueprint's `prompt`, sent at the start of the first turn.
    pub prompt: Option<String>,
    /// `mention` or `always`.
    pub activation: Activation,
    /// Called with its process group id.
    pub on_spawn: Option<SpawnHook>,
    /// A file its stderr is appended to, each line prefixed with `[@handle]`.
    pub stderr_log: Option<PathBuf>,
    /// How long `initialize` and `session/new` may take.
    pub start_deadline: Duration,
    /// How its permission requests are answered.
    pub permissions: Permissions,
    /// The floor's furniture it is given (ACP's `session/new` `mcpServers`): the floor's MCP
    /// endpoints over streamable HTTP, each with the agent's bearer token. Passed when the
    /// agent says it speaks MCP over HTTP (`mcpCapabilities.http`); otherwise it starts without
    /// them and a line in its log says so.
    pub mcp_servers: Vec<AcpMcpServer>,
}

/// One MCP server handed to an ACP agent.
#[derive(Clone, PartialEq, Eq)]
pub struct AcpMcpServer {
    /// Its name (the furniture's).
    pub name: String,
    /// Its streamable-HTTP URL.
    pub url: String,
    /// Headers to send (the agent's `Authorization: Bearer …`).
    pub headers: Vec<(String, String)>,
}

impl fmt::Debug for AcpMcpServer {
    // The headers carry a token: never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpMcpServer")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &self.headers.len())
            .finish()
    }
}

/// Appends `[@handle] text` to the agent's log, if it has one.
fn note_in_log(log: Option<&std::path::Path>, handle: &str, text: &str) {
    use std::io::Write;
    if let Some(path) = log
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(f, "[{handle}] {text}");
    }
}

/// Expands `${VAR}` (and `$VAR`) in an `env` value from `lookup`; `$$` is a `$`. A variable
/// that is not set is an error naming it (a key silently empty is worse than a refusal).
pub fn expand_env(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let name: String = match chars.peek() {
            Some('$') => {
                chars.next();
                out.push('$');
                continue;
            }
            Some('{') => {
                chars.next();
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err(format!("`${{{name}` is not closed")),
                    }
                }
                name
            }
            Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
                let mut name = String::new();
                while let Some(c) = chars.peek().copied() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                name
            }
            _ => {
                out.push('$');
                continue;
            }
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{name}}}` is not a variable name"));
        }
        match lookup(&name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("the environment variable {name} is not set")),
        }
    }
    Ok(out)
}

/// What happened during a turn, in order.
#[derive(Debug)]
enum Event {
    Text(String),
    ToolCall {
        id: String,
        title: String,
        input: Option<Value>,
    },
    ToolUpdate {
        id: String,
        title: Option<String>,
        status: Option<ToolCallStatus>,
        text: Option<String>,
    },
    Permission {
        id: String,
        title: String,
        refusal: Option<String>,
    },
}

/// The id of a tool event.
fn event_id(event: &Event) -> &str {
    match event {
        Event::Text(_) => "",
        Event::ToolCall { id, .. }
        | Event::ToolUpdate { id, .. }
        | Event::Permission { id, .. } => id,
    }
}

/// The most text of one reply an ACP agent's turn keeps (as the HTTP transport's body limit).
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// Appended once when a reply's text passed [`MAX_REPLY_BYTES`].
const CUT_MARKER: &str = "\n[… the rest of the reply was cut: an ACP reply keeps at most 4 MiB]";
/// The most tool calls of one reply kept in its record.
const MAX_TOOL_CALLS: usize = 256;
/// Appended once when a reply made more than [`MAX_TOOL_CALLS`] tool calls.
const CALLS_CUT_MARKER: &str = "\n[… more than 256 tool calls; the rest are not recorded]";

struct Turn {
    prompt: String,
    events: mpsc::UnboundedSender<Event>,
    done: oneshot::Sender<Result<StopReason, String>>,
}

type Route = Arc<Mutex<Option<mpsc::UnboundedSender<Event>>>>;

/// A running ACP agent.
pub struct AcpAgent {
    config: AcpCommand,
    turns: Mutex<Option<mpsc::Sender<Turn>>>,
    /// One turn at a time (the session is one conversation).
    turn_lock: tokio::sync::Mutex<()>,
    /// Id of the last floor message sent to it.
    seen: Mutex<Option<String>>,
    child: tokio::sync::Mutex<Option<tokio::process::Child>>,
    pgid: Option<u32>,
    agent_name: Option<String>,
    stderr_tail: Arc<Mutex<String>>,
}

impl fmt::Debug for AcpAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpAgent")
            .field("handle", &self.config.handle)
            .field("command", &self.config.command)
            .field("pgid", &self.pgid)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn text_of_tool_content(content: &[ToolCallContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            ToolCallContent::Content(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => Some("[content of a kind ofc does not show]".to_owned()),
            },
            ToolCallContent::Diff(d) => Some(format!("[diff of {}]", d.path.display())),
            ToolCallContent::Terminal(t) => Some(format!("[terminal {}]", t.terminal_id)),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn route(current: &Route, event: Event) {
    if let Some(tx) = lock(current).as_ref() {
        let _ = tx.send(event);
    }
}

impl AcpAgent {
    /// Starts the agent and opens its session. On failure nothing is left running; the error
    /// carries what the agent printed on stderr.
    pub async fn spawn(config: AcpCommand) -> Result<AcpAgent, AgentError> {
        let mut cmd = tokio::process::Command::new(&config.command);
        for k in crate::SECRET_ENV {
            cmd.env_remove(k);
        }
        cmd.args(&config.args)
            .envs(config.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&config.working_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            AgentError::NotRunning(format!(
                "{}: cannot start `{}`: {e}",
                config.handle, config.command
            ))
        })?;
        let pgid = child.id();
        if let (Some(hook), Some(pid)) = (&config.on_spawn, pgid) {
            (hook.0)(pid);
        }
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let tail = stderr_tail.clone();
            let handle = config.handle.clone();
            let log = config.stderr_log.clone();
            tokio::spawn(async move {
                use std::io::Write;
                let mut file = log.and_then(|p| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(p)
                        .ok()
                });
                let mut lines = crate::lines::BoundedLines::new(stderr, crate::lines::MAX_LINE);
                while let Some(line) = lines.next_line().await {
                    if let Some(f) = &mut file {
                        let _ = writeln!(f, "[{handle}] {line}");
                    }
                    let mut t = lock(&tail);
                    t.push_str(&line);
                    t.push('\n');
                    if t.len() > 4096 {
                        let mut cut = t.len() - 4096;
                        while !t.is_char_boundary(cut) {
                            cut += 1;
                        }
                        t.drain(..cut);
                    }
                }
            });
        }

        let current: Route = Arc::new(Mutex::new(None));
        let (turn_tx, mut turn_rx) = mpsc::channel::<Turn>(1);
        let (ready_tx, ready_rx) = oneshot::channel::<Result<Option<String>, String>>();
        let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
        let cwd = config.working_dir.clone();
        let mcp_servers = config.mcp_servers.clone();
        let log = config.stderr_log.clone();
        let log_handle = config.handle.clone();
        let permissions = config.permissions.clone();
        let (on_update, on_permission) = (current.clone(), current.clone());
        tokio::spawn(async move {
            let mut ready_tx = Some(ready_tx);
            let result = Client
                .v1()
                .name("ofc")
                .on_receive_notification(
                    async move |n: SessionNotification, _cx| {
                        let event = match n.update {
                            SessionUpdate::AgentMessageChunk(chunk) => match chunk.content {
                                ContentBlock::Text(t) => Some(Event::Text(t.text)),
                                _ => None,
                            },
                            SessionUpdate::ToolCall(call) => Some(Event::ToolCall {
                                id: call.tool_call_id.to_string(),
                                title: call.title,
                                input: call.raw_input,
                            }),
                            SessionUpdate::ToolCallUpdate(update) => Some(Event::ToolUpdate {
                                id: update.tool_call_id.to_string(),
                                title: update.fields.title,
                                status: update.fields.status,
                                text: update.fields.content.map(|c| text_of_tool_content(&c)),
                            }),
                            _ => None,
                        };
                        if let Some(event) = event {
                            route(&on_update, event);
                        }
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |request: RequestPermissionRequest, responder, _cx| {
                        let access = Permissions::access_of(request.tool_call.fields.kind);
                        let decision = permissions.decide(access);
                        let wanted: &[PermissionOptionKind] = if decision.is_ok() {
                            &[
                                PermissionOptionKind::AllowOnce,
                                PermissionOptionKind::AllowAlways,
                            ]
                        } else {
                            &[
                                PermissionOptionKind::RejectOnce,
                                PermissionOptionKind::RejectAlways,
                            ]
                        };
                        let option = wanted.iter().find_map(|kind| {
                            request
                                .options
                                .iter()
                                .find(|o| o.kind == *kind)
                                .map(|o| o.option_id.clone())
                        });
                        route(
                            &on_permission,
                            Event::Permission {
                                id: request.tool_call.tool_call_id.to_string(),
                                title: request
                                    .tool_call
                                    .fields
                                    .title
                                    .clone()
                                    .unwrap_or_else(|| "tool call".to_owned()),
                                refusal: decision.err(),
                            },
                        );
                        responder.respond(RequestPermissionResponse::new(match option {
                            Some(id) => RequestPermissionOutcome::Selected(
                                SelectedPermissionOutcome::new(id),
                            ),
                            None => RequestPermissionOutcome::Cancelled,
                        }))
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(transport, async |cx| {
                    let init = cx
                        .send_request(InitializeRequest::new(ProtocolVersion::V1))
                        .block_task()
                        .await;
                    let init = match init {
                        Ok(i) => i,
                        Err(e) => {
                            if let Some(tx) = ready_tx.take() {
                                let _ = tx.send(Err(format!("`initialize` failed: {e}")));
                            }
                            return Ok(());
                        }
                    };
                    let servers = if mcp_servers.is_empty() {
                        Vec::new()
                    } else if init.agent_capabilities.mcp_capabilities.http {
                        mcp_servers
                            .iter()
                            .map(|m| {
                                McpServer::Http(McpServerHttp::new(&m.name, &m.url).headers(
                                    m.headers
                                        .iter()
                                        .map(|(k, v)| HttpHeader::new(k, v))
                                        .collect(),
                                ))
                            })
                            .collect()
                    } else {
                        let names: Vec<&str> =
                            mcp_servers.iter().map(|m| m.name.as_str()).collect();
                        note_in_log(
                            log.as_deref(),
                            &log_handle,
                            &format!(
                                "the agent does not take MCP servers over HTTP (initialize: mcpCapabilities.http is false); it starts without the furniture {}",
                                names.join(", ")
                            ),
                        );
                        Vec::new()
                    };
                    let session = match cx
                        .send_request(NewSessionRequest::new(cwd).mcp_servers(servers))
                        .block_task()
                        .await
                    {
                        Ok(s) => s,
                        Err(e) => {
                            if let Some(tx) = ready_tx.take() {
                                let _ = tx.send(Err(format!("`session/new` failed: {e}")));
                            }
                            return Ok(());
                        }
                    };
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(Ok(init.agent_info.map(|i| i.name)));
                    }
                    while let Some(turn) = turn_rx.recv().await {
                        *lock(&current) = Some(turn.events);
                        let answer = cx
                            .send_request(PromptRequest::new(
                                session.session_id.clone(),
                                vec![ContentBlock::Text(TextContent::new(turn.prompt))],
                            ))
                            .block_task()
                            .await;
                        *lock(&current) = None;
                        let _ = turn
                            .done
                            .send(answer.map(|r| r.stop_reason).map_err(|e| e.to_string()));
                    }
                    Ok(())
                })
                .await;
            if let (Some(tx), Err(e)) = (ready_tx, &result) {
                let _ = tx.send(Err(e.to_string()));
            }
        });

        let mut agent = AcpAgent {
            config,
            turns: Mutex::new(Some(turn_tx)),
            turn_lock: tokio::sync::Mutex::new(()),
            seen: Mutex::new(None),
            child: tokio::sync::Mutex::new(Some(child)),
            pgid,
            agent_name: None,
            stderr_tail,
        };
        let deadline = agent.config.start_deadline;
        let failure = match tokio::time::timeout(deadline, ready_rx).await {
            Ok(Ok(Ok(name))) => {
                agent.agent_name = name;
                return Ok(agent);
            }
            Ok(Ok(Err(e))) => e,
            Ok(Err(_)) => "the connection ended before the session opened".to_owned(),
            Err(_) => format!("no session within {deadline:?}"),
        };
        agent.stop().await;
        let tail = lock(&agent.stderr_tail).trim().to_owned();
        Err(AgentError::NotRunning(format!(
            "{}: the ACP agent `{}` did not start: {failure}{}",
            agent.config.handle,
            agent.config.command,
            if tail.is_empty() {
                String::new()
            } else {
                format!("; it printed:\n{tail}")
            }
        )))
    }

    /// The process group id (its pid).
    pub fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// Ends the session (closing its stdin) and the process group.
    pub async fn stop(&self) {
        lock(&self.turns).take();
        let child = self.child.lock().await.take();
        if let Some(mut child) = child {
            if tokio::time::timeout(super::STOP_GRACE, child.wait())
                .await
                .is_err()
            {
                #[cfg(unix)]
                if let Some(pid) = self.pgid {
                    super::signal_group(pid, false);
                    if tokio::time::timeout(super::STOP_GRACE, child.wait())
                        .await
                        .is_err()
                    {
                        super::signal_group(pid, true);
                    }
                }
                let _ = child.kill().await;
            }
            #[cfg(unix)]
            if let Some(pid) = self.pgid {
                // Whatever it left in its group goes too.
                super::signal_group(pid, true);
            }
        }
    }

    /// The prompt of a turn: the floor messages the agent has not seen, after its `prompt`
    /// on the first turn.
    fn prompt_for(&self, request: &RespondRequest) -> String {
        let mut seen = lock(&self.seen);
        let start = seen
            .as_ref()
            .and_then(|id| request.messages.iter().position(|m| &m.id == id))
            .map_or(0, |i| i + 1);
        let mut text = String::new();
        if seen.is_none() {
            text.push_str(&format!(
                "You are {} on an OFC floor, a conversation among several participants; messages \
                 below are shown as `@sender: text`. Answer the latest one addressed to you. \
                 Reply with exactly [PASS] when you have nothing to add.\n",
                self.config.handle
            ));
            if let Some(p) = &self.config.prompt {
                text.push_str(p.trim());
                text.push('\n');
            }
            text.push('\n');
        }
        for m in &request.messages[start.min(request.messages.len())..] {
            if m.from == self.config.handle {
                continue;
            }
            text.push_str(&format!("{}: {}\n", m.from, m.content));
        }
        if let Some(last) = request.messages.last() {
            *seen = Some(last.id.clone());
        }
        text
    }
}

impl Drop for AcpAgent {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Ok(slot) = self.child.try_lock()
            && slot.is_some()
            && let Some(pid) = self.pgid
        {
            super::signal_group(pid, true);
        }
    }
}

#[async_trait]
impl Agent for AcpAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(self.config.handle.clone()),
            name: self.config.name.clone().or_else(|| self.agent_name.clone()),
            activation: Some(self.config.activation.clone()),
            capabilities: vec!["acp".to_owned()],
            ..AgentInfo::default()
        })
    }

    /// Like LLM agents: `always` agents wake for every message but their own; `mention`
    /// agents are called by the floor for `@name?`.
    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        Ok(
            if self.config.activation == Activation::Always
                && request.last_message.from != self.config.handle
            {
                ShouldWakeResponse::wake("activation: always")
            } else {
                ShouldWakeResponse::sleep()
            },
        )
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let _one = self.turn_lock.lock().await;
        let Some(turns) = lock(&self.turns).clone() else {
            return Err(AgentError::NotRunning(format!(
                "{}: the ACP session is closed",
                self.config.handle
            )));
        };
        let (events_tx, mut events) = mpsc::unbounded_channel();
        let (done_tx, done) = oneshot::channel();
        let turn = Turn {
            prompt: self.prompt_for(request),
            events: events_tx,
            done: done_tx,
        };
        let gone = || {
            let tail = lock(&self.stderr_tail).trim().to_owned();
            AgentError::NotRunning(format!(
                "{}: the ACP agent ended{}",
                self.config.handle,
                if tail.is_empty() {
                    String::new()
                } else {
                    format!("; it printed:\n{tail}")
                }
            ))
        };
        turns.send(turn).await.map_err(|_| gone())?;
        let mut content = String::new();
        let mut calls: Vec<(String, ToolCall, Option<Value>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut apply = |event: Event, content: &mut String| match event {
            Event::Text(t) => {
                if let Some(d) = &deltas {
                    d.send(t.clone());
                }
                // Bounded whether or not the floor streams: past the cap the text is cut once,
                // with a marker, and the rest is dropped.
                if content.len() + t.len() <= MAX_REPLY_BYTES {
                    content.push_str(&t);
                } else if !content.ends_with(CUT_MARKER) {
                    let mut end = MAX_REPLY_BYTES.saturating_sub(content.len()).min(t.len());
                    while !t.is_char_boundary(end) {
                        end -= 1;
                    }
                    content.push_str(&t[..end]);
                    content.push_str(CUT_MARKER);
                }
            }
            Event::ToolCall { .. } | Event::ToolUpdate { .. } | Event::Permission { .. }
                if calls.len() >= MAX_TOOL_CALLS && !index.contains_key(event_id(&event)) =>
            {
                // A bounded record: the calls past the cap are not kept, and the reply says so.
                if !content.contains(CALLS_CUT_MARKER) {
                    content.push_str(CALLS_CUT_MARKER);
                }
            }
            Event::ToolCall { id, title, input } => {
                let arguments = match input {
                    Some(Value::Object(m)) => m,
                    Some(other) => Map::from_iter([("input".to_owned(), other)]),
                    None => Map::new(),
                };
                index.insert(id.clone(), calls.len());
                calls.push((
                    id,
                    ToolCall {
                        name: title,
                        arguments,
                    },
                    None,
                ));
            }
            Event::ToolUpdate {
                id,
                title,
                status,
                text,
            } => {
                let i = *index.entry(id.clone()).or_insert_with(|| {
                    calls.push((
                        id.clone(),
                        ToolCall {
                            name: title.clone().unwrap_or_else(|| "tool call".into()),
                            arguments: Map::new(),
                        },
                        None,
                    ));
                    calls.len() - 1
                });
                let entry = &mut calls[i];
                if let Some(t) = title {
                    entry.1.name = t;
                }
                let refused =
                    matches!(&entry.2, Some(Value::String(s)) if s.starts_with("refused: "));
                if !refused {
                    match (status, text) {
                        (_, Some(text)) if !text.is_empty() => entry.2 = Some(Value::String(text)),
                        (Some(ToolCallStatus::Failed), _) => {
                            entry.2 = Some(Value::String("[the tool call failed]".into()))
                        }
                        _ => {}
                    }
                }
            }
            Event::Permission { id, title, refusal } => {
                let i = *index.entry(id.clone()).or_insert_with(|| {
                    calls.push((
                        id.clone(),
                        ToolCall {
                            name: title,
                            arguments: Map::new(),
                        },
                        None,
                    ));
                    calls.len() - 1
                });
                if let Some(why) = refusal {
                    calls[i].2 = Some(Value::String(format!("refused: {why}")));
                }
            }
        };
        tokio::pin!(done);
        let stop = loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => apply(event, &mut content),
                r = &mut done => {
                    // What was routed before the answer is already queued.
                    while let Ok(event) = events.try_recv() {
                        apply(event, &mut content);
                    }
                    break r;
                }
            }
        };
        let stop = match stop {
            Err(_) => return Err(gone()),
            Ok(Err(e)) => {
                return Err(AgentError::Reported(format!(
                    "{}: the ACP prompt failed: {e}",
                    self.config.handle
                )));
            }
            Ok(Ok(stop)) => stop,
        };
        if content.is_empty() && stop == StopReason::Refusal {
            content = "[the agent refused to answer]".to_owned();
        }
        let (tool_calls, tool_results) = calls
            .into_iter()
            .map(|(_, call, result)| (call, result.unwrap_or(Value::String(String::new()))))
            .unzip();
        Ok(RespondResponse::Reply(AgentReply {
            content,
            tool_calls,
            tool_results,
            metadata: None,
        }))
    }

    async fn shutdown(&self) {
        self.stop().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_expand_set_variables_and_name_missing_ones() {
        let env = |k: &str| match k {
            "KEY" => Some("sekret".to_owned()),
            "HOME" => Some("/h".to_owned()),
            _ => None,
        };
        assert_eq!(expand_env("${KEY}", env).unwrap(), "sekret");
        assert_eq!(
            expand_env("a-$HOME/x-${KEY}", env).unwrap(),
            "a-/h/x-sekret"
        );
        assert_eq!(expand_env("$$KEY costs $5", env).unwrap(), "$KEY costs $5");
        assert!(expand_env("${NOPE}", env).unwrap_err().contains("NOPE"));
        assert!(expand_env("${KEY", env).is_err());
        assert!(expand_env("${A-B}", env).is_err());
    }

    #[test]
    fn tool_kinds_map_to_accesses() {
        assert_eq!(Permissions::access_of(Some(ToolKind::Read)), Access::Read);
        assert_eq!(Permissions::access_of(Some(ToolKind::Search)), Access::Read);
        assert_eq!(Permissions::access_of(Some(ToolKind::Edit)), Access::Write);
        assert_eq!(
            Permissions::access_of(Some(ToolKind::Delete)),
            Access::Write
        );
        assert_eq!(
            Permissions::access_of(Some(ToolKind::Fetch)),
            Access::External
        );
        assert_eq!(
            Permissions::access_of(Some(ToolKind::Execute)),
            Access::Execute
        );
        assert_eq!(
            Permissions::access_of(Some(ToolKind::Other)),
            Access::Execute
        );
        assert_eq!(Permissions::access_of(None), Access::Execute);
    }
}
