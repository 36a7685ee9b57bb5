//! Inputs the fuzzers (`fuzz/`) found, kept as regression tests. Each file in
//! `tests/fixtures/fuzz-regressions/` is named after its target.

use index_schema::name::Reference;

/// Whatever parses must print to a form that parses back to the same value.
fn reference_round_trips(s: &str) {
    if let Ok(r) = s.parse::<Reference>() {
        let printed = r.to_string();
        let again: Reference = printed
            .parse()
            .unwrap_or_else(|e| panic!("printed form {printed:?} does not parse: {e}"));
        assert_eq!(again, r);
    }
}

#[test]
fn fuzz_found_inputs_round_trip() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz-regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if name.starts_with("reference-") {
            reference_round_trips(text);
            n += 1;
        }
    }
    assert!(n > 0, "no regression inputs found in {}", dir.display());
}

#[test]
fn long_requirement_lists_are_refused_when_their_normal_form_is_too_long() {
    // `1,1,…` is short as written but semver prints it as `^1, ^1, …`.
    let req = vec!["1.1.1-a"; 30].join(",");
    let s = format!("acme/agent@{req}");
    assert!(s.len() < 256);
    let err = s.parse::<Reference>().unwrap_err().to_string();
    assert!(err.contains("normalized"), "{err}");
}
