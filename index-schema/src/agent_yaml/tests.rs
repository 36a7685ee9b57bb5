use super::*;
use crate::manifest::BundleSource;
use crate::media_types::AGENT_BUNDLE_V1;
use crate::name::Digest;
use proptest::prelude::*;
use rstest::rstest;

const SEED: &str = r#"id: "@coder"
name: "Qwen3 Coder"
model: qwen3:32b
endpoint: http://localhost:11434/v1  # ollama

prompt: |
  You are an expert programmer. Write clean, working code.
  Use the tools available to execute and test your code.

activation: mention
memory: summary        # buffer, window, summary, rag
context_window: 20     # messages

tools:
  - bash
  - filesystem
"#;

fn err(text: &str) -> (String, Option<u32>, String) {
    let e = AgentYaml::from_yaml(text).unwrap_err();
    let d = &e.0[0];
    (
        d.path.to_string(),
        d.position.map(|p| p.line),
        d.message.clone(),
    )
}

#[test]
fn seed_example_loads() {
    let a = AgentYaml::from_yaml(SEED).unwrap();
    assert_eq!(a.id.to_string(), "@coder");
    assert_eq!(a.model.as_deref(), Some("qwen3:32b"));
    assert_eq!(a.memory, Some(Memory::Summary));
    assert_eq!(a.context_window, Some(20));
    assert_eq!(a.tools, ["bash", "filesystem"]);
    assert!(a.prompt.unwrap().ends_with("test your code.\n"));
}

#[rstest]
#[case("id: coder\nmodel: m\n", "id", "")]
#[case("id: \"@user\"\nmodel: m\n", "id", "belongs to the floor")]
#[case("model: m\n", "id", "missing field")]
#[case(
    "id: \"@a\"\nmodel: m\nactivation: often\n",
    "activation",
    "unknown variant"
)]
#[case("id: \"@a\"\nmodel: m\nmemory: forever\n", "memory", "unknown variant")]
#[case(
    "id: \"@a\"\nmodel: m\ncontext_window: 0\n",
    "context_window",
    "positive"
)]
#[case("id: \"@a\"\nmodel: m\ncontext_window: -3\n", "context_window", "")]
#[case("id: \"@a\"\nmodel: m\ncontext_window: 2.5\n", "context_window", "")]
#[case("id: \"@a\"\nmodel: m\ntools: bash\n", "tools", "")]
#[case("id: \"@a\"\nmodel: m\ntools: [\"\"]\n", "tools[0]", "empty")]
#[case("id: \"@a\"\nmodel: m\ncolour: red\n", "colour", "unknown field")]
#[case("id: \"@a\"\n", "model", "how it runs")]
#[case(
    "id: \"@a\"\nmodel: m\ntemperature: 3\n",
    "temperature",
    "between 0 and 2"
)]
#[case("id: \"@a\"\nmodel: m\nendpoint: localhost\n", "endpoint", "http")]
#[case("id: \"@a\"\nmodel: m\nhomepage: example.com\n", "homepage", "http")]
#[case("id: \"@a\"\nmodel: m\nversion: \"^1\"\n", "version", "")]
#[case("id: \"@a\"\nmodel: m\npublisher: ofc\n", "publisher", "reserved")]
#[case(
    "id: \"@a\"\nmodel: m\npublisher: acme\npackage: acme/a\n",
    "package",
    "not both"
)]
#[case("id: \"@a\"\nmodel: m\npackage: acme\n", "package", "")]
#[case(
    "id: \"@a\"\ncommand: m\nenv: {\"A-B\": x}\n",
    "env.A-B",
    "environment variable"
)]
#[case("id: \"@a\"\nmodel: m\nargs: [x]\n", "args", "command")]
#[case(
    "id: \"@a\"\ncommand: x\nsource: {type: remote, endpoint: \"https://a.example/ofc\"}\n",
    "command",
    "source"
)]
#[case(
    "id: \"@a\"\nsource: {type: ftp, url: x}\n",
    "source.type",
    "unknown variant"
)]
#[case(
    "id: \"@a\"\nsource: {type: pip, package: x, version: \"1.0\"}\n",
    "source.entry_point",
    "missing"
)]
#[case(
    "id: \"@a\"\nsource: {type: npm, package: x, version: \"^1.0.0\", bin: x}\n",
    "source.version",
    "range"
)]
#[case(
    "id: \"@a\"\nsource: {type: docker, image: \"ghcr.io/a/b:1\", port: 8080}\n",
    "source.image",
    "pinned by digest"
)]
#[case(
    "id: \"@a\"\nsource: {type: remote, endpoint: \"ftp://x\"}\n",
    "source.endpoint",
    "http"
)]
#[case("id: \"@a\"\nsource: [remote]\n", "source", "mapping")]
#[case(
    "id: \"@a\"\nmodel: m\ncapabilities:\n  - name: a\n  - name: a\n",
    "capabilities[1].name",
    "duplicate"
)]
#[case(
    "id: \"@a\"\nmodel: m\ncapabilities:\n  - name: a\n    input_schema: 3\n",
    "capabilities[0].input_schema",
    "JSON Schema"
)]
#[case(
    "id: \"@a\"\nmodel: m\ncapabilities:\n  - name: a\n    inputSchema: {}\n",
    "capabilities[0].inputSchema",
    "unknown field"
)]
#[case(
    "id: \"@a\"\nmodel: m\ncapabilities:\n  - name: a\n    authorized_requesters: [bob]\n",
    "capabilities[0].authorized_requesters[0]",
    "@"
)]
#[case(
    "id: \"@a\"\nmodel: m\ncapabilities:\n  - [a]\n",
    "capabilities[0]",
    ""
)]
#[case("- id\n", "(document)", "mapping")]
#[case("", "(document)", "empty")]
fn rules(#[case] text: &str, #[case] path: &str, #[case] message: &str) {
    let (p, _, m) = err(text);
    assert_eq!(p, path, "{m}");
    assert!(m.contains(message), "{m}");
}

#[test]
fn errors_point_at_lines() {
    let (p, line, _) = err("id: \"@a\"\nmodel: m\n\nactivation: sometimes\n");
    assert_eq!((p.as_str(), line), ("activation", Some(4)));
    let (_, line, _) = err("id: \"@a\"\nmodel: m\ntemperature: 7\n");
    assert_eq!(line, Some(3));
}

#[test]
fn capabilities_accept_names_and_objects() {
    let a = AgentYaml::from_yaml(
            "id: \"@a\"\nmodel: m\ncapabilities:\n  - bash\n  - name: run_sql\n    description: Runs SQL\n    input_schema: {type: object}\n    keywords: [sql]\n    authorized_requesters: [\"@data\"]\n",
        )
        .unwrap();
    assert_eq!(a.capabilities[0].name, "bash");
    assert_eq!(
        a.capabilities[1].authorized_requesters.as_ref().unwrap()[0].to_string(),
        "@data"
    );
}

#[test]
fn hub_name_from_package_or_publisher() {
    let a = AgentYaml::from_yaml("id: \"@coder\"\nmodel: m\npublisher: acme\n").unwrap();
    assert_eq!(a.agent_name().unwrap().to_string(), "acme/coder");
    let a = AgentYaml::from_yaml("id: \"@coder\"\nmodel: m\npackage: acme/coder-qwen3\n").unwrap();
    assert_eq!(a.agent_name().unwrap().to_string(), "acme/coder-qwen3");
    assert!(AgentYaml::from_yaml(SEED).unwrap().agent_name().is_none());
}

fn bundle() -> Source {
    Source::Bundle(BundleSource {
        digest: Digest::of(b"bundle"),
        size: 6,
        media_type: AGENT_BUNDLE_V1.to_string(),
        entrypoint: "agent.yaml".to_string(),
    })
}

#[test]
fn to_manifest_fills_gaps_from_defaults() {
    let a = AgentYaml::from_yaml(SEED).unwrap();
    let e = a.to_manifest(ManifestDefaults::default()).unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert_eq!(
        paths,
        ["package", "version", "tagline", "description", "source"]
    );

    let defaults = ManifestDefaults {
        publisher: Some("aioverlords".into()),
        version: Some(Version::new(1, 0, 0)),
        tagline: Some("Send me code".into()),
        description: Some("Writes code".into()),
        source: Some(bundle()),
        ..ManifestDefaults::default()
    };
    let m = a.to_manifest(defaults).unwrap();
    assert_eq!(m.name.to_string(), "aioverlords/coder");
    assert_eq!(m.display_name, "Qwen3 Coder");
    assert_eq!(
        m.requires.as_ref().unwrap().model.as_deref(),
        Some("qwen3:32b")
    );
    assert_eq!(m.requires.unwrap().tools, ["bash", "filesystem"]);
    assert!(matches!(m.source, Source::Bundle(_)));
}

#[test]
fn to_manifest_uses_the_files_source_and_capabilities() {
    let a = AgentYaml::from_yaml(
            "id: \"@scraper\"\nname: Scraper\npackage: webtools/scraper\nversion: 2.1.0\ntagline: Scrapes\ndescription: Scrapes pages\nsource: {type: pip, package: ofc-agent-scraper, version: \"2.1.0\", entry_point: ofc-scraper}\ncapabilities:\n  - name: scrape\n    description: Scrape a URL\n    input_schema: {type: object, properties: {url: {type: string}}}\n",
        )
        .unwrap();
    let m = a
        .to_manifest(ManifestDefaults {
            source: Some(bundle()),
            ..Default::default()
        })
        .unwrap();
    assert!(matches!(m.source, Source::Pip(_)));
    assert_eq!(m.capabilities[0].output_schema, serde_json::json!({}));
    assert_eq!(m.version, Version::new(2, 1, 0));
}

#[test]
fn to_manifest_reports_manifest_rules_under_file_fields() {
    let a = AgentYaml::from_yaml(
            "id: \"@x\"\nname: \"X\"\npackage: acme/x\nversion: 1.0.0\ntagline: \"two\\nlines\"\ndescription: d\nkeywords: [a, A]\nsource: {type: pip, package: p, version: \"1.0\", entry_point: e}\ncapabilities:\n  - name: c\n    input_schema: {type: 12}\n",
        )
        .unwrap();
    let e = a.to_manifest(ManifestDefaults::default()).unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert!(paths.contains(&"tagline".to_string()), "{e}");
    assert!(paths.contains(&"keywords[1]".to_string()), "{e}");
    assert!(
        paths.contains(&"capabilities[0].description".to_string()),
        "{e}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("capabilities[0].input_schema")),
        "{e}"
    );
}

#[test]
fn path_translation() {
    let t = |p: &str| {
        manifest_path_to_file(
            &FieldPath::parse(p),
            &[("displayName", "name"), ("requires.tools", "tools")],
        )
        .to_string()
    };
    assert_eq!(t("displayName"), "name");
    assert_eq!(t("requires.tools[2]"), "tools[2]");
    assert_eq!(t("source.entryPoint"), "source.entry_point");
    assert_eq!(
        t("capabilities[0].authorizedRequesters[1]"),
        "capabilities[0].authorized_requesters[1]"
    );
}

fn arb_agent() -> impl Strategy<Value = AgentYaml> {
    (
        "[a-z][a-z0-9-]{0,10}",
        prop::option::of("[A-Za-z][A-Za-z0-9 ]{0,12}"),
        prop::option::of("[a-z0-9:.-]{1,12}"),
        prop::option::of("[a-z]{1,4}(\n[a-z ]{0,8}){0,3}\n?"),
        prop::option::of(prop::sample::select(vec![
            Memory::Buffer,
            Memory::Window,
            Memory::Summary,
            Memory::Rag,
        ])),
        prop::option::of(1u32..100),
        prop::collection::vec("[a-z]{1,6}", 0..3),
        prop::option::of((0u32..=20).prop_map(|t| f64::from(t) / 10.0)),
        prop::option::of((0u64..5, 0u64..10, 0u64..10)),
        prop::collection::vec(("[a-z_]{1,8}", prop::option::of("[A-Za-z ]{1,12}")), 0..3),
    )
        .prop_filter_map(
            "valid handle",
            |(
                id,
                name,
                model,
                prompt,
                memory,
                context_window,
                tools,
                temperature,
                version,
                caps,
            )| {
                let id = AgentHandle::new(&id).ok().filter(|h| !h.is_reserved())?;
                let mut seen = std::collections::HashSet::new();
                let capabilities = caps
                    .into_iter()
                    .filter(|(n, _)| seen.insert(n.clone()))
                    .map(|(name, description)| Capability {
                        name,
                        description,
                        input_schema: Some(serde_json::json!({"type": "object"})),
                        ..Capability::default()
                    })
                    .collect();
                Some(AgentYaml {
                    id,
                    name,
                    model: Some(model.unwrap_or_else(|| "m".into())),
                    endpoint: Some("http://localhost:11434/v1".into()),
                    prompt,
                    activation: Some(Activation::Always),
                    memory,
                    context_window,
                    tools,
                    version: version.map(|(a, b, c)| Version::new(a, b, c)),
                    publisher: Some("acme".into()),
                    package: None,
                    tagline: None,
                    description: None,
                    keywords: vec!["k".into()],
                    examples: Vec::new(),
                    license: Some("MIT".into()),
                    homepage: None,
                    repository: None,
                    capabilities,
                    temperature,
                    can_use_tools: Some(true),
                    // An LLM agent has no process to give an environment to.
                    env: IndexMap::new(),
                    command: None,
                    args: Vec::new(),
                    source: None,
                })
            },
        )
}

proptest! {
    #[test]
    fn agent_yaml_round_trips(a in arb_agent()) {
        prop_assert!(a.validate().is_ok(), "{:?}", a.validate());
        let text = a.to_yaml();
        let back = AgentYaml::from_yaml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back, a);
    }

    #[test]
    fn parsing_never_panics(text in "(id|model|source|type|capabilities|: |\"@a\"|- |\n|\\{|\\}|[\\PC]){0,40}") {
        let _ = AgentYaml::from_yaml(&text);
    }
}
