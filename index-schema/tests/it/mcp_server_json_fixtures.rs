//! MCP Registry `server.json`: the valid corpus (`tests/fixtures/mcp-server-json/valid/`) is
//! accepted, the invalid corpus (`tests/fixtures/invalid/mcp-server-json/` at the workspace root,
//! also run through `ofc validate`) is refused naming the expected field with a line, and the
//! conversion to a manifest keeps package identity and version, points at the original and keeps
//! what the manifest cannot hold.

use std::fs;
use std::path::{Path, PathBuf};

use index_schema::agent_yaml::ManifestDefaults;
use index_schema::manifest::{Manifest, Origin, Source};
use index_schema::mcp_server_json::{ListResponse, ServerJson};
use serde_json::{Value, json};

fn valid_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp-server-json/valid")
}

fn read(name: &str) -> String {
    fs::read_to_string(valid_dir().join(name)).unwrap()
}

fn publisher() -> ManifestDefaults {
    ManifestDefaults {
        publisher: Some("mcp".into()),
        ..ManifestDefaults::default()
    }
}

fn convert(name: &str) -> Result<Manifest, index_schema::Diagnostics> {
    ServerJson::from_json(&read(name))
        .unwrap()
        .to_manifest(publisher(), name)
}

#[test]
fn every_valid_document_is_accepted() {
    let mut n = 0;
    for e in fs::read_dir(valid_dir()).unwrap() {
        let p = e.unwrap().path();
        let text = fs::read_to_string(&p).unwrap();
        if let Err(d) = ServerJson::from_json(&text) {
            panic!("{}: {d}", p.display());
        }
        n += 1;
    }
    assert!(n >= 15, "only {n} valid documents");
}

#[test]
fn invalid_corpus_names_the_expected_field_and_line() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/invalid/mcp-server-json");
    let mut n = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "expect") {
            continue;
        }
        let expect = fs::read_to_string(format!("{}.expect", path.display())).unwrap();
        let expect = expect.trim();
        let text = fs::read_to_string(&path).unwrap();
        let e = ServerJson::from_json(&text).expect_err(&path.display().to_string());
        let named = e.iter().any(|d| {
            let f = d.path.to_string();
            (expect == "(document)" && d.path.is_root()) || f == expect
        });
        assert!(named, "{}: no error names `{expect}`: {e}", path.display());
        for d in e.iter() {
            assert!(d.position.is_some(), "{}: no line: {d}", path.display());
        }
        n += 1;
    }
    assert!(n >= 15, "only {n} invalid documents");
}

#[test]
fn packages_become_sources_keeping_identity_and_version() {
    let m = convert("npm-minimal.json").unwrap();
    assert_eq!(m.name.to_string(), "mcp/weather");
    assert_eq!(m.id.to_string(), "@weather");
    assert_eq!(m.version.to_string(), "1.0.0");
    let Source::Npm(npm) = &m.source else {
        panic!("{:?}", m.source)
    };
    assert_eq!(npm.package, "@example/weather-mcp");
    assert_eq!(npm.version.to_string(), "1.0.0");
    assert_eq!(npm.bin, "weather-mcp");
    assert_eq!(npm.registry, None);

    let m = convert("pypi-time.json").unwrap();
    let Source::Pip(pip) = &m.source else {
        panic!("{:?}", m.source)
    };
    assert_eq!(
        (pip.package.as_str(), pip.version.as_str()),
        ("mcp-server-time", "0.6.2")
    );
    assert_eq!(m.homepage.as_deref(), Some("https://example.com/time"));
    assert_eq!(
        m.repository.as_deref(),
        Some("https://github.com/example/weather-mcp")
    );

    let m = convert("pypi-sha.json").unwrap();
    let Source::Pip(pip) = &m.source else {
        panic!()
    };
    assert_eq!(
        pip.sha256.unwrap().to_string(),
        "sha256:fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce"
    );

    let m = convert("oci-digest-http.json").unwrap();
    let Source::Docker(docker) = &m.source else {
        panic!("{:?}", m.source)
    };
    assert!(
        docker
            .image
            .starts_with("ghcr.io/example/search-mcp:3.0.0@sha256:")
    );
    assert_eq!(docker.port, 8080);

    // The first package ofc can run wins; nuget and mcpb are passed over.
    let m = convert("nuget-then-npm.json").unwrap();
    assert!(matches!(&m.source, Source::Npm(n) if n.package == "example-dotnet-mcp"));
    let m = convert("mcpb-then-remote.json").unwrap();
    assert!(
        matches!(&m.source, Source::Remote(r) if r.endpoint == "https://mindmap.example.com/mcp")
    );
    // A URL template is passed over for a plain remote.
    let m = convert("remote-template-and-plain.json").unwrap();
    assert!(
        matches!(&m.source, Source::Remote(r) if r.endpoint == "https://shared.example.com/mcp")
    );
    // The title is the display name.
    assert_eq!(convert("icons-meta.json").unwrap().display_name, "Charts");
}

#[test]
fn the_manifest_points_at_the_original_and_keeps_what_it_cannot_hold() {
    let text = read("pypi-time.json");
    let original: Value = serde_json::from_str(&text).unwrap();
    let m = convert("pypi-time.json").unwrap();
    let origin = m.origin.as_ref().unwrap();
    assert_eq!(origin.format, Origin::MCP_SERVER_JSON);
    assert_eq!(origin.document, "pypi-time.json");
    assert_eq!(origin.fields["name"], "io.github.example/time");
    assert_eq!(origin.fields["packages"], original["packages"]);
    assert_eq!(origin.fields["$schema"], original["$schema"]);
    assert_eq!(
        origin.fields["repository"],
        json!({"source": "github", "id": "12345"}),
        "the url is the manifest's repository"
    );
    for held in ["description", "version", "websiteUrl"] {
        assert!(
            !origin.fields.contains_key(held),
            "{held} is in the manifest"
        );
    }

    // Round trip through the manifest's JSON: package identity and version survive, and the
    // original's packages are there as written.
    let back = Manifest::from_json(&String::from_utf8(m.to_json_bytes()).unwrap()).unwrap();
    assert_eq!(back, m);
    let Source::Pip(pip) = &back.source else {
        panic!()
    };
    let p0 = &original["packages"][0];
    assert_eq!(pip.package, p0["identifier"].as_str().unwrap());
    assert_eq!(pip.version, p0["version"].as_str().unwrap());
    assert_eq!(
        back.version.to_string(),
        original["version"].as_str().unwrap()
    );
}

#[test]
fn values_of_secret_inputs_are_not_copied() {
    let m = convert("remote-sse-headers.json").unwrap();
    let header = &m.origin.unwrap().fields["remotes"][0]["headers"][0];
    assert_eq!(header["name"], "Authorization");
    assert!(header.get("value").is_none(), "{header}");
    let m = convert("repository-subfolder.json").unwrap();
    let env = &m.origin.unwrap().fields["packages"][0]["environmentVariables"][0];
    assert_eq!(env["name"], "DATABASE_URL");
    assert!(env.get("default").is_none(), "{env}");
}

#[test]
fn a_server_ofc_cannot_run_is_refused_naming_the_field() {
    let cases = [
        ("oci-tag-only-metadata.json", "packages[0].identifier", 9),
        ("no-packages.json", "packages", 0),
    ];
    for (file, field, line) in cases {
        let e = convert(file).unwrap_err();
        assert_eq!(e.0[0].path.to_string(), field, "{file}: {e}");
        if line > 0 {
            assert_eq!(e.0[0].position.unwrap().line, line, "{file}: {e}");
        }
    }
    // A stdio container has no port; nuget alone is not runnable; both say why, per package.
    let doc = json!({
        "name": "io.github.example/x", "description": "x", "version": "1.0.0",
        "packages": [
            {"registryType": "oci", "identifier": format!("example/x@sha256:{}", "ab".repeat(32)),
             "transport": {"type": "stdio"}},
            {"registryType": "nuget", "identifier": "X", "version": "1.0.0", "transport": {"type": "stdio"}}
        ]
    });
    let e = ServerJson::from_json(&serde_json::to_string_pretty(&doc).unwrap())
        .unwrap()
        .to_manifest(publisher(), "server.json")
        .unwrap_err();
    let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
    assert_eq!(
        paths,
        ["packages[0].transport", "packages[1].registryType"],
        "{e}"
    );
    // A version that is not semver cannot be an ofc version.
    let doc = json!({
        "name": "io.github.example/x", "description": "x", "version": "2024.10",
        "remotes": [{"type": "sse", "url": "https://x.example.com/sse"}]
    });
    let e = ServerJson::from_json(&serde_json::to_string_pretty(&doc).unwrap())
        .unwrap()
        .to_manifest(publisher(), "server.json")
        .unwrap_err();
    assert_eq!(e.0[0].path.to_string(), "version");
    assert_eq!(e.0[0].position.unwrap().line, 4);
    // Without a publisher there is no hub name.
    let e = ServerJson::from_json(&read("npm-minimal.json"))
        .unwrap()
        .to_manifest(ManifestDefaults::default(), "server.json")
        .unwrap_err();
    assert_eq!(e.0[0].path.to_string(), "name");
}

#[test]
fn a_list_dump_is_read_entry_by_entry() {
    let good = serde_json::from_str::<Value>(&read("npm-minimal.json")).unwrap();
    let mut broken = good.clone();
    broken["packages"][0]["transport"] = json!({"type": "carrier-pigeon"});
    let dump = json!({
        "servers": [
            {"server": good, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": true}}},
            {"server": broken},
            {"_meta": {}},
            {"server": "not an object"}
        ],
        "metadata": {"count": 4, "nextCursor": null}
    });
    let text = serde_json::to_string_pretty(&dump).unwrap();
    let list = ListResponse::from_json(&text).unwrap();
    assert_eq!(list.entries.len(), 4);
    assert!(list.entries[0].server.is_ok());
    assert_eq!(list.entries[0].status.as_deref(), Some("active"));
    assert_eq!(
        list.entries[1].name.as_deref(),
        Some("io.github.example/weather")
    );
    let e = list.entries[1].server.as_ref().unwrap_err();
    assert_eq!(
        e.0[0].path.to_string(),
        "servers[1].server.packages[0].transport.type"
    );
    assert!(e.0[0].position.is_some());
    let e = list.entries[2].server.as_ref().unwrap_err();
    assert_eq!(e.0[0].path.to_string(), "servers[2].server");
    let e = list.entries[3].server.as_ref().unwrap_err();
    assert_eq!(e.0[0].path.to_string(), "servers[3].server");
    // Conversion errors of an entry name its place in the dump too.
    let m = list.entries[0]
        .server
        .as_ref()
        .unwrap()
        .to_manifest(publisher(), "dump.json")
        .unwrap();
    assert_eq!(m.name.to_string(), "mcp/weather");

    let e = ListResponse::from_json("{\"metadata\": {}}").unwrap_err();
    assert_eq!(e.0[0].path.to_string(), "servers");
}
