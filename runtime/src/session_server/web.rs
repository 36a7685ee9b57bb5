//! The browser view of `ofc serve`: one page and its three assets, compiled into the binary
//! (`assets/`), nothing from another origin.
//!
//! | Route | token | |
//! |---|---|---|
//! | `GET /` | none | the page (it holds no data: everything it shows it fetches with a token) |
//! | `GET /assets/{app.js, app.css, icon.svg}` | none | its script, style and icon |
//!
//! **The token** reaches the page in the address's fragment (`/#token=…`, as `ofc serve`
//! prints it): a fragment is never sent to a server, so it is in no request line, log or
//! `Referer`. The script moves it to the tab's `sessionStorage`, takes it out of the address
//! bar, and sends it as `Authorization: Bearer …` on every call — the event stream too, read
//! with `fetch` and a stream parser of its own (an `EventSource` cannot send a header, and a
//! token in a query string would be logged). Every data route stays bearer-only.
//!
//! **Headers** ([`security_headers`], on every answer of the server, pages or not): a strict
//! Content-Security-Policy ([`CSP`]: scripts, styles and connections to this origin only, no
//! inline script or style, no framing, no `<base>`, forms to this origin), `nosniff`, no
//! framing, no referrer. The script writes agents' text with `textContent`, never as markup.

use axum::extract::{Path, Request};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::{ApiError, ErrorBody};

/// The Content-Security-Policy of every answer.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const INDEX: &str = include_str!("assets/index.html");
pub(super) const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/icon.svg");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // Always asked again: a new ofc binary brings new assets under the same names.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The page.
#[utoipa::path(get, path = "/", tag = "browser",
    responses((status = 200, description = "the browser view (no data: open it as `/#token=<token>`)", content_type = "text/html")))]
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// The page's script, style and icon.
#[utoipa::path(get, path = "/assets/{file}", tag = "browser",
    params(("file" = String, Path, description = "`app.js`, `app.css` or `icon.svg`")),
    responses(
        (status = 200, description = "the asset"),
        (status = 404, body = ErrorBody),
    ))]
pub async fn assets(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "app.js" => asset("text/javascript; charset=utf-8", APP_JS),
        "app.css" => asset("text/css; charset=utf-8", APP_CSS),
        "icon.svg" => asset("image/svg+xml", ICON),
        _ => ApiError::not_found("no such asset").into_response(),
    }
}

/// The security headers of every answer (see the module doc).
pub async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    ofc_net::page_headers::set(response.headers_mut(), CSP);
    response
}
