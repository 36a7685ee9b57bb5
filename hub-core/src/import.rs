//! `ofc-hub import mcp-registry FILE`: loads a dump of the MCP Registry's list API
//! (`GET /v0/servers`) into a namespace.
//!
//! Every entry becomes one signed version through the one publish service
//! ([`crate::publish::publish`]), exactly as if its publisher had run `ofc publish server.json`:
//! the manifest is converted by `index_schema::mcp_server_json`, signed with a key registered
//! for the namespace (the operator passes its secret, `--key`), and published by a member of the
//! namespace (its owner unless `--as` names another) through a token made for the import and
//! revoked after it, so the versions, the audit log and the transparency of who published what
//! are those of any publish. The hub holds no key of its own: it never signs on a namespace's
//! behalf.
//!
//! Entries are independent: a broken one (its index, its server name, the field and line of the
//! dump) is reported and the others are imported. A rerun is idempotent: signing is
//! deterministic, so an entry already imported has the very same manifest digest and counts as
//! unchanged; the same version with other content is a failure (versions are immutable).
//! Entries the registry marks `deleted` are skipped. Two servers whose names give the same agent
//! name (`io.github.a/weather`, `io.github.b/weather`) cannot share it: the second is refused.

use std::collections::HashMap;

use index_schema::Diagnostics;
use index_schema::agent_yaml::ManifestDefaults;
use index_schema::envelope::{Envelope, SecretKey, sign_manifest};
use index_schema::manifest::{Manifest, Origin};
use index_schema::mcp_server_json::ListResponse;
use serde::Serialize;

use crate::auth::Principal;
use crate::hub::Hub;
use crate::publish::{self, PublishError};

/// The official registry, the default home of the originals an import points at.
pub const OFFICIAL_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// What an import did.
#[derive(Debug, Default, Serialize)]
pub struct ImportReport {
    /// Entries published now.
    pub imported: Vec<Imported>,
    /// Entries already on the hub with the same manifest.
    pub unchanged: Vec<Imported>,
    /// Entries not imported on purpose (deleted in the registry).
    pub skipped: Vec<Skipped>,
    /// Entries that could not be imported.
    pub failed: Vec<Failed>,
}

impl ImportReport {
    /// Whether every entry was imported, unchanged or skipped.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }
}

/// An entry on the hub.
#[derive(Debug, Serialize)]
pub struct Imported {
    /// Index in `servers`.
    pub index: usize,
    /// The server's registry name.
    pub server: String,
    /// `publisher/agent` on the hub.
    pub agent: String,
    /// Version.
    pub version: String,
}

/// An entry left out on purpose.
#[derive(Debug, Serialize)]
pub struct Skipped {
    /// Index in `servers`.
    pub index: usize,
    /// The server's registry name, when it has one.
    pub server: Option<String>,
    /// Why.
    pub reason: String,
}

/// An entry that failed.
#[derive(Debug, Serialize)]
pub struct Failed {
    /// Index in `servers`.
    pub index: usize,
    /// The server's registry name, when it has one.
    pub server: Option<String>,
    /// Every problem.
    pub problems: Vec<Problem>,
}

/// One problem of a failed entry.
#[derive(Debug, Serialize)]
pub struct Problem {
    /// The field in the dump (`servers[3].server.packages[0].identifier`), empty for none.
    pub field: String,
    /// Its line in the dump.
    pub line: Option<u32>,
    /// What is wrong.
    pub message: String,
}

fn problems(d: &Diagnostics) -> Vec<Problem> {
    d.iter()
        .map(|x| Problem {
            field: x.path.to_string(),
            line: x.position.map(|p| p.line),
            message: x.message.clone(),
        })
        .collect()
}

/// Where the original of `server`@`version` is in the registry's API.
fn original_url(registry: &str, server: &str, version: &str) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    format!(
        "{}/v0/servers/{}/versions/{}",
        registry.trim_end_matches('/'),
        enc(server),
        enc(version)
    )
}

/// `text` from a dump as a terminal may show it: control characters (escape sequences, bell,
/// line breaks) and Unicode bidirectional controls (which reorder what is displayed) escaped
/// as `\u{…}`; everything else as it is.
pub fn for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The largest dump `ofc-hub import` reads (checked before reading it).
pub const MAX_DUMP_BYTES: u64 = index_schema::source::MAX_DOCUMENT_BYTES as u64;

/// Reads a dump file, refusing one past [`MAX_DUMP_BYTES`] before reading it (and reading no
/// more than that if it grows meanwhile).
pub fn read_dump(path: &std::path::Path) -> anyhow::Result<String> {
    use anyhow::Context as _;
    use std::io::Read as _;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    anyhow::ensure!(
        len <= MAX_DUMP_BYTES,
        "{} is {len} bytes; a dump may have at most {MAX_DUMP_BYTES} (split it)",
        path.display()
    );
    let mut text = String::new();
    file.take(MAX_DUMP_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} (is it UTF-8 text?)", path.display()))?;
    anyhow::ensure!(
        text.len() as u64 <= MAX_DUMP_BYTES,
        "{} grew past {MAX_DUMP_BYTES} bytes while it was read",
        path.display()
    );
    Ok(text)
}

/// Imports the dump `text` into `namespace` (see the module documentation), publishing as
/// `principal` and signing with `key`. `Err` only when the dump as a whole cannot be read (not
/// JSON, no `servers` list): the message names the field and line.
pub async fn mcp_registry(
    hub: &Hub,
    principal: &Principal,
    key: &SecretKey,
    namespace: &str,
    registry: &str,
    text: &str,
) -> anyhow::Result<ImportReport> {
    let list = ListResponse::from_json(text).map_err(|d| anyhow::anyhow!("{d}"))?;
    let mut report = ImportReport::default();
    // Agent name → the server that has it, for this import's entries.
    let mut owners: HashMap<String, String> = HashMap::new();
    for entry in list.entries {
        let at = format!("servers[{}].server", entry.index);
        let fail = |problems: Vec<Problem>| Failed {
            index: entry.index,
            server: entry.name.clone(),
            problems,
        };
        if entry.status.as_deref() == Some("deleted") {
            report.skipped.push(Skipped {
                index: entry.index,
                server: entry.name.clone(),
                reason: "deleted in the registry".into(),
            });
            continue;
        }
        let server = match entry.server {
            Ok(s) => s,
            Err(d) => {
                report.failed.push(fail(problems(&d)));
                continue;
            }
        };
        let defaults = ManifestDefaults {
            publisher: Some(namespace.to_string()),
            ..ManifestDefaults::default()
        };
        let document = original_url(registry, server.name(), server.version());
        let manifest = match server.to_manifest(defaults, &document) {
            Ok(m) => m,
            Err(d) => {
                report.failed.push(fail(problems(&d)));
                continue;
            }
        };
        let agent = manifest.name.to_string();
        let taken_by = match owners.get(&agent) {
            Some(s) => Some(s.clone()),
            None => match server_of(hub, &agent).await {
                Ok(s) => s,
                Err(e) => {
                    report.failed.push(fail(vec![Problem {
                        field: String::new(),
                        line: None,
                        message: format!("cannot read `{agent}` on the hub: {e}"),
                    }]));
                    continue;
                }
            },
        };
        if let Some(other) = taken_by.filter(|o| o != server.name()) {
            report.failed.push(fail(vec![Problem {
                field: format!("{at}.name"),
                line: None,
                message: if other.is_empty() {
                    format!(
                        "gives the agent name `{agent}`, which an agent not imported from an MCP registry already has on this hub"
                    )
                } else {
                    format!(
                        "gives the agent name `{agent}`, which `{other}` already has on this hub"
                    )
                },
            }]));
            continue;
        }
        owners.insert(agent.clone(), server.name().to_string());
        let done = Imported {
            index: entry.index,
            server: server.name().to_string(),
            agent: agent.clone(),
            version: manifest.version.to_string(),
        };
        match publish_one(hub, principal, key, &manifest).await {
            Ok(true) => report.imported.push(done),
            Ok(false) => report.unchanged.push(done),
            Err(message) => report.failed.push(fail(vec![Problem {
                field: at.clone(),
                line: None,
                message,
            }])),
        }
    }
    Ok(report)
}

/// The registry name of the server `agent` was imported from, when it exists on the hub (an
/// agent published otherwise has none: `Some("")`, which matches no server).
async fn server_of(hub: &Hub, agent: &str) -> anyhow::Result<Option<String>> {
    let Some(a) = hub.store.agent(agent).await? else {
        return Ok(None);
    };
    let versions = hub.store.versions(a.id).await?;
    let Some(v) = versions.first() else {
        return Ok(None);
    };
    let env = Envelope::from_json(&v.envelope).map_err(|d| anyhow::anyhow!("{d}"))?;
    let m = Manifest::from_json(std::str::from_utf8(&env.payload)?)
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    Ok(Some(
        m.origin
            .filter(|o| o.format == Origin::MCP_SERVER_JSON)
            .and_then(|o| {
                o.fields
                    .get("name")
                    .and_then(|n| n.as_str().map(str::to_string))
            })
            .unwrap_or_default(),
    ))
}

/// Publishes one manifest: `Ok(true)` published, `Ok(false)` the hub holds this very manifest.
async fn publish_one(
    hub: &Hub,
    principal: &Principal,
    key: &SecretKey,
    manifest: &Manifest,
) -> Result<bool, String> {
    let envelope = sign_manifest(manifest, key);
    let json = envelope.to_json();
    let version = manifest.version.to_string();
    let req = publish::Request {
        publisher: manifest.name.publisher(),
        agent: manifest.name.agent(),
        version: &version,
        envelope: &json,
        inline_bundle: None,
        pushed: None,
    };
    match publish::publish(hub, principal, req).await {
        Ok(_) => Ok(true),
        Err(PublishError::VersionExists { .. }) => {
            let same = async {
                let a = hub.store.agent(&manifest.name.to_string()).await.ok()??;
                let v = hub.store.version(a.id, &version).await.ok()??;
                Some(v.manifest_digest == envelope.payload_digest().to_string())
            }
            .await;
            if same == Some(true) {
                Ok(false)
            } else {
                Err(format!(
                    "`{}` version {version} is on the hub with other content; versions are immutable",
                    manifest.name
                ))
            }
        }
        Err(e) => Err(format!("the hub refused it ({}): {e}", e.code().as_str())),
    }
}

#[cfg(test)]
mod terminal_tests {
    #[test]
    fn escapes_reach_no_terminal() {
        assert_eq!(
            super::for_terminal("a\x1b[31mred\x07"),
            "a\\u{001B}[31mred\\u{0007}"
        );
        assert_eq!(super::for_terminal("x\u{202E}gpj.exe"), "x\\u{202E}gpj.exe");
        assert_eq!(super::for_terminal("plain-name/ok"), "plain-name/ok");
    }
}
