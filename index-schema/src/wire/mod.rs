//! The OFC wire types: every request and response body of the OFC protocol
//! (`shared/seeds/000…`, "OFC - Open Floor Control Protocol", 0.1.0-draft).
//!
//! One module per API, plus the workstation descriptors they share:
//!
//! - [`agent`]: what a floor sends to an agent (`/ofc/should-wake`, `/ofc/respond`, `/ofc/info`,
//!   `/ofc/mcp/grant`, `/ofc/mcp/provides`);
//! - [`floor`]: what users and agents send to a floor server (`/floors…`), plus the messages of
//!   the conversation itself;
//! - [`mcp`]: the workstation (MCP) descriptors and the grant/access bodies shared by both;
//! - [`registry`]: the OFC registry (`/registry/agents…`), which the hub serves as a compatible
//!   view.
//!
//! # Conventions
//!
//! - Field names are exactly the spec's (`snake_case`: `floor_id`, `wake_reason`,
//!   `provides_mcp`, …); the Rust field names match them, except `from` which is kept verbatim.
//! - **Unknown fields are accepted and ignored.** Agents in the wild run newer or older drafts of
//!   the protocol and add their own fields; refusing them would make a floor unable to talk to an
//!   agent over a field it does not need. The two open-ended descriptive objects,
//!   [`AgentInfo`] and [`AgentMetadata`] (and [`Pricing`]), keep what they do not know in an
//!   `extra` map so that a registry or a proxy can pass it on unchanged.
//! - A field the spec shows only sometimes is an `Option` and is left out when `None`, so every
//!   example of the spec serializes back to the same JSON. Lists that are descriptive
//!   (capabilities, examples, tool calls) default to empty and are left out when empty.
//! - Closed vocabularies (activation, permissions, statuses, wake reasons) are enums with an
//!   `Other(String)` variant: a value this version does not know round-trips instead of failing.
//! - Identifiers (`@code`, `floor-123`, `msg-456`) are plain strings: the spec does not constrain
//!   them, and a floor must be able to talk about an agent whose handle ofc would not publish.
//! - Timestamps are [`Timestamp`]s: RFC 3339 text, checked on the way in, kept verbatim.
//! - Secrets (`join_token`, `agent_token`) are [`Token`]s, whose `Debug` is redacted.
//!
//! To get the failing field's path in an error, deserialize with
//! [`crate::source::deserialize_value`] (or [`crate::source::SourceDoc::deserialize`]).

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

pub mod agent;
pub mod floor;
pub mod mcp;
pub mod registry;
mod timestamp;

pub use agent::{
    Activation, AgentCall, AgentInfo, AgentReply, McpGrantRequest, McpGrantResponse,
    McpProvidesResponse, PASS_MARKER, Pricing, ProvidesMcp, RespondRequest, RespondResponse,
    ShouldWakeRequest, ShouldWakeResponse, SignedContext, ToolCall, WakeContext, WakeReason,
    agent_url,
};
pub use floor::{
    AddAgentRequest, AddAgentResponse, AddAgentStatus, CreateFloorRequest, CreateFloorResponse,
    FloorAgent, FloorConfig, FloorState, Message, MessageList, MessagesQuery, PostMessageRequest,
    PostMessageResponse,
};
pub use mcp::{
    AccessStatus, FloorMcpServers, GrantedMcp, McpAccessRequest, McpAccessResponse, McpGrant,
    McpGrantedResponse, McpServer, Permission, UserMcpGrants,
};
pub use registry::{
    AgentMetadata, AgentStats, RegisterAgentRequest, RegisterAgentResponse, RegistryAgent,
    RegistryStatus, SearchQuery, SearchResponse, SearchResult, UpdateAgentRequest,
};
pub use timestamp::{Timestamp, TimestampError};

/// The HTTP headers of the spec's "Request Authentication" and "Floor Server Authentication".
pub mod headers {
    /// `Authorization: Bearer <token>` (floor, agent or creator token).
    pub const AUTHORIZATION: &str = "Authorization";
    /// The floor a request to an agent is made for.
    pub const FLOOR_ID: &str = "X-OFC-Floor-ID";
    /// The floor server making a request to an agent (its base URL).
    pub const SERVER: &str = "X-OFC-Server";
    /// The agent making a request to a floor server (its handle, `@code`).
    pub const AGENT_ID: &str = "X-OFC-Agent-ID";
    /// The signature over the request.
    pub const SIGNATURE: &str = "X-OFC-Signature";

    /// Every header above, for checks that a name is one ofc knows (compare case-insensitively).
    pub const ALL: [&str; 5] = [AUTHORIZATION, FLOOR_ID, SERVER, AGENT_ID, SIGNATURE];
}

/// A bearer secret carried in a body (`join_token`, `agent_token`): a
/// [`secrecy::SecretString`], so it is zeroed when dropped and its `Debug` never shows the
/// value (a logged request does not leak it). Serialized verbatim, as the protocol needs.
#[derive(Clone)]
pub struct Token(SecretString);

impl Token {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(SecretString::from(secret.into()))
    }

    /// The secret itself, for the one place that needs it (a header, a hash).
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

// Equality and hashing compare the secrets, as the `String` this wrapped did; they are for
// tests and bodies, not for checking a presented token (use a constant-time comparison).
impl PartialEq for Token {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for Token {}

impl std::hash::Hash for Token {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.expose().hash(state);
    }
}

impl Serialize for Token {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.expose())
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Token::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_redacted_in_debug_and_verbatim_on_the_wire() {
        let t = Token::new("ofc_s3cret");
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"ofc_s3cret\"");
        let back: Token = serde_json::from_str("\"ofc_s3cret\"").unwrap();
        assert_eq!(back, t);
        assert_eq!(back.expose(), "ofc_s3cret");
        assert_ne!(back, Token::new("other"));
    }
}
