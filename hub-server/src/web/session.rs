//! Browser sessions: the cookie, the session it names, and the CSRF token every form carries.
//!
//! The cookie (`ofc_session`, `HttpOnly; SameSite=Lax; Path=/`, plus `Secure` when the request
//! came over TLS — the hub sits behind a TLS proxy, so `X-Forwarded-Proto: https` or
//! `Forwarded: proto=https` says so) holds 32 random bytes; the database keeps only their
//! SHA-256. A session acts through an API token of its own ([`hub_core::web_sessions`]), so a
//! page calls the core with that token's principal and the API's rules decide. Logging out
//! deletes the session row and revokes its token.
//!
//! The log-in form, which has no session yet, carries a token that must equal a short-lived
//! cookie of its own (`ofc_login_csrf`, `SameSite=Strict`), so another site cannot sign a
//! browser into an account of its choosing.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use hub_core::web_sessions::{self, LiveSession};

use super::page::PageError;
use crate::state::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "ofc_session";
/// The log-in form's CSRF cookie.
pub const LOGIN_CSRF_COOKIE: &str = "ofc_login_csrf";
/// How long a session (and its cookie) lasts, in days.
pub use hub_core::web_sessions::SESSION_DAYS;

/// A signed-in browser: who, through which token, and its CSRF token.
#[derive(Debug, Clone)]
pub struct Session(pub LiveSession);

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether the browser reached the hub over TLS (through the proxy in front of it).
pub fn over_tls(headers: &HeaderMap) -> bool {
    let forwarded_proto = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    let forwarded = headers
        .get(header::FORWARDED)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("proto=https"));
    forwarded_proto || forwarded
}

/// A `Set-Cookie` value: `HttpOnly`, the given `SameSite` and path, `Secure` over TLS;
/// `max_age` 0 deletes it.
pub fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    same_site: &str,
    max_age: u64,
    tls: bool,
) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!(
        "{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}"
    )
}

/// A new random secret for a cookie or a form (32 bytes, URL-safe base64).
pub use hub_core::web_sessions::random_secret;

/// Equal, in time that does not depend on where two equally long strings differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Why a request has no session: pages redirect to the log-in, forms are refused.
#[derive(Debug)]
pub enum NoSession {
    /// A page: go and sign in.
    Redirect,
    /// A form: refused.
    Refused,
    /// The store failed.
    Failed(PageError),
}

impl IntoResponse for NoSession {
    fn into_response(self) -> Response {
        match self {
            NoSession::Redirect => Redirect::to("/login").into_response(),
            NoSession::Refused => PageError {
                status: StatusCode::UNAUTHORIZED,
                message: "you are not signed in, or your session has ended: sign in again"
                    .to_owned(),
            }
            .into_response(),
            NoSession::Failed(e) => e.into_response(),
        }
    }
}

impl Session {
    /// The session the request's cookie names, if it is stored, unexpired, and its token is
    /// still usable (not revoked or expired, the user not disabled).
    pub async fn of(state: &AppState, headers: &HeaderMap) -> Result<Option<Session>, PageError> {
        let Some(id) = cookie(headers, SESSION_COOKIE).filter(|v| !v.is_empty() && v.len() <= 100)
        else {
            return Ok(None);
        };
        Ok(web_sessions::find(&state.core, id).await?.map(Session))
    }

    /// Refuses (403) unless `sent` is this session's CSRF token.
    pub fn check_csrf(&self, sent: Option<&str>) -> Result<(), PageError> {
        match sent {
            Some(s) if constant_time_eq(s, &self.0.csrf) => Ok(()),
            _ => Err(csrf_refused()),
        }
    }
}

/// The 403 page of a form whose CSRF token is missing or wrong.
pub fn csrf_refused() -> PageError {
    PageError {
        status: StatusCode::FORBIDDEN,
        message: "this form's CSRF token is missing or wrong, so it was not accepted; \
                  reload the page and send the form again"
            .to_owned(),
    }
}

impl FromRequestParts<AppState> for Session {
    type Rejection = NoSession;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, NoSession> {
        match Session::of(state, &parts.headers).await {
            Ok(Some(s)) => Ok(s),
            Ok(None) if parts.method == Method::GET || parts.method == Method::HEAD => {
                Err(NoSession::Redirect)
            }
            Ok(None) => Err(NoSession::Refused),
            Err(e) => Err(NoSession::Failed(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, header};

    use super::{SESSION_COOKIE, constant_time_eq, cookie, over_tls, set_cookie};

    #[test]
    fn cookies_and_comparison() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; ofc_session=xyz; b=2".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("xyz"));
        assert_eq!(cookie(&h, "ofc"), None);
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "abcd"));
        assert!(!over_tls(&h));
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        assert!(over_tls(&h));
        assert!(
            set_cookie("n", "v", "/", "Lax", 60, true).ends_with("HttpOnly; SameSite=Lax; Secure")
        );
    }
}
