//! Floors: agents taking turns on a conversation, following the OFC draft.
//!
//! - [`controller`] decides who speaks next — events in, actions out, no I/O and no clock —
//!   following the Turn-Taking Protocol; [`mention`] parses `@name?` requests and `@name`
//!   references; [`handle`] holds the floor's names.
//! - [`agent`] is how a floor talks to agents: one [`agent::Agent`] trait over the OFC agent
//!   HTTP API ([`agent::HttpAgent`]), local processes ([`agent::ProcessAgent`]) and in-process
//!   agents; [`agent::serve`] exposes any agent over that API.
//! - [`floor`] performs the controller's decisions: concurrent should-wake rounds and respond
//!   calls under deadlines, one turn at a time, cancellation, live [`floor::FloorEvent`]s.
//! - [`furniture`] is what agents call tools on: the task board and MCP servers, and the
//!   grants that decide who may call what.
//! - [`transcript`] writes every floor as JSON lines and replays them through the controller.
//! - [`rooms`] adds sub-rooms to a floor: side conversations with their own turn-taking,
//!   kept out of `#main`'s context.
//! - [`session`] keeps every floor as a resumable event log (`.ofc/sessions/<id>.jsonl`).
//! - [`server`] is the OFC floor server API over HTTP (`ofc floor serve`).
//! - [`session_server`] is the floor server over sessions (`ofc serve`): sessions of one
//!   blueprint created, resumed, driven and watched (SSE resumable by `seq`) over HTTP.
//! - [`switchboard`] brings seed 004's Switchboard agents onto a floor: agents whose turns
//!   are JSON files in `.switchboard/`, or calls to its MCP server over HTTP/SSE.

/// ofc's own secrets in its environment, never passed on to the processes a floor starts
/// (agents, ACP agents, MCP servers, furniture commands) unless a blueprint's `env` names
/// them: the hub token, the floor server's token, the sessions database's URL (with its
/// password).
pub const SECRET_ENV: [&str; 3] = ["OFC_TOKEN", "OFC_SERVE_TOKEN", "OFC_SESSIONS_URL"];

pub mod agent;
pub mod api;
pub mod container;
pub mod controller;
pub mod error;
pub mod floor;
pub mod furniture;
pub mod handle;
pub mod lines;
pub mod llm;
pub mod mention;
pub mod rooms;
pub mod server;
pub mod session;
pub mod session_server;
pub mod switchboard;
pub mod transcript;

pub use controller::{
    Action, Activation, AgentSpec, CallId, Controller, CyclePolicy, Event, EventKind, Limits, Note,
    PASS_MARKER, PollAnswer, RoundId, TurnEndReason, TurnId, Unanswered, WakeAnswer, WakeReason,
    is_pass,
};
pub use error::{Error, Result};
pub use handle::{Handle, Speaker};
pub use mention::{Mention, MentionKind, mentions};
