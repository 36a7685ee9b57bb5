//! The follower and an outbox whose history changed under it (a database restored from a
//! backup): the index is ahead of the outbox, or the outbox handed its sequences out again to
//! other changes. The follower notices either, rebuilds the index from the source's snapshot
//! (or empties it and replays the outbox when the source has none), and is not caught up
//! until then.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hub_search::corpus::synthetic_agent;
use hub_search::follow::{MarkedEntries, Snapshot, SourceError};
use hub_search::{
    Change, FollowConfig, Follower, OutboxEntry, OutboxSource, SearchDoc, SearchIndex,
};
use tokio::sync::Semaphore;

/// An outbox with marks (here a name given to each row) and snapshots, whose snapshot waits
/// for a permit while the test holds it.
#[derive(Clone)]
struct History {
    rows: Arc<Mutex<Vec<(OutboxEntry, String)>>>,
    /// `snapshot` takes a permit: none, and it waits.
    snapshot_permits: Arc<Semaphore>,
    /// Without snapshots (the follower's fallback: empty and replay).
    snapshots: bool,
}

impl History {
    fn new(snapshots: bool) -> History {
        History {
            rows: Arc::default(),
            snapshot_permits: Arc::new(Semaphore::new(1000)),
            snapshots,
        }
    }

    /// Appends an upsert of `doc` as the next sequence, with `mark`.
    fn push(&self, doc: &SearchDoc, mark: &str) -> u64 {
        let mut rows = self.rows.lock().unwrap();
        let seq = rows.last().map_or(0, |(e, _)| e.seq) + 1;
        let change = Change::Upsert(Box::new(doc.clone()));
        rows.push((OutboxEntry { seq, change }, mark.to_string()));
        seq
    }

    /// The database restored to a backup taken at `seq`.
    fn restore(&self, seq: u64) {
        self.rows.lock().unwrap().retain(|(e, _)| e.seq <= seq);
    }

    /// The agents visible now.
    fn visible(&self) -> BTreeSet<String> {
        let mut docs = BTreeMap::new();
        for (e, _) in self.rows.lock().unwrap().iter() {
            if let Change::Upsert(d) = &e.change {
                docs.insert(d.manifest.name.to_string(), ());
            }
        }
        docs.into_keys().collect()
    }
}

impl OutboxSource for History {
    async fn entries_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, SourceError> {
        Ok(self.entries_after_marked(after, limit).await?.entries)
    }

    async fn head(&self) -> Result<u64, SourceError> {
        Ok(self.rows.lock().unwrap().last().map_or(0, |(e, _)| e.seq))
    }

    async fn entries_after_marked(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<MarkedEntries, SourceError> {
        let rows = self.rows.lock().unwrap();
        let at_after = rows
            .iter()
            .find(|(e, _)| e.seq == after)
            .map(|(_, m)| m.clone());
        let later: Vec<_> = rows
            .iter()
            .filter(|(e, _)| e.seq > after)
            .take(limit)
            .cloned()
            .collect();
        Ok(MarkedEntries {
            last: later.last().map(|(_, m)| m.clone()),
            entries: later.into_iter().map(|(e, _)| e).collect(),
            at_after,
        })
    }

    async fn snapshot(&self) -> Result<Option<Snapshot>, SourceError> {
        if !self.snapshots {
            return Ok(None);
        }
        let _permit = self.snapshot_permits.acquire().await?;
        let rows = self.rows.lock().unwrap();
        let mut docs = BTreeMap::new();
        for (e, _) in rows.iter() {
            if let Change::Upsert(d) = &e.change {
                docs.insert(d.manifest.name.to_string(), (**d).clone());
            }
        }
        Ok(Some(Snapshot {
            seq: rows.last().map_or(0, |(e, _)| e.seq),
            mark: rows.last().map(|(_, m)| m.clone()),
            docs: docs.into_values().collect(),
        }))
    }
}

fn agent(i: u64) -> SearchDoc {
    synthetic_agent(7, i).to_doc().unwrap()
}

fn config() -> FollowConfig {
    FollowConfig {
        poll_interval: Duration::from_millis(10),
        commit_within: Duration::from_millis(10),
        ..FollowConfig::default()
    }
}

fn names(index: &SearchIndex) -> BTreeSet<String> {
    index.contents().unwrap().into_keys().collect()
}

/// Waits (bounded) until the follower is caught up and the index shows what `history` does.
async fn wait_matching(follower: &Follower, index: &SearchIndex, history: &History) {
    let status = follower.status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(status.caught_up() && names(index) == history.visible()) {
        assert!(
            Instant::now() < deadline,
            "the index never matched the outbox: {:?} against {:?} (caught up: {})",
            names(index),
            history.visible(),
            status.caught_up()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Follows `history` until the index matches it, then stops: the index committed at its head.
async fn follow_once(index: &SearchIndex, history: &History) {
    let f = Follower::start(index.clone(), history.clone(), config()).unwrap();
    wait_matching(&f, index, history).await;
    f.shutdown().await.unwrap();
}

/// An index that followed three agents, then three more (sequences 1..=6).
async fn kept_then_gone(snapshots: bool) -> (History, SearchIndex) {
    let history = History::new(snapshots);
    let index = SearchIndex::in_ram().unwrap();
    for i in 0..3 {
        history.push(&agent(i), &format!("kept-{i}"));
    }
    follow_once(&index, &history).await;
    for i in 3..6 {
        history.push(&agent(i), &format!("gone-{i}"));
    }
    follow_once(&index, &history).await;
    (history, index)
}

#[tokio::test]
async fn an_outbox_that_reused_the_index_sequences_is_noticed_and_the_index_rebuilt() {
    let (history, index) = kept_then_gone(true).await;
    assert_eq!(index.committed_seq().unwrap(), 6);

    // Restored to seq 3, then four other changes (seqs 4-7): the head is past the index, but
    // the row at its seq 6 is another one.
    history.restore(3);
    for i in 6..10 {
        history.push(&agent(i), &format!("new-{i}"));
    }
    // The snapshot is held: the follower is not caught up meanwhile.
    let held = history.snapshot_permits.acquire_many(1000).await.unwrap();
    let f = Follower::start(index.clone(), history.clone(), config()).unwrap();
    let status = f.status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !status.rebuilding() {
        assert!(
            Instant::now() < deadline,
            "the divergence was never noticed"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!status.caught_up());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!status.caught_up(), "caught up while rebuilding");
    drop(held);
    wait_matching(&f, &index, &history).await;
    assert_eq!(status.rebuilds(), 1);
    assert_eq!(index.committed_seq().unwrap(), 7);
    assert_eq!(status.lag(), 0);
    // What follows the rebuild is applied as usual, without another rebuild.
    history.push(&agent(10), "after");
    f.wake();
    wait_matching(&f, &index, &history).await;
    f.shutdown().await.unwrap();
    assert_eq!(index.committed_seq().unwrap(), 8);
    assert_eq!(status.rebuilds(), 1);

    // A restart on the same outbox: the marks agree, nothing is rebuilt.
    let f = Follower::start(index.clone(), history.clone(), config()).unwrap();
    wait_matching(&f, &index, &history).await;
    assert_eq!(f.status().rebuilds(), 0);
    f.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_index_ahead_of_the_outbox_is_rebuilt_and_without_snapshots_replayed() {
    for snapshots in [true, false] {
        let (history, index) = kept_then_gone(snapshots).await;
        // Restored to seq 3 and nothing since: the index (6) is ahead of the head (3).
        history.restore(3);
        let f = Follower::start(index.clone(), history.clone(), config()).unwrap();
        wait_matching(&f, &index, &history).await;
        assert_eq!(f.status().rebuilds(), 1, "snapshots: {snapshots}");
        assert_eq!(index.committed_seq().unwrap(), 3);
        // Then the reused sequences are followed as usual.
        history.push(&agent(6), "new-6");
        f.wake();
        wait_matching(&f, &index, &history).await;
        assert_eq!(f.status().rebuilds(), 1, "snapshots: {snapshots}");
        f.shutdown().await.unwrap();
    }
}
