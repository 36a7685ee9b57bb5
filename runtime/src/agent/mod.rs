//! Agents as the floor sees them: one [`Agent`] trait, whatever carries the calls.
//!
//! - [`HttpAgent`] speaks the OFC agent HTTP API of the draft (`/ofc/info`,
//!   `/ofc/should-wake`, `/ofc/respond` — optionally streamed as server-sent events —,
//!   `/ofc/mcp/grant`, `/ofc/mcp/provides`) to an agent at an endpoint URL.
//! - [`ProcessAgent`] starts a command with a port in `OFC_PORT`, waits until its
//!   `/ofc/info` answers, talks to it over HTTP and stops it with the floor.
//! - Anything else (an in-process agent, later built-in LLM agents and ACP) implements the
//!   trait directly; [`serve()`] exposes any implementation over the OFC HTTP API.
//!
//! Deadlines are the floor's business: it wraps every call in its own timeout and drops the
//! future when the deadline passes, which cancels the request.

pub mod acp;
mod func;
mod http;
mod process;
mod serve;
pub mod sse;

use std::fmt;

use async_trait::async_trait;
use index_schema::wire::{
    AgentInfo, McpGrantRequest, McpGrantResponse, McpProvidesResponse, RespondRequest,
    RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};
use tokio::sync::mpsc;

pub use acp::{AcpAgent, AcpCommand, AcpMcpServer, Permissions, expand_env};
pub use func::FnAgent;
pub use http::HttpAgent;
pub(crate) use http::error_chain;
pub use process::{ProcessAgent, ProcessCommand, STOP_GRACE, SpawnHook};
#[cfg(unix)]
pub use process::{group_alive, process_alive, signal_group, signal_process};
pub use serve::{AgentServer, router, serve};

/// An agent of a floor. Every method is one call of the OFC agent API.
///
/// Implementations must be cancel-safe: the floor drops the future of a call whose deadline
/// has passed.
#[async_trait]
pub trait Agent: Send + Sync + fmt::Debug {
    /// `GET /ofc/info`: who the agent is.
    async fn info(&self) -> Result<AgentInfo, AgentError>;

    /// `POST /ofc/should-wake`: whether it wants to respond to the last message.
    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError>;

    /// `POST /ofc/respond`: its response. When `deltas` is given, the agent may stream its
    /// content as it is produced; the returned response is authoritative either way.
    async fn respond(
        &self,
        request: &RespondRequest,
        deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError>;

    /// `POST /ofc/mcp/grant`: access to a workstation. Declines unless implemented.
    async fn grant_mcp(&self, _request: &McpGrantRequest) -> Result<McpGrantResponse, AgentError> {
        Ok(McpGrantResponse::decline(
            "this agent does not use workstations",
        ))
    }

    /// `GET /ofc/mcp/provides`: the workstations it offers. None unless implemented.
    async fn provides_mcp(&self) -> Result<McpProvidesResponse, AgentError> {
        Ok(McpProvidesResponse {
            provides: Vec::new(),
        })
    }

    /// Releases what the agent holds (a process, connections). Called once when the floor
    /// closes or the agent leaves it; calls after it may fail.
    async fn shutdown(&self) {}
}

/// Where a streaming agent sends pieces of its content as it produces them.
#[derive(Debug, Clone)]
pub struct Deltas(mpsc::UnboundedSender<String>);

impl Deltas {
    /// A sink and the receiver of what is sent to it.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(tx), rx)
    }

    /// Sends a piece of content. Returns `false` when nobody listens any more (the call was
    /// cancelled); the agent may stop producing.
    pub fn send(&self, piece: impl Into<String>) -> bool {
        self.0.send(piece.into()).is_ok()
    }
}

/// Why a call to an agent failed. Carried into the floor's events as text.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The agent could not be reached or the connection broke.
    #[error("could not reach the agent: {0}")]
    Transport(String),
    /// The agent answered with an HTTP error.
    #[error("the agent answered HTTP {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The agent's answer is not a valid OFC body.
    #[error("the agent's answer is not valid: {0}")]
    InvalidBody(String),
    /// A streamed response ended before its final event.
    #[error("the agent's stream ended before the response was complete")]
    StreamTruncated,
    /// The agent reported an error in its stream.
    #[error("the agent reported an error: {0}")]
    Reported(String),
    /// The agent (process) is not running.
    #[error("the agent is not running: {0}")]
    NotRunning(String),
    /// An in-process agent failed.
    #[error("{0}")]
    Other(String),
}
