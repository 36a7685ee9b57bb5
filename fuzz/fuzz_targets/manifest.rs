#![no_main]
//! Manifest parsing never panics, and a valid manifest survives its own serialization.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(m) = index_schema::manifest::Manifest::from_json(s) {
        let bytes = m.to_json_bytes();
        let text = std::str::from_utf8(&bytes).expect("manifest JSON is UTF-8");
        let again = index_schema::manifest::Manifest::from_json(text).expect("serialized manifest parses");
        assert_eq!(again, m);
    }
});
