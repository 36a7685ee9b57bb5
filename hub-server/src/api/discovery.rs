//! The discovery documents over HTTP (rules in `hub_core::discovery`): the AI catalog at
//! `/.well-known/ai-catalog.json`, the JWK Set of the A2A card key at `/.well-known/jwks.json`,
//! and the ARD registry's `POST /api/v1/ard/search`, whose errors take ARD's shape
//! `{errorCode, message}` (with the hub's own `code` beside).
//!
//! Addresses in the documents are built from the request's `Host` (and `X-Forwarded-Proto:
//! https`), as the OCI token challenge is: the hub has no setting for its public address.
//! Nothing signed depends on them.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::discovery::{self, SearchRequest, Site};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::state::AppState;

// The documents' shapes for the OpenAPI document (built as JSON by `hub_core::discovery`; the
// discovery test checks the served documents against these).

/// An AI catalog (ARD §4.1).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AiCatalog)]
#[serde(rename_all = "camelCase")]
pub struct AiCatalogDoc {
    /// `1.0`.
    pub spec_version: String,
    /// The hub.
    pub host: AiCatalogHostDoc,
    /// The hub's registry (its `POST /search`) first, then its agents, newest change first; a
    /// further page is a last entry of type `application/ai-catalog+json`.
    pub entries: Vec<ArdEntryDoc>,
}

/// Who publishes the catalog.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AiCatalogHost)]
#[serde(rename_all = "camelCase")]
pub struct AiCatalogHostDoc {
    /// The hub's host name.
    pub display_name: String,
    /// The hub's host name.
    pub identifier: String,
}

/// A catalog entry (ARD §4.2).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ArdEntry)]
#[serde(rename_all = "camelCase")]
pub struct ArdEntryDoc {
    /// `urn:air:<registry_host>:<publisher>:<agent>` (the registry and next pages have their
    /// own).
    pub identifier: String,
    /// The agent's display name, else its name.
    pub display_name: String,
    /// `application/a2a-agent-card+json` (a remote agent: `url` is its signed card),
    /// `application/vnd.ofc.agent+json` (any other: `url` is its record in the JSON API),
    /// `application/ai-registry+json` or `application/ai-catalog+json`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Where the entry's document is.
    pub url: String,
    /// The tagline.
    pub description: Option<String>,
    /// The manifest's keywords.
    pub tags: Option<Vec<String>>,
    /// The capability names.
    pub capabilities: Option<Vec<String>>,
    /// The manifest's examples, when it has 2 to 5.
    pub representative_queries: Option<Vec<String>>,
    /// The version shown.
    pub version: Option<String>,
    /// Last change, RFC 3339.
    pub updated_at: Option<String>,
    /// Scalars: `deprecated` (true when deprecated); in search results also `searchMode`
    /// (`keyword` or `hybrid`), `matchedBy` (`words`, `meaning` or `words,meaning`, hybrid
    /// only) and `similarity` (cosine of the agent's and the query's embeddings, hybrid only).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// A `POST /search` body (ARD §7.1-7.2); unknown members are refused.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ArdSearchRequest)]
#[serde(rename_all = "camelCase")]
pub struct ArdSearchRequestDoc {
    /// What is searched for.
    pub query: ArdQueryDoc,
    /// `auto` (default), `referrals` or `none`: all answer from this hub's index.
    pub federation: Option<String>,
    /// Results per page, 1 to 100 (default 10).
    pub page_size: Option<u32>,
    /// The `pageToken` of the previous page, unchanged.
    pub page_token: Option<String>,
}

/// ARD's query object (§7.1).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ArdQuery)]
pub struct ArdQueryDoc {
    /// Natural-language text (required; empty lists every agent).
    pub text: String,
    /// `type`, `tags`, `capabilities` or `publisher` → a string or an array of strings (one
    /// value for `tags` and `capabilities`); any other key is refused.
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Map<String, Value>>,
}

/// A `POST /search` answer (ARD §7.2).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ArdSearchResponse)]
#[serde(rename_all = "camelCase")]
pub struct ArdSearchResponseDoc {
    /// Best first.
    pub results: Vec<ArdSearchResultDoc>,
    /// For the next page, when there is one.
    pub page_token: Option<String>,
}

/// A search result: a catalog entry with its score and source.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ArdSearchResult)]
pub struct ArdSearchResultDoc {
    /// The entry.
    #[serde(flatten)]
    pub entry: ArdEntryDoc,
    /// Relevance, 0-100 (informational, not trust; never above the result before it): in
    /// hybrid mode the fused score over the best possible one, in keyword mode a share per
    /// query word found plus the match's strength (ARCHITECTURE.md, "Discovery documents").
    #[schema(maximum = 100)]
    pub score: u8,
    /// This hub's ARD registry URL.
    pub source: String,
}

/// An ARD error (ARD Appendix B) with the hub's own code.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ArdError)]
#[serde(rename_all = "camelCase")]
pub struct ArdErrorDoc {
    /// `INVALID_ARGUMENT`, `UNAUTHENTICATED`, `NOT_FOUND`, `RATE_LIMIT_EXCEEDED`,
    /// `UNAVAILABLE` or `INTERNAL_ERROR`.
    pub error_code: String,
    /// What was wrong.
    pub message: String,
    /// The hub's error code (as in `ErrorBody`).
    pub code: String,
}

/// A JWK Set (RFC 7517 §5).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = JwkSet)]
pub struct JwkSetDoc {
    /// The card key.
    pub keys: Vec<JwkDoc>,
}

/// An Ed25519 public key (RFC 8037).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Jwk)]
pub struct JwkDoc {
    /// `OKP`.
    pub kty: String,
    /// `Ed25519`.
    pub crv: String,
    /// The public key, base64url.
    pub x: String,
    /// RFC 7638 thumbprint; the `kid` of the cards' JWS headers.
    pub kid: String,
    /// `EdDSA`.
    pub alg: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub usage: String,
}

/// `scheme://host[:port]` the request was sent to.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

fn json_as(value: &Value, content_type: &'static str) -> Response {
    let mut resp = Json(value).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// The catalog's query: the next page's token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogQuery {
    /// From the nested catalog entry of the previous page.
    #[serde(default)]
    pub page_token: Option<String>,
}

/// `GET /.well-known/ai-catalog.json`: the AI catalog (ARD §4.1).
#[utoipa::path(get, path = "/.well-known/ai-catalog.json", tag = "discovery",
    params(("pageToken" = Option<String>, Query,
        description = "the next page: from the nested catalog entry at the end of the previous one")),
    responses(
        (status = 200, description = "the AI catalog (ARD v0.9)", body = AiCatalogDoc),
        (status = 400, description = "unknown parameter or page token", body = ErrorBody),
        (status = 503, description = "search is not enabled on this hub", body = ErrorBody),
    ))]
pub async fn catalog(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<CatalogQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) =
        q.map_err(|e| ApiError::bad_request(ErrorCode::InvalidParameter, e.body_text()))?;
    let site = Site::new(&state.core, origin(&headers));
    let doc = discovery::catalog(&state.core, &site, q.page_token.as_deref()).await?;
    Ok(json_as(&doc, "application/json"))
}

/// `GET /.well-known/jwks.json`: the key the hub signs A2A cards with.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "discovery",
    responses((status = 200, description = "the card key's JWK Set",
        content_type = "application/jwk-set+json", body = JwkSetDoc)))]
pub async fn jwks(State(state): State<AppState>) -> Response {
    json_as(
        &discovery::card_signer(&state.core).jwks(),
        "application/jwk-set+json",
    )
}

/// An ARD error answer (ARD Appendix B): `{errorCode, message, code}`.
#[derive(Debug)]
pub struct ArdError(ApiError);

impl IntoResponse for ArdError {
    fn into_response(self) -> Response {
        let e = self.0;
        let ard = match e.status {
            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => "INVALID_ARGUMENT",
            StatusCode::UNAUTHORIZED => "UNAUTHENTICATED",
            StatusCode::NOT_FOUND => "NOT_FOUND",
            StatusCode::TOO_MANY_REQUESTS => "RATE_LIMIT_EXCEEDED",
            StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
            _ => "INTERNAL_ERROR",
        };
        let body = json!({"errorCode": ard, "message": e.message, "code": e.code});
        (e.status, Json(body)).into_response()
    }
}

impl<E: Into<ApiError>> From<E> for ArdError {
    fn from(e: E) -> Self {
        ArdError(e.into())
    }
}

/// `POST /api/v1/ard/search`: ARD's search (§7.2) over the hub's index. The body is decoded
/// here, not by a JSON extractor, and its reading's refusals are mapped here, so that a
/// malformed body or one past the API's body limit (2 MiB) gets ARD's error shape.
#[utoipa::path(post, path = "/api/v1/ard/search", tag = "discovery", operation_id = "ard_search",
    request_body = ArdSearchRequestDoc,
    responses(
        (status = 200, description = "results, best first: hybrid (words and meaning) with an \
            embedding model, keyword without", body = ArdSearchResponseDoc),
        (status = 400, description = "bad body, filter, page size or page token \
            (`INVALID_ARGUMENT`)", body = ArdErrorDoc),
        (status = 413, description = "a body past 2 MiB (`INVALID_ARGUMENT`, code \
            `payload_too_large`)", body = ArdErrorDoc),
        (status = 503, description = "search is not enabled on this hub (`UNAVAILABLE`)",
            body = ArdErrorDoc),
    ))]
pub async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ArdError> {
    let body = body.map_err(|rej| {
        if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(
                ErrorCode::PayloadTooLarge,
                format!(
                    "the body is larger than an ARD search request may be ({} bytes)",
                    super::strict::MAX_BODY_BYTES
                ),
            )
        } else {
            ApiError::new(rej.status(), ErrorCode::InvalidBody, rej.body_text())
        }
    })?;
    let req: SearchRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            ErrorCode::InvalidBody,
            format!("the body is not an ARD search request: {e}"),
        )
    })?;
    let site = Site::new(&state.core, origin(&headers));
    Ok(Json(discovery::search(&state.core, req, &site).await?))
}
