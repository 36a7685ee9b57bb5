//! The transparency log, served: C2SP `tlog-tiles` under `/log/` (`checkpoint`,
//! `tile/<L>/<N>[.p/<W>]`, `tile/entries/<N>[.p/<W>]`) and the JSON views (`GET /api/v1/log`,
//! `GET /api/v1/log/publishers/{publisher}`). What they prove and show is the core's
//! ([`hub_core::tlog`]); the formats are [`index_schema::tlog`].

use axum::Json;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use index_schema::hub_api::{ErrorBody, LogEntries, LogEntriesQuery, LogInfo, LogQuery, route};
use index_schema::tlog::TileId;

use crate::error::ApiError;
use crate::state::AppState;

/// The routes of the log: tiles and checkpoint under `/log/`, the JSON views under `/api/v1`.
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route(route::TLOG_CHECKPOINT, get(checkpoint))
        .route(route::TLOG_TILE, get(tile))
        .route(&format!("{}{}", route::API, route::LOG), get(log_info))
        .route(
            &format!("{}{}", route::API, route::LOG_PUBLISHER),
            get(log_publisher),
        )
        .with_state(state)
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /log/checkpoint`: the signed checkpoint of the current tree (C2SP tlog-checkpoint).
///
/// A signed note (C2SP signed-note): the origin, the tree size and the root hash (base64),
/// a blank line, then a signature line by the hub's log key and one cosignature line per
/// witness (C2SP tlog-cosignature). Never cached for long: the tree grows.
#[utoipa::path(get, path = "/log/checkpoint", tag = "log",
    responses(
        (status = 200, description = "the signed checkpoint (C2SP tlog-checkpoint as a signed note)",
         content_type = "text/plain; charset=utf-8", body = String),
        (status = 503, description = "the database does not answer", body = ErrorBody),
    ))]
pub async fn checkpoint(State(state): State<AppState>) -> Response {
    match state.core.log_head_covering(0).await {
        Ok(head) => {
            let mut resp = text(StatusCode::OK, head.note(&state.core.log));
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            resp
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// `GET /log/tile/…`: a hash tile or an entry bundle (C2SP tlog-tiles). A full tile never
/// changes and is cacheable for good; a partial one (`.p/<W>`) neither, but is superseded.
///
/// `tile` is `<L>/<N>` (a level-L hash tile; N in the spec's `x001/x234/067` form),
/// `<L>/<N>.p/<W>` (a partial tile of width W), `entries/<N>` or `entries/<N>.p/<W>` (a
/// bundle of entries).
#[utoipa::path(get, path = "/log/tile/{tile}", tag = "log",
    params(("tile" = String, Path, description = "`<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]` (C2SP tlog-tiles; may hold `/`)")),
    responses(
        (status = 200, description = "the tile's bytes (hashes, or length-prefixed entries)",
         content_type = "application/octet-stream", body = TileBytes),
        (status = 404, description = "no such tile (yet)", content_type = "text/plain; charset=utf-8", body = String),
        (status = 503, description = "the database does not answer", body = ErrorBody),
    ))]
pub async fn tile(State(state): State<AppState>, UrlPath(rest): UrlPath<String>) -> Response {
    let path = format!("tile/{rest}");
    let tile = match TileId::parse(&path) {
        Ok(t) => t,
        Err(e) => return text(StatusCode::NOT_FOUND, format!("{e}\n")),
    };
    let size = match state.core.store.log_head().await {
        Ok((size, _)) => size,
        Err(e) => return ApiError::from(e).into_response(),
    };
    match state.core.store.log_tile(&tile, size).await {
        Ok(Some(bytes)) => {
            let cache = if tile.is_full() {
                "public, max-age=31536000, immutable"
            } else {
                "public, max-age=60"
            };
            (
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "application/octet-stream"),
                    (header::CACHE_CONTROL, cache),
                ],
                bytes,
            )
                .into_response()
        }
        Ok(None) => text(
            StatusCode::NOT_FOUND,
            format!("{path}: the tree (size {size}) has no such tile yet\n"),
        ),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// A tile's bytes, as the OpenAPI document describes them.
#[derive(Debug, utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct TileBytes(pub Vec<u8>);

/// The log's origin, verifier key and current checkpoint.
#[utoipa::path(get, path = "/api/v1/log", tag = "log",
    params(LogQuery),
    responses(
        (status = 200, description = "the log's key and head", body = LogInfo),
        (status = 400, description = "invalid query", body = ErrorBody),
    ))]
pub async fn log_info(
    State(state): State<AppState>,
    Query(q): Query<LogQuery>,
) -> Result<Json<LogInfo>, ApiError> {
    Ok(Json(hub_core::tlog::info(&state.core, q.log_size).await?))
}

/// Every logged version and key event of a publisher (or of one of its agents, with the
/// publisher's key events), each with its inclusion proof under one checkpoint.
#[utoipa::path(get, path = "/api/v1/log/publishers/{publisher}", tag = "log",
    params(("publisher" = String, Path, description = "namespace"), LogEntriesQuery),
    responses(
        (status = 200, description = "the publisher's entries", body = LogEntries),
        (status = 400, description = "invalid name or query", body = ErrorBody),
    ))]
pub async fn log_publisher(
    State(state): State<AppState>,
    UrlPath(publisher): UrlPath<String>,
    Query(q): Query<LogEntriesQuery>,
) -> Result<Json<LogEntries>, ApiError> {
    Ok(Json(
        hub_core::tlog::publisher_entries(&state.core, &publisher, &q).await?,
    ))
}
