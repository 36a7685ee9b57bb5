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
