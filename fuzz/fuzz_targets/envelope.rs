#![no_main]
//! Envelope parsing and verification never panic on any input.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(env) = index_schema::envelope::Envelope::from_json(s) {
        let key = index_schema::envelope::SecretKey::from_seed(&[7u8; 32]).public_key();
        let _ = env.verify(index_schema::media_types::AGENT_MANIFEST_V1, &[key]);
    }
});
