//! The JSON API: its router, handlers (one module per resource), the `Auth` extractor
//! (`auth.rs`) and the middleware that keeps every
//! error JSON.
//!
//! Every route but the streaming ones (bundle downloads here; `/v2/` has its own router) answers
//! within `request_timeout_secs` (default 30 s, 0 for none): past it the request is dropped and
//! answered 503 `request_timeout` with `Retry-After: 1`. A publish carries the envelope and, from
//! older clients only, the bundle inline in base64, taken up to `max_inline_bundle_bytes` (which
//! sets the route's body limit; past it 413 `inline_bundle_too_large`): `ofc publish` uploads the
//! bundle through `/v2/` first. Framework rejections (bad JSON, unknown route, body too large)
//! get the same `{code, message}` shape as every other error.
//!
//! What a route would not read is refused rather than ignored (`strict.rs`): a query parameter
//! it does not take is 400 `invalid_parameter` naming it, a body on a route that takes none is
//! 400 `invalid_body`. The exceptions are the probes and documents fetched by generic tools
//! (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`, `/.well-known/jwks.json`), the A2A
//! card and the log's JSON views (`crate::tlog`) for now, and `/v2/`, which keeps the
//! distribution spec's leniency (clients and mirrors add parameters of their own).

pub mod accounts;
pub mod agents;
pub mod auth;
pub mod discovery;
pub mod domains;
pub mod namespaces;
pub mod openapi;
pub mod ops;
pub mod registry;
pub mod search;
pub mod strict;
pub mod trusted;

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};

use index_schema::hub_api::route;

use crate::error::{ApiError, ErrorBody, ErrorCode, code_for_status};
use crate::metrics::RouteGroup;
use crate::state::AppState;

pub use strict::MAX_BODY_BYTES;

/// The whole router.
pub fn router(state: AppState) -> Router {
    // The JSON publish carries a bundle inline (base64) only up to max_inline_bundle_bytes;
    // bigger ones are uploaded as blobs through /v2/, which streams them to disk.
    let config = &state.core.config;
    let inline = config.max_inline_bundle_bytes.min(config.max_bundle_bytes);
    let publish_limit = (usize::try_from(inline).unwrap_or(usize::MAX))
        .saturating_mul(4)
        .div_ceil(3)
        .saturating_add(index_schema::envelope::MAX_ENVELOPE_BYTES * 2)
        .saturating_add(64 * 1024);
    let api = Router::new()
        .route(route::LOGIN, post(accounts::login))
        .route(route::ME, get(accounts::me))
        .route(
            route::TOKENS,
            get(accounts::list_tokens).post(accounts::create_token),
        )
        .route(route::TOKEN, delete(accounts::revoke_token))
        .route(route::NAMESPACES, post(namespaces::create_namespace))
        .route(route::NAMESPACE, get(namespaces::get_namespace))
        .route(
            route::MEMBER,
            put(namespaces::set_member).delete(namespaces::remove_member),
        )
        .route(
            route::KEYS,
            get(namespaces::list_keys).post(namespaces::add_key),
        )
        .route(route::KEY, delete(namespaces::revoke_key))
        .route(
            route::DOMAIN,
            put(domains::verify_domain).delete(domains::remove_domain),
        )
        .route(
            route::TRUSTED_PUBLISHERS,
            get(trusted::list).post(trusted::add),
        )
        .route(route::TRUSTED_PUBLISHER, delete(trusted::remove))
        .route(route::TRUSTED_EXCHANGE, post(trusted::exchange))
        .route(route::AGENTS, get(agents::list_agents))
        .route(
            route::AGENT,
            get(agents::get_agent).delete(agents::delete_agent),
        )
        .route(route::AGENT_CARD, get(agents::get_agent_card))
        .route(
            route::VERSION,
            put(agents::publish)
                .get(agents::get_version)
                .delete(agents::delete_version)
                .layer(DefaultBodyLimit::max(publish_limit)),
        )
        .route(route::YANK, put(agents::yank).delete(agents::unyank))
        .route(
            route::DEPRECATION,
            put(agents::deprecate).delete(agents::undeprecate),
        )
        .route(route::UNPUBLISH, post(agents::unpublish))
        .route(route::SEARCH, get(search::search))
        .route("/ard/search", post(discovery::search))
        .route(route::OUTBOX, get(agents::outbox))
        .route(route::AUDIT, get(agents::audit));
    Router::new()
        .nest(route::API, api)
        .route("/registry/agents", post(registry::register))
        .route("/registry/agents/search", get(search::registry_search))
        .route(
            "/registry/agents/{agent_id}",
            get(registry::get)
                .patch(registry::patch)
                .delete(registry::remove),
        )
        .route(hub_core::discovery::CATALOG_PATH, get(discovery::catalog))
        .route(hub_core::discovery::JWKS_PATH, get(discovery::jwks))
        .route(route::HEALTHZ, get(ops::healthz))
        .route(route::READYZ, get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(openapi::openapi))
        .fallback(ops::not_found)
        // Every route above answers within request_timeout_secs; the streaming routes added
        // below (and /v2/, in its own router) are bounded by ofc-net's body timeouts and
        // rate floors instead.
        .layer(middleware::from_fn_with_state(state.clone(), time_limit))
        .route(route::BUNDLE, get(agents::get_bundle))
        .layer(middleware::map_response(json_errors))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Answers 503 `request_timeout` when a request takes longer than `request_timeout_secs`
/// (0: no limit) to produce its response head.
async fn time_limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let secs = state.core.config.request_timeout_secs;
    if secs == 0 {
        return next.run(req).await;
    }
    match tokio::time::timeout(Duration::from_secs(secs), next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => {
            let mut resp = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::RequestTimeout,
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
    let group = RouteGroup::of_path(req.uri().path());
    let start = std::time::Instant::now();
    let writes = !(req.method().is_safe());
    let resp = next.run(req).await;
    // A successful write (publish, yank, deprecate, delete, registry change) may have appended
    // to the outbox: wake the search follower instead of waiting for its next poll.
    if writes && resp.status().is_success() {
        state.core.wake_search();
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
        code: code_for_status(status),
        message,
        removed: None,
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    (parts, bytes).into_response()
}
