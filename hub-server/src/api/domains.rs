//! Verified namespaces (issue 33): a namespace claims a domain and proves it
//! (`PUT /api/v1/namespaces/{namespace}/domain`), or drops the claim (`DELETE`). The rules are
//! hub-core's `domains`; the fetching is [`crate::proof`].

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use hub_core::domains;
use index_schema::hub_api::{NamespaceInfo, VerifyDomainRequest};

use super::auth::Auth;
use super::strict::{NoBody, NoQuery};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::proof::Prover;
use crate::state::AppState;

/// Claims a domain for the namespace and proves it now: by `https`
/// (`https://DOMAIN/.well-known/ofc-namespace.txt`) or `dns` (a TXT record on DOMAIN), either
/// holding `v=ofc1; k=ed25519; p=<base64 public key>` for a live key of the namespace.
/// Replaces an earlier claim. Re-checked every `verify_recheck_secs`.
#[utoipa::path(put, path = "/api/v1/namespaces/{namespace}/domain", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace")),
    request_body = VerifyDomainRequest,
    responses(
        (status = 200, description = "verified: the namespace now", body = NamespaceInfo),
        (status = 400, description = "a bad domain or method, or the proof failed (`domain_proof_failed`: the message says what to publish where)", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not an owner", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn verify_domain(
    State(state): State<AppState>,
    auth: Auth,
    Path(namespace): Path<String>,
    _: NoQuery,
    Json(req): Json<VerifyDomainRequest>,
) -> ApiResult<Json<NamespaceInfo>> {
    // Built per claim (claims are rare); the settings were checked when the hub started.
    let prover = Prover::from_config(&state.core.config).map_err(ApiError::internal)?;
    Ok(Json(
        domains::verify(
            &state.core,
            &auth.0,
            &prover,
            &namespace,
            &req.domain,
            &req.method,
        )
        .await?,
    ))
}

/// Drops the namespace's claimed domain: it is no longer verified.
#[utoipa::path(delete, path = "/api/v1/namespaces/{namespace}/domain", tag = "namespaces",
    params(("namespace" = String, Path, description = "namespace")),
    responses(
        (status = 204, description = "dropped"),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not an owner", body = ErrorBody),
        (status = 404, description = "no such namespace, or it claims no domain", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn remove_domain(
    State(state): State<AppState>,
    auth: Auth,
    Path(namespace): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    domains::remove(&state.core, &auth.0, &namespace).await?;
    Ok(StatusCode::NO_CONTENT)
}
