//! The signed-in pages: log in and out, API tokens, and for each namespace its members and
//! signing keys. Every change calls the JSON API's handler with the session's principal, so
//! the rules (scopes, roles, no escalation, the last owner) are the API's; every form carries
//! the session's CSRF token and is refused (403) without it.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Form, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use index_schema::hub_api::{AddKeyRequest, CreateTokenRequest, SetMemberRequest};

use super::session::{
    self, CSRF_FIELD, LOGIN_CSRF_COOKIE, SESSION_COOKIE, SESSION_DAYS, Session, set_cookie,
};
use super::{PageError, PageResult, views};
use crate::api::{AppState, Auth, accounts, ip_of, namespaces};
use crate::auth::{Scope, hash_token};
use crate::store::{Actor, now_ms};

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
    let user = match accounts::check_password(&state, &ip_of(Some(ci)), username, password).await {
        Ok(u) => u,
        Err(e) if e.status == StatusCode::UNAUTHORIZED => {
            return Ok(login_form(
                &headers,
                StatusCode::UNAUTHORIZED,
                Some(username),
                Some(&e.message),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let actor = Actor {
        user_id: Some(user.id),
        user_name: user.name.clone(),
        token_id: None,
    };
    let scopes: Vec<String> = Scope::ALL
        .iter()
        .filter(|s| **s != Scope::Admin)
        .map(|s| s.as_str().to_owned())
        .collect();
    let token = accounts::issue(
        &state,
        &actor,
        user.id,
        user.is_admin,
        "web session",
        &scopes,
        &["*".to_owned()],
        Some(SESSION_DAYS),
    )
    .await?;
    let id = session::random_secret();
    let expires_at = token
        .info
        .expires_at
        .unwrap_or_else(|| now_ms() + i64::from(SESSION_DAYS) * 86_400_000);
    state
        .store
        .create_web_session(
            &hash_token(&id),
            token.info.id,
            &session::random_secret(),
            expires_at,
        )
        .await
        .map_err(|e| PageError::from(crate::error::ApiError::from(e)))?;
    // Each log-in needs the password, but nothing else bounds the sessions (and their tokens)
    // one user keeps open: past the newest MAX_SESSIONS_PER_USER, the oldest end.
    state
        .store
        .trim_web_sessions(&actor, user.id, session::MAX_SESSIONS_PER_USER)
        .await
        .map_err(|e| PageError::from(crate::error::ApiError::from(e)))?;
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
    let store_err = |e| PageError::from(crate::error::ApiError::from(e));
    if let Some(token_id) = state
        .store
        .delete_web_session(&s.hash)
        .await
        .map_err(store_err)?
    {
        state
            .store
            .revoke_token(&auth(&s).actor(), Some(s.principal.user_id), token_id)
            .await
            .map_err(store_err)?;
    }
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

fn auth(s: &Session) -> Auth {
    Auth(s.principal.clone())
}

/// `GET /account`: your namespaces and tokens, and the form for a new token.
pub(super) async fn account(State(state): State<AppState>, s: Session) -> PageResult {
    account_page(&state, &s, StatusCode::OK, None).await
}

async fn account_page(
    state: &AppState,
    s: &Session,
    status: StatusCode,
    new_token: Option<&accounts::NewToken>,
) -> PageResult {
    let Json(tokens) = accounts::list_tokens(State(state.clone()), auth(s)).await?;
    let namespaces = state
        .store
        .namespaces_of(s.principal.user_id)
        .await
        .map_err(|e| PageError::from(crate::error::ApiError::from(e)))?;
    let page = views::account(
        &s.principal.user_name,
        s.principal.token_id,
        &namespaces,
        &tokens.tokens,
        &s.csrf,
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
    let mut authority = auth(&s);
    if let Some(password) = f.get("password").filter(|p| !p.is_empty()) {
        accounts::check_password(&state, &ip_of(Some(ci)), &s.principal.user_name, password)
            .await?;
        authority.0.expires_at = None;
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
    let (_, Json(token)) =
        accounts::create_token(State(state.clone()), authority, Json(req)).await?;
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
    accounts::revoke_token(State(state), auth(&s), Path(id)).await?;
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
    let Json(info) = namespaces::get_namespace(State(state.clone()), Path(ns)).await?;
    let role = info
        .members
        .iter()
        .find(|m| m.user == s.principal.user_name)
        .map(|m| m.role.clone());
    Ok(no_store(
        views::namespace_admin(&info, role.as_deref(), &s.csrf).into_response(),
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
    let req = SetMemberRequest {
        role: f.get("role").unwrap_or("").to_owned(),
    };
    if user.is_empty() {
        return Err(PageError {
            status: StatusCode::BAD_REQUEST,
            message: "name the user".to_owned(),
        });
    }
    let _namespace_now =
        namespaces::set_member(State(state), auth(&s), Path((ns.clone(), user)), Json(req)).await?;
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
    namespaces::remove_member(State(state), auth(&s), Path((ns.clone(), user))).await?;
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
    let req = AddKeyRequest {
        public_key: f.get("public_key").unwrap_or("").to_owned(),
    };
    let _registered =
        namespaces::add_key(State(state), auth(&s), Path(ns.clone()), Json(req)).await?;
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
    namespaces::revoke_key(State(state), auth(&s), Path((ns.clone(), key_id))).await?;
    Ok(Redirect::to(&namespace_href(&ns)).into_response())
}
