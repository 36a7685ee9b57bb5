//! Publish, read, yank/deprecate, admin delete, outbox and audit log.

// utoipa's `IntoParams` expansion names the query types by path inside the handlers.
#![allow(unused_qualifications)]

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use index_schema::envelope::Envelope;
pub use index_schema::hub_api::{
    AgentInfo, AgentList, AgentSummary, AuditPage, AuditQuery, BundleInfo, DeprecateRequest,
    EnvelopeJson, ListQuery, LogQuery, OutboxPage, OutboxQuery, PublishRequest, PublishResponse,
    SigningKey, VersionInfo, VersionSummary, YankRequest,
};
use index_schema::manifest::parse_exact_version;
use index_schema::name::{AgentName, Digest};

use super::{AppState, Auth};
use crate::auth::Scope;
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::store::{AgentRow, KeyRow, VersionRow};

fn parse_name(publisher: &str, agent: &str) -> ApiResult<AgentName> {
    AgentName::new(publisher, agent)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidName, e.to_string()))
}

fn parse_version(v: &str) -> ApiResult<String> {
    let parsed = parse_exact_version(v)
        .map_err(|m| ApiError::bad_request(ErrorCode::InvalidVersion, format!("`{v}`: {m}")))?;
    if !parsed.build.is_empty() {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidVersion,
            format!("`{v}`: build metadata (`+…`) is not allowed; versions are OCI tags"),
        ));
    }
    Ok(parsed.to_string())
}

async fn agent_or_404(state: &AppState, name: &AgentName) -> ApiResult<AgentRow> {
    state
        .store
        .agent(&name.to_string())
        .await?
        .ok_or_else(|| ApiError::not_found(ErrorCode::AgentNotFound, format!("no agent `{name}`")))
}

async fn version_or_404(
    state: &AppState,
    agent: &AgentRow,
    version: &str,
) -> ApiResult<VersionRow> {
    let v = parse_version(version)?;
    state.store.version(agent.id, &v).await?.ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::VersionNotFound,
            format!("`{}` has no version {v}", agent.name),
        )
    })
}

fn clamp_limit(l: Option<i64>) -> ApiResult<i64> {
    match l {
        None => Ok(100),
        Some(l) if (1..=1000).contains(&l) => Ok(l),
        Some(_) => Err(ApiError::bad_request(
            ErrorCode::InvalidLimit,
            "limit is 1 to 1000",
        )),
    }
}

fn refused(state: &AppState, e: ApiError) -> ApiError {
    state.metrics.publish_refused();
    e
}

/// 413 for a bundle sent inline (base64 in the JSON) past `max_inline_bundle_bytes`; `size`
/// when known (a body past the route's limit is refused before it is parsed).
fn inline_too_large(state: &AppState, publisher: &str, agent: &str, size: Option<u64>) -> ApiError {
    let max = state.config.max_inline_bundle_bytes;
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
    let r = crate::publish::publish(
        &state,
        &auth.0,
        crate::publish::Request {
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
    p: &crate::publish::Published,
) -> ApiResult<index_schema::hub_api::LogInclusion> {
    let entry = crate::store::publish_entry(
        &p.name.to_string(),
        &p.version,
        &p.manifest_digest.to_string(),
        &p.key_id,
    )?;
    crate::tlog::inclusion(state, &entry, p.log.index, p.log.size, p.log.root, None).await
}

/// The JSON API's answer to a refused publish: the service's status, code and message.
impl From<crate::publish::PublishError> for ApiError {
    fn from(e: crate::publish::PublishError) -> Self {
        ApiError::new(e.status(), e.code(), e.to_string())
    }
}

fn key_map(keys: Vec<KeyRow>) -> HashMap<String, KeyRow> {
    keys.into_iter().map(|k| (k.key_id.clone(), k)).collect()
}

/// An agent: latest version and every version with its yanked/deprecated state.
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent")),
    responses(
        (status = 200, description = "the agent", body = AgentInfo),
        (status = 400, description = "invalid name", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
    ))]
pub async fn get_agent(
    State(state): State<AppState>,
    Path((publisher, agent)): Path<(String, String)>,
) -> ApiResult<Json<AgentInfo>> {
    let name = parse_name(&publisher, &agent)?;
    let a = agent_or_404(&state, &name).await?;
    let keys = key_map(state.store.keys(a.namespace_id).await?);
    let versions = state
        .store
        .versions(a.id)
        .await?
        .into_iter()
        .map(|v| VersionSummary {
            key_revoked_at: keys.get(&v.key_id).and_then(|k| k.revoked_at),
            version: v.version,
            manifest_digest: v.manifest_digest,
            published_at: v.created_at,
            yanked: v.yanked_at.is_some(),
            yank_reason: v.yank_reason,
            deprecated: v.deprecated_message,
            key_id: v.key_id,
            downloads: v.downloads,
        })
        .collect();
    Ok(Json(AgentInfo {
        namespace: name.publisher().to_string(),
        name: a.name,
        handle: a.handle.map(|h| format!("@{h}")),
        latest: a.latest_version,
        versions,
        downloads: a.downloads,
        created_at: a.created_at,
        updated_at: a.updated_at,
    }))
}

/// The A2A agent card (v0.3) of a `remote` agent, built from its latest version's signed
/// manifest (`index_schema::a2a_card::from_manifest`): an agent published from an A2A card gets
/// its card back, any other remote agent a card with one skill per capability. Other sources
/// have no A2A endpoint: 404 `no_agent_card`.
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}/agent-card.json", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent")),
    responses(
        (status = 200, description = "the A2A agent card", body = Object),
        (status = 400, description = "invalid name", body = ErrorBody),
        (status = 404, description = "no such agent, no visible version, or not a remote agent",
            body = ErrorBody),
    ))]
pub async fn get_agent_card(
    State(state): State<AppState>,
    Path((publisher, agent)): Path<(String, String)>,
) -> ApiResult<Json<serde_json::Map<String, serde_json::Value>>> {
    let name = parse_name(&publisher, &agent)?;
    let a = agent_or_404(&state, &name).await?;
    let Some(latest) = a.latest_version.clone() else {
        return Err(ApiError::not_found(
            ErrorCode::VersionNotFound,
            format!("`{name}` has no version that is not yanked"),
        ));
    };
    let v = version_or_404(&state, &a, &latest).await?;
    let env = Envelope::from_json(&v.envelope).map_err(ApiError::internal)?;
    let text = std::str::from_utf8(&env.payload).map_err(ApiError::internal)?;
    let manifest = index_schema::manifest::Manifest::from_json(text).map_err(ApiError::internal)?;
    index_schema::a2a_card::from_manifest(&manifest)
        .map(Json)
        .ok_or_else(|| {
            ApiError::not_found(
                ErrorCode::NoAgentCard,
                format!(
                    "`{name}` is a `{}` agent, not a remote one, so it has no A2A card",
                    manifest.source.kind()
                ),
            )
        })
}

/// One version: manifest, envelope, digests, key state, and its transparency-log entry proven
/// under the current checkpoint (with `log_size`, also the consistency proof from that size).
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version"),
           LogQuery),
    responses(
        (status = 200, description = "the version", body = VersionInfo),
        (status = 400, description = "invalid name or version", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
    ))]
pub async fn get_version(
    State(state): State<AppState>,
    Path((publisher, agent, version)): Path<(String, String, String)>,
    Query(q): Query<LogQuery>,
) -> ApiResult<Json<VersionInfo>> {
    let name = parse_name(&publisher, &agent)?;
    let a = agent_or_404(&state, &name).await?;
    let v = version_or_404(&state, &a, &version).await?;
    let log = match v.log_index {
        Some(index) => {
            let entry =
                crate::store::publish_entry(&a.name, &v.version, &v.manifest_digest, &v.key_id)?;
            Some(crate::tlog::inclusion_now(&state, &entry, index as u64, q.log_size).await?)
        }
        None => None,
    };
    let keys = key_map(state.store.keys(a.namespace_id).await?);
    let env = Envelope::from_json(&v.envelope).map_err(ApiError::internal)?;
    let manifest: serde_json::Value =
        serde_json::from_slice(&env.payload).map_err(ApiError::internal)?;
    let envelope = EnvelopeJson::from_text(v.envelope).map_err(ApiError::internal)?;
    let k = keys.get(&v.key_id);
    Ok(Json(VersionInfo {
        name: a.name,
        version: v.version,
        manifest,
        envelope,
        manifest_digest: v.manifest_digest,
        source_kind: v.source_kind,
        bundle: v.bundle_digest.map(|digest| BundleInfo {
            digest,
            size: v.bundle_size.unwrap_or(0),
        }),
        key: SigningKey {
            key_id: v.key_id.clone(),
            public_key: k.map(|k| k.public_key.clone()),
            revoked_at: k.and_then(|k| k.revoked_at),
        },
        published_by: v.published_by,
        published_at: v.created_at,
        yanked: v.yanked_at.is_some(),
        yank_reason: v.yank_reason,
        deprecated: v.deprecated_message,
        downloads: v.downloads,
        log,
    }))
}

/// Who downloads, for counting a download once per client and day: a hash of the address
/// (IPv6 by its /64, which one host can fill), so addresses are not stored.
pub fn download_client(ip: Option<std::net::IpAddr>) -> String {
    use sha2::Digest as _;
    let key = match ip {
        Some(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Some(std::net::IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .map(|v4| v4.to_string())
            .unwrap_or_default(),
        Some(ip) => ip.to_string(),
        None => "unknown".to_owned(),
    };
    hex::encode(&sha2::Sha256::digest(format!("ofc-download\0{key}").as_bytes())[..16])
}

/// The bundle bytes of a version.
///
/// Each bundle download counts as a download of the version; reading its metadata does not.
#[utoipa::path(get, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/bundle", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version")),
    responses(
        (status = 200, description = "tar.gz bytes", content_type = "application/octet-stream"),
        (status = 400, description = "invalid name or version", body = ErrorBody),
        (status = 404, description = "no such agent, version or bundle", body = ErrorBody),
    ))]
pub async fn get_bundle(
    State(state): State<AppState>,
    peer: axum::extract::ConnectInfo<std::net::SocketAddr>,
    Path((publisher, agent, version)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    let name = parse_name(&publisher, &agent)?;
    let a = agent_or_404(&state, &name).await?;
    let v = version_or_404(&state, &a, &version).await?;
    let Some(d) = v.bundle_digest.as_deref() else {
        return Err(ApiError::not_found(
            ErrorCode::NoBundle,
            format!(
                "`{}` {} has a `{}` source, not a bundle",
                a.name, v.version, v.source_kind
            ),
        ));
    };
    let digest = Digest::parse(d).map_err(ApiError::internal)?;
    // Streamed from the blob file: a bundle is never held in memory, however many downloads
    // stall (each holds one open file and a 64 KiB buffer).
    let (file, size) = state
        .blobs
        .open(digest)
        .await?
        .ok_or_else(|| ApiError::internal(format!("blob {d} missing from the blob store")))?;
    // Only the bundle counts as a download: reading metadata is not pulling the agent.
    let client = download_client(Some(peer.0.ip()));
    state.store.count_download(a.id, v.id, &client).await?;
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
        (status = 400, description = "bad cursor or limit", body = ErrorBody),
    ))]

pub async fn list_agents(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<AgentList>> {
    let limit = clamp_limit(q.limit)?;
    let (after_t, after_id) = match (&q.cursor, q.updated_since) {
        (Some(c), _) => {
            let bad = || {
                ApiError::bad_request(
                    ErrorCode::InvalidCursor,
                    "the cursor is not one this hub gave",
                )
            };
            let (t, id) = c.split_once('.').ok_or_else(bad)?;
            (
                t.parse::<i64>().map_err(|_| bad())?,
                id.parse::<i64>().map_err(|_| bad())?,
            )
        }
        (None, Some(since)) => (since, 0),
        (None, None) => (i64::MIN, 0),
    };
    let rows = state.store.list_agents(after_t, after_id, limit).await?;
    let next_cursor = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| format!("{}.{}", r.updated_at, r.id)))
        .flatten();
    Ok(Json(AgentList {
        agents: rows
            .into_iter()
            .map(|a| AgentSummary {
                name: a.name,
                latest: a.latest_version,
                updated_at: a.updated_at,
                downloads: a.downloads,
            })
            .collect(),
        next_cursor,
    }))
}

async fn change_version(
    state: &AppState,
    auth: &Auth,
    publisher: &str,
    agent: &str,
    version: &str,
) -> ApiResult<(AgentRow, String)> {
    let name = parse_name(publisher, agent)?;
    let ns = state.namespace_or_404(name.publisher()).await?;
    state.authorize(&auth.0, Scope::Yank, &ns).await?;
    let a = agent_or_404(state, &name).await?;
    let v = version_or_404(state, &a, version).await?;
    Ok((a, v.version))
}

fn check_text(field: &str, s: &str) -> ApiResult<()> {
    if s.chars().count() > 1000 {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidMessage,
            format!("{field} is at most 1000 characters"),
        ));
    }
    // Shown on terminals by clients: one line, no escape sequences.
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidMessage,
            format!(
                "{field} must be one line of text without control characters (found U+{:04X})",
                c as u32
            ),
        ));
    }
    // Nor text that reads otherwise than it is (as the manifest's own fields).
    if let Some(c) = s
        .chars()
        .find(|c| index_schema::manifest::is_bidi_control(*c))
    {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidMessage,
            format!(
                "{field} contains a bidirectional override U+{:04X}, which can disguise text",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// Yanks a version: selectors skip it; it stays downloadable by exact version.
#[utoipa::path(put, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/yank", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version")),
    request_body = YankRequest,
    responses(
        (status = 204, description = "yanked"),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn yank(
    State(state): State<AppState>,
    auth: Auth,
    Path((publisher, agent, version)): Path<(String, String, String)>,
    Json(req): Json<YankRequest>,
) -> ApiResult<StatusCode> {
    let reason = req.reason.unwrap_or_default();
    check_text("reason", &reason)?;
    let (a, v) = change_version(&state, &auth, &publisher, &agent, &version).await?;
    state
        .store
        .set_yanked(&auth.actor(), &a, &v, Some(&reason))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unyanks a version.
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/yank", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version")),
    responses(
        (status = 204, description = "unyanked"),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn unyank(
    State(state): State<AppState>,
    auth: Auth,
    Path((publisher, agent, version)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let (a, v) = change_version(&state, &auth, &publisher, &agent, &version).await?;
    state.store.set_yanked(&auth.actor(), &a, &v, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deprecates a version with a message.
#[utoipa::path(put, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/deprecation", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version")),
    request_body = DeprecateRequest,
    responses(
        (status = 204, description = "deprecated"),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn deprecate(
    State(state): State<AppState>,
    auth: Auth,
    Path((publisher, agent, version)): Path<(String, String, String)>,
    Json(req): Json<DeprecateRequest>,
) -> ApiResult<StatusCode> {
    check_text("message", &req.message)?;
    if req.message.trim().is_empty() {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidMessage,
            "the deprecation message is empty",
        ));
    }
    let (a, v) = change_version(&state, &auth, &publisher, &agent, &version).await?;
    state
        .store
        .set_deprecated(&auth.actor(), &a, &v, Some(&req.message))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Clears a deprecation.
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}/deprecation", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version")),
    responses(
        (status = 204, description = "cleared"),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such agent or version", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn undeprecate(
    State(state): State<AppState>,
    auth: Auth,
    Path((publisher, agent, version)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let (a, v) = change_version(&state, &auth, &publisher, &agent, &version).await?;
    state
        .store
        .set_deprecated(&auth.actor(), &a, &v, None)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes an agent and all its versions (hub administrators only).
///
/// Each deleted version stays a tombstone: it can never be published again (409
/// `version_deleted`).
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent")),
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
    Path((publisher, agent)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    auth.0.authorize_admin().map_err(super::denied_error)?;
    let name = parse_name(&publisher, &agent)?;
    if state
        .store
        .delete_agent(&auth.actor(), &name.to_string())
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            ErrorCode::AgentNotFound,
            format!("no agent `{name}`"),
        ))
    }
}

/// Deletes one version (hub administrators only).
///
/// The version stays a tombstone: it can never be published again (409 `version_deleted`).
#[utoipa::path(delete, path = "/api/v1/agents/{publisher}/{agent}/versions/{version}", tag = "agents",
    params(("publisher" = String, Path, description = "namespace"),
           ("agent" = String, Path, description = "agent"),
           ("version" = String, Path, description = "exact version")),
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
    Path((publisher, agent, version)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    auth.0.authorize_admin().map_err(super::denied_error)?;
    let name = parse_name(&publisher, &agent)?;
    let a = agent_or_404(&state, &name).await?;
    let v = version_or_404(&state, &a, &version).await?;
    state
        .store
        .delete_version(&auth.actor(), &a, &v.version)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The outbox that search indexes and mirrors follow.
#[utoipa::path(get, path = "/api/v1/outbox", tag = "agents", params(OutboxQuery),
    responses(
        (status = 200, description = "entries", body = OutboxPage),
        (status = 400, description = "bad limit", body = ErrorBody),
    ))]

pub async fn outbox(
    State(state): State<AppState>,
    Query(q): Query<OutboxQuery>,
) -> ApiResult<Json<OutboxPage>> {
    let limit = clamp_limit(q.limit)?;
    Ok(Json(OutboxPage {
        entries: state
            .store
            .outbox_after(q.after.unwrap_or(0), limit)
            .await?,
    }))
}

/// The audit log (hub administrators only).
#[utoipa::path(get, path = "/api/v1/audit", tag = "agents", params(AuditQuery),
    responses(
        (status = 200, description = "entries", body = AuditPage),
        (status = 400, description = "bad limit", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "administrators only", body = ErrorBody),
    ), security(("bearer" = [])))]

pub async fn audit(
    State(state): State<AppState>,
    auth: Auth,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Json<AuditPage>> {
    auth.0.authorize_admin().map_err(super::denied_error)?;
    let limit = clamp_limit(q.limit)?;
    Ok(Json(AuditPage {
        entries: state.store.audit_log(q.target.as_deref(), limit).await?,
    }))
}
