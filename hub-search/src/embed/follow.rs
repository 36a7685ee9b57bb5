//! Keeping the agents' vectors up to date: a task that follows the hub's outbox on its own
//! cursor (the [`VectorStore`]'s sequence), embeds the agents that changed in batches on a
//! blocking thread, and commits them to the store.
//!
//! It is separate from the keyword index's follower on purpose: the model takes milliseconds
//! per agent (hours for a million agents after a model change), and the keyword index must stay
//! within its freshness promise meanwhile. Until an agent's vector is in, hybrid search finds
//! it by its words only. An upsert whose text did not change (a statistics update) is not
//! embedded again; a delete, or a yanked agent, removes the vector.
//!
//! A store that followed another history than the outbox's (a database restored from a
//! backup: the store is past the outbox's head, or the keyword index found the outbox changed
//! under it and asked through [`VectorFollower::replayer`]) is brought back by a replay: the
//! outbox read again from its start (an agent whose text did not change is not embedded
//! again), then every vector of an agent the replay did not name removed (the agents of the
//! lost history). Meanwhile the lag shows the replay's progress.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::store::{SharedVectors, StoreError, VectorStore};
use super::{EmbedError, Embedder, agent_text, text_hash};
use crate::outbox::{Change, OutboxEntry, OutboxSource};

/// Settings of the vector follower.
#[derive(Debug, Clone, Copy)]
pub struct VectorFollowConfig {
    /// Outbox entries read, embedded and committed together.
    pub batch: usize,
    /// How often the outbox is looked at when nobody calls [`VectorFollower::wake`].
    pub poll_interval: Duration,
}

impl Default for VectorFollowConfig {
    fn default() -> Self {
        Self {
            batch: 256,
            poll_interval: Duration::from_millis(250),
        }
    }
}

/// Progress of the vector follower.
#[derive(Debug, Default)]
pub struct VectorStatus {
    committed: AtomicU64,
    head: AtomicU64,
    embedded: AtomicU64,
    replays: AtomicU64,
}

impl VectorStatus {
    /// The last outbox sequence whose vectors are in the store.
    pub fn committed_seq(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    /// Outbox entries whose vectors are not in yet.
    pub fn lag(&self) -> u64 {
        self.head
            .load(Ordering::Acquire)
            .saturating_sub(self.committed_seq())
    }

    /// Agents embedded since the follower started.
    pub fn embedded(&self) -> u64 {
        self.embedded.load(Ordering::Acquire)
    }

    /// Replays of the outbox finished since the follower started (see the module doc).
    pub fn replays(&self) -> u64 {
        self.replays.load(Ordering::Acquire)
    }
}

/// Asks a [`VectorFollower`] to replay the outbox from its start (see the module doc).
#[derive(Debug, Clone)]
pub struct Replayer {
    asked: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

impl Replayer {
    /// Starts a replay at the follower's next look (one already running starts over).
    pub fn replay(&self) {
        self.asked.store(true, Ordering::Release);
        self.wake.notify_one();
    }
}

/// Why the vector follower stopped.
#[derive(Debug, thiserror::Error)]
pub enum VectorFollowError {
    /// The store could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The task panicked or was cancelled.
    #[error("the embedding follower stopped")]
    Stopped,
}

/// A running vector follower: the handle the hub keeps.
#[derive(Debug)]
pub struct VectorFollower {
    status: Arc<VectorStatus>,
    replay: Arc<AtomicBool>,
    wake: Arc<Notify>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), VectorFollowError>>,
}

impl VectorFollower {
    /// Starts following `source` from the store's sequence, embedding with `embedder` (whose
    /// model the store must have been opened for).
    ///
    /// # Panics
    /// If the store was opened for another model than `embedder`'s.
    pub fn start<S: OutboxSource>(
        source: S,
        embedder: Arc<Embedder>,
        vectors: SharedVectors,
        config: VectorFollowConfig,
    ) -> Self {
        let after = {
            let v = read(&vectors);
            assert_eq!(v.model_id(), embedder.model_id(), "store of another model");
            v.seq()
        };
        let status = Arc::new(VectorStatus::default());
        status.committed.store(after, Ordering::Release);
        status.head.store(after, Ordering::Release);
        let wake = Arc::new(Notify::new());
        let replay = Arc::new(AtomicBool::new(false));
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run(
            source,
            (embedder, vectors),
            after,
            Arc::clone(&status),
            (Arc::clone(&wake), Arc::clone(&replay)),
            stop_rx,
            config,
        ));
        Self {
            status,
            replay,
            wake,
            stop,
            task,
        }
    }

    /// Progress.
    pub fn status(&self) -> Arc<VectorStatus> {
        Arc::clone(&self.status)
    }

    /// Tells the follower that the outbox grew.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// A handle that makes the follower replay the outbox (for whoever learns that the
    /// database's history changed: the keyword index's follower).
    pub fn replayer(&self) -> Replayer {
        Replayer {
            asked: Arc::clone(&self.replay),
            wake: Arc::clone(&self.wake),
        }
    }

    /// Waits until the vectors of `seq` are in the store, or the follower failed.
    pub async fn wait_for(&self, seq: u64) -> Result<(), VectorFollowError> {
        while self.status.committed_seq() < seq {
            if self.task.is_finished() {
                return Err(VectorFollowError::Stopped);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// Stops after the batch in progress (committed) and waits for the task.
    pub async fn shutdown(self) -> Result<(), VectorFollowError> {
        let _ = self.stop.send(true);
        self.wake.notify_one();
        self.task.await.map_err(|_| VectorFollowError::Stopped)?
    }
}

fn read(v: &SharedVectors) -> std::sync::RwLockReadGuard<'_, VectorStore> {
    v.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn run<S: OutboxSource>(
    source: S,
    (embedder, vectors): (Arc<Embedder>, SharedVectors),
    mut after: u64,
    status: Arc<VectorStatus>,
    (wake, replay): (Arc<Notify>, Arc<AtomicBool>),
    mut stop: watch::Receiver<bool>,
    config: VectorFollowConfig,
) -> Result<(), VectorFollowError> {
    // While replaying: the agents the outbox named so far.
    let mut named: Option<HashSet<String>> = None;
    loop {
        if *stop.borrow() {
            return Ok(());
        }
        if replay.swap(false, Ordering::AcqRel) {
            tracing::warn!(
                at = after,
                "embeddings: the outbox's history changed (a restored database?); replaying it from its start"
            );
            after = 0;
            status.committed.store(0, Ordering::Release);
            named = Some(HashSet::new());
        }
        let fetched = match source.head().await {
            Ok(head) if head < after => {
                // Past the outbox's end: the store followed another history.
                replay.store(true, Ordering::Release);
                status.head.store(head, Ordering::Release);
                continue;
            }
            Ok(head) => {
                status.head.fetch_max(head, Ordering::AcqRel);
                source.entries_after(after, config.batch.max(1)).await
            }
            Err(e) => Err(e),
        };
        let batch = match fetched {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "embeddings: reading the outbox failed; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(config.poll_interval) => {}
                    _ = stop.changed() => {}
                }
                continue;
            }
        };
        let full = batch.len() >= config.batch.max(1);
        if let Some(named) = named.as_mut() {
            named.extend(batch.iter().map(|e| match &e.change {
                Change::Upsert(doc) => doc.name().to_string(),
                Change::Delete(name) => name.to_string(),
            }));
        }
        if let Some(last) = batch.last().map(|e| e.seq) {
            let (embedder, vectors) = (Arc::clone(&embedder), Arc::clone(&vectors));
            let embedded =
                tokio::task::spawn_blocking(move || apply(&embedder, &vectors, &batch, last))
                    .await
                    .map_err(|_| VectorFollowError::Stopped)??;
            after = last;
            status.head.fetch_max(last, Ordering::AcqRel);
            status.committed.store(last, Ordering::Release);
            status.embedded.fetch_add(embedded, Ordering::AcqRel);
        }
        if !full {
            if let Some(named) = named.take() {
                // Replayed to the end: what the outbox never named is of the lost history.
                let vectors = Arc::clone(&vectors);
                let removed = tokio::task::spawn_blocking(move || sweep(&vectors, &named, after))
                    .await
                    .map_err(|_| VectorFollowError::Stopped)??;
                status.committed.store(after, Ordering::Release);
                status.replays.fetch_add(1, Ordering::AcqRel);
                // A warning, as its start was: the end of a replay an operator saw begin.
                tracing::warn!(at = after, removed, "embeddings: replay done");
            }
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(config.poll_interval) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

/// Removes every vector of an agent not in `named` and commits the store as sequence `seq`;
/// how many were removed.
fn sweep(
    vectors: &SharedVectors,
    named: &HashSet<String>,
    seq: u64,
) -> Result<usize, VectorFollowError> {
    let gone: Vec<String> = read(vectors)
        .iter()
        .map(|(key, _)| key)
        .filter(|key| !named.contains(*key))
        .map(str::to_string)
        .collect();
    let written = {
        let mut v = vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for key in &gone {
            v.remove(key);
        }
        v.write(seq)?
    };
    vectors
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .finish(written);
    Ok(gone.len())
}

/// Embeds the batch's changed agents (outside any lock), applies the batch to the store and
/// commits it as sequence `seq`. Returns how many agents were embedded.
fn apply(
    embedder: &Embedder,
    vectors: &SharedVectors,
    batch: &[OutboxEntry],
    seq: u64,
) -> Result<u64, VectorFollowError> {
    // The last entry of an agent in the batch is its current state.
    let mut last: std::collections::HashMap<String, &Change> = std::collections::HashMap::new();
    for e in batch {
        let key = match &e.change {
            Change::Upsert(doc) => doc.name().to_string(),
            Change::Delete(name) => name.to_string(),
        };
        last.insert(key, &e.change);
    }
    let mut removes = Vec::new();
    let mut todo: Vec<(String, u64, String)> = Vec::new();
    {
        let v = read(vectors);
        for (key, change) in last {
            match change {
                Change::Upsert(doc) if !doc.stats.yanked => {
                    let text = agent_text(doc);
                    let hash = text_hash(&text);
                    if v.text_hash(&key) != Some(hash) {
                        todo.push((key, hash, text));
                    }
                }
                _ => removes.push(key),
            }
        }
    }
    let texts: Vec<&str> = todo.iter().map(|(_, _, t)| t.as_str()).collect();
    let embedded = match embedder.embed(&texts) {
        Ok(e) => e,
        Err(e) => {
            // The model ran at load; a failure here is one text's (the tokenizer): embed the
            // rest one by one and leave that agent to its words.
            tracing::warn!(error = %e, "embeddings: a batch failed; embedding one by one");
            texts
                .iter()
                .map(|t| embedder.embed_one(t))
                .collect::<Vec<Result<Vec<f32>, EmbedError>>>()
                .into_iter()
                .zip(&todo)
                .map(|(r, (key, _, _))| {
                    r.unwrap_or_else(|e| {
                        tracing::error!(agent = %key, error = %e, "embeddings: agent not embedded");
                        Vec::new()
                    })
                })
                .collect()
        }
    };
    let write = || {
        vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let mut n = 0;
    {
        let mut v = write();
        for ((key, hash, _), vector) in todo.iter().zip(&embedded) {
            if vector.len() == Embedder::DIM {
                v.upsert(key, *hash, vector);
                n += 1;
            } else {
                v.remove(key);
            }
        }
        for key in &removes {
            v.remove(key);
        }
    }
    // The file is written under the read lock (searches go on; this task is the only writer),
    // then recorded under a short write lock.
    let written = read(vectors).write(seq)?;
    write().finish(written);
    Ok(n)
}
