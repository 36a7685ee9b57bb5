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
}
