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
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::discovery::{self, SearchRequest, Site};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

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

/// `POST /api/v1/ard/search`: ARD's search (§7.2) over the hub's index. The body is read
/// here, not by an extractor, so that a malformed one gets ARD's error shape.
pub async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ArdError> {
    let req: SearchRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            ErrorCode::InvalidBody,
            format!("the body is not an ARD search request: {e}"),
        )
    })?;
    let site = Site::new(&state.core, origin(&headers));
    Ok(Json(discovery::search(&state.core, req, &site).await?))
}
