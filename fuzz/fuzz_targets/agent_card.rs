#![no_main]
//! AgentCard parsing (Markdown and YAML) never panics.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = index_schema::agent_card::AgentCard::from_markdown(s, Some("fuzz"));
    let _ = index_schema::agent_card::AgentCard::from_yaml(s, Some("fuzz"));
});
