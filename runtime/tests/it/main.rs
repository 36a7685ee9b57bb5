//! The integration tests of `runtime` in one test binary (one link instead of one per file):
//! each former test file is a module.

mod acp;
mod agent_http;
mod common;
mod controller_events;
mod controller_props;
mod controller_roster;
mod controller_table;
mod floor_agents;
mod floor_server;
mod furniture;
mod llm_agent;
mod openagents;
mod sandbox;
mod session;
mod support;
mod switchboard;
mod switchboard_mcp;
