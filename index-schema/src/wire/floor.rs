//! The floor server API: the bodies users and agents send to a floor (`/floors…`), and the
//! conversation's messages.

use serde::{Deserialize, Serialize};

use serde_json::Value;

use super::agent::{AgentInfo, ToolCall};
use super::mcp::McpServer;
use super::{Timestamp, Token};

/// One message of a floor's conversation.
///
/// `tool_calls` and `tool_results` are ofc's addition (the draft's message has only `id`,
/// `from`, `content`, `timestamp`): the tool activity behind an agent's reply, as its
/// `/ofc/respond` answer reported it, so that other agents' prompts can show it (an LLM
/// agent's `tool_context`). Both are left out when empty, so a message without tool activity
/// is exactly the draft's, and a message from an older peer without them still parses. So is
/// `metadata`, ofc's place for what a transport knows about a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Its id on the floor (`msg-456`).
    pub id: String,
    /// Who said it (`@user`, `@data`).
    pub from: String,
    /// What was said, Markdown with `@mentions`.
    pub content: String,
    /// When the floor stored it.
    pub timestamp: Timestamp,
    /// Tools the speaker called while writing it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Their results, in the same order (strings, or structured MCP results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<Value>,
    /// ofc's addition: what the transport that carried the message knows about it — for a
    /// message that came through the Switchboard (seed 004), `{"switchboard": {id, action,
    /// replyTo…}}`. Left out when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

impl Message {
    /// A message without tool activity.
    pub fn new(
        id: impl Into<String>,
        from: impl Into<String>,
        content: impl Into<String>,
        timestamp: Timestamp,
    ) -> Self {
        Self {
            id: id.into(),
            from: from.into(),
            content: content.into(),
            timestamp,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            metadata: None,
        }
    }
}

/// `POST /floors` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateFloorRequest {
    /// A name for people (`Data Analysis Session`).
    pub name: String,
    /// Limits; the server's defaults where absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<FloorConfig>,
}

/// A floor's limits (`config` of `POST /floors`, and of the floor state).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorConfig {
    /// Most agents on the floor at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_agents: Option<u32>,
    /// Most messages kept and sent to agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_limit: Option<u32>,
}

/// `POST /floors` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateFloorResponse {
    /// The new floor's id.
    pub floor_id: String,
    /// The secret that lets others join it.
    pub join_token: Token,
}

/// `POST /floors/{floor_id}/agents` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddAgentRequest {
    /// The agent to add (`@code`), looked up in the registry.
    pub agent_id: String,
}

open_enum! {
    /// The outcome of adding an agent to a floor.
    pub enum AddAgentStatus {
        /// The agent answered `/ofc/info` and is on the roster.
        Added = "added",
    }
}

/// `POST /floors/{floor_id}/agents` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddAgentResponse {
    /// The agent (`@code`).
    pub agent_id: String,
    /// Its OFC endpoint as found in the registry.
    pub endpoint: String,
    /// What happened.
    pub status: AddAgentStatus,
    /// What the agent said about itself (all or part of its `/ofc/info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<AgentInfo>,
}

/// `POST /floors/{floor_id}/messages` request: a user speaks. Agents never post; they answer
/// `/ofc/respond` and the floor stores the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostMessageRequest {
    /// The speaker (`@user`).
    pub from: String,
    /// What was said.
    pub content: String,
}

/// `POST /floors/{floor_id}/messages` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostMessageResponse {
    /// The stored message's id.
    pub message_id: String,
    /// The agent the floor wakes next. `null` (or absent) when nobody wakes and the floor
    /// waits for the user; written as `null` so clients need not tell the two apart.
    #[serde(default)]
    pub next_agent: Option<String>,
}

/// The query of `GET /floors/{floor_id}/messages` (`?since=msg-id&limit=50`), for a query-string
/// deserializer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagesQuery {
    /// Only messages after this message id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// At most this many messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `GET /floors/{floor_id}/messages` response. The spec names the endpoint but shows no body;
/// this `{ "messages": [...] }` shape is ofc's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageList {
    /// Oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
}

/// `GET /floors/{floor_id}` response. The spec says only "agents, workstations, config"; the
/// exact shape is ofc's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorState {
    /// The floor.
    pub floor_id: String,
    /// Its name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The roster, in turn-taking tie-break order.
    #[serde(default)]
    pub agents: Vec<FloorAgent>,
    /// The floor's MCP servers.
    #[serde(default)]
    pub workstations: Vec<McpServer>,
    /// Its limits.
    #[serde(default)]
    pub config: FloorConfig,
}

/// One agent of [`FloorState::agents`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorAgent {
    /// Its handle on the floor (`@code`).
    pub agent_id: String,
    /// Its OFC endpoint, for agents reached over HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// What it said about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<AgentInfo>,
}
