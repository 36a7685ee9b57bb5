//! Login, `me`, API tokens.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use hub_core::accounts;
pub use index_schema::hub_api::{
    CreateTokenRequest, LoginRequest, Me, MyNamespace, NewToken, TokenInfo, TokenList,
};

use super::auth::Auth;
use super::strict::{NoBody, NoQuery};
use crate::client::ip_of;
use crate::error::{ApiResult, ErrorBody};
use crate::state::AppState;

/// Exchanges a user name and password for a new API token (what `ofc login` uses).
#[utoipa::path(post, path = "/api/v1/login", tag = "accounts", request_body = LoginRequest,
    responses(
        (status = 201, description = "token created", body = NewToken),
        (status = 400, description = "bad request", body = ErrorBody),
        (status = 401, description = "wrong user name or password", body = ErrorBody),
        (status = 429, description = "too many failures", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ci: ConnectInfo<SocketAddr>,
    _: NoQuery,
    Json(req): Json<LoginRequest>,
) -> ApiResult<(StatusCode, Json<NewToken>)> {
    let t = accounts::login(&state.core, &ip_of(Some(ci)), req).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// Who the token belongs to, its namespaces and scopes.
#[utoipa::path(get, path = "/api/v1/me", tag = "accounts",
    responses(
        (status = 200, description = "the caller", body = Me),
        (status = 401, description = "no valid token", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn me(
    State(state): State<AppState>,
    auth: Auth,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<Me>> {
    Ok(Json(accounts::me(&state.core, &auth.0).await?))
}

/// The caller's tokens.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "accounts",
    responses(
        (status = 200, description = "tokens", body = TokenList),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "the token lacks `manage-tokens`", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list_tokens(
    State(state): State<AppState>,
    auth: Auth,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<TokenList>> {
    Ok(Json(accounts::list_tokens(&state.core, &auth.0).await?))
}

/// Creates a token with at most the scopes and namespaces of the calling token.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "accounts", request_body = CreateTokenRequest,
    responses(
        (status = 201, description = "token created", body = NewToken),
        (status = 400, description = "bad request", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "more than the calling token may grant", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn create_token(
    State(state): State<AppState>,
    auth: Auth,
    _: NoQuery,
    Json(req): Json<CreateTokenRequest>,
) -> ApiResult<(StatusCode, Json<NewToken>)> {
    let t = accounts::create_token(&state.core, &auth.0, &req).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// Revokes one of the caller's tokens (administrators: any token).
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "token id")),
    responses(
        (status = 204, description = "revoked"),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "another token, and the calling one lacks `manage-tokens`", body = ErrorBody),
        (status = 404, description = "no such token of yours", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn revoke_token(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    accounts::revoke_token(&state.core, &auth.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
