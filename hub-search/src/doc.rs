//! What the index holds for one agent: its latest visible manifest plus the hub's statistics.

use index_schema::manifest::Manifest;
use index_schema::name::AgentName;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Hub-side facts about an agent that are not in its signed manifest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStats {
    /// Downloads over all versions.
    pub downloads: u64,
    /// Last publish or change, Unix seconds.
    pub updated_at: i64,
    /// Every version is yanked (the agent is never shown).
    #[serde(default)]
    pub yanked: bool,
    /// The publisher deprecated the agent (shown, ranked lower).
    #[serde(default)]
    pub deprecated: bool,
}

/// One agent as the index sees it: the manifest of its latest non-yanked version and its stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchDoc {
    /// The manifest of the version shown.
    pub manifest: Manifest,
    /// Hub statistics.
    pub stats: AgentStats,
}

impl SearchDoc {
    /// Pairs a manifest with its statistics.
    pub fn new(manifest: Manifest, stats: AgentStats) -> Self {
        Self { manifest, stats }
    }

    /// The agent's name (the document's identity).
    pub fn name(&self) -> &AgentName {
        &self.manifest.name
    }

    /// SHA-256 (hex) over the manifest bytes and the statistics that the outbox carries: equal
    /// fingerprints mean the index holds this document. The checker compares these.
    ///
    /// Download counts are left out on purpose: a bundle download bumps the count without an
    /// outbox row (one shared-counter write per download would serialize every pull), so the
    /// indexed count is refreshed at the agent's next change or by `ofc-hub reindex`, and a live
    /// hub's check must not report that lag as a mismatch.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.manifest.to_json_bytes());
        h.update(self.stats.updated_at.to_be_bytes());
        h.update([u8::from(self.stats.yanked), u8::from(self.stats.deprecated)]);
        hex::encode(h.finalize())
    }
}
