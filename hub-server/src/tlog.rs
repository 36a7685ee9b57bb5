//! The transparency log, served: the log key (`DATA/log-key`), C2SP `tlog-tiles` under `/log/`
//! (`checkpoint`, `tile/<L>/<N>[.p/<W>]`, `tile/entries/<N>[.p/<W>]`), and the JSON views
//! (`GET /api/v1/log`, `GET /api/v1/log/publishers/{publisher}`, the `log` field of publish and
//! version answers). The tables and appends are in `store/tlog.rs`; the formats in
//! [`index_schema::tlog`].

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use axum::Json;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use index_schema::hub_api::{
    ErrorBody, LogEntries, LogEntriesQuery, LogEntryInfo, LogInclusion, LogInfo, LogQuery, route,
};
use index_schema::tlog::{self, Hash, LogSigner, TileId};

use crate::config::Config;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// The log key's file in the data dir.
pub const LOG_KEY_FILE: &str = "log-key";

/// Reads the log key from `DATA/log-key`, creating it (0600) on first start with the origin
/// `log_origin` (default `<registry_host>/log`). A configured origin that differs from the
/// key's name is an error: the origin is part of every checkpoint clients pinned.
pub fn open_log_key(config: &Config) -> anyhow::Result<LogSigner> {
    let path = config.data_dir.join(LOG_KEY_FILE);
    let wanted = config
        .log_origin
        .clone()
        .unwrap_or_else(|| format!("{}/log", config.registry_host));
    let key = match std::fs::read_to_string(&path) {
        Ok(text) => LogSigner::from_secret_text(&text)
            .with_context(|| format!("{} is not a log key", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key(&path, &wanted)?,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if let Some(origin) = &config.log_origin
        && origin != key.origin()
    {
        anyhow::bail!(
            "log_origin is `{origin}` but the log key {} is for `{}`; the origin cannot change \
             once clients pinned it (remove the setting, or start a new log with a new data dir)",
            path.display(),
            key.origin()
        );
    }
    Ok(key)
}

fn create_key(path: &Path, origin: &str) -> anyhow::Result<LogSigner> {
    let key = LogSigner::generate(origin, &mut rand::rngs::OsRng)
        .with_context(|| format!("cannot create the log key for origin `{origin}`"))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut f = private_file(&tmp)?;
        f.write_all(key.to_secret_text().as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    // Two hubs starting on one data dir: the first link wins, the other reads it.
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            tracing::info!(origin, key = %key.verifier(), "created the transparency log key");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path)?;
            Ok(LogSigner::from_secret_text(&text)?)
        }
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}

#[cfg(unix)]
pub(crate) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
pub(crate) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

fn b64(hashes: &[Hash]) -> Vec<String> {
    hashes.iter().map(tlog::hash_b64).collect()
}

/// The consistency proof from the client's `log_size` to `size`, when it asked for one the
/// tree can give (a `log_size` past `size` gets none: the client sees the truncation itself).
async fn consistency(
    state: &AppState,
    log_size: Option<u64>,
    size: u64,
) -> Result<Option<Vec<String>>, ApiError> {
    match log_size {
        Some(old) if old <= size => Ok(Some(b64(&state.store.log_consistency(old, size).await?))),
        _ => Ok(None),
    }
}

/// `entry` at `index`, proven in the tree (`size`, `root`), with its signed checkpoint.
pub async fn inclusion(
    state: &AppState,
    entry: &tlog::Entry,
    index: u64,
    size: u64,
    root: Hash,
    log_size: Option<u64>,
) -> Result<LogInclusion, ApiError> {
    Ok(LogInclusion {
        index,
        entry: entry.to_string(),
        checkpoint: state.checkpoint_note(size, root),
        inclusion: b64(&state.store.log_inclusion(index, size).await?),
        consistency: consistency(state, log_size, size).await?,
    })
}

/// `entry` at `index`, proven under the latest cosigned checkpoint when it holds the entry
/// (and the client's `log_size`), else under the current head.
pub async fn inclusion_now(
    state: &AppState,
    entry: &tlog::Entry,
    index: u64,
    log_size: Option<u64>,
) -> Result<LogInclusion, ApiError> {
    let need = (index + 1).max(log_size.unwrap_or(0));
    let head = state.log_head_covering(need).await?;
    Ok(LogInclusion {
        index,
        entry: entry.to_string(),
        checkpoint: head.note(&state.log),
        inclusion: b64(&state.store.log_inclusion(index, head.size).await?),
        consistency: consistency(state, log_size, head.size).await?,
    })
}

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
    match state.log_head_covering(0).await {
        Ok(head) => {
            let mut resp = text(StatusCode::OK, head.note(&state.log));
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
    let size = match state.store.log_head().await {
        Ok((size, _)) => size,
        Err(e) => return ApiError::from(e).into_response(),
    };
    match state.store.log_tile(&tile, size).await {
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
    let head = state.log_head_covering(q.log_size.unwrap_or(0)).await?;
    Ok(Json(LogInfo {
        origin: state.log.origin().to_string(),
        key: state.log.verifier().to_string(),
        checkpoint: head.note(&state.log),
        consistency: consistency(&state, q.log_size, head.size).await?,
    }))
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
    let publisher = index_schema::name::check_publisher(&publisher)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidName, e.to_string()))?;
    let agent = match &q.agent {
        Some(a) => Some(
            index_schema::name::AgentName::new(&publisher, a)
                .map_err(|e| ApiError::bad_request(ErrorCode::InvalidName, e.to_string()))?
                .to_string(),
        ),
        None => None,
    };
    // In pages: a publisher with many versions is many entries, each with its proof.
    let limit = match q.limit {
        None => MAX_LOG_PAGE,
        Some(n) if (1..=MAX_LOG_PAGE).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::bad_request(
                ErrorCode::InvalidLimit,
                format!("limit is 1 to {MAX_LOG_PAGE}"),
            ));
        }
    };
    let mut rows = state
        .store
        .log_entries_of(&publisher, agent.as_deref(), q.after, limit + 1)
        .await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let need = rows
        .iter()
        .map(|r| r.index + 1)
        .max()
        .unwrap_or(0)
        .max(q.log_size.unwrap_or(0));
    let head = state.log_head_covering(need).await?;
    let size = head.size;
    let mut entries = Vec::with_capacity(rows.len());
    let next_after = if more {
        rows.last().map(|r| r.index)
    } else {
        None
    };
    for r in rows.into_iter().filter(|r| r.index < size) {
        entries.push(LogEntryInfo {
            index: r.index,
            // As everywhere in the API: the line without its line feed.
            entry: String::from_utf8(r.data)
                .map_err(ApiError::internal)?
                .trim_end_matches('\n')
                .to_string(),
            logged_at: r.created_at,
            inclusion: b64(&state.store.log_inclusion(r.index, size).await?),
        });
    }
    Ok(Json(LogEntries {
        checkpoint: head.note(&state.log),
        entries,
        consistency: consistency(&state, q.log_size, size).await?,
        next_after,
    }))
}

/// The most entries in one page of a publisher's log entries.
const MAX_LOG_PAGE: u32 = 1000;
