//! Trusted publishing (issue 33): a namespace's trusted publishers, and the exchange of a CI's
//! OIDC ID token for a publish-only token. The rules are `hub_core::trusted`'s.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use hub_core::trusted;
pub use index_schema::hub_api::{
    AddTrustedPublisherRequest, ExchangeRequest, ExchangeResponse, TrustedPublisher,
    TrustedPublisherList,
};

use super::auth::Auth;
use super::strict::{NoBody, NoQuery};
use crate::error::{ApiResult, ErrorBody};
use crate::state::AppState;

/// Trusts an OIDC issuer, audience and subject pattern to publish to the namespace (owners).
#[utoipa::path(post, path = "/api/v1/namespaces/{namespace}/trusted-publishers",
    tag = "namespaces", operation_id = "add_trusted_publisher",
    params(("namespace" = String, Path, description = "namespace")),
    request_body = AddTrustedPublisherRequest,
    responses(
        (status = 201, description = "registered", body = TrustedPublisher),
        (status = 400, description = "malformed issuer, audience or subject pattern", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not an owner", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
        (status = 409, description = "already trusted", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn add(
    State(state): State<AppState>,
    auth: Auth,
    Path(namespace): Path<String>,
    _: NoQuery,
    Json(req): Json<AddTrustedPublisherRequest>,
) -> ApiResult<(StatusCode, Json<TrustedPublisher>)> {
    let t = trusted::add(&state.core, &auth.0, &namespace, &req).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// The namespace's trusted publishers (owners).
#[utoipa::path(get, path = "/api/v1/namespaces/{namespace}/trusted-publishers",
    tag = "namespaces", operation_id = "list_trusted_publishers",
    params(("namespace" = String, Path, description = "namespace")),
    responses(
        (status = 200, description = "oldest first", body = TrustedPublisherList),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not an owner", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Path(namespace): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<TrustedPublisherList>> {
    Ok(Json(trusted::list(&state.core, &auth.0, &namespace).await?))
}

/// Removes a trusted publisher and revokes the tokens minted for it (owners).
#[utoipa::path(delete, path = "/api/v1/namespaces/{namespace}/trusted-publishers/{id}",
    tag = "namespaces", operation_id = "remove_trusted_publisher",
    params(("namespace" = String, Path, description = "namespace"),
           ("id" = i64, Path, description = "trusted publisher id")),
    responses(
        (status = 204, description = "removed"),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not an owner", body = ErrorBody),
        (status = 404, description = "no such namespace or trusted publisher", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    auth: Auth,
    Path((namespace, id)): Path<(String, i64)>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    trusted::remove(&state.core, &auth.0, &namespace, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Exchanges a CI's OIDC ID token for a token that may only publish to the namespace, for
/// 15 minutes. No `Authorization`: the ID token is the proof.
#[utoipa::path(post, path = "/api/v1/trusted-publishing/exchange", tag = "namespaces",
    operation_id = "exchange_oidc_token",
    request_body = ExchangeRequest,
    responses(
        (status = 201, description = "the publish-only token", body = ExchangeResponse),
        (status = 401, description = "the ID token was refused; the message names the check", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
        (status = 503, description = "the issuer's keys could not be fetched", body = ErrorBody),
    ))]
pub async fn exchange(
    State(state): State<AppState>,
    _: NoQuery,
    Json(req): Json<ExchangeRequest>,
) -> ApiResult<(StatusCode, Json<ExchangeResponse>)> {
    let r = trusted::exchange(&state.core, &state.oidc, &req).await?;
    Ok((StatusCode::CREATED, Json(r)))
}
