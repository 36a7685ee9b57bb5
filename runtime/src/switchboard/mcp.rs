//! The Switchboard's MCP tools, one server per session ([`super::sse`] carries them):
//!
//! | tool | what it does |
//! |---|---|
//! | `register_terminal` | `name`, `purpose`, optional `pid`, `role`, `team`, `icon`, `color`: the session becomes that terminal agent and joins the floor |
//! | `register_chat_agent` | `name`, `interface`, optional `capabilities`, `role`, `team`: likewise, as a chat agent |
//! | `send_message` | `recipient`, `action`, `payload`, optional `replyTo`, `metadata`: written to the recipient's inbox as the session's agent |
//! | `check_inbox` | optional `limit` (≤ 100): the session's agent's messages, archived once read |
//! | `join_team` | `team` |
//! | `send_team_message` | `team`, `action`, `payload`, optional `metadata`: one message to each other member |
//! | `get_team_roster` | the floor's agents and teams |
//!
//! The sender of every message is the agent the session registered as; a session cannot send
//! as another (there is no `sender` argument). A session that has not registered can only
//! register and read the roster.

use std::sync::{Arc, Mutex};

use index_schema::switchboard::{Action, Message, Role, check_name};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use super::workspace::{ReadOutcome, shown};
use super::{Member, MemberKind, Switchboard, new_message_id, now_iso};

/// The most messages `check_inbox` answers at once.
pub const MAX_INBOX_READ: usize = 100;
/// The largest `metadata` of a message sent, serialized, in bytes.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// The longest `purpose`, `interface`, `icon` or `color` of a registration, in bytes: what
/// goes into `state.json`, which every registration shares, is bounded.
pub const MAX_FIELD_BYTES: usize = 1024;
/// The longest item of `capabilities`, in bytes (at most 64 items).
pub const MAX_CAPABILITY_BYTES: usize = 256;

/// One MCP session: the tools, answering as the agent the session registered as.
#[derive(Debug, Clone)]
pub struct SwitchboardMcp {
    sb: Arc<Switchboard>,
    session: String,
    me: Arc<Mutex<Option<String>>>,
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("tool schemas are written as objects")
    };
    Tool::new(name.to_owned(), description.to_owned(), schema)
}

/// The tools and their input schemas.
pub fn tools() -> Vec<Tool> {
    let roles: Vec<&str> = Role::ALL.iter().map(|r| r.as_str()).collect();
    let actions: Vec<&str> = Action::ALL.iter().map(|a| a.as_str()).collect();
    vec![
        tool(
            "register_terminal",
            "Register this session as a terminal agent of the floor (it joins the floor under that name).",
            json!({"type": "object", "properties": {
                "name": {"type": "string"}, "purpose": {"type": "string"},
                "pid": {"type": "integer"}, "role": {"type": "string", "enum": roles},
                "team": {"type": "string"}, "icon": {"type": "string"}, "color": {"type": "string"}},
                "required": ["name", "purpose"]}),
        ),
        tool(
            "register_chat_agent",
            "Register this session as a chat agent of the floor (it joins the floor under that name).",
            json!({"type": "object", "properties": {
                "name": {"type": "string"}, "interface": {"type": "string"},
                "capabilities": {"type": "array", "items": {"type": "string"}},
                "role": {"type": "string", "enum": roles}, "team": {"type": "string"}},
                "required": ["name", "interface"]}),
        ),
        tool(
            "send_message",
            "Send a message to an agent's inbox; to a floor agent it appears on the floor.",
            json!({"type": "object", "properties": {
                "recipient": {"type": "string"}, "action": {"type": "string", "enum": actions},
                "payload": {"type": "string"}, "replyTo": {"type": "string"},
                "metadata": {"type": "object"}},
                "required": ["recipient", "action", "payload"]}),
        ),
        tool(
            "check_inbox",
            "Read (and archive) the messages in this agent's inbox, oldest first.",
            json!({"type": "object", "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_INBOX_READ}}}),
        ),
        tool(
            "join_team",
            "Join a team.",
            json!({"type": "object", "properties": {"team": {"type": "string"}}, "required": ["team"]}),
        ),
        tool(
            "send_team_message",
            "Send a message to every other member of a team.",
            json!({"type": "object", "properties": {
                "team": {"type": "string"}, "action": {"type": "string", "enum": actions},
                "payload": {"type": "string"}, "metadata": {"type": "object"}},
                "required": ["team", "action", "payload"]}),
        ),
        tool(
            "get_team_roster",
            "The floor's agents and teams.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

type ToolResult = Result<Value, String>;

fn text(args: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn required(args: &Map<String, Value>, key: &str) -> Result<String, String> {
    text(args, key)?.ok_or_else(|| format!("`{key}` is required"))
}

/// A text argument of at most [`MAX_FIELD_BYTES`].
fn short(args: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    let t = text(args, key)?;
    if t.as_ref().is_some_and(|t| t.len() > MAX_FIELD_BYTES) {
        return Err(format!("`{key}` is longer than {MAX_FIELD_BYTES} bytes"));
    }
    Ok(t)
}

fn short_required(args: &Map<String, Value>, key: &str) -> Result<String, String> {
    short(args, key)?.ok_or_else(|| format!("`{key}` is required"))
}

/// Refuses arguments the tool does not have, naming them.
fn known(args: &Map<String, Value>, fields: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "`{k}` is not an argument of this tool (its arguments: {})",
            fields.join(", ")
        )),
        None => Ok(()),
    }
}

fn name_arg(args: &Map<String, Value>, key: &str) -> Result<String, String> {
    let raw = required(args, key)?;
    check_name(&raw).map_err(|e| format!("`{key}` {e}"))
}

fn role_arg(args: &Map<String, Value>) -> Result<Option<Role>, String> {
    match text(args, "role")? {
        None => Ok(None),
        Some(r) => Role::parse(&r)
            .map(Some)
            .ok_or_else(|| format!("`role` must be one of {}", Role::listed())),
    }
}

fn team_arg(args: &Map<String, Value>) -> Result<Option<String>, String> {
    match text(args, "team")? {
        None => Ok(None),
        Some(t) => check_name(&t).map(Some).map_err(|e| format!("`team` {e}")),
    }
}

fn metadata_arg(args: &Map<String, Value>) -> Result<Option<Map<String, Value>>, String> {
    match args.get("metadata") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => {
            if Value::Object(m.clone()).to_string().len() > MAX_METADATA_BYTES {
                return Err(format!(
                    "`metadata` is larger than {MAX_METADATA_BYTES} bytes"
                ));
            }
            Ok(Some(m.clone()))
        }
        Some(_) => Err("`metadata` must be an object".into()),
    }
}

fn action_arg(args: &Map<String, Value>) -> Result<Action, String> {
    let a = required(args, "action")?;
    Action::parse(&a).ok_or_else(|| {
        format!(
            "`action` must be one of {}",
            Action::ALL.map(Action::as_str).join(", ")
        )
    })
}

impl SwitchboardMcp {
    /// The tools for one session.
    pub fn new(sb: Arc<Switchboard>, session: String) -> Self {
        Self {
            sb,
            session,
            me: Arc::new(Mutex::new(None)),
        }
    }

    fn me(&self) -> Result<String, String> {
        self.me
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                "register first (register_terminal or register_chat_agent): messages are sent as the agent this session registered".into()
            })
    }

    /// Runs one tool.
    pub fn call(&self, tool: &str, args: Map<String, Value>) -> ToolResult {
        match tool {
            "register_terminal" => {
                known(
                    &args,
                    &["name", "purpose", "pid", "role", "team", "icon", "color"],
                )?;
                let name = name_arg(&args, "name")?;
                let purpose = short_required(&args, "purpose")?;
                let pid = match args.get("pid") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(v.as_u64().ok_or("`pid` must be a positive integer")?),
                };
                let (role, team) = (role_arg(&args)?, team_arg(&args)?);
                let record = json!({
                    "name": name, "pid": pid, "purpose": purpose,
                    "role": role.map(Role::as_str), "team": team,
                    "icon": short(&args, "icon")?, "color": short(&args, "color")?,
                    "friendlyName": name, "status": "active", "registeredAt": now_iso(),
                    "via": "mcp",
                });
                self.register(name, MemberKind::Terminal, role, team, record)
            }
            "register_chat_agent" => {
                known(
                    &args,
                    &["name", "interface", "capabilities", "role", "team"],
                )?;
                let name = name_arg(&args, "name")?;
                let interface = short_required(&args, "interface")?;
                let capabilities = match args.get("capabilities") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a))
                        if a.len() <= 64
                            && a.iter().all(|c| {
                                c.as_str().is_some_and(|c| c.len() <= MAX_CAPABILITY_BYTES)
                            }) =>
                    {
                        a.clone()
                    }
                    Some(_) => {
                        return Err(format!(
                            "`capabilities` must be a list of at most 64 strings of at most {MAX_CAPABILITY_BYTES} bytes"
                        ));
                    }
                };
                let (role, team) = (role_arg(&args)?, team_arg(&args)?);
                let record = json!({
                    "name": name, "type": "chat", "interface": interface,
                    "capabilities": capabilities, "role": role.map(Role::as_str), "team": team,
                    "friendlyName": name, "status": "active", "registeredAt": now_iso(),
                    "via": "mcp",
                });
                self.register(name, MemberKind::Chat, role, team, record)
            }
            "send_message" => {
                known(
                    &args,
                    &["recipient", "action", "payload", "replyTo", "metadata"],
                )?;
                let me = self.me()?;
                let recipient = name_arg(&args, "recipient")?;
                let action = action_arg(&args)?;
                let payload = required(&args, "payload")?;
                let reply_to = text(&args, "replyTo")?;
                let metadata = metadata_arg(&args)?;
                let id = self.send(&me, &recipient, action, payload, reply_to, metadata, None)?;
                Ok(json!({"id": id, "recipient": recipient, "status": "sent"}))
            }
            "check_inbox" => {
                known(&args, &["limit"])?;
                let me = self.me()?;
                let limit = match args.get("limit") {
                    None | Some(Value::Null) => 20,
                    Some(v) => v
                        .as_u64()
                        .filter(|n| (1..=MAX_INBOX_READ as u64).contains(n))
                        .ok_or(format!("`limit` must be 1 to {MAX_INBOX_READ}"))?
                        as usize,
                };
                self.check_inbox(&me, limit)
            }
            "join_team" => {
                known(&args, &["team"])?;
                let me = self.me()?;
                let team = name_arg(&args, "team")?;
                let members = self
                    .sb
                    .join_team(&me, &team)
                    .map_err(|e| format!("cannot write state.json: {e}"))?;
                Ok(json!({"team": team, "members": members}))
            }
            "send_team_message" => {
                known(&args, &["team", "action", "payload", "metadata"])?;
                let me = self.me()?;
                let team = name_arg(&args, "team")?;
                let action = action_arg(&args)?;
                let payload = required(&args, "payload")?;
                let metadata = metadata_arg(&args)?;
                let members = self.sb.team(&team);
                if !members.contains(&me) {
                    return Err(format!(
                        "`{me}` is not a member of team `{team}` (join_team first)"
                    ));
                }
                let mut sent = Vec::new();
                for member in members.iter().filter(|m| **m != me) {
                    let id = self.send(
                        &me,
                        member,
                        action,
                        payload.clone(),
                        None,
                        metadata.clone(),
                        Some(team.clone()),
                    )?;
                    sent.push(json!({"recipient": member, "id": id}));
                }
                Ok(json!({"team": team, "sent": sent}))
            }
            "get_team_roster" => {
                known(&args, &[])?;
                Ok(self.sb.roster())
            }
            other => Err(format!(
                "no tool `{other}` (tools: {})",
                tools()
                    .iter()
                    .map(|t| t.name.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn register(
        &self,
        name: String,
        kind: MemberKind,
        role: Option<Role>,
        team: Option<String>,
        record: Value,
    ) -> ToolResult {
        let previous = self.me.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if previous.as_ref().is_some_and(|p| *p != name) {
            return Err(format!(
                "this session is registered as `{}` already",
                previous.unwrap_or_default()
            ));
        }
        let member = Member {
            kind,
            role,
            team,
            persona: None,
            session: Some(self.session.clone()),
        };
        let fresh = self.sb.register(&name, member, record)?;
        *self.me.lock().unwrap_or_else(|e| e.into_inner()) = Some(name.clone());
        self.sb.log(&format!(
            "@{name} registered over MCP (session {})",
            self.session
        ));
        Ok(json!({
            "name": name,
            "registered": true,
            "floor": if fresh { "joins the floor when the running turn ends" } else { "already on the floor" },
            "inbox": format!(".switchboard/inbox/{name}/"),
        }))
    }

    /// Writes a message from the session's agent into `recipient`'s inbox.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        me: &str,
        recipient: &str,
        action: Action,
        payload: String,
        reply_to: Option<String>,
        metadata: Option<Map<String, Value>>,
        team: Option<String>,
    ) -> Result<String, String> {
        if recipient == me {
            return Err("a message to oneself is not sent".into());
        }
        let member = self.sb.is_member(recipient);
        if !member && !self.sb.is_floor_side(recipient) {
            let (members, side) = self.sb.names();
            return Err(format!(
                "no agent `{recipient}` on this floor (agents: {})",
                members
                    .into_iter()
                    .chain(side)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let message = Message {
            id: new_message_id(),
            action,
            sender: me.to_owned(),
            recipient: recipient.to_owned(),
            payload,
            reply_to,
            metadata,
            team,
            persona: if member {
                self.sb.member(recipient).and_then(|m| m.persona)
            } else {
                None
            },
            created_at: now_iso(),
        };
        message.validate().map_err(|d| {
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        if member {
            // Into a member's inbox: delivered now.
            self.sb
                .send_to_member(&message)
                .map_err(|e| format!("cannot write to inbox/{recipient}: {e}"))?;
        } else {
            // To the floor side: the reader takes it from there (journal, floor, receipt).
            self.sb
                .workspace()
                .deliver(&message)
                .map_err(|e| format!("cannot write to inbox/{recipient}: {e}"))?;
            self.sb.wake();
        }
        Ok(message.id)
    }

    fn check_inbox(&self, me: &str, limit: usize) -> ToolResult {
        let ws = self.sb.workspace();
        let files = ws
            .pending(me, limit)
            .map_err(|e| format!("cannot read inbox/{me}: {e}"))?;
        let mut messages = Vec::new();
        let mut refused = Vec::new();
        for file in files {
            match ws.read(me, &file, self.sb.settings().settle) {
                ReadOutcome::Message(m) => {
                    messages.push(serde_json::to_value(&*m).unwrap_or(Value::Null));
                    if let Err(e) = ws.archive(me, &file) {
                        self.sb
                            .log(&format!("cannot archive inbox/{me}/{}: {e}", shown(&file)));
                    }
                }
                ReadOutcome::Refused(reason) => {
                    let _ = ws.reject(me, &file);
                    self.sb.log(&format!(
                        "refused inbox/{me}/{}: {reason}; moved to rejected/{me}/",
                        shown(&file)
                    ));
                    refused.push(json!({"file": file, "reason": reason}));
                }
                ReadOutcome::NotYet | ReadOutcome::Gone => {}
            }
        }
        Ok(json!({"agent": me, "messages": messages, "refused": refused}))
    }
}

impl ServerHandler for SwitchboardMcp {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "ofc-switchboard",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "The Switchboard of an ofc floor: register_terminal or register_chat_agent first, \
                 then send_message and check_inbox.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let this = self.clone();
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // File work off the async threads.
        let result = tokio::task::spawn_blocking(move || this.call(&name, args))
            .await
            .unwrap_or_else(|e| Err(format!("the tool failed: {e}")));
        Ok(CallToolResponse::Complete(match result {
            Ok(v) => CallToolResult::success(vec![ContentBlock::text(v.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }))
    }
}
