//! Following the hub's outbox: a reader task pulls entries after the committed sequence and
//! feeds one writer task through a bounded channel; the writer commits on count or timeout.
//!
//! The hub implements [`OutboxSource`] over its database. An outbox row names an agent and its
//! sequence; when the source reads it, it resolves the agent's *current* state (latest
//! non-yanked version and statistics) into an upsert, or a delete when nothing is visible. So
//! replaying an entry is idempotent and an entry read late never resurrects an old version.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};

use crate::error::{Error, Result};
use crate::index::{Indexer, SearchIndex, WriterConfig};
// The outbox's types, where the hub has always named them (they live in `crate::outbox`,
// below the index, which applies them).
pub use crate::outbox::{Change, OutboxEntry, OutboxSource, SourceError};

/// Follower settings.
#[derive(Debug, Clone, Copy)]
pub struct FollowConfig {
    /// Writer memory and threads.
    pub writer: WriterConfig,
    /// Entries fetched per source call.
    pub fetch_limit: usize,
    /// Commit after this many applied entries…
    pub commit_every: usize,
    /// …or when this much time has passed since the first uncommitted entry.
    pub commit_within: Duration,
    /// How often the source is polled when nobody calls [`Follower::wake`].
    pub poll_interval: Duration,
    /// Batches buffered between the reader and the writer.
    pub channel_capacity: usize,
}

impl Default for FollowConfig {
    fn default() -> Self {
        // commit_within + poll_interval + reload delay stays well under the 1 s promise.
        Self {
            writer: WriterConfig::default(),
            fetch_limit: 1000,
            commit_every: 10_000,
            commit_within: Duration::from_millis(200),
            poll_interval: Duration::from_millis(250),
            channel_capacity: 4,
        }
    }
}

/// Progress of the follower, for `/readyz`.
#[derive(Debug, Default)]
pub struct FollowStatus {
    committed: AtomicU64,
    head: AtomicU64,
    /// The follower read the outbox's head at least once since it started.
    head_seen: AtomicBool,
    /// The first head it read: the backlog to index before the hub's search is its own.
    first_head: AtomicU64,
    /// The index caught up with the outbox once since the follower started (it stays so).
    caught_up: AtomicBool,
}

impl FollowStatus {
    /// The last sequence searchable.
    pub fn committed_seq(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    /// The outbox head seen at the last poll.
    pub fn head_seq(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Outbox entries not yet searchable.
    pub fn lag(&self) -> u64 {
        self.head_seq().saturating_sub(self.committed_seq())
    }

    /// Whether the index has caught up with the outbox since the follower started: the head
    /// read at least once, and everything up to the first head it read searchable (writes
    /// made since do not hold it back: under a steady load the lag is rarely 0). Once true it
    /// stays true (a serving hub lags a little behind every write; `lag` says how much);
    /// before, the index may be far behind (a new replica, or one restarted after many writes
    /// elsewhere) and its answers are not the hub's.
    pub fn caught_up(&self) -> bool {
        if self.caught_up.load(Ordering::Acquire) {
            return true;
        }
        let now = self.head_seen.load(Ordering::Acquire)
            && self.committed_seq() >= self.first_head.load(Ordering::Acquire);
        if now {
            self.caught_up.store(true, Ordering::Release);
        }
        now
    }
}

/// A running follower: the handle the hub keeps.
#[derive(Debug)]
pub struct Follower {
    status: Arc<FollowStatus>,
    wake: Arc<Notify>,
    stop: watch::Sender<bool>,
    reader: tokio::task::JoinHandle<Result<()>>,
    writer: tokio::task::JoinHandle<Result<()>>,
}

impl Follower {
    /// Starts following `source` into `index` from its committed sequence.
    pub fn start<S: OutboxSource>(
        index: SearchIndex,
        source: S,
        config: FollowConfig,
    ) -> Result<Self> {
        let indexer = index.writer(config.writer)?;
        let status = Arc::new(FollowStatus::default());
        status
            .committed
            .store(indexer.committed_seq(), Ordering::Release);
        status
            .head
            .store(indexer.committed_seq(), Ordering::Release);
        let wake = Arc::new(Notify::new());
        let (stop, stop_rx) = watch::channel(false);
        let (tx, rx) = mpsc::channel(config.channel_capacity.max(1));
        let reader = tokio::spawn(read_loop(
            source,
            indexer.committed_seq(),
            tx,
            Arc::clone(&status),
            Arc::clone(&wake),
            stop_rx,
            config,
        ));
        let writer = tokio::spawn(write_loop(index, indexer, rx, Arc::clone(&status), config));
        Ok(Self {
            status,
            wake,
            stop,
            reader,
            writer,
        })
    }

    /// Progress, shared with `/readyz`.
    pub fn status(&self) -> Arc<FollowStatus> {
        Arc::clone(&self.status)
    }

    /// Tells the follower that the outbox grew (the hub calls it after a publish commits), so
    /// it does not wait for the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits until `seq` is searchable or the follower failed.
    pub async fn wait_for(&self, seq: u64) -> Result<()> {
        while self.status.committed_seq() < seq {
            if self.reader.is_finished() || self.writer.is_finished() {
                return Err(Error::Stopped);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// Stops reading, commits what was applied, and waits for both tasks.
    pub async fn shutdown(self) -> Result<()> {
        let _ = self.stop.send(true);
        self.wake.notify_one();
        let r = self.reader.await.map_err(|_| Error::Stopped)?;
        let w = self.writer.await.map_err(|_| Error::Stopped)?;
        r.and(w)
    }
}

async fn read_loop<S: OutboxSource>(
    source: S,
    mut after: u64,
    tx: mpsc::Sender<Vec<OutboxEntry>>,
    status: Arc<FollowStatus>,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
    config: FollowConfig,
) -> Result<()> {
    loop {
        if *stop.borrow() {
            return Ok(());
        }
        // A failing source (the database restarting, a dropped connection) is retried after
        // the poll interval: the follower must outlive it, `/readyz` shows the lag meanwhile.
        let fetched = match source.head().await {
            Ok(head) => {
                status.head.fetch_max(head, Ordering::AcqRel);
                if !status.head_seen.load(Ordering::Acquire) {
                    status.first_head.store(head, Ordering::Release);
                    status.head_seen.store(true, Ordering::Release);
                }
                source.entries_after(after, config.fetch_limit).await
            }
            Err(e) => Err(e),
        };
        let batch = match fetched {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "search: reading the outbox failed; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(config.poll_interval) => {}
                    _ = stop.changed() => {}
                }
                continue;
            }
        };
        let full = batch.len() >= config.fetch_limit;
        if let Some(last) = batch.last() {
            after = last.seq;
            status.head.fetch_max(after, Ordering::AcqRel);
            if tx.send(batch).await.is_err() {
                return Err(Error::Stopped);
            }
        }
        if !full {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(config.poll_interval) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

async fn write_loop(
    index: SearchIndex,
    indexer: Indexer,
    mut rx: mpsc::Receiver<Vec<OutboxEntry>>,
    status: Arc<FollowStatus>,
    config: FollowConfig,
) -> Result<()> {
    let mut indexer = Some(indexer);
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let received = match deadline {
            // `None` is the commit timeout.
            Some(d) => tokio::time::timeout_at(d, rx.recv()).await.ok(),
            None => Some(rx.recv().await),
        };
        let closed = matches!(received, Some(None));
        if let Some(Some(batch)) = received {
            let ix = indexer.as_mut().expect("indexer present");
            for e in &batch {
                ix.apply(e)?;
            }
            if ix.pending() > 0 && deadline.is_none() {
                deadline = Some(tokio::time::Instant::now() + config.commit_within);
            }
            if ix.pending() < config.commit_every {
                continue;
            }
        }
        let ix = indexer.take().expect("indexer present");
        // Committing waits for segment flushes: keep it off the async workers.
        let (ix, committed) = tokio::task::spawn_blocking(move || {
            let mut ix = ix;
            let r = if ix.pending() > 0 {
                ix.commit()
            } else {
                Ok(ix.committed_seq())
            };
            (ix, r)
        })
        .await
        .map_err(|_| Error::Stopped)?;
        let committed = committed?;
        index.refresh()?;
        status.committed.store(committed, Ordering::Release);
        indexer = Some(ix);
        deadline = None;
        if closed {
            let ix = indexer.take().expect("indexer present");
            tokio::task::spawn_blocking(move || ix.close())
                .await
                .map_err(|_| Error::Stopped)??;
            return Ok(());
        }
    }
}
