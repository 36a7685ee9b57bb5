//! What an LLM agent's tool calls are routed to: toolboxes, one per granted workstation.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use index_schema::wire::McpGrant;
use serde_json::{Map, Value};

/// One tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The tool's name inside its toolbox (`bash`, `add_task`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments object.
    pub parameters: Value,
}

/// A tool call that did not produce a result. Its text is what the model is shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// A set of tools (a workstation's MCP server, a piece of furniture).
#[async_trait]
pub trait Toolbox: Send + Sync + fmt::Debug {
    /// The tools it offers.
    async fn tools(&self) -> Result<Vec<ToolSpec>, ToolError>;
    /// Calls one of them.
    async fn call(&self, tool: &str, arguments: Map<String, Value>) -> Result<Value, ToolError>;

    /// Why `tool`, which [`Toolbox::tools`] did not list, cannot be called — when the
    /// toolbox has it but withholds it (a tool of a class the agent holds no grant for). The
    /// model then reads this instead of "unknown tool". `None`: the toolbox does not know it.
    fn refusal(&self, _tool: &str) -> Option<String> {
        None
    }
}

/// Turns a workstation grant (`POST /ofc/mcp/grant`) into a toolbox: the MCP client side,
/// which the workstation work provides.
#[async_trait]
pub trait ToolConnector: Send + Sync + fmt::Debug {
    /// Connects to the granted workstation.
    async fn connect(&self, grant: &McpGrant) -> Result<Arc<dyn Toolbox>, ToolError>;
}
