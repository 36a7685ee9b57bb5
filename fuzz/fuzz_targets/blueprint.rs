#![no_main]
//! Blueprint and agent.yaml parsing never panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = index_schema::blueprint::Blueprint::from_yaml(s);
    let _ = index_schema::agent_yaml::AgentYaml::from_yaml(s);
});
