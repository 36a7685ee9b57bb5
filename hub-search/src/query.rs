//! Search requests: query-string parameters checked into a [`SearchQuery`], and the opaque
//! pagination cursor.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use index_schema::manifest::SOURCE_KINDS;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Longest accepted `q`, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// Words of `q` that take part in matching; later words are ignored.
pub const MAX_QUERY_WORDS: usize = 16;
/// Largest `limit`.
pub const MAX_LIMIT: usize = 100;
/// `limit` when absent.
pub const DEFAULT_LIMIT: usize = 20;
/// Most values in one comma-separated filter (`capability=a,b`).
pub const MAX_FILTER_VALUES: usize = 16;
/// Longest filter value, in bytes.
pub const MAX_FILTER_BYTES: usize = 128;
const MAX_CURSOR_BYTES: usize = 512;

/// The raw query-string parameters of `GET /api/v1/search`, as the hub API defines them.
pub use index_schema::hub_api::SearchParams;

/// How hits are ordered. Ties break by name, ascending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// Best match first (text score, lifted a little by downloads).
    #[default]
    Relevance,
    /// Most downloaded first.
    Downloads,
    /// Most recently updated first.
    Updated,
}

impl Sort {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "relevance" => Self::Relevance,
            "downloads" => Self::Downloads,
            "updated" => Self::Updated,
            _ => return None,
        })
    }
}

/// A bad parameter: which one and why (the hub answers 400 with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct QueryError {
    /// The parameter's name.
    pub field: &'static str,
    /// What is wrong, lowercase, no trailing period.
    pub message: String,
}

fn bad(field: &'static str, message: impl Into<String>) -> QueryError {
    QueryError {
        field,
        message: message.into(),
    }
}

/// Where the previous page ended: the last hit's sort key and name. Hits strictly after it come
/// next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Order-preserving encoding of the last hit's sort key.
    #[serde(rename = "k")]
    pub key: u64,
    /// The last hit's name.
    #[serde(rename = "n")]
    pub name: String,
    /// Digest of the query the cursor belongs to (a cursor is refused for another query).
    #[serde(rename = "q")]
    pub query: String,
    /// For a query answered with fewer words: 0 while in the full matches, 1 in the partial
    /// ones; absent otherwise.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<u8>,
    /// For a semantic or hybrid query: the hits already shown (such a ranking is no sort key).
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
}

impl Cursor {
    /// The opaque text form.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).expect("cursor serializes"))
    }

    fn decode(s: &str) -> Option<Self> {
        if s.len() > MAX_CURSOR_BYTES {
            return None;
        }
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).ok()?).ok()
    }
}

/// Which deprecated agents a search shows (`deprecated=` of the query string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeprecatedFilter {
    /// Shown, ranked lower and marked (the default).
    #[default]
    Include,
    /// Hidden.
    Exclude,
    /// Only they.
    Only,
}

/// How the text is matched (`mode=` of the query string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// The words (BM25 with tiers, synonyms, typos): the only mode without a model.
    Keyword,
    /// The meaning only: the agents whose embeddings are nearest the query's.
    Semantic,
    /// Both, fused (the default with a model; see [`crate::hybrid`]).
    Hybrid,
}

impl SearchMode {
    /// `keyword`, `semantic` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Keyword => "keyword",
            Self::Semantic => "semantic",
            Self::Hybrid => "hybrid",
        }
    }
}

/// A checked search request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchQuery {
    /// Free text (trimmed; empty means "everything", filtered).
    pub text: String,
    /// Capability names (lowercase), all required.
    pub capabilities: Vec<String>,
    /// Keywords (lowercase), all required.
    pub keywords: Vec<String>,
    /// Source kind.
    pub kind: Option<String>,
    /// Publisher (lowercase).
    pub publisher: Option<String>,
    /// Order.
    pub sort: Sort,
    /// Hits per page.
    pub limit: usize,
    /// Continue after this hit.
    pub cursor: Option<Cursor>,
    /// Count facets over every match ([`crate::SearchFacets`]).
    pub facets: bool,
    /// Deprecated agents: shown, hidden, or only they.
    pub deprecated: DeprecatedFilter,
    /// Only agents of verified namespaces (`verified=true`): the hub fills
    /// [`Self::verified_publishers`] before searching, since verification is not in the index
    /// (a proof lapses at any re-check, without a change to the agents).
    pub verified: bool,
    /// With `verified`: the publishers verified now (none: no hit).
    pub verified_publishers: Vec<String>,
    /// The mode asked for (`None`: the hub's default, see [`crate::hybrid`]).
    pub mode: Option<SearchMode>,
    /// Only these agents (the hybrid search's vector side asks for its candidates' hits
    /// this way, so that they pass the same filters); empty: no restriction.
    pub only_names: Vec<String>,
}

fn list(field: &'static str, value: Option<&str>) -> Result<Vec<String>, QueryError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let mut out: Vec<String> = Vec::new();
    for part in value.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(bad(field, "empty value in the list"));
        }
        if part.len() > MAX_FILTER_BYTES {
            return Err(bad(
                field,
                format!("a value is longer than {MAX_FILTER_BYTES} bytes"),
            ));
        }
        if part.chars().any(char::is_control) {
            return Err(bad(field, "control characters are not allowed"));
        }
        let part = part.to_lowercase();
        if !out.contains(&part) {
            out.push(part);
        }
    }
    if out.len() > MAX_FILTER_VALUES {
        return Err(bad(
            field,
            format!("at most {MAX_FILTER_VALUES} values are allowed"),
        ));
    }
    Ok(out)
}

impl SearchQuery {
    /// A query for `text` with default settings.
    pub fn text(text: &str) -> Self {
        Self {
            text: text.trim().to_owned(),
            limit: DEFAULT_LIMIT,
            ..Self::default()
        }
    }

    /// Checks query-string parameters.
    pub fn parse(p: &SearchParams) -> Result<Self, QueryError> {
        let text = p.q.as_deref().unwrap_or("").trim();
        if text.len() > MAX_QUERY_BYTES {
            return Err(bad(
                "q",
                format!(
                    "the query is {} bytes, more than the limit of {MAX_QUERY_BYTES}",
                    text.len()
                ),
            ));
        }
        if text.chars().any(char::is_control) {
            return Err(bad("q", "control characters are not allowed"));
        }
        let kind = match p.kind.as_deref().map(str::trim) {
            None => None,
            Some(k) => {
                let k = k.to_lowercase();
                if !SOURCE_KINDS.contains(&k.as_str()) {
                    return Err(bad(
                        "kind",
                        format!(
                            "unknown kind `{}`; expected one of {}",
                            shown(&k),
                            SOURCE_KINDS.join(", ")
                        ),
                    ));
                }
                Some(k)
            }
        };
        let publisher = match p.publisher.as_deref().map(str::trim) {
            None => None,
            Some(s) => Some(
                index_schema::name::check_publisher(&s.to_lowercase())
                    .map_err(|e| bad("publisher", e.to_string()))?,
            ),
        };
        let sort = match p.sort.as_deref().map(str::trim) {
            None | Some("") => Sort::default(),
            Some(s) => Sort::parse(s).ok_or_else(|| {
                bad(
                    "sort",
                    format!(
                        "unknown sort `{}`; expected relevance, downloads or updated",
                        shown(s)
                    ),
                )
            })?,
        };
        let limit = match p.limit.as_deref().map(str::trim) {
            None | Some("") => DEFAULT_LIMIT,
            Some(s) => match s.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(bad(
                        "limit",
                        format!("`{}` is not a number from 1 to {MAX_LIMIT}", shown(s)),
                    ));
                }
            },
        };
        let mut query = Self {
            text: text.to_owned(),
            capabilities: list("capability", p.capability.as_deref())?,
            keywords: list("keyword", p.keyword.as_deref())?,
            kind,
            publisher,
            sort,
            limit,
            cursor: None,
            mode: None,
            only_names: Vec::new(),
            facets: match p.facets.as_deref().map(str::trim) {
                None | Some("" | "false" | "0") => false,
                Some("true" | "1") => true,
                Some(other) => {
                    return Err(bad(
                        "facets",
                        format!("`{}` is not `true` or `false`", shown(other)),
                    ));
                }
            },
            deprecated: match p.deprecated.as_deref().map(str::trim) {
                None | Some("" | "include") => DeprecatedFilter::Include,
                Some("exclude") => DeprecatedFilter::Exclude,
                Some("only") => DeprecatedFilter::Only,
                Some(other) => {
                    return Err(bad(
                        "deprecated",
                        format!("`{}` is not `include`, `exclude` or `only`", shown(other)),
                    ));
                }
            },
            verified: false,
            verified_publishers: Vec::new(),
        };
        query.verified = match p.verified.as_deref().map(str::trim) {
            None | Some("" | "false" | "0") => false,
            Some("true" | "1") => true,
            Some(other) => {
                return Err(bad(
                    "verified",
                    format!("`{}` is not `true` or `false`", shown(other)),
                ));
            }
        };
        query.mode = match p.mode.as_deref().map(str::trim) {
            None | Some("") => None,
            Some("keyword") => Some(SearchMode::Keyword),
            Some("semantic") => Some(SearchMode::Semantic),
            Some("hybrid") => Some(SearchMode::Hybrid),
            Some(other) => {
                return Err(bad(
                    "mode",
                    format!(
                        "unknown mode `{}`; expected keyword, semantic or hybrid",
                        shown(other)
                    ),
                ));
            }
        };
        if let Some(c) = p.cursor.as_deref().filter(|c| !c.is_empty()) {
            let cursor = Cursor::decode(c).ok_or_else(|| {
                bad(
                    "cursor",
                    "not a cursor returned by this search; start over without it",
                )
            })?;
            if cursor.query != query.digest() {
                return Err(bad(
                    "cursor",
                    "the cursor belongs to another query; start over without it",
                ));
            }
            query.cursor = Some(cursor);
        }
        Ok(query)
    }

    /// The OFC registry search (`/registry/agents/search?q=&capabilities=`).
    pub fn registry(q: Option<&str>, capabilities: Option<&str>) -> Result<Self, QueryError> {
        let mut query = Self::parse(&SearchParams {
            q: q.map(str::to_owned),
            ..SearchParams::default()
        })?;
        query.capabilities = list("capabilities", capabilities)?;
        Ok(query)
    }

    /// Identifies the query (text, filters, sort — not the page): cursors carry it.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.text.as_str(),
            &self.capabilities.join(","),
            &self.keywords.join(","),
            self.kind.as_deref().unwrap_or(""),
            self.publisher.as_deref().unwrap_or(""),
            match self.sort {
                Sort::Relevance => "r",
                Sort::Downloads => "d",
                Sort::Updated => "u",
            },
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        // Only when set, so cursors of queries without it keep their digest.
        match self.deprecated {
            DeprecatedFilter::Include => {}
            DeprecatedFilter::Exclude => h.update(b"deprecated=exclude\0"),
            DeprecatedFilter::Only => h.update(b"deprecated=only\0"),
        }
        if self.verified {
            h.update(b"verified=true\0");
        }
        if let Some(m) = self.mode {
            h.update(b"mode=");
            h.update(m.as_str().as_bytes());
            h.update([0]);
        }
        hex::encode(&h.finalize()[..8])
    }
}

/// A value echoed in an error: at most 40 characters.
fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::{Cursor, SearchParams, SearchQuery, Sort};

    fn params(pairs: &[(&str, &str)]) -> SearchParams {
        let mut p = SearchParams::default();
        for (k, v) in pairs {
            let v = Some((*v).to_owned());
            match *k {
                "q" => p.q = v,
                "capability" => p.capability = v,
                "keyword" => p.keyword = v,
                "kind" => p.kind = v,
                "publisher" => p.publisher = v,
                "sort" => p.sort = v,
                "limit" => p.limit = v,
                "cursor" => p.cursor = v,
                _ => panic!("unknown {k}"),
            }
        }
        p
    }

    #[rstest]
    #[case(&[("kind", "zip")], "kind", "unknown kind `zip`")]
    #[case(&[("sort", "stars")], "sort", "unknown sort `stars`")]
    #[case(&[("limit", "0")], "limit", "not a number from 1 to 100")]
    #[case(&[("limit", "101")], "limit", "not a number from 1 to 100")]
    #[case(&[("limit", "ten")], "limit", "not a number")]
    #[case(&[("limit", "-1")], "limit", "not a number")]
    #[case(&[("publisher", "a b")], "publisher", "")]
    #[case(&[("publisher", "admin")], "publisher", "")]
    #[case(&[("capability", "a,,b")], "capability", "empty value")]
    #[case(&[("keyword", "x\u{0}")], "keyword", "control characters")]
    #[case(&[("cursor", "!!!")], "cursor", "not a cursor")]
    #[case(&[("cursor", "eyJrIjoxfQ")], "cursor", "not a cursor")]
    #[case(&[("q", "a\u{7}b")], "q", "control characters")]
    fn bad_parameters_name_their_field(
        #[case] pairs: &[(&str, &str)],
        #[case] field: &str,
        #[case] fragment: &str,
    ) {
        let err = SearchQuery::parse(&params(pairs)).unwrap_err();
        assert_eq!(err.field, field, "{err}");
        assert!(err.message.contains(fragment), "{err}");
    }

    #[test]
    fn ten_kilobyte_query_is_refused_with_its_size() {
        let err = SearchQuery::parse(&params(&[("q", &"a".repeat(10 * 1024))])).unwrap_err();
        assert_eq!(err.field, "q");
        assert!(err.message.contains("10240 bytes"), "{err}");
    }

    #[test]
    fn good_parameters_are_normalized() {
        let q = SearchQuery::parse(&params(&[
            ("q", "  Data Analysis "),
            ("capability", "Run_SQL, summarize ,run_sql"),
            ("keyword", "SQL"),
            ("kind", "PIP"),
            ("publisher", "Acme"),
            ("sort", "downloads"),
            ("limit", "5"),
        ]))
        .unwrap();
        assert_eq!(q.text, "Data Analysis");
        assert_eq!(q.capabilities, ["run_sql", "summarize"]);
        assert_eq!(q.keywords, ["sql"]);
        assert_eq!(q.kind.as_deref(), Some("pip"));
        assert_eq!(q.publisher.as_deref(), Some("acme"));
        assert_eq!(q.sort, Sort::Downloads);
        assert_eq!(q.limit, 5);
    }

    #[test]
    fn a_cursor_is_refused_for_another_query() {
        let q = SearchQuery::parse(&params(&[("q", "sql")])).unwrap();
        let c = Cursor {
            key: 7,
            name: "a/b".into(),
            query: q.digest(),
            tier: None,
            offset: None,
        }
        .encode();
        assert!(SearchQuery::parse(&params(&[("q", "sql"), ("cursor", &c)])).is_ok());
        let err = SearchQuery::parse(&params(&[("q", "csv"), ("cursor", &c)])).unwrap_err();
        assert_eq!(err.field, "cursor");
        assert!(err.message.contains("another query"));
    }

    #[test]
    fn unknown_parameters_are_refused_by_the_extractor() {
        let err = serde_json::from_value::<SearchParams>(serde_json::json!({"qq": "x"}));
        assert!(err.unwrap_err().to_string().contains("unknown field `qq`"));
    }
}
