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
//! | `GET /agents/{publisher}/{agent}` | the latest version (or `?version=`): what it does, its capabilities and schemas, what it needs, who signed it and whether the signature verifies, its trust signals (`trust.rs`: key age, log proof, deprecation, last publish, downloads per week), its versions, the `ofc pull` line and a blueprint snippet |
//! | `GET /publishers/{name}` | a publisher's agents and members |
//!
//! | `GET/POST /login`, `POST /logout` | password log-in (the API's check and failure limiter); a server-side session (`session.rs`) |
//! | `GET /account`, `POST /account/tokens`, `POST /account/tokens/{id}/revoke` | your namespaces; create and revoke API tokens |
//! | `GET /account/namespaces/{ns}`, `POST …/members`, `POST …/members/{user}/remove`, `POST …/keys`, `POST …/keys/{key_id}/revoke` | a namespace's members and signing keys |
//!
//! Every page calls the core's services ([`hub_core::agents`], [`hub_core::namespaces`],
//! [`hub_core::accounts`], [`hub_core::web_sessions`]); the signed-in pages act with the
//! session's principal, so the API's rules decide. Every form carries the session's CSRF token
//! (403 without it) and their answers are `Cache-Control: no-store`.
//!
//! `pages.rs` holds the public pages, `account.rs` the signed-in ones, `session.rs` the cookie
//! and the CSRF token, `page.rs` the error page, `views.rs` the HTML.
//!
//! Errors are pages too (404, 400, 403), never JSON.

mod account;
mod page;
mod pages;
mod session;
mod trust;
mod views;

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};

use crate::state::AppState;

/// The policy every page is served with: only this origin's stylesheet and script, no inline
/// anything, no plugins, no framing, forms only to this origin.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The web pages' routes (merged into the hub's router; no fallback of their own).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(pages::home))
        .route("/search", get(pages::search))
        .route("/agents/{publisher}/{agent}", get(pages::agent))
        .route("/publishers/{name}", get(pages::publisher))
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
        .route("/static/ofc.css", get(pages::css))
        .route("/static/ofc.js", get(pages::js))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    ofc_net::page_headers::set(response.headers_mut(), CSP);
    response
}
