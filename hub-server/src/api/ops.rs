//! Health, readiness, metrics and the JSON 404 (the OpenAPI document is `openapi.rs`'s).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
pub use index_schema::hub_api::{Health, Ready};

use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::state::AppState;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "ops",
    responses((status = 200, description = "alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Readiness: the database answers; reports how far search lags behind the outbox.
#[utoipa::path(get, path = "/readyz", tag = "ops",
    responses(
        (status = 200, description = "ready", body = Ready),
        (status = 503, description = "database unavailable", body = ErrorBody),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Ready>, ApiError> {
    state.core.store.db().ping().await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::NotReady,
            "the database is unavailable",
        )
    })?;
    let search = state.core.search.as_ref();
    Ok(Json(Ready {
        status: "ok".into(),
        search_lag: search.map(|s| s.lag()),
        search_seq: search.map(|s| s.status().committed_seq()),
    }))
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "ops",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state
            .metrics
            .render(state.core.store.db().backend(), &state.core.counters),
    )
}

/// Unknown routes.
pub async fn not_found() -> ApiError {
    ApiError::not_found(ErrorCode::NotFound, "no such endpoint")
}
