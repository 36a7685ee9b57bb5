//! Search: `GET /api/v1/search` and the OFC registry's `GET /registry/agents/search`, both
//! answered from the Tantivy index that follows the outbox.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use hub_search::{SearchParams, SearchQuery, SearchResults};
use index_schema::wire::registry::{SearchQuery as RegistryQuery, SearchResponse, SearchResult};
use serde::Serialize;
use utoipa::ToSchema;

use hub_core::search::Search;

use super::strict::{NoBody, Params};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::state::AppState;

/// The OFC registry search response (seed 000).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RegistrySearchResponse)]
pub struct RegistrySearchDoc {
    /// Best match first.
    pub results: Vec<RegistrySearchResultDoc>,
}

/// One registry search hit.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RegistrySearchResult)]
pub struct RegistrySearchResultDoc {
    /// The handle (`@data`).
    pub id: String,
    /// Its tagline.
    pub tagline: Option<String>,
    /// Mean rating, absent before the first one.
    pub rating: Option<f64>,
}

fn search_of(state: &AppState) -> ApiResult<Arc<Search>> {
    state.core.search.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::SearchUnavailable,
            "search is not enabled on this hub",
        )
    })
}

fn bad_query(e: &hub_search::QueryError) -> ApiError {
    ApiError::bad_request(ErrorCode::InvalidParameter, e.to_string())
}

async fn run(search: Arc<Search>, q: SearchQuery) -> ApiResult<SearchResults> {
    // Tantivy searches and embedding the query are blocking work.
    tokio::task::spawn_blocking(move || search.run(&q))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| match e {
            // A mode the hub cannot run (no model) or that cannot honour the other parameters.
            hub_search::hybrid::HybridError::Query(e) => bad_query(&e),
            e => ApiError::internal(e),
        })
}

/// Searches agents: ranked, latest non-yanked version, with highlights.
#[utoipa::path(get, path = "/api/v1/search", tag = "search",
    params(
        ("q" = Option<String>, Query, description = "free text (at most 1024 bytes)"),
        ("capability" = Option<String>, Query, description = "capability names, comma-separated; all required"),
        ("keyword" = Option<String>, Query, description = "keywords, comma-separated; all required"),
        ("kind" = Option<String>, Query, description = "source kind"),
        ("publisher" = Option<String>, Query, description = "publisher"),
        ("sort" = Option<String>, Query, description = "`relevance` (default), `downloads` or `updated`"),
        ("limit" = Option<String>, Query, description = "hits per page, 1..=100 (default 20)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
        ("facets" = Option<String>, Query, description = "`true` for facet counts over every match"),
        ("verified" = Option<String>, Query, description = "`true`: only agents of verified namespaces (a domain proved)"),
        ("mode" = Option<String>, Query, description = "`keyword`, `semantic` or `hybrid`: by the words, by meaning (the hub's embedding model), or both fused. Default `hybrid` when the hub has a model (`search_model_dir`) and `q` is given with the relevance sort, else `keyword`; without a model `semantic` and `hybrid` are refused (400)"),
    ),
    responses(
        (status = 200, description = "a page of hits", body = index_schema::hub_api::SearchPage),
        (status = 400, description = "a bad parameter (the message names it)", body = ErrorBody),
        (status = 503, description = "search is not enabled", body = ErrorBody),
    ))]
pub async fn search(
    State(state): State<AppState>,
    Params(params): Params<SearchParams>,
    _: NoBody,
) -> ApiResult<Json<SearchResults>> {
    let mut q = SearchQuery::parse(&params).map_err(|e| bad_query(&e))?;
    let search = search_of(&state)?;
    hub_core::domains::prepare_query(&state.core, &mut q).await?;
    let mut results = run(search, q).await?;
    hub_core::domains::mark_hits(&state.core, &mut results.hits).await?;
    Ok(Json(results))
}

/// The OFC registry search, from the same index: published agents by handle.
#[utoipa::path(get, path = "/registry/agents/search", tag = "registry",
    params(
        ("q" = Option<String>, Query, description = "free text"),
        ("capabilities" = Option<String>, Query, description = "required capabilities, comma-separated"),
    ),
    responses(
        (status = 200, description = "best match first", body = RegistrySearchDoc),
        (status = 400, description = "a bad parameter", body = ErrorBody),
        (status = 503, description = "search is not enabled", body = ErrorBody),
    ))]
pub async fn registry_search(
    State(state): State<AppState>,
    Params(params): Params<RegistryQuery>,
    _: NoBody,
) -> ApiResult<Json<SearchResponse>> {
    let q = SearchQuery::registry(params.q.as_deref(), params.capabilities.as_deref())
        .map_err(|e| bad_query(&e))?;
    let search = search_of(&state)?;
    let hits = run(search, q).await?.hits;
    let mut results = Vec::with_capacity(hits.len());
    for h in hits {
        // The handle is the agent's, not stored in the index.
        let Some(a) = state.core.store.agent(&h.name).await? else {
            continue;
        };
        let Some(handle) = a.handle else { continue };
        results.push(SearchResult {
            id: format!("@{}", handle.trim_start_matches('@')),
            tagline: Some(h.tagline),
            rating: None,
        });
    }
    Ok(Json(SearchResponse { results }))
}
