//! Workstations (MCP servers) on the wire: how they are described, granted and requested.

use serde::{Deserialize, Serialize};

open_enum! {
    /// What an agent may do with a workstation.
    pub enum Permission {
        /// Read files or state.
        Read = "read",
        /// Change files or state.
        Write = "write",
        /// Run code.
        Execute = "execute",
    }
}

open_enum! {
    /// The state of an access request (`POST /floors/{id}/mcp/request`). The spec shows
    /// `pending` (the floor manager asks the user); a policy that decides at once answers
    /// `approved` or `denied`.
    pub enum AccessStatus {
        /// Waiting for the floor manager or the user.
        Pending = "pending",
        /// Granted; the grant follows through `POST /ofc/mcp/grant`.
        Approved = "approved",
        /// Refused.
        Denied = "denied",
    }
}

/// An MCP server as advertised: by a floor (`mcp_servers`, a floor's workstations) or by an
/// agent (`GET /ofc/mcp/provides`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// Its name on the floor (`sandbox`, `shared-files`).
    pub name: String,
    /// Where to connect (`mcp://ofc.dev/floors/123/sandbox`).
    pub url: String,
    /// Its tools or abilities.
    #[serde(default)]
    pub capabilities: Vec<String>,
}

/// The `mcp` of `POST /ofc/mcp/grant`: a workstation and the permissions granted on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpGrant {
    /// Its name on the floor.
    pub name: String,
    /// Where to connect.
    pub url: String,
    /// Its tools.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// What the agent may do.
    #[serde(default)]
    pub permissions: Vec<Permission>,
}

/// One entry of `granted_mcps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantedMcp {
    /// Its name.
    pub name: String,
    /// Where to connect.
    pub url: String,
    /// What the agent may do. Absent in a user's grant of their own MCP, where the MCP server
    /// itself decides; an empty list means no permission at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<Permission>>,
}

/// `GET /floors/{floor_id}/mcp/granted` response: the workstations an agent may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpGrantedResponse {
    /// The floor.
    pub floor_id: String,
    /// The agent asking (`@code`).
    pub agent_id: String,
    /// What it has.
    #[serde(default)]
    pub granted_mcps: Vec<GrantedMcp>,
}

/// A user's grant of their own (local) MCP servers to an agent, made without the floor server
/// ("User-provided MCPs").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMcpGrants {
    /// The agent (`@code`).
    pub agent_id: String,
    /// The user's MCP servers.
    #[serde(default)]
    pub granted_mcps: Vec<GrantedMcp>,
}

/// The MCP servers a floor advertises to an agent that joins ("Floor server can provide MCPs").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorMcpServers {
    /// The floor.
    pub floor_id: String,
    /// Its workstations.
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

/// `POST /floors/{floor_id}/mcp/request` request: an agent asks for a workstation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpAccessRequest {
    /// The workstation's name on the floor.
    pub mcp_name: String,
    /// The permissions wanted.
    #[serde(default)]
    pub permissions_needed: Vec<Permission>,
    /// Why, shown to whoever approves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST /floors/{floor_id}/mcp/request` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpAccessResponse {
    /// Where the request stands.
    pub status: AccessStatus,
    /// For the agent (`Request sent to @floor-manager for approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
