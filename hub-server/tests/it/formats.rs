//! Agents from other formats on a real hub (`TestHub::in_process`): the A2A card the hub serves
//! for every remote agent, judged by the real A2A SDK (PyPI `a2a-sdk`, the venv that
//! `scripts/peers/a2a-sdk` installs; without it these tests fail, they do not skip), and
//! `ofc-hub import mcp-registry` (the real binary beside the serving hub) on a dump written
//! here, with valid and broken entries.

use std::path::{Path, PathBuf};
use std::process::Command;

use index_schema::a2a_card::A2aCard;
use index_schema::agent_yaml::ManifestDefaults;
use index_schema::manifest::Manifest;
use index_schema::name::AgentName;
use ofc_test_kit::{Backend, TestHub, bundle_manifest, remote_manifest};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn sdk_python() -> PathBuf {
    let peers = std::env::var_os("OFC_TEST_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/ofc-peers"), PathBuf::from);
    let python = peers.join("a2a-sdk-venv/bin/python");
    assert!(
        python.exists(),
        "the A2A SDK is not installed ({} is missing): run `scripts/install-test-deps` \
         (or `scripts/peers/a2a-sdk`)",
        python.display()
    );
    python
}

/// The SDK's verdict on each card: `None` accepted, `Some(error)` refused.
fn sdk_verdicts(cards: &[(&str, &Value)]) -> Vec<Option<String>> {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, card) in cards {
        let file = format!("{name}.json");
        std::fs::write(dir.path().join(&file), serde_json::to_vec(card).unwrap()).unwrap();
        files.push(file);
    }
    let out = Command::new(sdk_python())
        .arg(repo().join("scripts/a2a-card-verdicts"))
        .args(&files)
        .current_dir(dir.path())
        .output()
        .expect("run scripts/a2a-card-verdicts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["verdict"] != "accept").then(|| v["error"].to_string()))
        .collect()
}

#[tokio::test]
async fn the_hub_serves_an_a2a_card_for_every_remote_agent() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let alice = hub.user.clone();

    // A remote agent published from an A2A card.
    let original_text =
        std::fs::read_to_string(repo().join("index-schema/tests/fixtures/a2a-cards/ok-full.json"))
            .unwrap();
    let original: Value = serde_json::from_str(&original_text).unwrap();
    let defaults = || ManifestDefaults {
        name: Some(AgentName::parse("alice/currency").unwrap()),
        ..ManifestDefaults::default()
    };
    let from_card = A2aCard::from_json(&original_text)
        .unwrap()
        .to_manifest(defaults(), "agent-card.json")
        .unwrap();
    let (s, b) = hub.publish_as(&alice, &from_card).await;
    assert_eq!(s, 201, "{b}");
    // A remote agent written as a manifest, and a bundle agent.
    let plain = remote_manifest("alice/code", "1.0.0");
    let (s, b) = hub.publish_as(&alice, &plain).await;
    assert_eq!(s, 201, "{b}");
    let bytes = b"not really a tarball";
    let bundled = bundle_manifest("alice/data", "1.0.0", bytes);
    let (s, b) = hub
        .publish(&alice.token, &alice.key, &bundled, Some(bytes))
        .await;
    assert_eq!(s, 201, "{b}");

    let path = index_schema::hub_api::path::agent_card(&from_card.name);
    assert_eq!(path, "/api/v1/agents/alice/currency/agent-card.json");
    let (s, served) = hub.get(&path).await;
    assert_eq!(s, 200, "{served}");
    let (s, served_plain) = hub.get("/api/v1/agents/alice/code/agent-card.json").await;
    assert_eq!(s, 200, "{served_plain}");

    // The real SDK parses both.
    let verdicts = sdk_verdicts(&[("currency", &served), ("code", &served_plain)]);
    assert_eq!(verdicts, [None, None], "{served}\n{served_plain}");

    // Round trip: the card the hub serves is the card that was published with the hub's
    // signature after the publisher's (the SDK above accepted both with it), and reads back
    // into the very manifest that was signed.
    let mut served = served;
    let sigs = served["signatures"].as_array_mut().unwrap();
    assert_eq!(
        sigs.len(),
        original["signatures"].as_array().map_or(0, Vec::len) + 1
    );
    sigs.pop();
    assert_eq!(
        served, original,
        "served:\n{served:#}\noriginal:\n{original:#}"
    );
    let again = A2aCard::from_json(&served.to_string())
        .unwrap()
        .to_manifest(defaults(), "agent-card.json")
        .unwrap();
    assert_eq!(again, from_card);
    // A plain remote agent: its endpoint, version and capabilities.
    assert_eq!(served_plain["url"], "https://code-agent.example.com/ofc");
    assert_eq!(served_plain["version"], "1.0.0");
    assert_eq!(served_plain["name"], "Code Assistant");

    // Not remote: 404 with its code; unknown agent: agent_not_found.
    let (s, b) = hub.get("/api/v1/agents/alice/data/agent-card.json").await;
    assert_eq!((s, b["code"].as_str()), (404, Some("no_agent_card")), "{b}");
    let (s, b) = hub.get("/api/v1/agents/alice/nobody/agent-card.json").await;
    assert_eq!(
        (s, b["code"].as_str()),
        (404, Some("agent_not_found")),
        "{b}"
    );
    // Yanked away: no visible version.
    let (s, _) = hub
        .yank(&alice.token, "alice/code", "1.0.0", json!({}))
        .await;
    assert!((200..300).contains(&s));
    let (s, b) = hub.get("/api/v1/agents/alice/code/agent-card.json").await;
    assert_eq!(
        (s, b["code"].as_str()),
        (404, Some("version_not_found")),
        "{b}"
    );
    hub.stop().await;
}

fn server(file: &str) -> Value {
    let text = std::fs::read_to_string(
        repo()
            .join("index-schema/tests/fixtures/mcp-server-json/valid")
            .join(file),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn import(hub: &TestHub, dump: &Path, key: &Path) -> (i32, Value) {
    let out = hub
        .command()
        .args([
            "import",
            "mcp-registry",
            "--json",
            "--namespace",
            "alice",
            "--key",
        ])
        .arg(key)
        .arg(dump)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), report)
}

#[tokio::test]
async fn ofc_hub_imports_an_mcp_registry_dump_entry_by_entry() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("alice.key");
    std::fs::write(&key, hub.user.key.to_secret_text()).unwrap();

    let official = |status: &str| {
        json!({"io.modelcontextprotocol.registry/official": {
            "status": status, "publishedAt": "2025-10-01T00:00:00Z", "isLatest": true}})
    };
    let mut broken = server("npm-minimal.json");
    broken["name"] = json!("io.github.other/broken");
    broken["packages"][0]["transport"] = json!({"type": "carrier-pigeon"});
    let mut clash = server("remote-streamable.json");
    clash["name"] = json!("io.github.someone-else/weather");
    let dump = json!({
        "servers": [
            {"server": server("npm-minimal.json"), "_meta": official("active")},
            {"server": server("pypi-time.json"), "_meta": official("active")},
            {"server": broken, "_meta": official("active")},
            {"server": server("oci-tag-only-metadata.json"), "_meta": official("active")},
            {"server": server("remote-streamable.json"), "_meta": official("active")},
            {"server": server("prerelease.json"), "_meta": official("deleted")},
            {"server": clash, "_meta": official("active")},
        ],
        "metadata": {"count": 7, "nextCursor": null}
    });
    let dump_file = dir.path().join("servers.json");
    std::fs::write(&dump_file, serde_json::to_string_pretty(&dump).unwrap()).unwrap();

    let (code, r) = import(&hub, &dump_file, &key);
    assert_eq!(code, 1, "some entries failed: {r:#}");
    let names = |k: &str| -> Vec<String> {
        r[k].as_array()
            .unwrap()
            .iter()
            .map(|e| format!("{}:{}", e["index"], e["agent"].as_str().unwrap_or("")))
            .collect()
    };
    assert_eq!(
        names("imported"),
        ["0:alice/weather", "1:alice/time", "4:alice/translate"],
        "{r:#}"
    );
    assert_eq!(r["skipped"][0]["index"], 5);
    let failed = r["failed"].as_array().unwrap();
    let summary: Vec<(u64, String, String)> = failed
        .iter()
        .map(|f| {
            (
                f["index"].as_u64().unwrap(),
                f["server"].as_str().unwrap().to_string(),
                f["problems"][0]["field"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                2,
                "io.github.other/broken".into(),
                "servers[2].server.packages[0].transport.type".into()
            ),
            (
                3,
                "io.github.example/tagonly".into(),
                "servers[3].server.packages[0].identifier".into()
            ),
            (
                6,
                "io.github.someone-else/weather".into(),
                "servers[6].server.name".into()
            ),
        ],
        "{r:#}"
    );
    assert!(failed[0]["problems"][0]["line"].as_u64().is_some());
    assert!(failed[1]["problems"][0]["line"].as_u64().is_some());

    // What the hub serves: signed manifests with the package and the original.
    let (s, v) = hub.get("/api/v1/agents/alice/weather/versions/1.0.0").await;
    assert_eq!(s, 200, "{v}");
    let m: Manifest = serde_json::from_value(v["manifest"].clone()).unwrap();
    let index_schema::manifest::Source::Npm(npm) = &m.source else {
        panic!("{:?}", m.source)
    };
    assert_eq!(
        (npm.package.as_str(), npm.version.to_string()),
        ("@example/weather-mcp", "1.0.0".to_string())
    );
    let origin = m.origin.unwrap();
    assert_eq!(
        origin.document,
        "https://registry.modelcontextprotocol.io/v0/servers/io.github.example%2Fweather/versions/1.0.0"
    );
    assert_eq!(v["published_by"], "alice");
    // An imported remote server has its A2A card too.
    let (s, card) = hub
        .get("/api/v1/agents/alice/translate/agent-card.json")
        .await;
    assert_eq!(s, 200, "{card}");
    assert_eq!(card["url"], "https://translate.example.com/mcp");

    // A rerun changes nothing.
    let (code, again) = import(&hub, &dump_file, &key);
    assert_eq!(code, 1);
    assert_eq!(again["imported"].as_array().unwrap().len(), 0, "{again:#}");
    assert_eq!(again["unchanged"].as_array().unwrap().len(), 3, "{again:#}");
    assert_eq!(again["failed"].as_array().unwrap().len(), 3);
    let (_, info) = hub.get("/api/v1/agents/alice/weather").await;
    assert_eq!(info["versions"].as_array().unwrap().len(), 1);

    // The import's token was revoked: alice's only live token is her first one.
    let (_, tokens) = hub
        .request(reqwest::Method::GET, "/api/v1/tokens")
        .token(&hub.user.token)
        .send_lenient()
        .await;
    let live: Vec<&Value> = tokens
        .as_array()
        .or_else(|| tokens["tokens"].as_array())
        .unwrap()
        .iter()
        .filter(|t| t["revoked_at"].is_null())
        .collect();
    assert_eq!(live.len(), 1, "{tokens:#}");

    // A key the namespace does not have is refused before anything is published.
    let other = dir.path().join("other.key");
    std::fs::write(&other, ofc_test_kit::key_for("mallory").to_secret_text()).unwrap();
    let out = hub
        .command()
        .args(["import", "mcp-registry", "--namespace", "alice", "--key"])
        .arg(&other)
        .arg(&dump_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not an active key of `alice`"),
        "{stderr}"
    );
    // A dump without `servers`: the field and line.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"items\": []\n}\n").unwrap();
    let out = hub
        .command()
        .args(["import", "mcp-registry", "--namespace", "alice", "--key"])
        .arg(&key)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("servers: is required"), "{stderr}");
    // An agent published otherwise keeps its name.
    let (s, b) = hub
        .publish_as(&hub.user, &remote_manifest("alice/fetch", "1.0.0"))
        .await;
    assert_eq!(s, 201, "{b}");
    let taken = dir.path().join("taken.json");
    let dump = json!({"servers": [{"server": server("pypi-sha.json")}]});
    std::fs::write(&taken, serde_json::to_string_pretty(&dump).unwrap()).unwrap();
    let (code, r) = import(&hub, &taken, &key);
    assert_eq!(code, 1);
    let message = r["failed"][0]["problems"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("not imported from an MCP registry"),
        "{r:#}"
    );
    hub.stop().await;
}

/// A hostile dump's names went to the operator's terminal raw (escape sequences, bell, bidi
/// controls), and the file was read whole before its 4 MiB check. Names are escaped now, and
/// a file past the limit is refused before it is read (here a 64 GiB sparse file).
#[tokio::test]
async fn ofc_hub_import_escapes_hostile_names_and_checks_the_size_first() {
    let hub = TestHub::in_process(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("alice.key");
    std::fs::write(&key, hub.user.key.to_secret_text()).unwrap();
    let mut hostile = server("npm-minimal.json");
    hostile["name"] = json!("io.github.evil/\u{1b}[2J\u{7}x\u{202e}gpj");
    hostile["packages"][0]["transport"] = json!({"type": "carrier-pigeon"});
    let dump = json!({"servers": [{"server": hostile}], "metadata": {"count": 1}});
    let dump_file = dir.path().join("servers.json");
    std::fs::write(&dump_file, serde_json::to_string(&dump).unwrap()).unwrap();
    let out = hub
        .command()
        .args(["import", "mcp-registry", "--namespace", "alice", "--key"])
        .arg(&key)
        .arg(&dump_file)
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shown.contains("failed"), "{shown}");
    for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(
            !shown.contains(raw),
            "{raw:?} reached the terminal: {shown:?}"
        );
    }
    assert!(
        shown.contains("\\u{001B}[2J") && shown.contains("\\u{202E}"),
        "{shown}"
    );

    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let started = std::time::Instant::now();
    let out = hub
        .command()
        .args(["import", "mcp-registry", "--namespace", "alice", "--key"])
        .arg(&key)
        .arg(&huge)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a dump may have at most 4194304"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    hub.stop().await;
}
