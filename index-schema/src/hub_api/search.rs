//! `GET /api/v1/search`: its query-string parameters and its page of hits.

use serde::{Deserialize, Serialize};

/// The query-string parameters of `GET /api/v1/search`. Text, not typed values: the hub checks
/// them (and names the one that is wrong), so that a client of another version gets the hub's
/// own message rather than a decoding error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Free text (at most 1024 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Capability names, comma-separated; every one must be offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// Keywords, comma-separated; every one must be present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword: Option<String>,
    /// Source kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// `relevance` (default), `downloads` or `updated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    /// Hits per page, 1..=100 (20 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `true` to get facet counts (`false` by default: they cost a pass over every match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facets: Option<String>,
    /// `keyword`, `semantic` or `hybrid` (the default when the hub has an embedding model;
    /// `keyword` otherwise, and the others are refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Deprecated agents: `include` (default: shown, ranked lower and marked), `exclude`
    /// (hidden) or `only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
    /// `true`: only agents of verified namespaces (a domain proved, issue 33).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<String>,
}

/// A page of hits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchPage {
    /// Hits, best first (or by the requested sort).
    pub hits: Vec<SearchHit>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// When every word together found too few agents (fewer than the hub's threshold, 10 by
    /// default), agents with only some of the words follow the full matches: the words some
    /// hit of this page lacks, in query order (each such hit lists its own in
    /// `missing_words`). Empty when every hit has every word.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_words: Vec<String>,
    /// For a query with no or few full matches whose words the index spells differently: the
    /// query in the index's own words (`scrapper` → `scraper`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub did_you_mean: Option<String>,
    /// With `facets=true`: how many matching agents have each capability, keyword, kind and
    /// publisher, counted over every match of the query (not only this page), the most
    /// frequent values first (ties by value), at most 10 per facet (`MAX_FACET_VALUES`). The
    /// same on every page of a query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facets: Option<SearchFacets>,
}

/// Most values listed per facet.
pub const MAX_FACET_VALUES: usize = 10;

/// Facet counts over a query's matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchFacets {
    /// Capability names (lowercase).
    #[serde(default)]
    pub capability: Vec<FacetCount>,
    /// Keywords (lowercase).
    #[serde(default)]
    pub keyword: Vec<FacetCount>,
    /// Source kinds.
    #[serde(default)]
    pub kind: Vec<FacetCount>,
    /// Publishers.
    #[serde(default)]
    pub publisher: Vec<FacetCount>,
}

/// One facet value and how many matching agents have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FacetCount {
    /// The value.
    pub value: String,
    /// Matching agents with it.
    pub count: u64,
}

/// One agent: its latest visible version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchHit {
    /// `publisher/agent`.
    pub name: String,
    /// The version shown.
    pub version: String,
    /// Display name.
    #[serde(default)]
    pub display_name: String,
    /// Tagline.
    #[serde(default)]
    pub tagline: String,
    /// Source kind.
    #[serde(default)]
    pub kind: String,
    /// Downloads.
    #[serde(default)]
    pub downloads: u64,
    /// Last update, Unix **seconds**.
    #[serde(default)]
    pub updated_at: i64,
    /// Deprecated by its publisher.
    #[serde(default)]
    pub deprecated: bool,
    /// The domain its namespace proved, when verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_domain: Option<String>,
    /// Ranking score (relevance sort only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// Matched words in the tagline and description.
    #[serde(default)]
    pub highlights: Vec<SearchHighlight>,
    /// With `mode=semantic` or `hybrid`: what found the agent, `words` (the keyword search)
    /// and/or `meaning` (its embedding is among the nearest to the query's). Absent in
    /// keyword mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_by: Vec<String>,
    /// With `mode=semantic` or `hybrid`: the cosine similarity of the agent's embedding and
    /// the query's (-1 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// The query words this agent lacks: it is a partial match, listed after every agent
    /// that has them all. Empty for a full match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_words: Vec<String>,
}

/// A fragment of a field with the matched words marked by byte ranges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchHighlight {
    /// `tagline` or `description`.
    pub field: String,
    /// The fragment.
    pub fragment: String,
    /// Byte ranges of `fragment` that matched.
    pub ranges: Vec<ByteRange>,
}

/// A byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ByteRange {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl ByteRange {
    /// As a range, to slice the fragment with.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

impl From<std::ops::Range<usize>> for ByteRange {
    fn from(r: std::ops::Range<usize>) -> Self {
        Self {
            start: r.start,
            end: r.end,
        }
    }
}
