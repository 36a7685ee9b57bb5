//! The hub's search: a Tantivy index of agents that follows the hub's outbox.
//!
//! - [`mapping`]: the index definition — fields, analyzers, boosts — in one table.
//! - [`doc`]: [`SearchDoc`], what the index holds per agent (latest visible manifest + stats).
//! - [`index`]: [`SearchIndex`] (open, search, check) and the single writer [`Indexer`], whose
//!   commits carry the last applied outbox sequence.
//! - [`outbox`]: [`OutboxEntry`] and [`OutboxSource`] (implemented by the hub over its
//!   database), what the writer applies and the follower reads.
//! - [`follow`]: the [`Follower`] tasks that keep the index up to date.
//! - [`query`] and [`search`]: checked search parameters and their execution; [`words`]: how a
//!   query's text becomes words; [`synonyms`]: the synonym sets applied at query time.
//! - [`embed`]: sentence embeddings computed by the hub (all-MiniLM-L6-v2 on the CPU) and
//!   their store beside the index.
//! - [`corpus`] and [`relevance`]: the synthetic corpus and the judged relevance set.
//!
//! The modules import one way: `search` and `follow` use `index`; `index` uses `outbox`,
//! `synonyms`, the per-segment ranking data (`popularity`) and `mapping`; `synonyms` uses
//! `words`. Nothing below imports from above, and every module takes [`Error`] from `error`
//! rather than from this root (which imports every module).

pub mod corpus;
pub mod doc;
pub mod embed;
mod error;
pub mod follow;
pub mod hybrid;
pub mod index;
pub mod mapping;
pub mod outbox;
mod popularity;
pub mod query;
pub mod relevance;
pub mod search;
pub mod synonyms;
pub mod words;

pub use doc::{AgentStats, SearchDoc};
pub use error::{Error, Result};
pub use follow::{FollowConfig, FollowStatus, Follower};
pub use index::{Check, CommitPayload, Indexer, SearchIndex, Tuning, WriterConfig};
pub use outbox::{Change, OutboxEntry, OutboxSource};
pub use query::{
    Cursor, DeprecatedFilter, QueryError, SearchMode, SearchParams, SearchQuery, Sort,
};
pub use search::{FacetCount, Highlight, Hit, SearchFacets, SearchResults};
pub use synonyms::{SynonymError, Synonyms};
