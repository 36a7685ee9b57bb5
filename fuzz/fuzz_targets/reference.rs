#![no_main]
//! References and names never panic, and whatever parses prints back to itself.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(r) = s.parse::<index_schema::name::Reference>() {
        let printed = r.to_string();
        let again: index_schema::name::Reference = printed.parse().expect("printed reference parses");
        assert_eq!(again, r);
    }
    let _ = s.parse::<index_schema::name::AgentName>();
    let _ = s.parse::<index_schema::name::AgentHandle>();
});
