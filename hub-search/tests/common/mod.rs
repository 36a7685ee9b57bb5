//! What the search and embedding tests share: the project's peer scripts and an in-memory
//! outbox. Each test binary uses part of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use hub_search::{Change, OutboxEntry, OutboxSource};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `scripts/peers/NAME` and returns the line it prints.
pub fn peer(name: &str) -> PathBuf {
    let script = repo_root().join("scripts/peers").join(name);
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "scripts/peers/{name} failed (run `scripts/install-test-deps`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// The real embedding model (all-MiniLM-L6-v2), installed by `scripts/peers/search-model`.
pub fn model_dir() -> PathBuf {
    peer("search-model")
}

/// An in-memory outbox, standing in for the hub's database.
#[derive(Default, Clone)]
pub struct MemoryOutbox(Arc<Mutex<Vec<OutboxEntry>>>);

impl MemoryOutbox {
    /// Appends a change under the next sequence number; returns it.
    pub fn push(&self, change: Change) -> u64 {
        let mut v = self.0.lock().unwrap();
        let seq = v.last().map_or(0, |e| e.seq) + 1;
        v.push(OutboxEntry { seq, change });
        seq
    }

    /// Appends entries as they are, sequence numbers and all.
    pub fn extend(&self, entries: &[OutboxEntry]) {
        self.0.lock().unwrap().extend(entries.iter().cloned());
    }
}

impl OutboxSource for MemoryOutbox {
    async fn entries_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, hub_search::follow::SourceError> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.seq > after)
            .take(limit)
            .cloned()
            .collect())
    }
    async fn head(&self) -> Result<u64, hub_search::follow::SourceError> {
        Ok(self.0.lock().unwrap().last().map_or(0, |e| e.seq))
    }
}
