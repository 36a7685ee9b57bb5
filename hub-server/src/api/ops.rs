//! Health, readiness, metrics and the JSON 404 (the OpenAPI document is `openapi.rs`'s).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
pub use index_schema::hub_api::{Health, NotReady, Ready};

use crate::error::{ApiError, ErrorCode, RETRY_AFTER_SECS};
use crate::metrics::SearchLag;
use crate::state::AppState;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "ops",
    responses((status = 200, description = "alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Readiness: the database answers, and the search index caught up with the changes made
/// before this hub started (a new replica, or one restarted while others kept writing, is not
/// ready until its search answers as the others' do); reports how far search lags behind the
/// outbox, and with an embedding model how far the embeddings lag (a degraded detail, never
/// not-ready: keyword search answers in full meanwhile).
#[utoipa::path(get, path = "/readyz", tag = "ops",
    responses(
        (status = 200, description = "ready", body = Ready),
        (status = 503, description = "not ready: search is catching up after a start (status \
            `catching_up`, with the lag), or the database does not answer (code `not_ready`); \
            `Retry-After` says when to ask again", body = NotReady),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Result<Response, ApiError> {
    state.core.store.db().ping().await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::NotReady,
            "the database is unavailable",
        )
    })?;
    let search = state.core.search.as_ref();
    let caught_up = search.is_none_or(|s| s.status().caught_up());
    // Embeddings behind are a degraded detail, not unreadiness: keyword search answers in
    // full, and hybrid search finds the agents not embedded yet by their words.
    let embedding_lag = search.and_then(|s| s.embedding_lag());
    let ready = Ready {
        status: if caught_up { "ok" } else { "catching_up" }.into(),
        search_lag: search.map(|s| s.lag()),
        search_seq: search.map(|s| s.status().committed_seq()),
        search_model: search.map(|s| s.semantic().is_some()),
        embedding_lag,
        embedding_seq: search.and_then(|s| s.vector_status().map(|v| v.committed_seq())),
        degraded: embedding_lag
            .filter(|lag| *lag > 0)
            .map(|_| vec!["embeddings_behind".to_string()])
            .unwrap_or_default(),
    };
    Ok(if caught_up {
        Json(ready).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, RETRY_AFTER_SECS)],
            Json(ready),
        )
            .into_response()
    })
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "ops",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(
            state.core.store.db().backend(),
            &state.core.counters,
            state.core.search.as_ref().map(|s| SearchLag {
                keyword: s.lag(),
                embedding: s.embedding_lag(),
            }),
        ),
    )
}

/// Unknown routes.
pub async fn not_found() -> ApiError {
    ApiError::not_found(ErrorCode::NotFound, "no such endpoint")
}
