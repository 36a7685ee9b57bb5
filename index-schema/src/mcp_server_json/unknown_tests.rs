//! Fields the server.json schema does not define: accepted (the schema allows them), and each
//! named in a warning at its path and line; the valid corpus has none but its one such field.

use std::path::Path;

use rstest::rstest;
use serde_json::{Value, json};

use super::ServerJson;

fn server(extra: impl FnOnce(&mut Value)) -> String {
    let mut v = json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.example/files",
        "description": "Files",
        "version": "1.0.0",
        "repository": {"url": "https://github.com/example/files", "source": "github"},
        "icons": [{"src": "https://example.com/i.png"}],
        "packages": [{
            "registryType": "npm",
            "identifier": "files",
            "version": "1.0.0",
            "transport": {"type": "stdio"},
            "packageArguments": [
                {"type": "positional", "valueHint": "dir"},
                {"type": "named", "name": "--root"},
            ],
            "environmentVariables": [{"name": "TOKEN", "variables": {"t": {"isSecret": true}}}],
        }],
        "remotes": [{"type": "sse", "url": "https://example.com/sse", "headers": [{"name": "A"}]}],
    });
    extra(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

#[rstest]
#[case("/futureField", "futureField", "not a field of a server.json")]
#[case(
    "/repository/branch",
    "repository.branch",
    "a server.json `repository`"
)]
#[case("/icons/0/alt", "icons[0].alt", "a server.json icon")]
#[case(
    "/packages/0/registry",
    "packages[0].registry",
    "a server.json package: accepted"
)]
// A field of another kind of object: a stdio transport has no URL.
#[case(
    "/packages/0/transport/url",
    "packages[0].transport.url",
    "not a field of a `stdio` transport"
)]
#[case(
    "/packages/0/packageArguments/0/name",
    "packages[0].packageArguments[0].name",
    "a positional argument"
)]
#[case(
    "/packages/0/packageArguments/1/flag",
    "packages[0].packageArguments[1].flag",
    "a named argument"
)]
#[case(
    "/packages/0/environmentVariables/0/secret",
    "packages[0].environmentVariables[0].secret",
    "environment variable"
)]
#[case(
    "/packages/0/environmentVariables/0/variables/t/hidden",
    "packages[0].environmentVariables[0].variables.t.hidden",
    "a server.json input"
)]
#[case(
    "/remotes/0/auth",
    "remotes[0].auth",
    "not a field of a `sse` transport"
)]
#[case(
    "/remotes/0/headers/0/secret",
    "remotes[0].headers[0].secret",
    "a server.json header"
)]
fn a_field_the_schema_does_not_define_is_warned_at_its_path(
    #[case] pointer: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    let text = server(|v| {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        v.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap()
            .insert(key.to_string(), json!("x"));
    });
    let s = ServerJson::from_json(&text).unwrap_or_else(|e| panic!("{e}"));
    let found: Vec<(String, Option<u32>, String)> = s
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
    assert!(
        ServerJson::from_json(&server(|_| {}))
            .unwrap()
            .warnings()
            .is_empty()
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp-server-json/valid");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let s = ServerJson::from_json(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let paths: Vec<String> = s.warnings().iter().map(|d| d.path.to_string()).collect();
        let expected: &[&str] = if name == "extra-fields.json" {
            &["futureField", "packages[0].futurePackageField"]
        } else {
            &[]
        };
        assert_eq!(paths, expected, "{name}");
        n += 1;
    }
    assert!(n >= 15);
}
