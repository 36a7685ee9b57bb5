//! The hub's search: a Tantivy index of agents that follows the hub's outbox.
//!
//! - [`mapping`]: the index definition — fields, analyzers, boosts — in one table.
//! - [`doc`]: [`SearchDoc`], what the index holds per agent (latest visible manifest + stats).
//! - [`index`]: [`SearchIndex`] (open, search, check) and the single writer [`Indexer`], whose
//!   commits carry the last applied outbox sequence.
//! - [`follow`]: [`OutboxSource`] (implemented by the hub over its database) and the
//!   [`Follower`] tasks that keep the index up to date.
//! - [`query`] and [`search`]: checked search parameters and their execution.
//! - [`corpus`] and [`relevance`]: the synthetic corpus and the judged relevance set.

pub mod corpus;
pub mod doc;
pub mod follow;
pub mod index;
pub mod mapping;
pub mod query;
pub mod relevance;
pub mod search;
pub mod synonyms;

pub use doc::{AgentStats, SearchDoc};
pub use follow::{Change, FollowConfig, FollowStatus, Follower, OutboxEntry, OutboxSource};
pub use index::{Check, CommitPayload, Indexer, SearchIndex, Tuning, WriterConfig};
pub use query::{Cursor, QueryError, SearchParams, SearchQuery, Sort};
pub use search::{FacetCount, Highlight, Hit, SearchFacets, SearchResults};
pub use synonyms::{SynonymError, Synonyms};

/// What can go wrong in the search crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Tantivy failed (I/O, corruption, lock held by another writer).
    #[error("search index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// A file or directory could not be used.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// The index on disk is not in the format this build writes.
    #[error("search index format: {0}")]
    Format(String),
    /// The outbox source failed.
    #[error("outbox: {0}")]
    Source(#[source] follow::SourceError),
    /// The follower's tasks stopped.
    #[error("the search follower stopped")]
    Stopped,
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
