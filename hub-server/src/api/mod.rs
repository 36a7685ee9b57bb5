//! The HTTP API: state, authentication extractor, router and the middleware that keeps every
//! error JSON.

pub mod accounts;
pub mod agents;
pub mod namespaces;
pub mod ops;
pub mod registry;
pub mod search;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};

use crate::auth::{FailureLimiter, Principal, Role, Scope, hash_token, parse_scopes};
use crate::blob::BlobStore;
use crate::config::Config;
use crate::error::{ApiError, ErrorBody, code_for_status};
use crate::metrics::Metrics;
use crate::store::{Actor, Namespace, Store, now_ms};

/// Shared by every handler.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The repository.
    pub store: Store,
    /// Bundle blobs.
    pub blobs: Arc<dyn BlobStore>,
    /// Settings.
    pub config: Arc<Config>,
    /// Authentication-failure limiter.
    pub limiter: Arc<FailureLimiter>,
    /// Counters for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// The search index and its follower (`None`: search answers 503).
    pub search: Option<Arc<crate::search::Search>>,
}

impl AppState {
    /// State over a store and a blob store.
    pub fn new(store: Store, blobs: Arc<dyn BlobStore>, config: Config) -> Self {
        let limiter = FailureLimiter::new(
            config.auth_failure_limit,
            Duration::from_secs(config.auth_failure_window_secs),
        );
        AppState {
            store,
            blobs,
            config: Arc::new(config),
            limiter: Arc::new(limiter),
            metrics: Arc::new(Metrics::default()),
            search: None,
        }
    }

    /// A namespace by name, or 404.
    pub async fn namespace_or_404(&self, name: &str) -> Result<Namespace, ApiError> {
        let name = name.to_ascii_lowercase();
        self.store.namespace(&name).await?.ok_or_else(|| {
            ApiError::not_found("namespace_not_found", format!("no namespace `{name}`"))
        })
    }

    /// Checks `scope` for `principal` in `ns`, mapping a refusal to its 403.
    pub async fn authorize(
        &self,
        principal: &Principal,
        scope: Scope,
        ns: &Namespace,
    ) -> Result<(), ApiError> {
        let role = self
            .store
            .role(ns.id, principal.user_id)
            .await?
            .and_then(|r| Role::parse(&r));
        principal
            .authorize(scope, &ns.name, role)
            .map_err(denied_error)
    }
}

/// The 403 for a refusal.
pub fn denied_error(d: crate::auth::Denied) -> ApiError {
    use crate::auth::Denied;
    match d {
        Denied::Scope(s) => ApiError::forbidden(
            "forbidden_scope",
            format!("this token lacks the `{}` scope", s.as_str()),
        ),
        Denied::Namespace(n) => ApiError::forbidden(
            "forbidden_namespace",
            format!("this token is not valid for namespace `{n}`"),
        ),
        Denied::NotMember(n) => ApiError::forbidden(
            "not_member",
            format!("you are not a member of namespace `{n}`"),
        ),
        Denied::Role(r, s) => ApiError::forbidden(
            "forbidden_role",
            format!(
                "your role `{}` does not allow `{}` in this namespace",
                r.as_str(),
                s.as_str()
            ),
        ),
        Denied::AdminOnly => {
            ApiError::forbidden("admin_only", "only a hub administrator may do this")
        }
    }
}

/// The authenticated caller of a request (`Authorization: Bearer ofc_…`).
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl Auth {
    /// The audit actor.
    pub fn actor(&self) -> Actor {
        Actor {
            user_id: Some(self.0.user_id),
            user_name: self.0.user_name.clone(),
            token_id: Some(self.0.token_id),
        }
    }
}

fn client_ip(parts: &Parts) -> Option<IpAddr> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // Invalid tokens from an address are limited; a valid token is never refused by the
        // limiter (it proves itself), so failures from a shared address cannot lock it out.
        let ip_key = FailureLimiter::token_key(&FailureLimiter::ip_key(client_ip(parts)));
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::unauthorized(
                "unauthenticated",
                "this needs an API token: send `Authorization: Bearer ofc_…`",
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .unwrap_or("");
        let fail = |code: &'static str, msg: &str| {
            state.metrics.auth_failure();
            if let Some(secs) = state.limiter.blocked(&ip_key) {
                return too_many(secs);
            }
            state.limiter.fail(&ip_key);
            ApiError::unauthorized(code, msg.to_string())
        };
        if token.is_empty() || token.len() > 200 {
            return Err(fail("invalid_token", "the API token is malformed"));
        }
        let Some((t, user)) = state.store.token_by_hash(&hash_token(token)).await? else {
            return Err(fail("invalid_token", "the API token is not valid"));
        };
        if t.revoked_at.is_some() {
            return Err(fail("token_revoked", "the API token was revoked"));
        }
        if t.expires_at.is_some_and(|e| e <= now_ms()) {
            return Err(fail("token_expired", "the API token has expired"));
        }
        if user.disabled {
            return Err(fail("user_disabled", "the account is disabled"));
        }
        let scopes = parse_scopes(
            &t.scopes
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )
        .map_err(ApiError::internal)?;
        // A write at most once a minute per token; the check on the row just read keeps every
        // other request a pure read.
        let now = now_ms();
        if t.last_used_at
            .is_none_or(|at| at <= now - crate::store::TOKEN_USE_PRECISION_MS)
        {
            state.store.touch_token(t.id, now).await?;
        }
        Ok(Auth(Principal {
            user_id: user.id,
            user_name: user.name,
            is_admin: user.is_admin,
            token_id: t.id,
            scopes,
            namespaces: t
                .namespaces
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        }))
    }
}

/// 429 for a blocked client.
pub fn too_many(secs: u64) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_auth_failures",
        format!("too many failed authentications from this client; retry in {secs} s"),
    )
}

/// The client address of a request, for the limiter.
pub fn ip_of(ci: Option<ConnectInfo<SocketAddr>>) -> String {
    FailureLimiter::ip_key(ci.map(|c| c.0.ip()))
}

/// The whole router.
pub fn router(state: AppState) -> Router {
    // The JSON publish carries a bundle inline (base64) only up to max_inline_bundle_bytes;
    // bigger ones are uploaded as blobs through /v2/, which streams them to disk.
    let inline = state
        .config
        .max_inline_bundle_bytes
        .min(state.config.max_bundle_bytes);
    let publish_limit = (usize::try_from(inline).unwrap_or(usize::MAX))
        .saturating_mul(4)
        .div_ceil(3)
        .saturating_add(index_schema::envelope::MAX_ENVELOPE_BYTES * 2)
        .saturating_add(64 * 1024);
    let api = Router::new()
        .route("/login", post(accounts::login))
        .route("/me", get(accounts::me))
        .route(
            "/tokens",
            get(accounts::list_tokens).post(accounts::create_token),
        )
        .route("/tokens/{id}", delete(accounts::revoke_token))
        .route("/namespaces", post(namespaces::create_namespace))
        .route("/namespaces/{namespace}", get(namespaces::get_namespace))
        .route(
            "/namespaces/{namespace}/members/{user}",
            put(namespaces::set_member).delete(namespaces::remove_member),
        )
        .route(
            "/namespaces/{namespace}/keys",
            get(namespaces::list_keys).post(namespaces::add_key),
        )
        .route(
            "/namespaces/{namespace}/keys/{key_id}",
            delete(namespaces::revoke_key),
        )
        .route("/agents", get(agents::list_agents))
        .route(
            "/agents/{publisher}/{agent}",
            get(agents::get_agent).delete(agents::delete_agent),
        )
        .route(
            "/agents/{publisher}/{agent}/versions/{version}",
            put(agents::publish)
                .get(agents::get_version)
                .delete(agents::delete_version)
                .layer(DefaultBodyLimit::max(publish_limit)),
        )
        .route(
            "/agents/{publisher}/{agent}/versions/{version}/yank",
            put(agents::yank).delete(agents::unyank),
        )
        .route(
            "/agents/{publisher}/{agent}/versions/{version}/deprecation",
            put(agents::deprecate).delete(agents::undeprecate),
        )
        .route("/search", get(search::search))
        .route("/outbox", get(agents::outbox))
        .route("/audit", get(agents::audit));
    Router::new()
        .nest("/api/v1", api)
        .route("/registry/agents", post(registry::register))
        .route("/registry/agents/search", get(search::registry_search))
        .route(
            "/registry/agents/{agent_id}",
            get(registry::get)
                .patch(registry::patch)
                .delete(registry::remove),
        )
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .fallback(ops::not_found)
        // Every route above answers within request_timeout_secs; the streaming routes added
        // below (and /v2/, in its own router) are bounded by runtime::net's body timeouts and
        // rate floors instead.
        .layer(middleware::from_fn_with_state(state.clone(), time_limit))
        .route(
            "/api/v1/agents/{publisher}/{agent}/versions/{version}/bundle",
            get(agents::get_bundle),
        )
        .layer(middleware::map_response(json_errors))
        .layer(DefaultBodyLimit::max(2 * 1024 * 1024))
        .with_state(state)
}

/// Answers 503 `request_timeout` when a request takes longer than `request_timeout_secs`
/// (0: no limit) to produce its response head.
async fn time_limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let secs = state.config.request_timeout_secs;
    if secs == 0 {
        return next.run(req).await;
    }
    match tokio::time::timeout(Duration::from_secs(secs), next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => {
            let mut resp = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "request_timeout",
                format!(
                    "the hub did not answer within {secs} s (request_timeout_secs); retry later"
                ),
            )
            .into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            resp
        }
    }
}

/// Counts every request in `/metrics` by route group and status class, and wakes the search
/// follower after a successful write. Wraps the whole hub (see [`crate::app`]).
pub(crate) async fn count_requests(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let group = crate::metrics::RouteGroup::of_path(req.uri().path());
    let start = std::time::Instant::now();
    let writes = !(req.method().is_safe());
    let resp = next.run(req).await;
    // A successful write (publish, yank, deprecate, delete, registry change) may have appended
    // to the outbox: wake the search follower instead of waiting for its next poll.
    if writes
        && resp.status().is_success()
        && let Some(search) = &state.search
    {
        search.wake();
    }
    state
        .metrics
        .request(group, resp.status().as_u16(), start.elapsed());
    resp
}

/// Turns framework rejections (plain-text bodies) into `{code, message}`.
async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let message = if text.trim().is_empty() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        text.trim().to_string()
    };
    let body = ErrorBody {
        code: code_for_status(status).to_string(),
        message,
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    (parts, bytes).into_response()
}
