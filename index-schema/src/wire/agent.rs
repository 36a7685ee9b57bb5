//! The agent API: the bodies a floor sends to an agent and the agent's answers
//! (`GET /ofc/info`, `POST /ofc/should-wake`, `POST /ofc/respond`, `POST /ofc/mcp/grant`,
//! `GET /ofc/mcp/provides`).

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::Timestamp;
use super::floor::Message;
use super::mcp::{McpGrant, McpServer};

/// The content that, on its own, means "I pass" (`[PASS]` in the spec's core concepts).
pub const PASS_MARKER: &str = "[PASS]";

/// One of the calls a floor makes on an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentCall {
    /// `GET /ofc/info`.
    Info,
    /// `POST /ofc/should-wake`.
    ShouldWake,
    /// `POST /ofc/respond`.
    Respond,
    /// `POST /ofc/mcp/grant`.
    McpGrant,
    /// `GET /ofc/mcp/provides`.
    McpProvides,
}

impl AgentCall {
    /// The spec's path, `/ofc/…`.
    pub fn path(self) -> &'static str {
        match self {
            Self::Info => "/ofc/info",
            Self::ShouldWake => "/ofc/should-wake",
            Self::Respond => "/ofc/respond",
            Self::McpGrant => "/ofc/mcp/grant",
            Self::McpProvides => "/ofc/mcp/provides",
        }
    }
}

/// The URL of `call` on an agent registered with `endpoint`.
///
/// The spec registers endpoints that already end in `/ofc` (`https://code-agent.example.com/ofc`)
/// and names the calls `/ofc/info`, … — so an endpoint ending in `/ofc` gets only the rest of the
/// path (`…/ofc/info`), and any other endpoint gets the whole path appended.
pub fn agent_url(endpoint: &str, call: AgentCall) -> String {
    let base = endpoint.trim_end_matches('/');
    let path = call.path();
    if base.ends_with("/ofc") {
        format!("{base}{}", &path["/ofc".len()..])
    } else {
        format!("{base}{path}")
    }
}

open_enum! {
    /// When an agent wants to be woken (`activation` in `/ofc/info`).
    pub enum Activation {
        /// Only when `@mentioned` with `?` (or when should-wake says so).
        Mention = "mention",
        /// Considered for every message.
        Always = "always",
    }
}

open_enum! {
    /// Why the floor woke an agent (`wake_reason` of `/ofc/respond`). The spec shows only
    /// `mentioned_with_question`; the other values are the ones ofc's floor sends for the other
    /// turn-taking rules of the spec.
    pub enum WakeReason {
        /// `@name?` in the last message.
        MentionedWithQuestion = "mentioned_with_question",
        /// The agent answered `{ "wake": true }` to should-wake.
        ShouldWake = "should_wake",
        /// An agent this one asked (`@other?`) has answered; the floor returns to the initiator.
        DelegationReturned = "delegation_returned",
        /// The agent's activation is `always`.
        ActivationAlways = "activation_always",
    }
}

/// `POST /ofc/should-wake` request: "do you want to respond to this?".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShouldWakeRequest {
    /// The floor this is about; agents keep per-floor state apart by it.
    pub floor_id: String,
    /// The message that triggered the poll.
    pub last_message: Message,
    /// What the agent needs to decide cheaply.
    #[serde(default)]
    pub context: WakeContext,
}

/// The `context` of a should-wake request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeContext {
    /// Handles of the latest speakers, oldest first.
    #[serde(default)]
    pub recent_speakers: Vec<String>,
    /// Whether the last message mentions this agent (without `?`).
    #[serde(default)]
    pub mentioned_you: bool,
    /// The id of this agent's latest message on the floor, absent if it has not spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub your_last_message_id: Option<String>,
}

/// `POST /ofc/should-wake` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShouldWakeResponse {
    /// True to be woken (the floor then calls `/ofc/respond`).
    pub wake: bool,
    /// Why, for the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ShouldWakeResponse {
    /// `{ "wake": true, "reason": … }`.
    pub fn wake(reason: impl Into<String>) -> Self {
        Self {
            wake: true,
            reason: Some(reason.into()),
        }
    }

    /// `{ "wake": false }`.
    pub fn sleep() -> Self {
        Self {
            wake: false,
            reason: None,
        }
    }
}

/// `POST /ofc/respond` request: the conversation so far, and why the agent was woken.
///
/// The signed form of "Request Authentication" adds `user_id` and a signed `context`; both are
/// optional here because the plain form shows neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RespondRequest {
    /// The floor this is about.
    pub floor_id: String,
    /// The user the floor acts for (signed form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The conversation, oldest first (as much of it as the floor's history limit allows).
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Why this agent was woken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_reason: Option<WakeReason>,
    /// Who asked this agent (`@data` for `@data: … @code? …`); the floor returns to them next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator: Option<String>,
    /// The signed request context (signed form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<SignedContext>,
}

/// The `context` of a signed `/ofc/respond` request ("Request Authentication"). Agents check
/// that the server is trusted and that `timestamp` is recent, and remember `nonce` against
/// replays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedContext {
    /// The floor server's base URL (`https://floors.ofc.dev`).
    pub server: String,
    /// The floor server's public key.
    pub server_pubkey: String,
    /// When the request was made.
    pub timestamp: Timestamp,
    /// A value never reused by this server.
    pub nonce: String,
}

/// `POST /ofc/respond` response: a message for the floor, or a pass.
///
/// On the wire a pass is `{ "pass": true, "reason"?: … }`; anything else must carry `content`.
/// A reply whose content is the [`PASS_MARKER`] is also a pass (see [`Self::is_pass`]); it is
/// kept as a [`Self::Reply`] so that it serializes back as it came.
#[derive(Debug, Clone, PartialEq)]
pub enum RespondResponse {
    /// `{ "pass": true }`: nothing to add; the floor excludes the agent for this turn.
    Pass {
        /// Why, for the transcript.
        reason: Option<String>,
    },
    /// A message (with the tool activity behind it).
    Reply(AgentReply),
}

/// The normal `/ofc/respond` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReply {
    /// The message, Markdown.
    pub content: String,
    /// Tools the agent called while answering, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Their results, in the same order. The spec shows strings; MCP results may be structured,
    /// so any JSON value is accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<Value>,
    /// ofc's addition, stored with the message (see [`Message::metadata`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One tool call reported in a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool (`bash`, or `workstation__tool` for floor workstations).
    pub name: String,
    /// Its arguments object.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

impl RespondResponse {
    /// `{ "pass": true, "reason"?: … }`.
    pub fn pass(reason: Option<String>) -> Self {
        Self::Pass { reason }
    }

    /// A plain reply with no tool activity.
    pub fn reply(content: impl Into<String>) -> Self {
        Self::Reply(AgentReply {
            content: content.into(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            metadata: None,
        })
    }

    /// True for `{ "pass": true }` and for a reply whose content is `[PASS]` (surrounding
    /// whitespace ignored, since model output often ends in a newline).
    pub fn is_pass(&self) -> bool {
        match self {
            Self::Pass { .. } => true,
            Self::Reply(r) => r.content.trim() == PASS_MARKER,
        }
    }

    /// The message to store on the floor: `None` for a pass of either form.
    pub fn content(&self) -> Option<&str> {
        match self {
            Self::Reply(r) if !self.is_pass() => Some(&r.content),
            _ => None,
        }
    }
}

/// Both forms, as read from the wire; `pass` decides which one it is.
#[derive(Deserialize)]
struct RawRespondResponse {
    #[serde(default)]
    pass: bool,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_results: Vec<Value>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl<'de> Deserialize<'de> for RespondResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawRespondResponse::deserialize(d)?;
        if raw.pass {
            // A pass wins over anything else in the body: the agent said it has nothing to add.
            return Ok(Self::Pass { reason: raw.reason });
        }
        let Some(content) = raw.content else {
            return Err(D::Error::custom(
                "missing field `content` (a response without it must be `\"pass\": true`)",
            ));
        };
        Ok(Self::Reply(AgentReply {
            content,
            tool_calls: raw.tool_calls,
            tool_results: raw.tool_results,
            metadata: raw.metadata,
        }))
    }
}

impl Serialize for RespondResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Pass { reason } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("pass", &true)?;
                if let Some(r) = reason {
                    m.serialize_entry("reason", r)?;
                }
                m.end()
            }
            Self::Reply(r) => r.serialize(s),
        }
    }
}

/// `GET /ofc/info` response: how an agent introduces itself.
///
/// Every field is optional: the spec shows this object whole, as `{id, provides_mcp}`, as
/// `{pricing}`, and trimmed to `{tagline}` inside [`super::AddAgentResponse`], and marks none of
/// its fields as required. Fields ofc does not know are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The agent's handle (`@code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Display name (`Code Assistant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One line: what to send this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagline: Option<String>,
    /// A paragraph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When the agent wants to be woken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// What it can do (`bash`, `sql`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// An MCP server the agent offers to others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provides_mcp: Option<ProvidesMcp>,
    /// Informational pricing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Fields this version of ofc does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `provides_mcp` of `/ofc/info`: the agent's own MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvidesMcp {
    /// A name, when the agent gives one (the spec's example does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where to connect (`mcp://code-agent.example.com/tools`).
    pub url: String,
    /// Its tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// `pricing` of `/ofc/info` (informational only). Other price dimensions a publisher declares
/// (per token, per request) are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Price per hour on a floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<f64>,
    /// ISO 4217 code (`USD`).
    pub currency: String,
    /// Fields this version of ofc does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /ofc/mcp/grant` request: the floor gives the agent a workstation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpGrantRequest {
    /// The floor the grant is valid on.
    pub floor_id: String,
    /// The workstation and what the agent may do with it.
    pub mcp: McpGrant,
    /// Who approved it (`@floor-manager`, `@user`).
    pub granted_by: String,
}

/// `POST /ofc/mcp/grant` response: `{accepted: true, message}` or `{accepted: false, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpGrantResponse {
    /// False when the agent declines the workstation.
    pub accepted: bool,
    /// Said on acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why it declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl McpGrantResponse {
    /// `{ "accepted": true, "message": … }`.
    pub fn accept(message: impl Into<String>) -> Self {
        Self {
            accepted: true,
            message: Some(message.into()),
            reason: None,
        }
    }

    /// `{ "accepted": false, "reason": … }`.
    pub fn decline(reason: impl Into<String>) -> Self {
        Self {
            accepted: false,
            message: None,
            reason: Some(reason.into()),
        }
    }
}

/// `GET /ofc/mcp/provides` response: the MCP servers an agent offers to others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpProvidesResponse {
    /// The servers.
    #[serde(default)]
    pub provides: Vec<McpServer>,
}
