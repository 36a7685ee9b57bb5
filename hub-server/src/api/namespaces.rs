//! Namespaces (the `publisher` part of names), their members and their publisher keys.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use hub_core::namespaces;
pub use index_schema::hub_api::{
    AddKeyRequest, CreateNamespaceRequest, KeyList, NamespaceInfo, SetMemberRequest,
};

use super::auth::Auth;
use super::strict::{NoBody, NoQuery};
use crate::error::{ApiResult, ErrorBody};
use crate::state::AppState;

/// A publisher key.
pub use hub_core::store::KeyRow;

/// Creates a namespace owned by the caller.
#[utoipa::path(post, path = "/api/v1/namespaces", tag = "namespaces",
    request_body = CreateNamespaceRequest,
    responses(
        (status = 201, description = "created", body = NamespaceInfo),
        (status = 400, description = "invalid or reserved name", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "token not allowed", body = ErrorBody),
        (status = 409, description = "name taken", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn create_namespace(
    State(state): State<AppState>,
    auth: Auth,
    _: NoQuery,
    Json(req): Json<CreateNamespaceRequest>,
) -> ApiResult<(StatusCode, Json<NamespaceInfo>)> {
    let info = namespaces::create(&state.core, &auth.0, &req.name).await?;
    Ok((StatusCode::CREATED, Json(info)))
}

/// A namespace, its members and its keys.
#[utoipa::path(get, path = "/api/v1/namespaces/{namespace}", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace")),
    responses(
        (status = 200, description = "the namespace", body = NamespaceInfo),
        (status = 404, description = "no such namespace", body = ErrorBody),
    ))]
pub async fn get_namespace(
    State(state): State<AppState>,
    Path(namespace): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<NamespaceInfo>> {
    Ok(Json(namespaces::info(&state.core, &namespace).await?))
}

/// Adds a member or changes their role.
#[utoipa::path(put, path = "/api/v1/namespaces/{namespace}/members/{user}", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace"),
           ("user" = String, Path, description = "user name")),
    request_body = SetMemberRequest,
    responses(
        (status = 200, description = "the namespace now", body = NamespaceInfo),
        (status = 400, description = "unknown role", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such namespace or user", body = ErrorBody),
        (status = 409, description = "would leave no owner", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn set_member(
    State(state): State<AppState>,
    auth: Auth,
    Path((namespace, user)): Path<(String, String)>,
    _: NoQuery,
    Json(req): Json<SetMemberRequest>,
) -> ApiResult<Json<NamespaceInfo>> {
    Ok(Json(
        namespaces::set_member(&state.core, &auth.0, &namespace, &user, &req.role).await?,
    ))
}

/// Removes a member.
#[utoipa::path(delete, path = "/api/v1/namespaces/{namespace}/members/{user}", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace"),
           ("user" = String, Path, description = "user name")),
    responses(
        (status = 204, description = "removed"),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such namespace or member", body = ErrorBody),
        (status = 409, description = "would leave no owner", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn remove_member(
    State(state): State<AppState>,
    auth: Auth,
    Path((namespace, user)): Path<(String, String)>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    namespaces::remove_member(&state.core, &auth.0, &namespace, &user).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The namespace's publisher keys, revoked ones included (with who revoked them and when).
#[utoipa::path(get, path = "/api/v1/namespaces/{namespace}/keys", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace")),
    responses(
        (status = 200, description = "keys", body = KeyList),
        (status = 404, description = "no such namespace", body = ErrorBody),
    ))]
pub async fn list_keys(
    State(state): State<AppState>,
    Path(namespace): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<KeyList>> {
    Ok(Json(namespaces::keys(&state.core, &namespace).await?))
}

/// Registers an ed25519 publisher key.
#[utoipa::path(post, path = "/api/v1/namespaces/{namespace}/keys", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace")),
    request_body = AddKeyRequest,
    responses(
        (status = 201, description = "registered", body = KeyRow),
        (status = 400, description = "not an ed25519 key", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
        (status = 409, description = "registered already", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn add_key(
    State(state): State<AppState>,
    auth: Auth,
    Path(namespace): Path<String>,
    _: NoQuery,
    Json(req): Json<AddKeyRequest>,
) -> ApiResult<(StatusCode, Json<KeyRow>)> {
    let row = namespaces::add_key(&state.core, &auth.0, &namespace, &req.public_key).await?;
    Ok((StatusCode::CREATED, Json(row)))
}

/// Revokes a key: it signs nothing new; versions it signed stay and show the revocation.
#[utoipa::path(delete, path = "/api/v1/namespaces/{namespace}/keys/{key_id}", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace"),
           ("key_id" = String, Path, description = "key id (hex)")),
    responses(
        (status = 204, description = "revoked"),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such namespace or key", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn revoke_key(
    State(state): State<AppState>,
    auth: Auth,
    Path((namespace, key_id)): Path<(String, String)>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    namespaces::revoke_key(&state.core, &auth.0, &namespace, &key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
