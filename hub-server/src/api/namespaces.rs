//! Namespaces (the `publisher` part of names), their members and their publisher keys.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use index_schema::envelope::PublicKey;
pub use index_schema::hub_api::{
    AddKeyRequest, CreateNamespaceRequest, KeyList, NamespaceInfo, SetMemberRequest,
};
use index_schema::name::check_publisher;

use super::{AppState, Auth, denied_error};
use crate::auth::{Role, Scope};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::store::KeyRow;

async fn info(state: &AppState, name: &str) -> ApiResult<NamespaceInfo> {
    let ns = state.namespace_or_404(name).await?;
    Ok(NamespaceInfo {
        members: state.store.members(ns.id).await?,
        keys: state.store.keys(ns.id).await?,
        name: ns.name,
        created_at: ns.created_at,
    })
}

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
    Json(req): Json<CreateNamespaceRequest>,
) -> ApiResult<(StatusCode, Json<NamespaceInfo>)> {
    let name = check_publisher(&req.name)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidName, e.to_string()))?;
    // Creating is owning: the token must be allowed to manage members there.
    auth.0
        .authorize(Scope::ManageMembers, &name, Some(Role::Owner))
        .map_err(denied_error)?;
    // Namespaces are where quotas apply (bytes, manifests): a user may create only so many,
    // or the quotas would be one namespace away (administrators are not limited).
    let limit = (!auth.0.acts_as_admin()).then_some(state.config.max_namespaces_per_user);
    state
        .store
        .create_namespace(&auth.actor(), &name, auth.0.user_id, limit)
        .await
        .map_err(|e| match e {
            crate::store::StoreError::Conflict(m) => {
                ApiError::conflict(ErrorCode::NamespaceExists, m)
            }
            other => other.into(),
        })?;
    Ok((StatusCode::CREATED, Json(info(&state, &name).await?)))
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
) -> ApiResult<Json<NamespaceInfo>> {
    Ok(Json(info(&state, &namespace).await?))
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
    Json(req): Json<SetMemberRequest>,
) -> ApiResult<Json<NamespaceInfo>> {
    let ns = state.namespace_or_404(&namespace).await?;
    state.authorize(&auth.0, Scope::ManageMembers, &ns).await?;
    let role = Role::parse(&req.role).ok_or_else(|| {
        ApiError::bad_request(
            ErrorCode::InvalidRole,
            format!(
                "unknown role `{}`; roles: owner, maintainer, publisher",
                req.role
            ),
        )
    })?;
    let user = user.to_ascii_lowercase();
    let u =
        state.store.user_by_name(&user).await?.ok_or_else(|| {
            ApiError::not_found(ErrorCode::UserNotFound, format!("no user `{user}`"))
        })?;
    state
        .store
        .set_member(&auth.actor(), &ns, u.id, &u.name, role.as_str())
        .await
        .map_err(last_owner)?;
    Ok(Json(info(&state, &ns.name).await?))
}

fn last_owner(e: crate::store::StoreError) -> ApiError {
    match e {
        crate::store::StoreError::Conflict(m) => ApiError::conflict(ErrorCode::LastOwner, m),
        other => other.into(),
    }
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
) -> ApiResult<StatusCode> {
    let ns = state.namespace_or_404(&namespace).await?;
    state.authorize(&auth.0, Scope::ManageMembers, &ns).await?;
    let user = user.to_ascii_lowercase();
    let not_member = || {
        ApiError::not_found(
            ErrorCode::MemberNotFound,
            format!("`{user}` is not a member"),
        )
    };
    let u = state
        .store
        .user_by_name(&user)
        .await?
        .ok_or_else(not_member)?;
    if state
        .store
        .remove_member(&auth.actor(), &ns, u.id, &u.name)
        .await
        .map_err(last_owner)?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_member())
    }
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
) -> ApiResult<Json<KeyList>> {
    let ns = state.namespace_or_404(&namespace).await?;
    Ok(Json(KeyList {
        keys: state.store.keys(ns.id).await?,
    }))
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
    Json(req): Json<AddKeyRequest>,
) -> ApiResult<(StatusCode, Json<KeyRow>)> {
    let ns = state.namespace_or_404(&namespace).await?;
    state.authorize(&auth.0, Scope::ManageKeys, &ns).await?;
    let key = PublicKey::parse(req.public_key.trim())
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidKey, e.to_string()))?;
    let key_id = key.key_id().to_string();
    state
        .store
        .add_key(
            &auth.actor(),
            &ns,
            &key_id,
            &key.to_string(),
            auth.0.user_id,
        )
        .await
        .map_err(|e| match e {
            crate::store::StoreError::Conflict(m) => ApiError::conflict(ErrorCode::KeyExists, m),
            other => other.into(),
        })?;
    let row = state
        .store
        .keys(ns.id)
        .await?
        .into_iter()
        .find(|k| k.key_id == key_id)
        .ok_or_else(|| ApiError::internal("key vanished"))?;
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
) -> ApiResult<StatusCode> {
    let ns = state.namespace_or_404(&namespace).await?;
    state.authorize(&auth.0, Scope::ManageKeys, &ns).await?;
    if state
        .store
        .revoke_key(&auth.actor(), &ns, &key_id, Some(auth.0.user_id))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            ErrorCode::KeyNotFound,
            format!("namespace `{}` has no key `{key_id}`", ns.name),
        ))
    }
}
