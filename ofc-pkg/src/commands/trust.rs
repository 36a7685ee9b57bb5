//! `ofc trust`: show and edit the publisher keys pinned on first use (see [`crate::trust`]).

use anyhow::Result;
use index_schema::envelope::{KeyId, PublicKey};
use index_schema::name::{AgentName, check_publisher};
use serde_json::json;

use crate::config::{self, Paths};
use crate::output::{ExitStatus, Output, UserError};
use crate::trust::TrustStore;

/// `ofc trust` verbs.
#[derive(Debug, clap::Subcommand)]
pub enum TrustCommand {
    /// Show pinned publisher keys (of one publisher, or all).
    List {
        /// Only this publisher.
        publisher: Option<String>,
    },
    /// Pin a publisher key (after a publisher rotated its key and you checked the new one).
    Add {
        /// The publisher (namespace).
        publisher: String,
        /// The public key, `ed25519:<base64>`.
        public_key: String,
    },
    /// Unpin one key of a publisher, or all of them (the next pull pins again on first use).
    Remove {
        /// The publisher (namespace).
        publisher: String,
        /// The key id; every key of the publisher when omitted.
        key_id: Option<String>,
    },
    /// Forget the highest version pulled of an agent (after its publisher deleted versions).
    Forget {
        /// `publisher/agent`.
        agent: String,
    },
}

/// The hub the pins are for: `--hub` (a URL, or a host as in `host/publisher/agent`
/// references), else `OFC_HUB`; in the same normal form pulls use.
fn hub_of() -> Result<String> {
    crate::hub::check_url(&crate::pull::normalize_hub(&config::hub_url()))
}

fn publisher(p: &str) -> Result<String> {
    check_publisher(p).map_err(|e| {
        UserError::new(format!("invalid publisher `{p}`: {e}"))
            .hint("a publisher is the namespace part of `publisher/agent`")
            .into()
    })
}

/// Runs the verb.
pub fn run(cmd: &TrustCommand, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    match cmd {
        TrustCommand::List { publisher: p } => {
            let hub = hub_of()?;
            let only = p.as_deref().map(publisher).transpose()?;
            let store = TrustStore::load(&paths)?;
            let pubs = store
                .hubs
                .get(&hub)
                .map(|h| h.publishers.clone())
                .unwrap_or_default();
            let rows: Vec<_> = pubs
                .iter()
                .filter(|(name, _)| only.as_ref().is_none_or(|o| o == *name))
                .flat_map(|(name, pins)| pins.keys.iter().map(move |k| (name.clone(), k.clone())))
                .collect();
            if out.json {
                out.json_value(&json!({
                    "hub": hub,
                    "keys": rows.iter().map(|(p, k)| json!({
                        "publisher": p, "keyId": k.key_id.to_string(),
                        "publicKey": k.public_key.to_string(), "pinnedAt": k.pinned_at,
                    })).collect::<Vec<_>>(),
                }));
            } else if rows.is_empty() {
                out.status(&format!("no keys pinned for {hub}"));
            } else {
                out.data(&format!("{:<24} {:<34} PUBLIC KEY", "PUBLISHER", "KEY ID"));
                for (p, k) in &rows {
                    out.data(&format!("{p:<24} {:<34} {}", k.key_id, k.public_key));
                }
            }
        }
        TrustCommand::Add {
            publisher: p,
            public_key,
        } => {
            let hub = hub_of()?;
            let p = publisher(p)?;
            let key = PublicKey::parse(public_key).map_err(|e| {
                UserError::new(format!("invalid public key `{public_key}`: {e}"))
                    .hint("a public key looks like `ed25519:<base64>`; `ofc info` shows the key of a version")
            })?;
            let added = TrustStore::update(&paths, |t| Ok(t.pin(&hub, &p, &key)))?;
            if out.json {
                out.json_value(
                    &json!({"publisher": p, "keyId": key.key_id().to_string(), "added": added}),
                );
            } else if added {
                out.status(&format!(
                    "pinned key {} for publisher `{p}` on {hub}",
                    key.key_id()
                ));
            } else {
                out.status(&format!("key {} is already pinned for `{p}`", key.key_id()));
            }
        }
        TrustCommand::Remove {
            publisher: p,
            key_id,
        } => {
            let hub = hub_of()?;
            let p = publisher(p)?;
            let id = key_id
                .as_deref()
                .map(|k| {
                    KeyId::parse(k).map_err(|e| {
                        anyhow::Error::from(
                            UserError::new(format!("invalid key id `{k}`: {e}"))
                                .hint("`ofc trust list` shows the key ids"),
                        )
                    })
                })
                .transpose()?;
            let removed = TrustStore::update(&paths, |t| Ok(t.unpin(&hub, &p, id.as_ref())))?;
            if removed == 0 {
                return Err(UserError::new(format!(
                    "no matching key is pinned for `{p}` on {hub}"
                ))
                .hint("`ofc trust list` shows the pinned keys")
                .into());
            }
            if out.json {
                out.json_value(&json!({"publisher": p, "removed": removed}));
            } else {
                out.status(&format!("unpinned {removed} key(s) of `{p}`"));
            }
        }
        TrustCommand::Forget { agent } => {
            let hub = hub_of()?;
            let name = AgentName::parse(agent).map_err(|e| {
                UserError::new(format!("invalid agent name `{agent}`: {e}"))
                    .hint("write `publisher/agent`")
            })?;
            let forgot = TrustStore::update(&paths, |t| Ok(t.forget(&hub, &name)))?;
            if out.json {
                out.json_value(&json!({"agent": name.to_string(), "forgotten": forgot}));
            } else if forgot {
                out.status(&format!("forgot the versions of {name} seen on {hub}"));
            } else {
                out.status(&format!("nothing was recorded for {name} on {hub}"));
            }
        }
    }
    Ok(ExitStatus::Success)
}
