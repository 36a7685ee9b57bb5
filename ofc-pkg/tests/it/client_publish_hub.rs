//! `ofc publish` uploads to a real hub: the hub-server library serving its HTTP API on
//! loopback (`ofc_test_kit::TestHub::in_process`), with a user and a namespace; the tests
//! register their key with `ofc`.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use ofc_test_kit::{Backend, TestHub};
use serde_json::Value;

/// A hub served in process (`ofc_test_kit::TestHub`) on a runtime of its own, with user and
/// namespace `publisher` and its token (no key: the tests register theirs with `ofc`).
struct Hub {
    url: String,
    token: String,
    hub: TestHub,
    rt: tokio::runtime::Runtime,
}

impl Hub {
    fn start(publisher: &str) -> Hub {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let hub = rt.block_on(TestHub::in_process(Backend::Sqlite));
        let token = rt.block_on(hub.create_user(publisher));
        Hub {
            url: hub.url.clone(),
            token,
            hub,
            rt,
        }
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let req = self.hub.request(method, path).token(&self.token);
        self.rt.block_on(req.maybe_json(body).send_lenient())
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn ofc(home: &Path, hub: &Hub) -> Command {
    let mut c = Command::cargo_bin("ofc").unwrap();
    c.env("OFC_HOME", home)
        .env("OFC_HUB", &hub.url)
        .env("OFC_TOKEN", &hub.token)
        .env("NO_COLOR", "1");
    c
}

#[test]
fn publish_uploads_a_signed_bundle_the_hub_verifies_and_serves() {
    let hub = Hub::start("ofc-examples");
    let home = tempfile::tempdir().unwrap();

    // A key, registered with the hub for the namespace.
    let out = ofc(home.path(), &hub)
        .args(["keygen", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (status, body) = hub.call(
        reqwest::Method::POST,
        "/api/v1/namespaces/ofc-examples/keys",
        Some(serde_json::json!({ "public_key": key["publicKey"] })),
    );
    assert!((200..300).contains(&status), "{status} {body}");

    let agent = repo().join("examples/agents/data-analyst");
    // What a dry run computes is what gets uploaded.
    let dry = ofc(home.path(), &hub)
        .args(["publish", "--dry-run", "--json"])
        .arg(&agent)
        .output()
        .unwrap();
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let dry: Value = serde_json::from_slice(&dry.stdout).unwrap();

    let out = ofc(home.path(), &hub)
        .arg("publish")
        .arg(&agent)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The hub has it: the version, its manifest digest and the bundle bytes.
    let (status, v) = hub.call(
        reqwest::Method::GET,
        "/api/v1/agents/ofc-examples/data-analyst/versions/1.0.0",
        None,
    );
    assert_eq!(status, 200, "{v}");
    let text = v.to_string();
    assert!(
        text.contains(dry["manifestDigest"].as_str().unwrap()),
        "hub's version does not carry the dry run's manifest digest {}: {text}",
        dry["manifestDigest"]
    );
    let bundle_digest = dry["bundleDigest"].as_str().unwrap().to_string();
    let url = format!(
        "{}/api/v1/agents/ofc-examples/data-analyst/versions/1.0.0/bundle",
        hub.url
    );
    let bytes = hub
        .rt
        .block_on(async { reqwest::get(url).await.unwrap().bytes().await.unwrap() });
    assert_eq!(
        index_schema::name::Digest::of(&bytes).to_string(),
        bundle_digest,
        "the bundle served is not the one packed"
    );

    // Publishing the very same thing again is idempotent (a retry after a timeout succeeds).
    let again = ofc(home.path(), &hub)
        .arg("publish")
        .arg(&agent)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(err.contains("already on"), "{err}");

    // Other content under the same version: versions are immutable, refused with a hint.
    let changed = tempfile::tempdir().unwrap();
    for e in walkdir::WalkDir::new(&agent).min_depth(1) {
        let e = e.unwrap();
        let to = changed.path().join(e.path().strip_prefix(&agent).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    std::fs::write(changed.path().join("NOTES.txt"), "changed\n").unwrap();
    let conflict = ofc(home.path(), &hub)
        .arg("publish")
        .arg(changed.path())
        .output()
        .unwrap();
    assert_eq!(conflict.status.code(), Some(1));
    let err = String::from_utf8_lossy(&conflict.stderr);
    assert!(err.contains("409"), "{err}");
    assert!(err.contains("bump `version`"), "{err}");
}

#[test]
fn publish_with_an_unregistered_key_is_refused_with_a_hint() {
    let hub = Hub::start("ofc-examples");
    let home = tempfile::tempdir().unwrap();
    ofc(home.path(), &hub).arg("keygen").assert().success();
    let out = ofc(home.path(), &hub)
        .arg("publish")
        .arg(repo().join("examples/agents/code-runner"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused") && err.contains("403"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}

/// A copy of the data-analyst example published as `package` at `version`.
fn publish_variant(home: &Path, hub: &Hub, package: &str, version: &str) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(repo().join("examples/agents/data-analyst/agent.yaml"))
        .unwrap()
        .replace(
            "package: ofc-examples/data-analyst",
            &format!("package: {package}"),
        )
        .replace("version: 1.0.0", &format!("version: {version}"));
    std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
    // `ofc publish` returns once search shows the agent as the hub now sees it, a pre-release
    // after a release included (it used to wait for search to show the pre-release, which it
    // never does, and warn after the whole wait).
    let out = ofc(home, hub)
        .args(["--json", "publish", "--wait-secs", "20"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{package}@{version}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["searchable"], true, "{package}@{version}: {v}");
}

/// Issue 14, point 5: the hub's `latest` and what `ofc pull` picks are one rule
/// (`index_schema::version::select`): a pre-release never passes a release, and is picked only
/// while no release exists.
#[test]
fn pull_picks_the_version_the_hub_calls_latest() {
    let hub = Hub::start("ofc-examples");
    let home = tempfile::tempdir().unwrap();
    let out = ofc(home.path(), &hub)
        .args(["keygen", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let key: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (status, body) = hub.call(
        reqwest::Method::POST,
        "/api/v1/namespaces/ofc-examples/keys",
        Some(serde_json::json!({ "public_key": key["publicKey"] })),
    );
    assert!((200..300).contains(&status), "{status} {body}");
    publish_variant(home.path(), &hub, "ofc-examples/stable", "1.0.0");
    publish_variant(home.path(), &hub, "ofc-examples/stable", "2.0.0-rc.1");
    publish_variant(home.path(), &hub, "ofc-examples/early", "0.1.0-rc.1");

    for (agent, want) in [("stable", "1.0.0"), ("early", "0.1.0-rc.1")] {
        let (status, v) = hub.call(
            reqwest::Method::GET,
            &format!("/api/v1/agents/ofc-examples/{agent}"),
            None,
        );
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["latest"], want, "{v}");
        let work = tempfile::tempdir().unwrap();
        let out = ofc(home.path(), &hub)
            .current_dir(work.path())
            .args(["--json", "pull", &format!("ofc-examples/{agent}")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pull {agent}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pulled: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(pulled["pulled"][0]["version"], want, "{pulled}");
    }
}

#[test]
fn publish_of_a_server_json_file_signs_its_package_as_the_source() {
    let hub = Hub::start("mcp");
    let home = tempfile::tempdir().unwrap();
    let out = ofc(home.path(), &hub)
        .args(["keygen", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let key: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (status, body) = hub.call(
        reqwest::Method::POST,
        "/api/v1/namespaces/mcp/keys",
        Some(serde_json::json!({ "public_key": key["publicKey"] })),
    );
    assert!((200..300).contains(&status), "{status} {body}");

    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("server.json");
    std::fs::copy(
        repo().join("index-schema/tests/fixtures/mcp-server-json/valid/pypi-time.json"),
        &file,
    )
    .unwrap();
    let out = ofc(home.path(), &hub)
        .args(["publish", "--json", "--name", "mcp/time"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["source"], "pip");
    assert_eq!(printed["bundleDigest"], Value::Null);

    let (status, v) = hub.call(
        reqwest::Method::GET,
        "/api/v1/agents/mcp/time/versions/0.6.2",
        None,
    );
    assert_eq!(status, 200, "{v}");
    let m = &v["manifest"];
    assert_eq!(m["source"]["type"], "pip");
    assert_eq!(m["source"]["package"], "mcp-server-time");
    assert_eq!(m["source"]["version"], "0.6.2");
    assert_eq!(m["origin"]["format"], "mcp-server-json");
    assert_eq!(m["origin"]["document"], "server.json");
    assert_eq!(m["origin"]["fields"]["name"], "io.github.example/time");

    // A server.json with nothing ofc can run: the field and line of the original.
    let tag_only = work.path().join("tag-only.server.json");
    std::fs::copy(
        repo().join("index-schema/tests/fixtures/mcp-server-json/valid/oci-tag-only-metadata.json"),
        &tag_only,
    )
    .unwrap();
    let out = ofc(home.path(), &hub)
        .args(["publish", "--name", "mcp/tag-only"])
        .arg(&tag_only)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("agent.yaml"), "{stderr}");
    assert!(
        stderr.contains("9:21: packages[0].identifier: ")
            && stderr.contains("not pinned by digest"),
        "{stderr}"
    );
}
