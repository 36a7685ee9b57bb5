//! Publish, read, yank/deprecate, admin delete, outbox and audit log.

// utoipa's `IntoParams` expansion names the query types by path inside the handlers.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hub_core::publish::{self, Published};
use hub_core::{agents, lifecycle};
pub use index_schema::hub_api::{
    AgentInfo, AgentList, AgentSummary, AuditPage, AuditQuery, BundleInfo, DeprecateRequest,
    EnvelopeJson, ListQuery, LogQuery, OutboxPage, OutboxQuery, PublishRequest, PublishResponse,
    SigningKey, VersionInfo, VersionSummary, YankRequest,
};

use super::auth::Auth;
use super::strict::{NoBody, NoQuery, Params};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::state::AppState;

/// An agent's path: `/api/v1/agents/{publisher}/{agent}`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AgentPath {
    /// namespace
    publisher: String,
    /// agent
    agent: String,
}

/// A version's path: `/api/v1/agents/{publisher}/{agent}/versions/{version}`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct VersionPath {
    /// namespace
    publisher: String,
    /// agent
    agent: String,
    /// exact version
    version: String,
}

/// The refusals of a yank or a deprecation and of their undoing (OpenAPI description: the
/// answers are `ApiError`s).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
enum VersionChangeRefused {
    #[response(status = 400, description = "bad input")]
    BadInput(ErrorBody),
    #[response(status = 401, description = "no valid token")]
    NoToken(ErrorBody),
    #[response(status = 403, description = "not allowed")]
    NotAllowed(ErrorBody),
    #[response(status = 404, description = "no such agent or version")]
    NotFound(ErrorBody),
}

fn refused(state: &AppState, e: ApiError) -> ApiError {
    state.core.counters.publish_refused();
    e
}

/// 413 for a bundle sent inline (base64 in the JSON) past `max_inline_bundle_bytes`; `size`
/// when known (a body past the route's limit is refused before it is parsed).
fn inline_too_large(state: &AppState, publisher: &str, agent: &str, size: Option<u64>) -> ApiError {
    let max = state.core.config.max_inline_bundle_bytes;
    let what = match size {
        Some(n) => format!("the bundle sent inline is {n} bytes"),
        None => "the publish request is too large".to_string(),
    };
    ApiError::too_large(
        ErrorCode::InlineBundleTooLarge,
        format!(
            "{what}; this hub takes bundles of at most {max} bytes inline \
             (max_inline_bundle_bytes): upload the bundle as a blob to \
             /v2/{publisher}/{agent}/blobs/uploads/ and publish without `bundle` \
             (newer `ofc publish` does this)"
        ),
    )
}

/// Publishes a signed version. Checks, in order: token scope for the namespace, name and
/// version in the path, envelope and manifest, signature by an active key of the namespace,
/// manifest name/version equal to the path, the bundle (digest, size, limit), then stores the
/// version, an outbox row and an audit row in one transaction. Versions are immutable: the same
/// version again is 409 `version_exists`, and a version an administrator deleted is a tombstone:
/// publishing it again is 409 `version_deleted`.
///
/// A bundle comes either inline (`bundle`, base64, up to `max_inline_bundle_bytes`, 8 MiB by
/// default) or, for any size up to `max_bundle_bytes`, uploaded first as a blob of repository
/// `{publisher}/{agent}` through the OCI API (`POST /v2/{publisher}/{agent}/blobs/uploads/?digest=…`
/// with the bytes as the body, streamed to disk), then published without `bundle`: that is
/// what `ofc publish` does. A bigger inline bundle is 413 `inline_bundle_too_large`.
#[utoipa::path(put, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact semver version")),
    request_body = PublishRequest,
    responses(
        (status = 201, description = "published", body = PublishResponse),
        (status = 400, description = "invalid name, version, envelope, manifest, signature or bundle", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "token, membership or key not allowed", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
        (status = 409, description = "version exists, or was deleted (versions are immutable)", body = ErrorBody),
        (status = 413, description = "bundle too large (`bundle_too_large`, past max_bundle_bytes), or too large to send inline (`inline_bundle_too_large`: upload it as a blob to /v2/{publisher}/{agent}/blobs/uploads/)", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn publish(
    State(state): State<AppState>,
    auth: Auth,
    Path((publisher, agent, version)): Path<(String, String, String)>,
    _: NoQuery,
    body: Result<Json<PublishRequest>, JsonRejection>,
) -> Response {
    let req = match body {
        Ok(Json(req)) => req,
        // Past the route's body limit, which max_inline_bundle_bytes sets.
        Err(rej) if rej.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return refused(&state, inline_too_large(&state, &publisher, &agent, None))
                .into_response();
        }
        Err(rej) => return rej.into_response(),
    };
    let r = publish::publish(
        &state.core,
        &auth.0,
        publish::Request {
            publisher: &publisher,
            agent: &agent,
            version: &version,
            envelope: req.envelope.get(),
            inline_bundle: req.bundle.as_deref(),
            pushed: None,
        },
    )
    .await;
    match r {
        Ok(p) => {
            // The version is committed: a proof that cannot be made now is left out (the
            // version API serves it), never turned into a failed publish.
            let log = match publish_inclusion(&state, &p).await {
                Ok(l) => Some(l),
                Err(e) => {
                    tracing::warn!(agent.name = %p.name, agent.version = %p.version,
                        error = %e.message, "cannot prove the publish's log entry");
                    None
                }
            };
            (
                StatusCode::CREATED,
                Json(PublishResponse {
                    name: p.name.to_string(),
                    version: p.version,
                    manifest_digest: p.manifest_digest.to_string(),
                    bundle_digest: p.bundle_digest.map(|d| d.to_string()),
                    key_id: p.key_id,
                    seq: p.seq,
                    published_at: p.published_at,
                    log,
                }),
            )
                .into_response()
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

async fn publish_inclusion(
    state: &AppState,
    p: &Published,
) -> ApiResult<index_schema::hub_api::LogInclusion> {
    let entry = hub_core::store::publish_entry(
        &p.name.to_string(),
        &p.version,
        &p.manifest_digest.to_string(),
        &p.key_id,
    )?;
    Ok(hub_core::tlog::inclusion(
        &state.core,
        &entry,
        p.log.index,
        p.log.size,
        p.log.root,
        None,
    )
    .await?)
}

/// An agent: latest version and every version with its yanked/deprecated state.
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}", tag = "agents",
    params(AgentPath),
    responses(
        (status = 200, description = "the agent", body = AgentInfo),
        (status = 400, description = "invalid name", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
    ))]
pub async fn get_agent(
    State(state): State<AppState>,
    Path(a): Path<AgentPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<AgentInfo>> {
    Ok(Json(
        agents::info(&state.core, &a.publisher, &a.agent).await?,
    ))
}

/// The A2A agent card (v0.3) of a `remote` agent, built from its latest version's signed
/// manifest (`index_schema::a2a_card::from_manifest`): an agent published from an A2A card gets
/// its card back, any other remote agent a card with one skill per capability; either with the
/// hub's JWS in `signatures` (A2A §8.4; key in `/.well-known/jwks.json`). Other sources have
/// no A2A endpoint: 404 `no_agent_card`.
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}/agent-card.json", tag = "agents",
    params(AgentPath),
    responses(
        (status = 200, description = "the A2A agent card", body = Object),
        (status = 400, description = "invalid name", body = ErrorBody),
        (status = 404, description = "no such agent, no visible version, or not a remote agent",
            body = ErrorBody),
    ))]
pub async fn get_agent_card(
    State(state): State<AppState>,
    Path(a): Path<AgentPath>,
) -> ApiResult<Json<serde_json::Map<String, serde_json::Value>>> {
    Ok(Json(
        hub_core::discovery::signed_agent_card(&state.core, &a.publisher, &a.agent).await?,
    ))
}

/// One version: manifest, envelope, digests, key state, and its transparency-log entry proven
/// under the current checkpoint (with `log_size`, also the consistency proof from that size).
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}", tag = "agents",
    params(VersionPath, LogQuery),
    responses(
        (status = 200, description = "the version", body = VersionInfo),
        (status = 400, description = "invalid name or version", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
        (status = 410, description = "the version was removed (unpublished or taken down): the message names the reason class", body = ErrorBody),
    ))]
pub async fn get_version(
    State(state): State<AppState>,
    Path(v): Path<VersionPath>,
    Params(q): Params<LogQuery>,
    _: NoBody,
) -> ApiResult<Json<VersionInfo>> {
    Ok(Json(
        agents::version_info(&state.core, &v.publisher, &v.agent, &v.version, q.log_size).await?,
    ))
}

/// The bundle bytes of a version.
///
/// Each bundle download counts as a download of the version; reading its metadata does not.
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/bundle", tag = "agents",
    params(VersionPath),
    responses(
        (status = 200, description = "tar.gz bytes", content_type = "application/octet-stream"),
        (status = 400, description = "invalid name or version", body = ErrorBody),
        (status = 404, description = "no such agent, version or bundle", body = ErrorBody),
        (status = 410, description = "the version was removed (unpublished or taken down): the message names the reason class", body = ErrorBody),
    ))]
pub async fn get_bundle(
    State(state): State<AppState>,
    peer: axum::extract::ConnectInfo<std::net::SocketAddr>,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Response> {
    let (file, size, d) = agents::bundle(
        &state.core,
        &v.publisher,
        &v.agent,
        &v.version,
        Some(peer.0.ip()),
    )
    .await?;
    // Streamed from the blob file: a bundle is never held in memory, however many downloads
    // stall (each holds one open file and a 64 KiB buffer).
    let stream =
        tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::from_std(file), 64 * 1024);
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, size.to_string()),
            (header::ETAG, format!("\"{d}\"")),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response())
}

/// Agents ordered by last change, with cursor pagination and `updated_since` for mirrors.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", params(ListQuery),
    responses(
        (status = 200, description = "a page", body = AgentList),
        (status = 400, description = "bad cursor or limit, or a parameter this route does not take (the message names it)", body = ErrorBody),
    ))]

pub async fn list_agents(
    State(state): State<AppState>,
    Params(q): Params<ListQuery>,
    _: NoBody,
) -> ApiResult<Json<AgentList>> {
    Ok(Json(
        agents::list(&state.core, q.cursor.as_deref(), q.updated_since, q.limit).await?,
    ))
}

/// Yanks a version: selectors skip it; it stays downloadable by exact version.
#[utoipa::path(put, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/yank", tag = "agents",
    params(VersionPath),
    request_body = YankRequest,
    responses(
        (status = 204, description = "yanked"),
        VersionChangeRefused,
    ), security(("bearer" = [])))]
pub async fn yank(
    State(state): State<AppState>,
    auth: Auth,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    Json(req): Json<YankRequest>,
) -> ApiResult<StatusCode> {
    let reason = req.reason.unwrap_or_default();
    agents::set_yanked(
        &state.core,
        &auth.0,
        &v.publisher,
        &v.agent,
        &v.version,
        Some(&reason),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unyanks a version.
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/yank", tag = "agents",
    params(VersionPath),
    responses(
        (status = 204, description = "unyanked"),
        VersionChangeRefused,
    ), security(("bearer" = [])))]
pub async fn unyank(
    State(state): State<AppState>,
    auth: Auth,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    agents::set_yanked(
        &state.core,
        &auth.0,
        &v.publisher,
        &v.agent,
        &v.version,
        None,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deprecates a version with a message.
#[utoipa::path(put, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/deprecation", tag = "agents",
    params(VersionPath),
    request_body = DeprecateRequest,
    responses(
        (status = 204, description = "deprecated"),
        VersionChangeRefused,
    ), security(("bearer" = [])))]
pub async fn deprecate(
    State(state): State<AppState>,
    auth: Auth,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    Json(req): Json<DeprecateRequest>,
) -> ApiResult<StatusCode> {
    lifecycle::set_deprecated(
        &state.core,
        &auth.0,
        &v.publisher,
        &v.agent,
        &v.version,
        Some(&req.message),
        req.successor.as_deref(),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Clears a deprecation.
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/deprecation", tag = "agents",
    params(VersionPath),
    responses(
        (status = 204, description = "cleared"),
        VersionChangeRefused,
    ), security(("bearer" = [])))]
pub async fn undeprecate(
    State(state): State<AppState>,
    auth: Auth,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    lifecycle::set_deprecated(
        &state.core,
        &auth.0,
        &v.publisher,
        &v.agent,
        &v.version,
        None,
        None,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unpublishes a version: its publisher (the `yank` scope, maintainer or owner) removes it
/// while it is younger than the hub's `unpublish_window_secs` and has fewer downloads than
/// `unpublish_max_downloads`; otherwise 403 `unpublish_refused` (an operator's takedown can
/// still remove it). Leaves a tombstone: its URLs answer 410 `version_removed`, and its number
/// can never be published again.
#[utoipa::path(post, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/unpublish", tag = "agents",
    params(VersionPath),
    responses(
        (status = 204, description = "unpublished: a tombstone is left"),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed, or past the window or download limit", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
        (status = 410, description = "removed already", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn unpublish(
    State(state): State<AppState>,
    auth: Auth,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    lifecycle::unpublish(&state.core, &auth.0, &v.publisher, &v.agent, &v.version).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes an agent and all its versions (hub administrators only).
///
/// Each deleted version stays a tombstone: it can never be published again (409
/// `version_deleted`).
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}", tag = "agents",
    params(AgentPath),
    responses(
        (status = 204, description = "deleted"),
        (status = 400, description = "invalid name", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "administrators only", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn delete_agent(
    State(state): State<AppState>,
    auth: Auth,
    Path(a): Path<AgentPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    agents::delete_agent(&state.core, &auth.0, &a.publisher, &a.agent).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes one version (hub administrators only).
///
/// The version stays a tombstone: it can never be published again (409 `version_deleted`).
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}", tag = "agents",
    params(VersionPath),
    responses(
        (status = 204, description = "deleted"),
        (status = 400, description = "invalid name or version", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "administrators only", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn delete_version(
    State(state): State<AppState>,
    auth: Auth,
    Path(v): Path<VersionPath>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    agents::delete_version(&state.core, &auth.0, &v.publisher, &v.agent, &v.version).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The outbox that search indexes and mirrors follow.
#[utoipa::path(get, path = "/api/v1/outbox", tag = "agents", params(OutboxQuery),
    responses(
        (status = 200, description = "entries", body = OutboxPage),
        (status = 400, description = "bad limit, or a parameter this route does not take (the message names it)", body = ErrorBody),
    ))]

pub async fn outbox(
    State(state): State<AppState>,
    Params(q): Params<OutboxQuery>,
    _: NoBody,
) -> ApiResult<Json<OutboxPage>> {
    Ok(Json(OutboxPage {
        entries: agents::outbox(&state.core, q.after, q.limit).await?,
    }))
}

/// The audit log (hub administrators only).
#[utoipa::path(get, path = "/api/v1/audit", tag = "agents", params(AuditQuery),
    responses(
        (status = 200, description = "entries", body = AuditPage),
        (status = 400, description = "bad limit, or a parameter this route does not take (the message names it)", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "administrators only", body = ErrorBody),
    ), security(("bearer" = [])))]

pub async fn audit(
    State(state): State<AppState>,
    auth: Auth,
    Params(q): Params<AuditQuery>,
    _: NoBody,
) -> ApiResult<Json<AuditPage>> {
    Ok(Json(AuditPage {
        entries: agents::audit(&state.core, &auth.0, q.target.as_deref(), q.limit).await?,
    }))
}
