//! Liveness and readiness.

use serde::{Deserialize, Serialize};

/// `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    /// `ok`.
    pub status: String,
}

/// `GET /readyz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ready {
    /// `ok`; `catching_up` (with 503) while the search index of a hub that just started has
    /// not yet indexed the changes made before it started.
    pub status: String,
    /// Outbox entries not yet searchable (0: search is up to date); absent without search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_lag: Option<u64>,
    /// The last outbox sequence that is searchable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_seq: Option<u64>,
    /// With search: whether the hub has an embedding model (`search_model_dir`), so that a
    /// text query is hybrid by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_model: Option<bool>,
    /// With a model: outbox entries whose agents' embeddings are not in yet (0: up to date).
    /// Meanwhile hybrid search finds those agents by their words only; it never makes the hub
    /// not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_lag: Option<u64>,
    /// With a model: the last outbox sequence whose embeddings are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_seq: Option<u64>,
    /// What answers less well than it could while the hub is ready: `embeddings_behind`
    /// while `embedding_lag` is above 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<String>,
}

/// `GET /readyz` when the hub is not ready (503, with `Retry-After`): search catching up after
/// a start ([`Ready`] with status `catching_up` and the lag), or the database not answering (an
/// error body, code `not_ready`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum NotReady {
    /// Search is catching up.
    CatchingUp(Ready),
    /// The database does not answer.
    Unavailable(super::ErrorBody),
}
