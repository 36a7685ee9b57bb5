//! The outbox's contract: what the hub hands the index ([`OutboxEntry`], each a [`Change`]) and
//! how it is read ([`OutboxSource`]).
//!
//! These are plain data and a trait, below both the writer that applies entries (`Indexer`)
//! and the follower that reads them (`follow`): the writer needs the entries, the follower
//! needs the writer, and neither depends on the other's side.

use std::future::Future;

use index_schema::name::AgentName;

use crate::doc::SearchDoc;

/// What an outbox entry does to the index.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Index (or replace) the agent's document.
    Upsert(Box<SearchDoc>),
    /// Remove the agent (no visible version any more).
    Delete(AgentName),
}

/// One outbox entry, resolved by the source.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    /// The outbox sequence (strictly increasing, may have holes).
    pub seq: u64,
    /// Its effect.
    pub change: Change,
}

/// An error from the outbox source (the database), kept opaque.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// What identifies an outbox row beyond its sequence (the source's choice: the hub's is the
/// row's time, kind, agent and version). A database restored from a backup hands the same
/// sequences out again to other changes: the index records the mark of the last entry it
/// applied, and a different mark at that sequence means the index followed another history.
pub type Mark = String;

/// [`OutboxSource::entries_after_marked`]: entries with the marks that tie them to the outbox.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarkedEntries {
    /// Entries after `after`, as [`OutboxSource::entries_after`] gives them.
    pub entries: Vec<OutboxEntry>,
    /// The mark of the row at `after` (None: no such row, or the source has no marks).
    pub at_after: Option<Mark>,
    /// The mark of the last entry (None when there is none, or the source has no marks).
    pub last: Option<Mark>,
}

/// Every visible agent as of one outbox sequence: what a rebuild starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// The outbox's head when the agents were read.
    pub seq: u64,
    /// The head row's mark.
    pub mark: Option<Mark>,
    /// The agents' documents.
    pub docs: Vec<SearchDoc>,
}

/// Where the index learns about changes: the hub's outbox.
pub trait OutboxSource: Send + Sync + 'static {
    /// Entries with a sequence greater than `after`, ascending, at most `limit`.
    fn entries_after(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<OutboxEntry>, SourceError>> + Send;

    /// The highest sequence in the outbox (0 when empty): what `/readyz` compares against.
    fn head(&self) -> impl Future<Output = Result<u64, SourceError>> + Send;

    /// [`OutboxSource::entries_after`] with the marks of the row at `after` and of the last
    /// entry, read together (one snapshot of the outbox), so the follower notices a history
    /// other than the one its index applied. The default has no marks.
    fn entries_after_marked(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<MarkedEntries, SourceError>> + Send {
        async move {
            Ok(MarkedEntries {
                entries: self.entries_after(after, limit).await?,
                at_after: None,
                last: None,
            })
        }
    }

    /// Every visible agent and the head they are as of, for rebuilding an index that
    /// diverged from the outbox. `None` (the default): the follower empties the index and
    /// replays the outbox from its start instead.
    fn snapshot(&self) -> impl Future<Output = Result<Option<Snapshot>, SourceError>> + Send {
        async { Ok(None) }
    }
}
