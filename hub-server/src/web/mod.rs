//! The hub's web pages: find an agent, judge it, and copy the line that pulls it.
//!
//! Server-rendered with `maud` (templates are Rust, checked at compile time; every `(value)`
//! is HTML-escaped, so manifest text — all of it untrusted — cannot become markup). Every
//! asset is served by the hub (`/static/`), nothing comes from a CDN, and the pages work
//! without JavaScript; `ofc.js` only adds copy buttons. Each page carries a strict
//! Content-Security-Policy (no inline script or style, no other origin), `nosniff`, no
//! framing and no referrer.
//!
//! | Route | |
//! |---|---|
//! | `GET /` | search box, recently updated, most pulled |
//! | `GET /search?q=&capability=&keyword=&kind=&publisher=&sort=&cursor=` | the API's search, as a page, with matches marked |
//! | `GET /agents/{publisher}/{agent}` | the latest version (or `?version=`): what it does, its capabilities and schemas, what it needs, who signed it and whether the signature verifies, its versions, the `ofc pull` line and a blueprint snippet |
//! | `GET /publishers/{name}` | a publisher's agents and members |
//!
//! | `GET/POST /login`, `POST /logout` | password log-in (the API's check and failure limiter); a server-side session (`session.rs`) |
//! | `GET /account`, `POST /account/tokens`, `POST /account/tokens/{id}/revoke` | your namespaces; create and revoke API tokens |
//! | `GET /account/namespaces/{ns}`, `POST …/members`, `POST …/members/{user}/remove`, `POST …/keys`, `POST …/keys/{key_id}/revoke` | a namespace's members and signing keys |
//!
//! The signed-in pages call the JSON API's handlers with the session's principal, so the API's
//! rules decide; every form carries the session's CSRF token (403 without it) and their
//! answers are `Cache-Control: no-store`.
//!
//! Errors are pages too (404, 400, 403), never JSON.

mod account;
mod session;
mod views;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hub_search::{SearchParams, SearchQuery, SearchResults};
use index_schema::envelope::{Envelope, PublicKey, verify_manifest};
use index_schema::manifest::Manifest;
use serde::Deserialize;

use crate::api::AppState;
use crate::error::ApiError;

/// The policy every page is served with: only this origin's stylesheet and script, no inline
/// anything, no plugins, no framing, forms only to this origin.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CSS: &str = include_str!("ofc.css");
const JS: &str = include_str!("ofc.js");

/// The web pages' routes (merged into the hub's router; no fallback of their own).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/search", get(search))
        .route("/agents/{publisher}/{agent}", get(agent))
        .route("/publishers/{name}", get(publisher))
        .route("/login", get(account::login_page).post(account::login))
        .route("/logout", post(account::logout))
        .route("/account", get(account::account))
        .route("/account/tokens", post(account::create_token))
        .route("/account/tokens/{id}/revoke", post(account::revoke_token))
        .route("/account/namespaces/{ns}", get(account::namespace))
        .route(
            "/account/namespaces/{ns}/members",
            post(account::set_member),
        )
        .route(
            "/account/namespaces/{ns}/members/{user}/remove",
            post(account::remove_member),
        )
        .route("/account/namespaces/{ns}/keys", post(account::add_key))
        .route(
            "/account/namespaces/{ns}/keys/{key_id}/revoke",
            post(account::revoke_key),
        )
        .route("/static/ofc.css", get(css))
        .route("/static/ofc.js", get(js))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        body,
    )
        .into_response()
}

/// A page that went wrong: the status and what to do, as HTML.
#[derive(Debug)]
struct PageError {
    status: StatusCode,
    message: String,
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError {
            status: e.status,
            message: e.message,
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        (self.status, views::error(self.status, &self.message)).into_response()
    }
}

type PageResult = Result<Response, PageError>;

async fn run_search(state: &AppState, q: SearchQuery) -> Result<SearchResults, PageError> {
    let Some(search) = state.search.clone() else {
        return Err(PageError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "search is not enabled on this hub".to_owned(),
        });
    };
    tokio::task::spawn_blocking(move || search.index.search(&q))
        .await
        .map_err(|e| PageError::from(ApiError::internal(e)))?
        .map_err(|e| PageError::from(ApiError::internal(e)))
}

fn sorted(sort: &str, limit: usize) -> SearchParams {
    SearchParams {
        sort: Some(sort.to_owned()),
        limit: Some(limit.to_string()),
        ..SearchParams::default()
    }
}

async fn home(State(state): State<AppState>) -> PageResult {
    let (recent, popular) = if state.search.is_some() {
        let recent = SearchQuery::parse(&sorted("updated", 8)).map_err(bad)?;
        let popular = SearchQuery::parse(&sorted("downloads", 8)).map_err(bad)?;
        (
            run_search(&state, recent).await?.hits,
            run_search(&state, popular).await?.hits,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(views::home(&recent, &popular, state.search.is_some()).into_response())
}

fn bad(e: hub_search::QueryError) -> PageError {
    PageError {
        status: StatusCode::BAD_REQUEST,
        message: e.to_string(),
    }
}

async fn search(
    State(state): State<AppState>,
    params: Result<Query<SearchParams>, QueryRejection>,
) -> PageResult {
    let Query(params) = params.map_err(|e| PageError {
        status: StatusCode::BAD_REQUEST,
        message: e.body_text(),
    })?;
    let query = SearchQuery::parse(&params).map_err(bad)?;
    let results = run_search(&state, query).await?;
    Ok(views::search(&params, &results).into_response())
}

#[derive(Debug, Deserialize)]
struct VersionQuery {
    version: Option<String>,
}

/// Whether the stored envelope verifies, checked again for the page: by the key it names,
/// registered for the namespace and not revoked.
#[derive(Debug)]
pub(crate) enum Signature {
    /// It verifies with the key.
    Verified,
    /// It verifies, but the key was revoked since.
    KeyRevoked,
    /// It does not verify: the reason.
    Failed(String),
}

async fn agent(
    State(state): State<AppState>,
    Path((publisher, agent)): Path<(String, String)>,
    version: Query<VersionQuery>,
    headers: axum::http::HeaderMap,
) -> PageResult {
    let Json(info) = crate::api::agents::get_agent(
        State(state.clone()),
        Path((publisher.clone(), agent.clone())),
    )
    .await?;
    let wanted = version
        .0
        .version
        .clone()
        .or_else(|| info.latest.clone())
        .or_else(|| info.versions.last().map(|v| v.version.clone()));
    let Some(wanted) = wanted else {
        return Err(PageError {
            status: StatusCode::NOT_FOUND,
            message: format!("{} has no version to show", info.name),
        });
    };
    let Json(v) = crate::api::agents::get_version(
        State(state.clone()),
        Path((publisher, agent, wanted)),
        Query(index_schema::hub_api::log::LogQuery::default()),
    )
    .await?;
    let (manifest, signature) = check(&v);
    Ok(views::agent(
        &info,
        &v,
        manifest.as_ref(),
        &signature,
        origin(&headers).as_deref(),
    )
    .into_response())
}

/// The manifest, as the signature vouches for it, and whether it verifies.
fn check(v: &index_schema::hub_api::VersionInfo) -> (Option<Manifest>, Signature) {
    let envelope = match Envelope::from_json(v.envelope.get()) {
        Ok(e) => e,
        Err(d) => {
            return (
                None,
                Signature::Failed(format!("the envelope does not parse: {d}")),
            );
        }
    };
    let Some(key) = v
        .key
        .public_key
        .as_deref()
        .and_then(|k| k.parse::<PublicKey>().ok())
    else {
        return (
            None,
            Signature::Failed(format!("the key {} is not registered", v.key.key_id)),
        );
    };
    match verify_manifest(&envelope, &[key]) {
        Ok((manifest, _, _)) if v.key.revoked_at.is_some() => {
            (Some(manifest), Signature::KeyRevoked)
        }
        Ok((manifest, _, _)) => (Some(manifest), Signature::Verified),
        Err(e) => (None, Signature::Failed(e.to_string())),
    }
}

/// This hub's address as the browser reached it (for the `OFC_HUB=` hint; escaped like any text).
fn origin(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .map(|h| format!("http://{h}"))
}

async fn publisher(State(state): State<AppState>, Path(name): Path<String>) -> PageResult {
    let Json(ns) =
        crate::api::namespaces::get_namespace(State(state.clone()), Path(name.clone())).await?;
    let hits = if state.search.is_some() {
        let params = SearchParams {
            publisher: Some(name),
            sort: Some("downloads".to_owned()),
            limit: Some("100".to_owned()),
            ..SearchParams::default()
        };
        let q = SearchQuery::parse(&params).map_err(bad)?;
        run_search(&state, q).await?.hits
    } else {
        Vec::new()
    };
    Ok(views::publisher(&ns, &hits).into_response())
}
