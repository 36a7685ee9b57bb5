//! The integration tests of `index-schema` in one test binary (one link instead of one per file):
//! each former test file is a module.

mod a2a_differential;
mod agent_yaml_fixtures;
mod blueprint_fixtures;
mod envelope_refusals;
mod envelope_vectors;
mod fuzz_regressions;
mod lockfile_fixtures;
mod manifest_fixtures;
mod manifest_roundtrip;
mod mcp_server_json_fixtures;
mod names_api;
mod unknown_fields;
mod wire_cases;
mod wire_seed000;
