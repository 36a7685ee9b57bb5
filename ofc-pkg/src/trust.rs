//! Publisher keys pinned on first use, and the highest version pulled of each agent.
//!
//! `<config>/trust.toml`:
//!
//! ```toml
//! # Written by ofc. `ofc trust` shows and edits it.
//! [hubs."http://127.0.0.1:8733".publishers.acme]
//! keys = [{ key_id = "0123…", public_key = "ed25519:…", pinned_at = 1763780000 }]
//!
//! [hubs."http://127.0.0.1:8733".agents."acme/coder"]
//! highest = "1.2.0"
//! ```
//!
//! The first pull of a publisher's agent pins the key that signed it (trust on first use). From
//! then on a manifest must verify with a pinned key: a changed key is a hard error until the
//! user pins the new key with `ofc trust add`. `highest` is the highest version ever pulled
//! from that hub; a hub that later hides it, or offers an older version where the newer one
//! should match, is refused as a rollback.
//!
//! Each hub's transparency-log key is pinned on first use too, with the last checkpoint this
//! client verified (`[hubs."…".log] key = "origin+id+base64"`, `checkpoint = "…"`): every later
//! checkpoint must be signed by that key and be consistent with the stored one.
//!
//! Witnesses are configured by hand (`ofc trust witness add KEY`, `ofc trust witness require
//! N`): `[hubs."…".witnesses] keys = ["name+id+base64", …]`, `required = N`. Every checkpoint
//! of that hub must then carry valid cosignatures of at least N of those witnesses.
//!
//! Every change goes through [`TrustStore::update`]: an exclusive lock on `trust.lock`, read,
//! change, write to a temp file and rename, so concurrent pulls never lose a pin.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use index_schema::envelope::{KeyId, PublicKey};
use index_schema::name::AgentName;
use serde::{Deserialize, Serialize};

use crate::config::Paths;
use crate::credentials::create_private_dir;

/// The file name inside the config directory.
pub const FILE_NAME: &str = "trust.toml";

/// One pinned key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedKey {
    /// Derived from the public key.
    pub key_id: KeyId,
    /// `ed25519:<base64>`.
    pub public_key: PublicKey,
    /// When it was pinned, Unix seconds.
    pub pinned_at: i64,
}

/// A publisher's pinned keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublisherPins {
    /// Any of them may sign.
    #[serde(default)]
    pub keys: Vec<PinnedKey>,
}

/// What was seen of one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSeen {
    /// The highest version pulled.
    pub highest: semver::Version,
}

/// Everything pinned for one hub.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HubTrust {
    /// By publisher (namespace).
    #[serde(default)]
    pub publishers: BTreeMap<String, PublisherPins>,
    /// By `publisher/agent`.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentSeen>,
    /// The hub's transparency log: its key and the last verified checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<LogTrust>,
    #[serde(default, skip_serializing_if = "Witnesses::is_empty")]
    pub witnesses: Witnesses,
}

/// The witnesses whose cosignatures a hub's checkpoints must carry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Witnesses {
    /// Verifier keys, `name+id+base64(0x04 ‖ key)`.
    #[serde(default)]
    pub keys: Vec<String>,
    /// How many of them must have cosigned (0: none required).
    #[serde(default)]
    pub required: usize,
    /// Cosignatures older than this many seconds (or dated more than 30 s ahead) do not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_secs: Option<u64>,
}

impl Witnesses {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.required == 0 && self.max_age_secs.is_none()
    }
}

/// A hub's transparency log as this client last verified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogTrust {
    /// The log's verifier key, `origin+id+base64` (pinned on first use).
    pub key: String,
    /// The largest checkpoint verified (a signed note).
    pub checkpoint: String,
}

/// The whole trust store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustStore {
    /// By hub URL.
    #[serde(default)]
    pub hubs: BTreeMap<String, HubTrust>,
}

fn file(paths: &Paths) -> PathBuf {
    paths.config.join(FILE_NAME)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl TrustStore {
    /// Reads the store; a missing file is empty.
    pub fn load(paths: &Paths) -> Result<Self> {
        crate::config::read_toml(
            &file(paths),
            "trust store",
            "fix it with a text editor; removing it forgets every pinned key",
        )
    }

    /// Runs `f` on the store under an exclusive lock and writes the result if it changed.
    pub fn update<T>(paths: &Paths, f: impl FnOnce(&mut TrustStore) -> Result<T>) -> Result<T> {
        create_private_dir(&paths.config)?;
        let lock = crate::config::lock_exclusive(&paths.config, "trust.lock")?;
        let mut store = Self::load(paths)?;
        let before = store.clone();
        let out = f(&mut store)?;
        if store != before {
            store.save(paths)?;
        }
        drop(lock);
        Ok(out)
    }

    fn save(&self, paths: &Paths) -> Result<()> {
        let mut text = String::from("# Written by ofc. `ofc trust` shows and edits it.\n");
        text.push_str(&toml::to_string(self).context("cannot encode the trust store")?);
        crate::config::write_atomic(&file(paths), text.as_bytes())
    }

    /// The keys pinned for `publisher` on `hub` (empty when none).
    pub fn pinned(&self, hub: &str, publisher: &str) -> Vec<PinnedKey> {
        self.hubs
            .get(hub)
            .and_then(|h| h.publishers.get(publisher))
            .map(|p| p.keys.clone())
            .unwrap_or_default()
    }

    /// Pins `key` for `publisher`; returns false when it was pinned already.
    pub fn pin(&mut self, hub: &str, publisher: &str, key: &PublicKey) -> bool {
        let keys = &mut self
            .hubs
            .entry(hub.to_string())
            .or_default()
            .publishers
            .entry(publisher.to_string())
            .or_default()
            .keys;
        if keys.iter().any(|k| k.key_id == key.key_id()) {
            return false;
        }
        keys.push(PinnedKey {
            key_id: key.key_id(),
            public_key: *key,
            pinned_at: now(),
        });
        true
    }

    /// Removes a pinned key (or every key of the publisher when `key_id` is `None`); returns how
    /// many were removed.
    pub fn unpin(&mut self, hub: &str, publisher: &str, key_id: Option<&KeyId>) -> usize {
        let Some(h) = self.hubs.get_mut(hub) else {
            return 0;
        };
        let Some(p) = h.publishers.get_mut(publisher) else {
            return 0;
        };
        let before = p.keys.len();
        match key_id {
            Some(id) => p.keys.retain(|k| &k.key_id != id),
            None => p.keys.clear(),
        }
        let removed = before - p.keys.len();
        if p.keys.is_empty() {
            h.publishers.remove(publisher);
        }
        removed
    }

    /// The highest version of `name` pulled from `hub`.
    pub fn highest(&self, hub: &str, name: &AgentName) -> Option<semver::Version> {
        self.hubs
            .get(hub)
            .and_then(|h| h.agents.get(&name.to_string()))
            .map(|a| a.highest.clone())
    }

    /// Records that `version` of `name` was pulled (raises `highest`, never lowers it).
    pub fn saw(&mut self, hub: &str, name: &AgentName, version: &semver::Version) {
        let agents = &mut self.hubs.entry(hub.to_string()).or_default().agents;
        match agents.get_mut(&name.to_string()) {
            Some(a) if &a.highest >= version => {}
            Some(a) => a.highest = version.clone(),
            None => {
                agents.insert(
                    name.to_string(),
                    AgentSeen {
                        highest: version.clone(),
                    },
                );
            }
        }
    }

    /// The hub's pinned log key and last checkpoint.
    pub fn log(&self, hub: &str) -> Option<LogTrust> {
        self.hubs.get(hub).and_then(|h| h.log.clone())
    }

    /// Records `checkpoint` (verified with `key`, of `size`) unless a larger one is stored; pins
    /// `key` when the hub has none. A different key already pinned is an error the caller
    /// checked before; it is refused here too.
    pub fn saw_checkpoint(
        &mut self,
        hub: &str,
        key: &str,
        checkpoint: &str,
        size: u64,
    ) -> Result<()> {
        let h = self.hubs.entry(hub.to_string()).or_default();
        match &mut h.log {
            None => {
                h.log = Some(LogTrust {
                    key: key.to_string(),
                    checkpoint: checkpoint.to_string(),
                });
            }
            Some(l) => {
                anyhow::ensure!(
                    l.key == key,
                    "the log key pinned for {hub} changed meanwhile (to {})",
                    l.key
                );
                let stored = index_schema::tlog::LogVerifier::parse(&l.key)
                    .and_then(|v| v.verify_checkpoint(&l.checkpoint))
                    .map(|c| c.size)
                    .unwrap_or(0);
                if size > stored {
                    l.checkpoint = checkpoint.to_string();
                }
            }
        }
        Ok(())
    }

    /// The witness policy of `hub`.
    pub fn witnesses(&self, hub: &str) -> Witnesses {
        self.hubs
            .get(hub)
            .map(|h| h.witnesses.clone())
            .unwrap_or_default()
    }

    /// The witness policy of `hub`, to change.
    pub fn witnesses_mut(&mut self, hub: &str) -> &mut Witnesses {
        &mut self.hubs.entry(hub.to_string()).or_default().witnesses
    }

    /// Forgets the log key and checkpoint pinned for `hub` (after its operator announced a new
    /// log); the next pull pins again on first use.
    pub fn forget_log(&mut self, hub: &str) -> bool {
        self.hubs
            .get_mut(hub)
            .is_some_and(|h| h.log.take().is_some())
    }

    /// Forgets what was seen of `name` (after a publisher deleted versions on purpose).
    pub fn forget(&mut self, hub: &str, name: &AgentName) -> bool {
        self.hubs
            .get_mut(hub)
            .map(|h| h.agents.remove(&name.to_string()).is_some())
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use index_schema::envelope::SecretKey;

    #[test]
    fn pins_survive_a_round_trip_and_concurrent_updates() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::under(home.path());
        let threads: Vec<_> = (0..8u8)
            .map(|i| {
                let paths = paths.clone();
                std::thread::spawn(move || {
                    let k = SecretKey::from_seed(&[i + 1; 32]).public_key();
                    TrustStore::update(&paths, |t| Ok(t.pin("http://h", "acme", &k))).unwrap()
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().unwrap());
        }
        let t = TrustStore::load(&paths).unwrap();
        assert_eq!(t.pinned("http://h", "acme").len(), 8, "no pin lost");
        assert!(t.pinned("http://other", "acme").is_empty());
    }

    #[test]
    fn highest_only_goes_up_and_unpin_removes() {
        let mut t = TrustStore::default();
        let n = AgentName::parse("acme/x").unwrap();
        t.saw("h", &n, &"1.2.0".parse().unwrap());
        t.saw("h", &n, &"1.1.0".parse().unwrap());
        assert_eq!(t.highest("h", &n).unwrap().to_string(), "1.2.0");
        let k = SecretKey::from_seed(&[9; 32]).public_key();
        assert!(t.pin("h", "acme", &k));
        assert!(!t.pin("h", "acme", &k));
        assert_eq!(t.unpin("h", "acme", Some(&k.key_id())), 1);
        assert!(t.pinned("h", "acme").is_empty());
        assert!(t.forget("h", &n));
    }
}
