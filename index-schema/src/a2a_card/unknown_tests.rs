//! Fields A2A v0.3 does not define: accepted (as the A2A SDK accepts them), and each named in a
//! warning at its path and line; the fields of the valid corpus that A2A defines are not.

use std::path::Path;

use rstest::rstest;
use serde_json::{Value, json};

use super::A2aCard;

fn card(extra: impl FnOnce(&mut Value)) -> String {
    let mut v = json!({
        "name": "Echo",
        "description": "Echoes",
        "url": "https://a.example/a2a",
        "version": "1.0.0",
        "capabilities": {"extensions": [{"uri": "urn:x"}]},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "d", "tags": ["t"]}],
        "additionalInterfaces": [{"url": "https://a.example/b", "transport": "JSONRPC"}],
        "provider": {"organization": "O", "url": "https://o.example"},
        "securitySchemes": {"key": {"type": "apiKey", "name": "X-Key", "in": "header"}},
        "signatures": [{"protected": "p", "signature": "s"}],
    });
    extra(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

#[rstest]
#[case("/x_vendor", "x_vendor", "not a field of an A2A agent card (v0.3)")]
// Where a field of another object is written: streaming belongs in `capabilities`.
#[case("/streaming", "streaming", "the fields it knows: `name`")]
#[case(
    "/capabilities/streamng",
    "capabilities.streamng",
    "an A2A card's `capabilities`"
)]
#[case(
    "/capabilities/extensions/0/uris",
    "capabilities.extensions[0].uris",
    "capability extension"
)]
#[case(
    "/skills/0/input_modes",
    "skills[0].input_modes",
    "not a field of an A2A skill"
)]
#[case(
    "/additionalInterfaces/0/preferred",
    "additionalInterfaces[0].preferred",
    "an A2A interface"
)]
#[case("/provider/name", "provider.name", "`provider`")]
#[case("/signatures/0/alg", "signatures[0].alg", "an A2A card signature")]
#[case(
    "/securitySchemes/key/scheme",
    "securitySchemes.key.scheme",
    "an A2A `apiKey` security scheme"
)]
fn a_field_a2a_does_not_define_is_warned_at_its_path(
    #[case] pointer: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    let text = card(|v| {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        v.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap()
            .insert(key.to_string(), json!(true));
    });
    let c = A2aCard::from_json(&text).unwrap_or_else(|e| panic!("{e}"));
    let found: Vec<(String, Option<u32>, String)> = c
        .warnings()
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                d.position.map(|p| p.line),
                d.message.clone(),
            )
        })
        .collect();
    assert!(
        found
            .iter()
            .any(|(p, line, m)| p == path && line.is_some() && m.contains(message)),
        "expected {path}: …{message}…, got {found:#?}"
    );
}

#[test]
fn the_valid_corpus_has_warnings_only_for_undefined_fields() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a-cards");
    assert!(
        A2aCard::from_json(&card(|_| {}))
            .unwrap()
            .warnings()
            .is_empty()
    );
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("ok-") {
            continue;
        }
        n += 1;
        let c = A2aCard::from_json(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let paths: Vec<String> = c.warnings().iter().map(|d| d.path.to_string()).collect();
        let expected: &[&str] = if name == "ok-unknown-field.json" {
            &["x_vendor"]
        } else {
            &[]
        };
        assert_eq!(paths, expected, "{name}");
    }
    assert!(n >= 10);
}
