//! The publisher fixture, the manifests tests publish, and the peers tests start through
//! `scripts/peers` (the embedding model, the registry).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use index_schema::envelope::SecretKey;
use index_schema::manifest::Manifest;
use index_schema::name::Digest;
use serde_json::json;

/// A user with a namespace of their name, a registered signing key and a full (non-admin unless
/// asked) token: what [`crate::TestHub::new_user`] and [`crate::HubProcess::new_user`] make.
#[derive(Debug, Clone)]
pub struct Publisher {
    /// User name, also the namespace.
    pub name: String,
    /// The user's first API token.
    pub token: String,
    /// The key registered for the namespace (seeded from the name: the same name gives the same
    /// key).
    pub key: SecretKey,
}

/// The signing key of a fixture publisher called `name`.
pub fn key_for(name: &str) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..name.len().min(32)].copy_from_slice(&name.as_bytes()[..name.len().min(32)]);
    SecretKey::from_seed(&seed)
}

/// The body of `PUT /api/v1/agents/NAME/versions/VERSION` for `manifest` signed with `key`
/// (no bundle bytes).
pub fn publish_body(manifest: &Manifest, key: &SecretKey) -> serde_json::Value {
    let env = index_schema::envelope::sign_manifest(manifest, key);
    json!({ "envelope": serde_json::from_str::<serde_json::Value>(&env.to_json()).unwrap() })
}

/// A valid `remote` manifest for `name` at `version`.
pub fn remote_manifest(name: &str, version: &str) -> Manifest {
    let v = json!({
        "schemaVersion": 1,
        "name": name,
        "version": version,
        "id": "@code",
        "displayName": "Code Assistant",
        "tagline": "Send me anything that needs code!",
        "description": "Writes scripts.",
        "examples": ["Write a script"],
        "capabilities": [],
        "source": { "type": "remote", "endpoint": "https://code-agent.example.com/ofc" }
    });
    Manifest::from_value(&v).unwrap()
}

/// [`remote_manifest`] for `name` at 1.0.0 with `text` as its tagline and its description: an
/// agent for search tests.
pub fn manifest_saying(name: &str, text: &str) -> Manifest {
    let mut v = serde_json::to_value(remote_manifest(name, "1.0.0")).unwrap();
    v["tagline"] = json!(text);
    v["description"] = json!(text);
    Manifest::from_value(&v).unwrap()
}

/// Runs `scripts/peers/NAME` (which installs or starts the peer when it is missing) and returns
/// the line it prints. Panics (never skips) when the script fails.
pub fn peer(name: &str) -> String {
    let script = crate::postgres::workspace()
        .join("scripts/peers")
        .join(name);
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "scripts/peers/{name} failed (run `scripts/install-test-deps`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The directory of the real embedding model (all-MiniLM-L6-v2), from
/// `scripts/peers/search-model`.
pub fn search_model_dir() -> PathBuf {
    PathBuf::from(peer("search-model"))
}

/// `HOST:PORT` of the distribution registry `scripts/peers/registry` runs (one for all tests).
pub fn registry_peer() -> String {
    peer("registry")
}

/// The path of the program `name` (`skopeo`, `podman`, `python`, `cc`) that
/// `scripts/peers/oci-clients` installs; the script runs once.
pub fn oci_tool(name: &str) -> String {
    static TOOLS: OnceLock<HashMap<String, String>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            peer("oci-clients")
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .get(name)
        .unwrap_or_else(|| panic!("scripts/peers/oci-clients did not report `{name}`"))
        .clone()
}

/// A valid `bundle` manifest for these bytes.
pub fn bundle_manifest(name: &str, version: &str, bytes: &[u8]) -> Manifest {
    let v = json!({
        "schemaVersion": 1,
        "name": name,
        "version": version,
        "id": "@data",
        "displayName": "Data Analyst",
        "tagline": "Send me CSVs",
        "description": "Answers questions about data.",
        "source": {
            "type": "bundle",
            "digest": Digest::of(bytes).to_string(),
            "size": bytes.len(),
            "mediaType": "application/vnd.ofc.agent.bundle.v1.tar+gzip",
            "entrypoint": "agent.yaml"
        }
    });
    Manifest::from_value(&v).unwrap()
}
