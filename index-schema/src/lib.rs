//! ofc's documents and their rules.
//!
//! Every document ofc reads or writes is defined here, with no network or database I/O: names and
//! references, the agent manifest, the signed envelope (DSSE + ed25519), `agent.yaml`,
//! AgentCards, `blueprint.yaml`, the lockfile `ofc.lock`, Switchboard messages (seed 004),
//! OpenAgents projects (seed 002), the OFC wire types and the hub's HTTP
//! API ([`hub_api`], shared by `ofc-hub` and `ofc`). Parsers report problems as [`Diagnostics`]
//! that name the field and its line and column.

#[macro_use]
mod open_enum;

pub mod a2a_card;
pub mod a2a_sign;
pub mod agent_card;
pub mod agent_yaml;
pub mod blueprint;
pub mod diagnostic;
mod entry_fields;
pub mod envelope;
pub mod http_url;
pub mod hub_api;
pub mod jcs;
pub mod lockfile;
pub mod manifest;
pub mod mcp_server_json;
pub mod media_types;
pub mod name;
pub mod openagents;
pub mod source;
pub mod switchboard;
pub mod tlog;
pub mod version;
pub mod wire;

pub use diagnostic::{Diagnostic, Diagnostics, FieldPath, Position};
