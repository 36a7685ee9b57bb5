use super::checks::{UrlRule, is_pep440_exact, url_problem};
use super::*;
use crate::media_types::AGENT_BUNDLE_V1;
use rstest::rstest;
use serde_json::json;

fn minimal() -> Value {
    json!({
        "schemaVersion": 1,
        "name": "acme/coder",
        "version": "1.0.0",
        "id": "@coder",
        "displayName": "Coder",
        "tagline": "Send me code tasks",
        "description": "Writes code.",
        "source": {"type": "remote", "endpoint": "https://coder.example.com/ofc"}
    })
}

fn with(mut v: Value, pointer: &str, new: Value) -> Value {
    *v.pointer_mut(pointer).expect("pointer exists") = new;
    v
}

fn set(mut v: Value, key: &str, new: Value) -> Value {
    v.as_object_mut().unwrap().insert(key.into(), new);
    v
}

fn errors(v: &Value) -> Vec<(String, String)> {
    match Manifest::from_value(v) {
        Ok(_) => Vec::new(),
        Err(d) => d
            .iter()
            .map(|d| (d.path.to_string(), d.message.clone()))
            .collect(),
    }
}

#[track_caller]
fn assert_error(v: &Value, path: &str, fragment: &str) {
    let errs = errors(v);
    assert!(
        errs.iter().any(|(p, m)| p == path && m.contains(fragment)),
        "wanted {path}: …{fragment}…, got {errs:#?}"
    );
}

#[test]
fn minimal_manifest_parses_with_defaults() {
    let m = Manifest::from_value(&minimal()).unwrap();
    assert_eq!(m.activation, Activation::Mention);
    assert_eq!(m.name.to_string(), "acme/coder");
    assert!(m.capabilities.is_empty());
    assert_eq!(m.source.kind(), "remote");
}

#[test]
fn to_json_bytes_is_compact_and_ordered() {
    let m = Manifest::from_value(&minimal()).unwrap();
    let text = String::from_utf8(m.to_json_bytes()).unwrap();
    assert!(
        text.starts_with(
            r#"{"schemaVersion":1,"name":"acme/coder","version":"1.0.0","id":"@coder""#
        ),
        "{text}"
    );
    assert!(!text.contains('\n'));
    assert_eq!(Manifest::from_json(&text).unwrap(), m);
    assert_eq!(m.digest(), Digest::of(text.as_bytes()));
}

#[rstest]
#[case("/name", json!("Acme Corp/coder"), "name", "publisher `Acme Corp` contains a space")]
#[case("/version", json!("^1.0"), "version", "is a version range")]
#[case("/version", json!("one"), "version", "is not a semver version")]
#[case("/version", json!("1.0.0+build5"), "version", "build metadata")]
#[case("/id", json!("@user"), "id", "reserved for the floor")]
#[case("/id", json!("@all"), "id", "reserved for the floor")]
#[case("/id", json!("@ofc"), "id", "reserved for the floor")]
#[case("/id", json!("@tool-runner"), "id", "reserved for the floor")]
#[case("/id", json!("coder"), "id", "must start with `@`")]
#[case("/displayName", json!(""), "displayName", "must not be empty")]
#[case("/displayName", json!("a\nb"), "displayName", "single line")]
#[case("/tagline", json!("x".repeat(201)), "tagline", "201 characters long, more than the limit of 200")]
#[case("/tagline", json!("safe \u{202E}txt.exe"), "tagline", "bidirectional override")]
#[case("/description", json!("x".repeat(4001)), "description", "limit of 4000")]
#[case("/description", json!("nul\u{0}"), "description", "control character")]
#[case("/schemaVersion", json!(2), "schemaVersion", "unsupported schemaVersion 2")]
#[case("/schemaVersion", json!("1"), "schemaVersion", "wrong type")]
#[case("/source/type", json!("ftp"), "source.type", "unknown source type `ftp`")]
fn field_rules(#[case] pointer: &str, #[case] value: Value, #[case] path: &str, #[case] msg: &str) {
    assert_error(&with(minimal(), pointer, value), path, msg);
}

#[rstest]
#[case("readme", json!("x".repeat(MAX_README_BYTES + 1)), "readme", "bytes long")]
#[case("license", json!("MIT; rm -rf"), "license", "SPDX")]
#[case("homepage", json!("ftp://x.org"), "homepage", "has scheme `ftp`")]
#[case("homepage", json!("javascript:alert(1)"), "homepage", "not an absolute URL")]
#[case("repository", json!("https://user:pw@github.com/x"), "repository", "credentials")]
#[case("repository", json!("https://git hub.com"), "repository", "contains a space")]
#[case("keywords", json!(vec!["k"; 31]), "keywords", "31 entries, more than the limit of 30")]
#[case("keywords", json!(["data", "Data"]), "keywords[1]", "duplicate keyword")]
#[case("keywords", json!(["x".repeat(41)]), "keywords[0]", "limit of 40")]
#[case("examples", json!(vec!["e"; 21]), "examples", "limit of 20")]
#[case("examples", json!(["x".repeat(501)]), "examples[0]", "limit of 500")]
#[case("activation", json!("sometimes"), "activation", "unknown variant `sometimes`")]
#[case("providesMcp", json!({"url": "file:///etc/passwd"}), "providesMcp.url", "scheme `file`")]
#[case("providesMcp", json!({"url": "mcp://x.dev/t", "capabilities": ["a b"]}), "providesMcp.capabilities[0]", "tool name")]
#[case("requires", json!({"tools": ["t", "t"]}), "requires.tools[1]", "duplicate tool name")]
#[case("requires", json!({"model": ""}), "requires.model", "must not be empty")]
#[case("requires", json!({"gpu": true}), "requires.gpu", "unknown field `gpu`")]
#[case("pricing", json!({"currency": "USD"}), "pricing", "set `perHour` or `perMillionTokens`")]
#[case("pricing", json!({"perHour": -1, "currency": "USD"}), "pricing.perHour", "between 0 and")]
#[case("pricing", json!({"perHour": 1, "currency": "usd"}), "pricing.currency", "ISO 4217")]
#[case("extra", json!(1), "extra", "unknown field `extra`")]
fn optional_field_rules(
    #[case] key: &str,
    #[case] value: Value,
    #[case] path: &str,
    #[case] msg: &str,
) {
    assert_error(&set(minimal(), key, value), path, msg);
}

#[test]
fn missing_field_names_the_field() {
    let mut v = minimal();
    v.as_object_mut().unwrap().remove("tagline");
    assert_error(&v, "tagline", "missing field `tagline`");
    let v = set(minimal(), "source", json!({"type": "docker", "port": 8080}));
    assert_error(&v, "source.image", "missing field `image`");
}

fn cap(name: &str, input: Value) -> Value {
    json!({"name": name, "description": "does things", "inputSchema": input, "outputSchema": {}})
}

#[rstest]
#[case(json!({"type": "strin"}), "is not a valid JSON Schema")]
#[case(json!({"type": "object", "properties": {"a": {"minLength": -1}}}), "is not a valid JSON Schema")]
#[case(json!({"$ref": "https://evil.example/schema.json"}), "refers outside the schema")]
#[case(json!({"properties": {"a": {"$ref": "other.json#/x"}}}), "refers outside the schema")]
#[case(json!({"$ref": "#/definitions/missing"}), "is not a valid JSON Schema")]
#[case(json!({"$schema": "https://example.com/my-meta"}), "not a JSON Schema draft ofc knows")]
#[case(json!({"type": "string", "pattern": "(unclosed"}), "is not a valid JSON Schema")]
#[case(json!("string"), "must be a JSON Schema object")]
#[case(json!(null), "must be a JSON Schema object")]
fn bad_schemas_are_refused(#[case] schema: Value, #[case] msg: &str) {
    let v = set(
        minimal(),
        "capabilities",
        json!([cap("ok", json!({})), cap("bad", schema)]),
    );
    let errs = errors(&v);
    assert!(
        errs.iter()
            .any(|(p, m)| p.starts_with("capabilities[1].inputSchema") && m.contains(msg)),
        "wanted …{msg}…, got {errs:#?}"
    );
}

#[test]
fn good_schemas_are_accepted() {
    let schemas = [
        json!({}),
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"type": "integer"}}, "$ref": "#/definitions/a"}),
        json!({"$defs": {"n": {"type": "number"}}, "properties": {"x": {"$ref": "#/$defs/n"}}, "enum": [{"$ref": "https://data.not.a.ref"}]}),
    ];
    for s in schemas {
        let v = set(minimal(), "capabilities", json!([cap("c", s.clone())]));
        assert_eq!(errors(&v), Vec::<(String, String)>::new(), "{s}");
    }
}

#[test]
fn capability_rules() {
    let v = set(
        minimal(),
        "capabilities",
        json!([
            cap("search", json!({})),
            cap("Search", json!({})),
            cap("bad name", json!({}))
        ]),
    );
    assert_error(
        &v,
        "capabilities[1].name",
        "duplicate capability name `Search`",
    );
    assert_error(&v, "capabilities[2].name", "contains ' '");
    let many: Vec<Value> = (0..65).map(|i| cap(&format!("c{i}"), json!({}))).collect();
    assert_error(
        &set(minimal(), "capabilities", json!(many)),
        "capabilities",
        "limit of 64",
    );
    let mut c = cap("c", json!({}));
    c["authorizedRequesters"] = json!(["@data", "nope"]);
    assert_error(
        &set(minimal(), "capabilities", json!([c])),
        "capabilities[0].authorizedRequesters[1]",
        "must start with `@`",
    );
    let mut c = cap("c", json!({}));
    c["authorizedRequesters"] = Value::Null;
    assert!(errors(&set(minimal(), "capabilities", json!([c]))).is_empty());
    let mut c = cap("c", json!({}));
    c["input_schema"] = json!({});
    assert_error(
        &set(minimal(), "capabilities", json!([c])),
        "capabilities[0].input_schema",
        "unknown field",
    );
}

#[test]
fn all_rule_violations_are_reported_together() {
    let v = set(
        set(
            with(minimal(), "/tagline", json!("")),
            "homepage",
            json!("ftp://x"),
        ),
        "keywords",
        json!(["", "ok"]),
    );
    let paths: Vec<String> = errors(&v).into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["tagline", "homepage", "keywords[0]"]);
}

fn src(s: Value) -> Value {
    set(minimal(), "source", s)
}

fn digest() -> String {
    format!("sha256:{}", "a".repeat(64))
}

#[rstest]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}))]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "cards/coder.md"}))]
#[case(json!({"type": "pip", "package": "ofc-coder", "version": "1.2.0", "entryPoint": "ofc-coder"}))]
#[case(json!({"type": "pip", "package": "Ofc.Coder_2", "version": "1!2.0rc1.post3.dev4+local.7", "index": "http://127.0.0.1:3141/simple", "entryPoint": "ofc_coder.main:run"}))]
#[case(json!({"type": "npm", "package": "@acme/coder", "version": "1.2.3-beta.1", "registry": "https://registry.npmjs.org", "bin": "coder"}))]
#[case(json!({"type": "docker", "image": format!("ghcr.io/acme/coder:1.2@{}", digest()), "port": 8080}))]
#[case(json!({"type": "docker", "image": format!("localhost:5000/coder@{}", digest()), "port": 1}))]
#[case(json!({"type": "remote", "endpoint": "http://localhost:8080/ofc"}))]
#[case(json!({"type": "remote", "endpoint": "http://[::1]:8080"}))]
fn good_sources(#[case] s: Value) {
    assert_eq!(errors(&src(s)), Vec::<(String, String)>::new());
}

#[rstest]
#[case(json!({"type": "bundle", "digest": "sha256:xyz", "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}), "source.digest", "not a hex digit")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 0, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}), "source.size", "more than 0")]
#[case(json!({"type": "bundle", "digest": digest(), "size": -1, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml"}), "source.size", "")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": "application/gzip", "entrypoint": "agent.yaml"}), "source.mediaType", "not the bundle media type")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "../agent.yaml"}), "source.entrypoint", "`..` component")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "/agent.yaml"}), "source.entrypoint", "relative")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "a\\agent.yaml"}), "source.entrypoint", "backslash")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "C:agent.yaml"}), "source.entrypoint", "contains `:`")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "run.sh"}), "source.entrypoint", "AgentCard")]
#[case(json!({"type": "bundle", "digest": digest(), "size": 10, "mediaType": AGENT_BUNDLE_V1, "entrypoint": "agent.yaml", "extra": 1}), "source.extra", "unknown field `extra`")]
#[case(json!({"type": "pip", "package": "x", "version": ">=1.0", "entryPoint": "x"}), "source.version", "version range")]
#[case(json!({"type": "pip", "package": "x", "version": "~=1.0", "entryPoint": "x"}), "source.version", "version range")]
#[case(json!({"type": "pip", "package": "x", "version": "*", "entryPoint": "x"}), "source.version", "version range")]
#[case(json!({"type": "pip", "package": "x", "version": "1.0-beta", "entryPoint": "x"}), "source.version", "normal form `1.0b0`")]
#[case(json!({"type": "pip", "package": "-x", "version": "1.0", "entryPoint": "x"}), "source.package", "not a Python package name")]
#[case(json!({"type": "pip", "package": "x", "version": "1.0", "entryPoint": "-x"}), "source.entryPoint", "console script")]
#[case(json!({"type": "pip", "package": "x", "version": "1.0", "entryPoint": "x", "index": "http://pypi.example.com/simple"}), "source.index", "use `https://`")]
#[case(json!({"type": "npm", "package": "Coder", "version": "1.0.0", "bin": "x"}), "source.package", "contains 'C'")]
#[case(json!({"type": "npm", "package": "@acme", "version": "1.0.0", "bin": "x"}), "source.package", "`@scope/name`")]
#[case(json!({"type": "npm", "package": "x", "version": "^1.0.0", "bin": "x"}), "source.version", "version range")]
#[case(json!({"type": "npm", "package": "x", "version": "1.0.0", "bin": "--eval"}), "source.bin", "")]
#[case(json!({"type": "docker", "image": "acme/coder:latest", "port": 8080}), "source.image", "not pinned by digest")]
#[case(json!({"type": "docker", "image": "acme/coder@sha256:abc", "port": 8080}), "source.image", "not pinned by a valid digest")]
#[case(json!({"type": "docker", "image": format!("Acme/coder@{}", digest()), "port": 8080}), "source.image", "invalid repository component")]
#[case(json!({"type": "docker", "image": format!("acme/coder@{}", digest()), "port": 0}), "source.port", "between 1 and 65535")]
#[case(json!({"type": "docker", "image": format!("acme/coder@{}", digest()), "port": 70000}), "source.port", "")]
#[case(json!({"type": "remote", "endpoint": "http://agent.example.com/ofc"}), "source.endpoint", "use `https://`")]
#[case(json!({"type": "remote", "endpoint": "https://agent.example.com/ofc/"}), "source.endpoint", "must not end with `/`")]
#[case(json!({"type": "remote", "endpoint": "https://agent.example.com/ofc?x=1"}), "source.endpoint", "query")]
#[case(json!({"type": "remote", "endpoint": "https:///ofc"}), "source.endpoint", "no host")]
#[case(json!({"type": "remote"}), "source.endpoint", "missing field `endpoint`")]
#[case(json!({"endpoint": "https://x.org"}), "source.type", "missing field `type`")]
#[case(json!("remote"), "source", "must be an object")]
fn bad_sources(#[case] s: Value, #[case] path: &str, #[case] msg: &str) {
    assert_error(&src(s), path, msg);
}

#[test]
fn positions_point_at_the_field() {
    let text = "{\n  \"schemaVersion\": 1,\n  \"name\": \"acme/coder\",\n  \"version\": \"1.0.0\",\n  \"id\": \"@coder\",\n  \"displayName\": \"C\",\n  \"tagline\": \"\",\n  \"description\": \"d\",\n  \"source\": {\"type\": \"docker\", \"image\": \"x\", \"port\": 1}\n}";
    let err = Manifest::from_json(text).unwrap_err();
    let tagline = err
        .iter()
        .find(|d| d.path.to_string() == "tagline")
        .unwrap();
    assert_eq!(tagline.position.map(|p| (p.line, p.col)), Some((7, 14)));
    let image = err
        .iter()
        .find(|d| d.path.to_string() == "source.image")
        .unwrap();
    assert_eq!(image.position.map(|p| p.line), Some(9));
}

#[test]
fn oversized_text_is_refused_before_parsing() {
    let text = " ".repeat(MAX_MANIFEST_BYTES + 1);
    let err = Manifest::from_json(&text).unwrap_err();
    assert!(err.to_string().contains("more than the limit"), "{err}");
}

#[test]
fn non_objects_and_garbage_are_refused() {
    for text in ["[]", "null", "\"x\"", "{", "", "{\"schemaVersion\": 1e400}"] {
        assert!(Manifest::from_json(text).is_err(), "{text}");
    }
}

#[rstest]
#[case("1.0", true)]
#[case("1.2.3", true)]
#[case("2!1.0rc1", true)]
#[case("1.0.post2.dev3", true)]
#[case("1.0a1", true)]
#[case("1.0+ubuntu.1", true)]
#[case("1.0.", false)]
#[case("v1.0", false)]
#[case("1.0rc", false)]
#[case("1.0+", false)]
#[case("!1.0", false)]
#[case("1.0-RC1", false)]
#[case("", false)]
fn pep440(#[case] v: &str, #[case] ok: bool) {
    assert_eq!(is_pep440_exact(v), ok, "{v}");
}

#[test]
fn loopback_hosts() {
    // Plain http:// is only for this machine, in the URLs a client fetches from.
    for h in [
        "localhost",
        "localhost:80",
        "127.0.0.1",
        "127.1.2.3:9",
        "[::1]",
        "[::1]:8080",
    ] {
        let u = format!("http://{h}/x");
        assert_eq!(url_problem(&u, UrlRule::Fetch), None, "{h}");
    }
    for h in [
        "localhost.evil.com",
        "127.0.0.1.evil.com",
        "128.0.0.1",
        "[::2]",
        "example.com",
    ] {
        let u = format!("http://{h}/x");
        let p = url_problem(&u, UrlRule::Fetch).unwrap_or_default();
        assert!(p.contains("other than localhost"), "{h}: {p}");
    }
}
