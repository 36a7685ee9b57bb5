//! Running a [`SearchQuery`](crate::query::SearchQuery): the Tantivy query is built term by
//! term from analysed user text (never through Tantivy's query parser), hits are collected in
//! sort order after the cursor, and highlights come from the stored tagline and description.
//!
//! One concept a file, each importing only from the files listed after it:
//!
//! - `page`: `SearchIndex::search`, one page of results: the full matches or the
//!   fewer-words tiers, facets, hits with highlights, "did you mean", the next cursor.
//! - `fewer_words`: the tiers of agents lacking some of the words, and which words a partial
//!   match lacks.
//! - `collect`: running a text query and the filters segment by segment into a collector.
//! - `collector`: the top-k collector, pruned by the text score and the popularity bound.
//! - `rank`: sort keys and the order of hits (what cursors compare).
//! - `filters`: the text query AND the capability, keyword, kind and publisher filters.
//! - `did_you_mean`: the query spelled as the index spells it.
//! - `plan`: the query plan: each word's alternatives (exact terms, synonyms, prefix, typos)
//!   and the query they make (conjunction, union, `AnyOf`), with its `plan::Shape`.
//! - `highlight`: the snippet generators of the highlighted fields.
//! - `doc_freqs`: document frequencies and typo matches memoised for one search.
//! - `scorers`: the Tantivy queries of our own (query, weight and scorer of each).
//! - `facets`: the facet counts.
//! - `restrict`: which of some named agents pass the filters (the hybrid search's vector side).

mod collect;
mod collector;
mod did_you_mean;
mod doc_freqs;
mod facets;
mod fewer_words;
#[cfg(test)]
mod filter_tests;
mod filters;
mod highlight;
mod page;
mod plan;
mod rank;
mod restrict;
mod scorers;
#[cfg(test)]
pub(crate) mod tests;

/// A fragment of a field with the matched words marked by byte ranges.
pub use index_schema::hub_api::SearchHighlight as Highlight;
/// One hit: the agent's latest visible version (the hub API's type).
pub use index_schema::hub_api::SearchHit as Hit;
/// A page of hits.
pub use index_schema::hub_api::SearchPage as SearchResults;
pub use index_schema::hub_api::{FacetCount, SearchFacets};
