//! Following the hub's outbox: a reader task pulls entries after the committed sequence and
//! feeds one writer task through a bounded channel; the writer commits on count or timeout.
//!
//! The hub implements [`OutboxSource`] over its database. An outbox row names an agent and its
//! sequence; when the source reads it, it resolves the agent's *current* state (latest
//! non-yanked version and statistics) into an upsert, or a delete when nothing is visible. So
//! replaying an entry is idempotent and an entry read late never resurrects an old version.
//!
//! The index must follow *this* outbox. A database restored from a backup goes back to an
//! earlier sequence and then hands the same sequences out to other changes; an index that
//! applied the lost history would skip them for good. So the reader checks, whenever it reads
//! the head, that the index is not ahead of the outbox, and with each read that the outbox row
//! at its position is the entry it applied (the entry's [`Mark`], recorded in the index's
//! commit). On a difference it rebuilds the index from a [`Snapshot`] of the source, as
//! `ofc-hub reindex` does (or empties it and replays the outbox from its start when the source
//! has no snapshot), and [`FollowStatus::caught_up`] is false until that is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};

use crate::error::{Error, Result};
use crate::index::{Indexer, SearchIndex, WriterConfig, by_popularity};
// The outbox's types, where the hub has always named them (they live in `crate::outbox`,
// below the index, which applies them).
pub use crate::outbox::{
    Change, Mark, MarkedEntries, OutboxEntry, OutboxSource, Snapshot, SourceError,
};

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
    /// The index caught up with the outbox once since the follower started (it stays so,
    /// until the index is found to have diverged from the outbox).
    caught_up: AtomicBool,
    /// The index diverged from the outbox and is being rebuilt.
    rebuilding: AtomicBool,
    /// How many times the index was found diverged and rebuilt since the follower started.
    rebuilds: AtomicU64,
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
    ///
    /// An index found to have diverged from the outbox (a restored database) is not caught up
    /// until it is rebuilt and holds everything up to the head read when that was found.
    pub fn caught_up(&self) -> bool {
        if self.rebuilding.load(Ordering::Acquire) {
            return false;
        }
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

    /// Whether the index is being rebuilt after it was found to have diverged from the outbox.
    pub fn rebuilding(&self) -> bool {
        self.rebuilding.load(Ordering::Acquire)
    }

    /// How many rebuilds divergence from the outbox caused since the follower started.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds.load(Ordering::Acquire)
    }

    /// The index diverged: not caught up until the rebuild is done and the index holds the
    /// outbox up to `head`.
    fn diverged(&self, head: u64) {
        self.rebuilding.store(true, Ordering::Release);
        self.caught_up.store(false, Ordering::Release);
        self.first_head.store(head, Ordering::Release);
        self.head.store(head, Ordering::Release);
        self.head_seen.store(true, Ordering::Release);
        self.rebuilds.fetch_add(1, Ordering::AcqRel);
    }
}

/// What the reader hands the writer.
enum Work {
    /// Entries to apply, and the mark of the last one.
    Batch(Vec<OutboxEntry>, Option<Mark>),
    /// The index diverged from the outbox: replace it with the snapshot (`None`: empty it, at
    /// sequence 0, for the outbox to be replayed from its start).
    Rebuild(Option<Snapshot>),
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
            (
                indexer.committed_seq(),
                indexer.committed_mark().map(str::to_string),
            ),
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
    (mut after, mut after_mark): (u64, Option<Mark>),
    tx: mpsc::Sender<Work>,
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
            Ok(head) if after > head => Ok(Err((
                format!("the index is at outbox sequence {after}, the outbox ends at {head}"),
                head,
            ))),
            Ok(head) => {
                status.head.fetch_max(head, Ordering::AcqRel);
                if !status.head_seen.load(Ordering::Acquire) {
                    status.first_head.store(head, Ordering::Release);
                    status.head_seen.store(true, Ordering::Release);
                }
                source
                    .entries_after_marked(after, config.fetch_limit)
                    .await
                    .map(|m| match (&after_mark, &m.at_after) {
                        (Some(mine), Some(theirs)) if after > 0 && mine != theirs => Err((
                            format!(
                                "outbox sequence {after} is now `{theirs}`, the index applied \
                                 `{mine}`"
                            ),
                            head,
                        )),
                        _ => Ok(m),
                    })
            }
            Err(e) => Err(e),
        };
        let marked = match fetched {
            Ok(Ok(m)) => m,
            Ok(Err((why, head))) => {
                // A restored database: what the index applied past the restore point is
                // another history, and the sequences it holds will be handed out again.
                tracing::warn!(
                    why,
                    "search: the index diverged from the outbox (a restored database?); rebuilding it"
                );
                status.diverged(head);
                let snapshot = loop {
                    match source.snapshot().await {
                        Ok(s) => break s,
                        Err(e) => {
                            tracing::warn!(error = %e, "search: reading the snapshot to rebuild from failed; retrying");
                            tokio::select! {
                                _ = tokio::time::sleep(config.poll_interval) => {}
                                _ = stop.changed() => {}
                            }
                            if *stop.borrow() {
                                return Ok(());
                            }
                        }
                    }
                };
                (after, after_mark) = snapshot
                    .as_ref()
                    .map_or((0, None), |s| (s.seq, s.mark.clone()));
                if tx.send(Work::Rebuild(snapshot)).await.is_err() {
                    return Err(Error::Stopped);
                }
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "search: reading the outbox failed; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(config.poll_interval) => {}
                    _ = stop.changed() => {}
                }
                continue;
            }
        };
        let batch = marked.entries;
        let full = batch.len() >= config.fetch_limit;
        if let Some(last) = batch.last() {
            after = last.seq;
            after_mark = marked.last.clone();
            status.head.fetch_max(after, Ordering::AcqRel);
            if tx.send(Work::Batch(batch, marked.last)).await.is_err() {
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
    mut rx: mpsc::Receiver<Work>,
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
        match received {
            Some(Some(Work::Batch(batch, mark))) => {
                let ix = indexer.as_mut().expect("indexer present");
                for e in &batch {
                    ix.apply(e)?;
                }
                if let (Some(last), Some(mark)) = (batch.last(), mark) {
                    ix.mark(last.seq, mark);
                }
                if ix.pending() > 0 && deadline.is_none() {
                    deadline = Some(tokio::time::Instant::now() + config.commit_within);
                }
                if ix.pending() < config.commit_every {
                    continue;
                }
            }
            Some(Some(Work::Rebuild(snapshot))) => {
                let ix = indexer.take().expect("indexer present");
                // What was applied and not committed belongs to the other history: dropped.
                let (ix, rebuilt) = tokio::task::spawn_blocking(move || {
                    let mut ix = ix;
                    let r = ix.rollback().and_then(|()| match snapshot {
                        Some(Snapshot {
                            seq,
                            mark,
                            mut docs,
                        }) => {
                            // Most downloaded first, as `ofc-hub reindex` writes it.
                            by_popularity(&mut docs);
                            let n = docs.len();
                            ix.rebuild_marked(seq, mark, docs).map(|seq| (seq, n))
                        }
                        None => ix.rebuild_marked(0, None, []).map(|seq| (seq, 0)),
                    });
                    (ix, r)
                })
                .await
                .map_err(|_| Error::Stopped)?;
                let (seq, docs) = rebuilt?;
                index.refresh()?;
                status.committed.store(seq, Ordering::Release);
                status.rebuilding.store(false, Ordering::Release);
                tracing::warn!(seq, docs, "search: the index was rebuilt from the database");
                indexer = Some(ix);
                deadline = None;
                continue;
            }
            _ => {}
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
