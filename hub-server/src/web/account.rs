//! The signed-in pages: log in and out, API tokens, and for each namespace its members and
//! signing keys. Every change calls the core's service with the session's principal, so the
//! rules (scopes, roles, no escalation, the last owner) are the API's; every form carries the
//! session's CSRF token and is refused (403) without it.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use hub_core::{Kind, accounts, namespaces, web_sessions};
use index_schema::hub_api::{CreateTokenRequest, NewToken};

use super::page::{PageError, PageResult};
use super::session::{self, LOGIN_CSRF_COOKIE, SESSION_COOKIE, SESSION_DAYS, Session, set_cookie};
use super::views::{self, CSRF_FIELD};
use crate::client::ip_of;
use crate::state::AppState;

/// A form's fields, in order (a name may repeat: the scope checkboxes).
pub(super) struct Fields(Vec<(String, String)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn csrf(&self) -> Option<&str> {
        self.get(CSRF_FIELD)
    }
}

type FormFields = Form<Vec<(String, String)>>;

fn fields(Form(v): FormFields) -> Fields {
    Fields(v)
}

/// Signed-in pages and their answers are never cached (a new token is shown once).
pub(super) fn no_store(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn with_cookie(mut r: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// `GET /login`: the form, with a fresh log-in CSRF token in it and in its cookie.
pub(super) async fn login_page(State(state): State<AppState>, headers: HeaderMap) -> PageResult {
    if Session::of(&state, &headers).await?.is_some() {
        return Ok(Redirect::to("/account").into_response());
    }
    Ok(login_form(&headers, StatusCode::OK, None, None))
}

fn login_form(
    headers: &HeaderMap,
    status: StatusCode,
    user: Option<&str>,
    error: Option<&str>,
) -> Response {
    let csrf = session::random_secret();
    let cookie = set_cookie(
        LOGIN_CSRF_COOKIE,
        &csrf,
        "/login",
        "Strict",
        3600,
        session::over_tls(headers),
    );
    let page = (status, views::login(&csrf, user, error)).into_response();
    no_store(with_cookie(page, &cookie))
}

/// `POST /login`: the API's password check (and its failure limiter); on success a session and
/// its token, and the cookie.
pub(super) async fn login(
    State(state): State<AppState>,
    ci: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: FormFields,
) -> PageResult {
    let f = fields(form);
    let expected = session::cookie(&headers, LOGIN_CSRF_COOKIE).unwrap_or("");
    match f.csrf() {
        Some(sent) if !expected.is_empty() && session::constant_time_eq(sent, expected) => {}
        _ => return Err(session::csrf_refused()),
    }
    let username = f.get("username").unwrap_or("");
    let password = f.get("password").unwrap_or("");
    let user =
        match accounts::check_password(&state.core, &ip_of(Some(ci)), username, password).await {
            Ok(u) => u,
            Err(e) if e.kind == Kind::Unauthenticated => {
                return Ok(login_form(
                    &headers,
                    StatusCode::UNAUTHORIZED,
                    Some(username),
                    Some(&e.message),
                ));
            }
            Err(e) => return Err(e.into()),
        };
    let id = web_sessions::start(&state.core, &user).await?;
    let tls = session::over_tls(&headers);
    let r = Redirect::to("/account").into_response();
    let r = with_cookie(
        r,
        &set_cookie(
            SESSION_COOKIE,
            &id,
            "/",
            "Lax",
            u64::from(SESSION_DAYS) * 86_400,
            tls,
        ),
    );
    Ok(no_store(with_cookie(
        r,
        &set_cookie(LOGIN_CSRF_COOKIE, "", "/login", "Strict", 0, tls),
    )))
}

/// `POST /logout`: deletes the session and revokes its token.
pub(super) async fn logout(
    State(state): State<AppState>,
    s: Session,
    headers: HeaderMap,
    form: FormFields,
) -> PageResult {
    s.check_csrf(fields(form).csrf())?;
    web_sessions::end(&state.core, &s.0).await?;
    let r = Redirect::to("/").into_response();
    Ok(no_store(with_cookie(
        r,
        &set_cookie(
            SESSION_COOKIE,
            "",
            "/",
            "Lax",
            0,
            session::over_tls(&headers),
        ),
    )))
}

/// `GET /account`: your namespaces and tokens, and the form for a new token.
pub(super) async fn account(State(state): State<AppState>, s: Session) -> PageResult {
    account_page(&state, &s, StatusCode::OK, None).await
}

async fn account_page(
    state: &AppState,
    s: &Session,
    status: StatusCode,
    new_token: Option<&NewToken>,
) -> PageResult {
    let p = &s.0.principal;
    let tokens = accounts::list_tokens(&state.core, p).await?;
    let namespaces = accounts::memberships(&state.core, p.user_id).await?;
    let page = views::account(
        &p.user_name,
        p.token_id,
        &namespaces,
        &tokens.tokens,
        &s.0.csrf,
        new_token,
    );
    Ok(no_store((status, page).into_response()))
}

/// Splits a text field into its words (commas or white space).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `POST /account/tokens`: the API's token creation; the new token is shown once. The
/// session's own token lasts a day and a token it creates cannot outlive it; with the
/// password in the form (checked as a log-in is, failure limiter included), the new token
/// has the password's authority instead and may last longer.
pub(super) async fn create_token(
    State(state): State<AppState>,
    ci: ConnectInfo<SocketAddr>,
    s: Session,
    form: FormFields,
) -> PageResult {
    let f = fields(form);
    s.check_csrf(f.csrf())?;
    let mut authority = s.0.principal.clone();
    if let Some(password) = f.get("password").filter(|p| !p.is_empty()) {
        accounts::check_password(
            &state.core,
            &ip_of(Some(ci)),
            &authority.user_name,
            password,
        )
        .await?;
        authority.expires_at = None;
    }
    let expires_in_days = match f.get("expires_in_days").map(str::trim) {
        None | Some("") => None,
        Some(d) => Some(d.parse::<u32>().map_err(|_| PageError {
            status: StatusCode::BAD_REQUEST,
            message: format!("`{d}` is not a number of days"),
        })?),
    };
    let req = CreateTokenRequest {
        name: f.get("name").unwrap_or("").to_owned(),
        scopes: f.all("scope"),
        namespaces: words(f.get("namespaces").unwrap_or("")),
        expires_in_days,
    };
    let token = accounts::create_token(&state.core, &authority, &req).await?;
    account_page(&state, &s, StatusCode::CREATED, Some(&token)).await
}

/// `POST /account/tokens/{id}/revoke`.
pub(super) async fn revoke_token(
    State(state): State<AppState>,
    s: Session,
    Path(id): Path<i64>,
    form: FormFields,
) -> PageResult {
    s.check_csrf(fields(form).csrf())?;
    accounts::revoke_token(&state.core, &s.0.principal, id).await?;
    Ok(Redirect::to("/account").into_response())
}

fn namespace_href(ns: &str) -> String {
    format!("/account/namespaces/{ns}")
}

/// `GET /account/namespaces/{ns}`: members and keys, with the forms that change them.
pub(super) async fn namespace(
    State(state): State<AppState>,
    s: Session,
    Path(ns): Path<String>,
) -> PageResult {
    let info = namespaces::info(&state.core, &ns).await?;
    let role = info
        .members
        .iter()
        .find(|m| m.user == s.0.principal.user_name)
        .map(|m| m.role.clone());
    Ok(no_store(
        views::namespace_admin(&info, role.as_deref(), &s.0.csrf).into_response(),
    ))
}

/// `POST /account/namespaces/{ns}/members`: add a member or change a role.
pub(super) async fn set_member(
    State(state): State<AppState>,
    s: Session,
    Path(ns): Path<String>,
    form: FormFields,
) -> PageResult {
    let f = fields(form);
    s.check_csrf(f.csrf())?;
    let user = f.get("user").unwrap_or("").trim().to_owned();
    let role = f.get("role").unwrap_or("");
    if user.is_empty() {
        return Err(PageError {
            status: StatusCode::BAD_REQUEST,
            message: "name the user".to_owned(),
        });
    }
    let _namespace_now =
        namespaces::set_member(&state.core, &s.0.principal, &ns, &user, role).await?;
    Ok(Redirect::to(&namespace_href(&ns)).into_response())
}

/// `POST /account/namespaces/{ns}/members/{user}/remove`.
pub(super) async fn remove_member(
    State(state): State<AppState>,
    s: Session,
    Path((ns, user)): Path<(String, String)>,
    form: FormFields,
) -> PageResult {
    s.check_csrf(fields(form).csrf())?;
    namespaces::remove_member(&state.core, &s.0.principal, &ns, &user).await?;
    Ok(Redirect::to(&namespace_href(&ns)).into_response())
}

/// `POST /account/namespaces/{ns}/keys`: register a public key.
pub(super) async fn add_key(
    State(state): State<AppState>,
    s: Session,
    Path(ns): Path<String>,
    form: FormFields,
) -> PageResult {
    let f = fields(form);
    s.check_csrf(f.csrf())?;
    let public_key = f.get("public_key").unwrap_or("");
    let _registered = namespaces::add_key(&state.core, &s.0.principal, &ns, public_key).await?;
    Ok(Redirect::to(&namespace_href(&ns)).into_response())
}

/// `POST /account/namespaces/{ns}/keys/{key_id}/revoke`.
pub(super) async fn revoke_key(
    State(state): State<AppState>,
    s: Session,
    Path((ns, key_id)): Path<(String, String)>,
    form: FormFields,
) -> PageResult {
    s.check_csrf(fields(form).csrf())?;
    namespaces::revoke_key(&state.core, &s.0.principal, &ns, &key_id).await?;
    Ok(Redirect::to(&namespace_href(&ns)).into_response())
}
