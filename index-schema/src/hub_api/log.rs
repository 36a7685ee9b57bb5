//! The hub's transparency log in the JSON API: where an entry is and its proofs (in publish
//! and version answers), the log's key and head (`GET /api/v1/log`), and a publisher's entries
//! (`GET /api/v1/log/publishers/{publisher}`). The log itself is served as C2SP `tlog-tiles`
//! under `/log/` (see [`super::route::TLOG_CHECKPOINT`]); the formats are in [`crate::tlog`].

use serde::{Deserialize, Serialize};

/// An entry's place in the log, proven under a signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogInclusion {
    /// The entry's index.
    pub index: u64,
    /// The entry: its line of text ([`crate::tlog::Entry`]) without the line feed the hashed
    /// bytes end with.
    pub entry: String,
    /// The signed checkpoint (C2SP `tlog-checkpoint` in a `signed-note`) of the tree the proof
    /// is for.
    pub checkpoint: String,
    /// The RFC 6962 inclusion proof, hashes in base64.
    #[serde(default)]
    pub inclusion: Vec<String>,
    /// With `?log_size=N`: the consistency proof from the tree of size N to the checkpoint's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Vec<String>>,
}

/// `GET …/versions/{version}?log_size=N` and `GET /api/v1/log?log_size=N`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    /// The size of the last checkpoint the client holds: the answer carries the consistency
    /// proof from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_size: Option<u64>,
}

/// `GET /api/v1/log`: the log's identity and head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogInfo {
    /// The origin (the checkpoint's first line, the log key's name).
    pub origin: String,
    /// The log's verifier key (signed-note form `origin+id+base64`).
    pub key: String,
    /// The current signed checkpoint.
    pub checkpoint: String,
    /// With `?log_size=N`: the consistency proof from the tree of size N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Vec<String>>,
}

/// One entry of a publisher, with its proof under [`LogEntries::checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogEntryInfo {
    /// Index.
    pub index: u64,
    /// The entry's line, without its line feed.
    pub entry: String,
    /// Unix ms of the append.
    pub logged_at: i64,
    /// RFC 6962 inclusion proof under the answer's checkpoint, base64.
    #[serde(default)]
    pub inclusion: Vec<String>,
}

/// `GET /api/v1/log/publishers/{publisher}`: every entry about a publisher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogEntries {
    /// The signed checkpoint every proof is for.
    pub checkpoint: String,
    /// The entries, in log order.
    #[serde(default)]
    pub entries: Vec<LogEntryInfo>,
    /// With `?log_size=N`: the consistency proof from the tree of size N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Vec<String>>,
    /// More entries follow: ask again with `?after=` this index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<u64>,
}

/// `GET /api/v1/log/publishers/{publisher}` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct LogEntriesQuery {
    /// Only this agent's entries (and the publisher's key events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The size of the last checkpoint the client holds: the answer carries the consistency
    /// proof from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_size: Option<u64>,
    /// Only entries after this index (the previous page's `next_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// At most this many entries (1 to 1000, default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}
