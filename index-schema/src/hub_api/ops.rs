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
    /// `ok`.
    pub status: String,
    /// Outbox entries not yet searchable (0: search is up to date); absent without search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_lag: Option<u64>,
    /// The last outbox sequence that is searchable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_seq: Option<u64>,
}
