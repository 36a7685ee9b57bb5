//! `ofc trust`: show and edit the publisher keys pinned on first use (see [`crate::trust`]).

use anyhow::Result;
use index_schema::envelope::{KeyId, PublicKey};
use index_schema::name::{AgentName, check_publisher};
use serde_json::json;

use crate::config::Paths;
use crate::hub_url::{HubUrl, normalize_hub};
use crate::output::{ExitStatus, Output, UserError};
use crate::trust::{TrustStore, Witnesses};

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
    /// Show the hub's transparency-log key and the last checkpoint verified (pinned on first
    /// use); with --forget, forget them, so the next pull pins the log the hub announces.
    Log {
        /// Forget the pinned log (only after the hub's operator announced a new log).
        #[arg(long)]
        forget: bool,
    },
    /// The witnesses whose cosignatures the hub's log checkpoints must carry.
    #[command(subcommand)]
    Witness(WitnessCommand),
}

/// `ofc trust witness` verbs.
#[derive(Debug, clap::Subcommand)]
pub enum WitnessCommand {
    /// Show the witnesses trusted for the hub and how many cosignatures are required.
    List,
    /// Trust a witness: its verifier key (`name+id+base64`, as `ofc-hub witness key` prints
    /// it). The first one added also makes one cosignature required.
    Add {
        /// The witness's verifier key.
        key: String,
    },
    /// Stop trusting a witness (by key or name); the number required drops to what is left.
    Remove {
        /// The witness's verifier key or name.
        witness: String,
    },
    /// Require valid cosignatures of N of the trusted witnesses on every checkpoint (0: none).
    Require {
        /// How many.
        n: usize,
        /// Only cosignatures made within this many seconds count (a hub cannot then keep
        /// serving an old cosigned view; its witnesses re-cosign an unchanged head every
        /// `log_witness_refresh_secs`, 600 by default, so keep this well above that). 0: any age.
        #[arg(long, value_name = "SECS")]
        max_age: Option<u64>,
    },
}

/// The hub the pins are for: `--hub` (a URL, or a host as in `host/publisher/agent`
/// references), else `OFC_HUB`; in the same normal form pulls use.
fn hub_of() -> Result<HubUrl> {
    HubUrl::parse(&normalize_hub(&crate::hub_url::configured()))
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
                .get(hub.as_str())
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
        TrustCommand::Log { forget } => {
            let hub = hub_of()?;
            if *forget {
                let forgot = TrustStore::update(&paths, |t| Ok(t.forget_log(&hub)))?;
                if out.json {
                    out.json_value(&json!({"hub": hub, "forgotten": forgot}));
                } else if forgot {
                    out.status(&format!(
                        "forgot the log pinned for {hub}; the next pull pins the log it announces"
                    ));
                } else {
                    out.status(&format!("no log is pinned for {hub}"));
                }
                return Ok(ExitStatus::Success);
            }
            let log = TrustStore::load(&paths)?.log(&hub);
            let size = log.as_ref().and_then(|l| {
                index_schema::tlog::LogVerifier::parse(&l.key)
                    .and_then(|v| v.verify_checkpoint(&l.checkpoint))
                    .ok()
                    .map(|c| c.size)
            });
            if out.json {
                out.json_value(&json!({
                    "hub": hub,
                    "key": log.as_ref().map(|l| l.key.clone()),
                    "size": size,
                    "checkpoint": log.as_ref().map(|l| l.checkpoint.clone()),
                }));
            } else {
                match (&log, size) {
                    (Some(l), Some(n)) => {
                        out.data(&format!("log key    {}", l.key));
                        out.data(&format!("verified   {n} entries"));
                    }
                    (Some(l), None) => {
                        out.data(&format!("log key    {}", l.key));
                        out.data("verified   (the stored checkpoint does not verify)");
                    }
                    (None, _) => out.status(&format!(
                        "no log is pinned for {hub}; the next pull pins the one it announces"
                    )),
                }
            }
        }
        TrustCommand::Witness(cmd) => return witness(cmd, &paths, out),
    }
    Ok(ExitStatus::Success)
}

fn witness_key(key: &str) -> Result<index_schema::tlog::WitnessVerifier> {
    index_schema::tlog::WitnessVerifier::parse(key).map_err(|e| {
        UserError::new(format!(
            "invalid witness key `{}`: {e}",
            index_schema::tlog::shown_key(key)
        ))
        .hint("a witness key looks like `name+1a2b3c4d+BASE64`, as `ofc-hub witness key` prints it")
        .into()
    })
}

fn show_witnesses(hub: &str, w: &Witnesses, out: &mut Output) {
    if out.json {
        out.json_value(&json!({
            "hub": hub, "keys": w.keys, "required": w.required, "maxAgeSecs": w.max_age_secs,
        }));
    } else if w.keys.is_empty() {
        out.status(&format!("no witnesses are trusted for {hub}"));
    } else {
        for k in &w.keys {
            out.data(k);
        }
        out.status(&format!(
            "{} of these {} witnesses must cosign every checkpoint of {hub}{}",
            w.required,
            w.keys.len(),
            w.max_age_secs
                .map(|s| format!(", within the last {s} s"))
                .unwrap_or_default()
        ));
    }
}

fn witness(cmd: &WitnessCommand, paths: &Paths, out: &mut Output) -> Result<ExitStatus> {
    let hub = hub_of()?;
    let w = match cmd {
        WitnessCommand::List => TrustStore::load(paths)?.witnesses(&hub),
        WitnessCommand::Add { key } => {
            let v = witness_key(key)?;
            let text = v.to_string();
            TrustStore::update(paths, |t| {
                let w = t.witnesses_mut(&hub);
                if let Some(same) = w.keys.iter().find(|k| {
                    index_schema::tlog::WitnessVerifier::parse(k)
                        .is_ok_and(|o| o.name() == v.name())
                }) && *same != text
                {
                    return Err(UserError::new(format!(
                        "another key is trusted for the witness `{}`: {same}",
                        v.name()
                    ))
                    .hint("`ofc trust witness remove NAME` first, if the witness changed its key")
                    .into());
                }
                // One key under two names would look like two witnesses.
                if let Some(same) = w.keys.iter().find(|k| {
                    index_schema::tlog::WitnessVerifier::parse(k)
                        .is_ok_and(|o| o.same_key(&v) && o.name() != v.name())
                }) {
                    return Err(UserError::new(format!(
                        "this public key is trusted already, as {same}: one witness cannot count twice"
                    ))
                    .into());
                }
                if !w.keys.contains(&text) {
                    w.keys.push(text.clone());
                }
                w.required = w.required.max(1);
                Ok(w.clone())
            })?
        }
        WitnessCommand::Remove { witness } => {
            let (removed, w) = TrustStore::update(paths, |t| {
                let w = t.witnesses_mut(&hub);
                let before = w.keys.len();
                w.keys.retain(|k| {
                    k != witness
                        && !index_schema::tlog::WitnessVerifier::parse(k)
                            .is_ok_and(|v| v.name() == witness)
                });
                w.required = w.required.min(w.keys.len());
                Ok((before - w.keys.len(), w.clone()))
            })?;
            if removed == 0 {
                return Err(
                    UserError::new(format!("no witness `{witness}` is trusted for {hub}"))
                        .hint("`ofc trust witness list` shows them")
                        .into(),
                );
            }
            w
        }
        WitnessCommand::Require { n, max_age } => TrustStore::update(paths, |t| {
            let w = t.witnesses_mut(&hub);
            if *n > w.keys.len() {
                return Err(UserError::new(format!(
                    "cannot require {n} cosignatures: {} witnesses are trusted for {hub}",
                    w.keys.len()
                ))
                .hint("`ofc trust witness add KEY` adds one")
                .into());
            }
            w.required = *n;
            if let Some(secs) = max_age {
                w.max_age_secs = (*secs > 0).then_some(*secs);
            }
            Ok(w.clone())
        })?,
    };
    show_witnesses(&hub, &w, out);
    Ok(ExitStatus::Success)
}
