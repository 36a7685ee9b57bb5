//! The public pages: the home page, search, an agent, a publisher; and the assets.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::{CoreError, agents, namespaces};
use hub_search::{SearchParams, SearchQuery, SearchResults};
use index_schema::envelope::{Envelope, PublicKey, verify_manifest};
use index_schema::manifest::Manifest;
use serde::Deserialize;

use super::page::{PageError, PageResult};
use super::views::{self, Signature};
use crate::state::AppState;

const CSS: &str = include_str!("ofc.css");
const JS: &str = include_str!("ofc.js");

pub(super) async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}

pub(super) async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        body,
    )
        .into_response()
}

async fn run_search(state: &AppState, mut q: SearchQuery) -> Result<SearchResults, PageError> {
    let Some(search) = state.core.search.clone() else {
        return Err(PageError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "search is not enabled on this hub".to_owned(),
        });
    };
    hub_core::domains::prepare_query(&state.core, &mut q).await?;
    let mut results = tokio::task::spawn_blocking(move || search.index.search(&q))
        .await
        .map_err(|e| PageError::from(CoreError::internal(e)))?
        .map_err(|e| PageError::from(CoreError::internal(e)))?;
    hub_core::domains::mark_hits(&state.core, &mut results.hits).await?;
    Ok(results)
}

fn sorted(sort: &str, limit: usize) -> SearchParams {
    SearchParams {
        sort: Some(sort.to_owned()),
        limit: Some(limit.to_string()),
        ..SearchParams::default()
    }
}

pub(super) async fn home(State(state): State<AppState>) -> PageResult {
    let (recent, popular) = if state.core.search.is_some() {
        let recent = SearchQuery::parse(&sorted("updated", 8)).map_err(bad)?;
        let popular = SearchQuery::parse(&sorted("downloads", 8)).map_err(bad)?;
        (
            run_search(&state, recent).await?.hits,
            run_search(&state, popular).await?.hits,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(views::home(&recent, &popular, state.core.search.is_some()).into_response())
}

fn bad(e: hub_search::QueryError) -> PageError {
    PageError {
        status: StatusCode::BAD_REQUEST,
        message: e.to_string(),
    }
}

pub(super) async fn search(
    State(state): State<AppState>,
    params: Result<Query<SearchParams>, QueryRejection>,
) -> PageResult {
    let Query(params) = params.map_err(|e| PageError {
        status: StatusCode::BAD_REQUEST,
        message: e.body_text(),
    })?;
    let query = SearchQuery::parse(&params).map_err(bad)?;
    let results = run_search(&state, query).await?;
    Ok(views::search(&params, &results).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct VersionQuery {
    version: Option<String>,
}

pub(super) async fn agent(
    State(state): State<AppState>,
    Path((publisher, agent)): Path<(String, String)>,
    version: Query<VersionQuery>,
    headers: axum::http::HeaderMap,
) -> PageResult {
    let info = agents::info(&state.core, &publisher, &agent).await?;
    let wanted = version
        .0
        .version
        .clone()
        .or_else(|| info.latest.clone())
        .or_else(|| info.versions.last().map(|v| v.version.clone()));
    let Some(wanted) = wanted else {
        return Err(PageError {
            status: StatusCode::NOT_FOUND,
            message: format!("{} has no version to show", info.name),
        });
    };
    let v = agents::version_info(&state.core, &publisher, &agent, &wanted, None).await?;
    let (manifest, signature) = check(&v);
    Ok(views::agent(
        &info,
        &v,
        manifest.as_ref(),
        &signature,
        origin(&headers).as_deref(),
    )
    .into_response())
}

/// The manifest, as the signature vouches for it, and whether it verifies.
fn check(v: &index_schema::hub_api::VersionInfo) -> (Option<Manifest>, Signature) {
    let envelope = match Envelope::from_json(v.envelope.get()) {
        Ok(e) => e,
        Err(d) => {
            return (
                None,
                Signature::Failed(format!("the envelope does not parse: {d}")),
            );
        }
    };
    let Some(key) = v
        .key
        .public_key
        .as_deref()
        .and_then(|k| k.parse::<PublicKey>().ok())
    else {
        return (
            None,
            Signature::Failed(format!("the key {} is not registered", v.key.key_id)),
        );
    };
    match verify_manifest(&envelope, &[key]) {
        Ok((manifest, _, _)) if v.key.revoked_at.is_some() => {
            (Some(manifest), Signature::KeyRevoked)
        }
        Ok((manifest, _, _)) => (Some(manifest), Signature::Verified),
        Err(e) => (None, Signature::Failed(e.to_string())),
    }
}

/// This hub's address as the browser reached it (for the `OFC_HUB=` hint; escaped like any text).
fn origin(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .map(|h| format!("http://{h}"))
}

pub(super) async fn publisher(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> PageResult {
    let ns = namespaces::info(&state.core, &name).await?;
    let hits = if state.core.search.is_some() {
        let params = SearchParams {
            publisher: Some(name),
            sort: Some("downloads".to_owned()),
            limit: Some("100".to_owned()),
            ..SearchParams::default()
        };
        let q = SearchQuery::parse(&params).map_err(bad)?;
        run_search(&state, q).await?.hits
    } else {
        Vec::new()
    };
    Ok(views::publisher(&ns, &hits).into_response())
}
