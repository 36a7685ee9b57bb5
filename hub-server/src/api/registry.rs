//! The OFC registry API (`/registry/agents…`, seed 000) as a view over the hub's agents.
//!
//! A registration is an unsigned entry `owner/<handle>` with an endpoint, a public key and
//! metadata; it can be patched and removed by its namespace. Published (signed) agents are shown
//! through the same `GET` (metadata from the latest manifest, `endpoint` from a `remote` source)
//! but can only change by publishing. `{agent_id}` is the handle (`@code` or `code`, any case).
//!
//! # Who a handle belongs to
//!
//! Floors look agents up by handle (seed 000), so a handle must name one namespace's agent and no
//! namespace may shadow another's. The rule:
//!
//! - A **registration holds its handle alone.** `POST /registry/agents` is refused with 409
//!   `agent_exists` when any agent on the hub already uses the handle, in any letter case: another
//!   registration, or a published agent, of any namespace (the caller's own included, so that a
//!   namespace's registration never hides its own published agent either). A unique index on the
//!   lowercase handle of registrations (migration 0011) backs this, so concurrent registrations of
//!   one handle give exactly one 201 and 409s.
//! - **First come, first served otherwise.** Publishing is not refused over a handle (the hub's
//!   own names, `publisher/agent`, identify published agents), so several published agents, or a
//!   registration and agents published after it, may share a handle. The handle then belongs to
//!   its *holder* namespace: the registration's, else that of the oldest published agent using
//!   it. `GET`, `PATCH` and `DELETE` act on the holder's agent (its registration, else its most
//!   recently updated one), never on an agent another namespace added later; see
//!   [`hub_core::store::Store::agents_by_handle`].

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use index_schema::envelope::Envelope;
use index_schema::manifest::{Manifest, Source};
use index_schema::name::{AgentHandle, AgentName, check_publisher};
use index_schema::wire::Token;
use index_schema::wire::registry::{
    AgentMetadata, RegisterAgentRequest, RegisterAgentResponse, RegistryAgent, RegistryStatus,
    UpdateAgentRequest,
};
use utoipa::ToSchema;

use hub_core::CoreError;
use hub_core::auth::{AGENT_TOKEN_PREFIX, Scope, generate_token, hash_token};
use hub_core::namespaces;
use hub_core::store::{AgentRow, NewRegistryAgent, StoreError};

use super::auth::Auth;
use super::strict::{NoBody, NoQuery};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::state::AppState;

/// `metadata` (OpenAPI description of `AgentMetadata`).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct RegistryMetadataDoc {
    name: Option<String>,
    tagline: Option<String>,
    description: Option<String>,
    capabilities: Option<Vec<String>>,
    examples: Option<Vec<String>>,
}

/// `POST /registry/agents` body (OpenAPI description).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct RegisterAgentRequestDoc {
    /// `@handle`.
    id: String,
    /// `https://…/ofc`.
    endpoint: String,
    /// Namespace; the caller's own by default.
    owner: Option<String>,
    /// The agent's public key.
    public_key: String,
    metadata: Option<RegistryMetadataDoc>,
}

/// `POST /registry/agents` response (OpenAPI description).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct RegisterAgentResponseDoc {
    agent_id: String,
    /// Shown once.
    agent_token: String,
    status: String,
    registry: String,
}

/// `GET /registry/agents/{agent_id}` response (OpenAPI description).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct RegistryAgentDoc {
    id: String,
    endpoint: String,
    owner: Option<String>,
    status: String,
    metadata: RegistryMetadataDoc,
}

/// `PATCH` body (OpenAPI description).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct UpdateAgentRequestDoc {
    metadata: Option<RegistryMetadataDoc>,
}

const MAX_TEXT: usize = 8 * 1024;

fn handle_of(agent_id: &str) -> ApiResult<AgentHandle> {
    let h = if agent_id.starts_with('@') {
        AgentHandle::parse(agent_id)
    } else {
        AgentHandle::new(agent_id)
    };
    h.map_err(|e| ApiError::bad_request(ErrorCode::InvalidHandle, e.to_string()))
}

fn check_endpoint(e: &str) -> ApiResult<()> {
    if endpoint_ok(e) {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            ErrorCode::InvalidEndpoint,
            "the endpoint is an https:// URL with a host and no credentials (http:// only for \
             localhost, 127.0.0.1 or [::1]), at most 2048 characters",
        ))
    }
}

/// An `https://` URL with a non-empty host, or an `http://` one whose host is exactly
/// `localhost`, `127.0.0.1` or `[::1]` (any port): the host is parsed, never matched as a prefix
/// (`http://localhost.attacker.example` is not local). No credentials (`user@`), a port (if any)
/// in 1–65535, no whitespace or control characters, at most 2048 bytes.
fn endpoint_ok(e: &str) -> bool {
    if e.len() > 2048 || e.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let https = e.starts_with("https://");
    if !https && !e.starts_with("http://") {
        return false;
    }
    let Ok(uri) = e.parse::<Uri>() else {
        return false;
    };
    let Some(authority) = uri.authority() else {
        return false;
    };
    let (text, host) = (authority.as_str(), authority.host());
    // `http::Uri` takes what follows the host on trust (`localhost:abc`, `[::1]x`) and strips
    // credentials: the authority must be exactly the host and an optional `:port`.
    let Some(rest) = text.strip_prefix(host) else {
        return false;
    };
    let port_ok = match rest.strip_prefix(':') {
        None => rest.is_empty(),
        Some(p) => p.bytes().all(|b| b.is_ascii_digit()) && matches!(p.parse::<u16>(), Ok(1..)),
    };
    if host.is_empty() || !port_ok {
        return false;
    }
    https || host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

fn check_metadata(m: &AgentMetadata) -> ApiResult<String> {
    let text = serde_json::to_string(m).map_err(ApiError::internal)?;
    if text.len() > 64 * 1024 {
        return Err(ApiError::too_large(
            ErrorCode::MetadataTooLarge,
            "metadata is at most 64 KiB of JSON",
        ));
    }
    Ok(text)
}

/// Registers an agent (an unsigned entry with an endpoint).
#[utoipa::path(post, path = "/registry/agents", tag = "registry",
    request_body = RegisterAgentRequestDoc,
    responses(
        (status = 201, description = "registered", body = RegisterAgentResponseDoc),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such namespace", body = ErrorBody),
        (status = 409, description = "exists", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn register(
    State(state): State<AppState>,
    auth: Auth,
    _: NoQuery,
    Json(req): Json<RegisterAgentRequest>,
) -> ApiResult<(StatusCode, Json<RegisterAgentResponse>)> {
    let handle = handle_of(&req.id)?;
    if handle.is_reserved() {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidHandle,
            format!("`{handle}` is reserved"),
        ));
    }
    check_endpoint(&req.endpoint)?;
    if req.public_key.trim().is_empty() || req.public_key.len() > MAX_TEXT {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidKey,
            "public_key is 1 to 8192 characters",
        ));
    }
    let owner = req.owner.as_deref().unwrap_or(&auth.0.user_name);
    let owner = check_publisher(owner)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidName, e.to_string()))?;
    let name = AgentName::new(&owner, handle.name())
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidName, e.to_string()))?;
    let ns = namespaces::find(&state.core, &owner).await?;
    namespaces::authorize(&state.core, &auth.0, Scope::PublishNew, &ns).await?;
    let metadata = check_metadata(&req.metadata)?;
    let token = generate_token(AGENT_TOKEN_PREFIX);
    state
        .core
        .store
        .register_agent(
            &auth.actor(),
            &NewRegistryAgent {
                namespace_id: ns.id,
                agent: name.to_string(),
                handle: handle.name().to_string(),
                endpoint: req.endpoint.clone(),
                metadata,
                public_key: req.public_key.clone(),
                token_hash: hash_token(token.expose()),
            },
        )
        .await
        .map_err(|e| match e {
            StoreError::Conflict(m) => ApiError::conflict(ErrorCode::AgentExists, m),
            other => other.into(),
        })?;
    Ok((
        StatusCode::CREATED,
        Json(RegisterAgentResponse {
            agent_id: handle.to_string(),
            agent_token: Token::new(token.expose().to_string()),
            status: RegistryStatus::Active,
            registry: state.core.config.registry_host.clone(),
        }),
    ))
}

async fn find(state: &AppState, agent_id: &str) -> ApiResult<AgentRow> {
    let handle = handle_of(agent_id)?;
    state
        .core
        .store
        .agents_by_handle(handle.name())
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| {
            ApiError::not_found(ErrorCode::AgentNotFound, format!("no agent `{handle}`"))
        })
}

async fn view(state: &AppState, a: &AgentRow) -> ApiResult<RegistryAgent> {
    let owner = a.name.split('/').next().map(str::to_string);
    let handle = format!("@{}", a.handle.as_deref().unwrap_or_default());
    if let Some(endpoint) = &a.registry_endpoint {
        let metadata: AgentMetadata =
            serde_json::from_str(a.registry_metadata.as_deref().unwrap_or("{}"))
                .map_err(ApiError::internal)?;
        return Ok(RegistryAgent {
            id: handle,
            endpoint: endpoint.clone(),
            owner,
            status: RegistryStatus::Active,
            metadata,
            stats: None,
        });
    }
    let latest = match &a.latest_version {
        Some(v) => state.core.store.version(a.id, v).await?,
        None => None,
    };
    let Some(v) = latest else {
        return Err(ApiError::not_found(
            ErrorCode::AgentNotFound,
            format!("`{}` has no installable version", a.name),
        ));
    };
    let env = Envelope::from_json(&v.envelope).map_err(ApiError::internal)?;
    let text = std::str::from_utf8(&env.payload).map_err(ApiError::internal)?;
    let m = Manifest::from_json(text).map_err(ApiError::internal)?;
    let endpoint = match &m.source {
        Source::Remote(r) => r.endpoint.clone(),
        _ => String::new(),
    };
    Ok(RegistryAgent {
        id: handle,
        endpoint,
        owner,
        status: RegistryStatus::Active,
        metadata: AgentMetadata {
            name: Some(m.display_name.clone()),
            tagline: Some(m.tagline.clone()),
            description: Some(m.description.clone()),
            capabilities: Some(m.capabilities.iter().map(|c| c.name.clone()).collect()),
            examples: Some(m.examples.clone()),
            extra: Default::default(),
        },
        stats: None,
    })
}

/// An agent by handle.
#[utoipa::path(get, path = "/registry/agents/{agent_id}", tag = "registry",
    params(("agent_id" = String, Path, description = "handle, `@code` or `code`")),
    responses(
        (status = 200, description = "the agent", body = RegistryAgentDoc),
        (status = 400, description = "invalid handle", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
    ))]
pub async fn get(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<Json<RegistryAgent>> {
    let a = find(&state, &agent_id).await?;
    Ok(Json(view(&state, &a).await?))
}

/// Updates a registration's metadata.
#[utoipa::path(patch, path = "/registry/agents/{agent_id}", tag = "registry",
    params(("agent_id" = String, Path, description = "handle, `@code` or `code`")),
    request_body = UpdateAgentRequestDoc,
    responses(
        (status = 200, description = "the agent now", body = RegistryAgentDoc),
        (status = 400, description = "bad input", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
        (status = 409, description = "a signed agent changes only by publishing", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    auth: Auth,
    Path(agent_id): Path<String>,
    _: NoQuery,
    Json(req): Json<UpdateAgentRequest>,
) -> ApiResult<Json<RegistryAgent>> {
    let a = find(&state, &agent_id).await?;
    let ns_name = a.name.split('/').next().unwrap_or_default().to_string();
    let ns = namespaces::find(&state.core, &ns_name).await?;
    namespaces::authorize(&state.core, &auth.0, Scope::PublishUpdate, &ns).await?;
    if a.registry_endpoint.is_none() {
        return Err(ApiError::conflict(
            ErrorCode::SignedAgent,
            format!(
                "`{}` is a published agent; publish a new version to change it",
                a.name
            ),
        ));
    }
    let mut m: AgentMetadata = serde_json::from_str(a.registry_metadata.as_deref().unwrap_or("{}"))
        .map_err(ApiError::internal)?;
    m.apply_patch(&req.metadata);
    let text = check_metadata(&m)?;
    state
        .core
        .store
        .update_registry_metadata(&auth.actor(), &a, &text)
        .await?;
    let a =
        state.core.store.agent(&a.name).await?.ok_or_else(|| {
            ApiError::not_found(ErrorCode::AgentNotFound, "the agent was removed")
        })?;
    Ok(Json(view(&state, &a).await?))
}

/// Removes a registration (published agents: hub administrators only).
#[utoipa::path(delete, path = "/registry/agents/{agent_id}", tag = "registry",
    params(("agent_id" = String, Path, description = "handle, `@code` or `code`")),
    responses(
        (status = 204, description = "removed"),
        (status = 400, description = "invalid handle", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "not allowed", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    auth: Auth,
    Path(agent_id): Path<String>,
    _: NoQuery,
    _: NoBody,
) -> ApiResult<StatusCode> {
    let a = find(&state, &agent_id).await?;
    if a.registry_endpoint.is_some() {
        let ns_name = a.name.split('/').next().unwrap_or_default().to_string();
        let ns = namespaces::find(&state.core, &ns_name).await?;
        namespaces::authorize(&state.core, &auth.0, Scope::Yank, &ns).await?;
    } else {
        auth.0.authorize_admin().map_err(CoreError::from)?;
    }
    state
        .core
        .store
        .delete_agent(&auth.actor(), &a.name)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
