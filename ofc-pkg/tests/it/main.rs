//! The integration tests of `ofc-pkg` in one test binary (one link instead of one per file):
//! each former test file is a module.

mod agent_card_fixtures;
mod client_cache;
mod client_cli;
mod client_pack;
mod client_publish_hub;
mod client_unpack;
mod fast_agent_differential;
mod floor_replay;
mod floor_serve;
mod validate_cli;
