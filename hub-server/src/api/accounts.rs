//! Login, `me`, API tokens.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
pub use index_schema::hub_api::{
    CreateTokenRequest, LoginRequest, Me, MyNamespace, NewToken, TokenInfo, TokenList,
};

use super::{AppState, Auth, ip_of, too_many};
use crate::auth::{
    FailureLimiter, Scope, TOKEN_PREFIX, check_pattern, generate_token, hash_token, parse_scopes,
    pattern_covers, verify_password,
};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::store::{Actor, TokenRow, now_ms};

/// Longest token lifetime a request may ask for.
const MAX_EXPIRY_DAYS: u32 = 3650;

impl From<TokenRow> for TokenInfo {
    fn from(t: TokenRow) -> Self {
        TokenInfo {
            id: t.id,
            name: t.name,
            scopes: split(&t.scopes),
            namespaces: split(&t.namespaces),
            created_at: t.created_at,
            expires_at: t.expires_at,
            revoked_at: t.revoked_at,
            last_used_at: t.last_used_at,
        }
    }
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Creates a token for `user_id` after validating what was asked (also the web pages' session
/// token).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn issue(
    state: &AppState,
    actor: &Actor,
    user_id: i64,
    user_is_admin: bool,
    name: &str,
    scopes: &[String],
    namespaces: &[String],
    expires_in_days: Option<u32>,
) -> ApiResult<NewToken> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidTokenName,
            "a token name is 1 to 100 printable characters",
        ));
    }
    let scopes =
        parse_scopes(scopes).map_err(|m| ApiError::bad_request(ErrorCode::InvalidScope, m))?;
    if scopes.is_empty() {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidScope,
            "a token needs at least one scope",
        ));
    }
    if scopes.contains(&Scope::Admin) && !user_is_admin {
        return Err(ApiError::forbidden(
            ErrorCode::AdminOnly,
            "only hub administrators can have tokens with the `admin` scope",
        ));
    }
    if namespaces.is_empty() || namespaces.len() > 50 {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidNamespacePattern,
            "a token needs 1 to 50 namespace patterns",
        ));
    }
    let mut pats = Vec::new();
    for p in namespaces {
        let p = p.trim().to_ascii_lowercase();
        check_pattern(&p)
            .map_err(|m| ApiError::bad_request(ErrorCode::InvalidNamespacePattern, m))?;
        pats.push(p);
    }
    let expires_at = match expires_in_days {
        Some(d) if d == 0 || d > MAX_EXPIRY_DAYS => {
            return Err(ApiError::bad_request(
                ErrorCode::InvalidExpiry,
                format!("expires_in_days is 1 to {MAX_EXPIRY_DAYS}"),
            ));
        }
        Some(d) => Some(now_ms() + i64::from(d) * 86_400_000),
        None => None,
    };
    let secret = generate_token(TOKEN_PREFIX);
    let scopes_text = scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let row = state
        .store
        .create_token(
            actor,
            user_id,
            name,
            &hash_token(secret.expose()),
            &scopes_text,
            &pats.join(","),
            expires_at,
        )
        .await?;
    Ok(NewToken {
        token: secret.expose().to_string(),
        info: row.into(),
    })
}

/// Exchanges a user name and password for a new API token (what `ofc login` uses).
#[utoipa::path(post, path = "/api/v1/login", tag = "accounts", request_body = LoginRequest,
    responses(
        (status = 201, description = "token created", body = NewToken),
        (status = 400, description = "bad request", body = ErrorBody),
        (status = 401, description = "wrong user name or password", body = ErrorBody),
        (status = 429, description = "too many failures", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ci: ConnectInfo<SocketAddr>,
    Json(req): Json<LoginRequest>,
) -> ApiResult<(StatusCode, Json<NewToken>)> {
    let user = check_password(&state, &ip_of(Some(ci)), &req.username, &req.password).await?;
    let scopes = req.scopes.unwrap_or_else(|| {
        Scope::ALL
            .iter()
            .filter(|s| **s != Scope::Admin)
            .map(|s| s.as_str().to_string())
            .collect()
    });
    let namespaces = req.namespaces.unwrap_or_else(|| vec!["*".into()]);
    let actor = Actor {
        user_id: Some(user.id),
        user_name: user.name.clone(),
        token_id: None,
    };
    let t = issue(
        &state,
        &actor,
        user.id,
        user.is_admin,
        req.token_name.as_deref().unwrap_or("ofc login"),
        &scopes,
        &namespaces,
        req.expires_in_days,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// The enabled user with this name and password, counting failures in the limiter (per client
/// address, and per user from that address) and refusing once it blocks: the API's `login` and
/// the web pages' log-in.
pub(crate) async fn check_password(
    state: &AppState,
    ip: &str,
    username: &str,
    password: &str,
) -> ApiResult<crate::store::User> {
    let user_name = username.trim().to_ascii_lowercase();
    let ip_key = FailureLimiter::login_ip_key(ip);
    let user_key = FailureLimiter::login_user_key(&user_name, ip);
    // Reserved before the slow hash, so concurrent guesses count while they are checked.
    let attempt = state
        .limiter
        .reserve(&[&ip_key, &user_key])
        .map_err(too_many)?;
    let user = if user_name.len() <= 64 {
        state.store.user_by_name(&user_name).await?
    } else {
        None
    };
    // The hash is checked whether or not the user exists (a dummy hash otherwise), so the
    // answer's time does not tell which names are accounts.
    let phc = match &user {
        Some(u) if !u.disabled => u.password_hash.clone(),
        _ => None,
    };
    let password = (password.len() <= 1024).then(|| password.to_string());
    let ok = tokio::task::spawn_blocking(move || {
        let Some(password) = password else {
            return false;
        };
        match phc {
            Some(h) => verify_password(&password, &h),
            None => {
                let _ = verify_password(&password, crate::auth::dummy_password_hash());
                false
            }
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("password check: {e}")))?;
    let Some(user) = user.filter(|_| ok) else {
        attempt.failed();
        state.metrics.auth_failure();
        return Err(ApiError::unauthorized(
            ErrorCode::InvalidCredentials,
            "wrong user name or password",
        ));
    };
    drop(attempt);
    Ok(user)
}

/// Who the token belongs to, its namespaces and scopes.
#[utoipa::path(get, path = "/api/v1/me", tag = "accounts",
    responses(
        (status = 200, description = "the caller", body = Me),
        (status = 401, description = "no valid token", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn me(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Me>> {
    let p = &auth.0;
    let namespaces = state
        .store
        .namespaces_of(p.user_id)
        .await?
        .into_iter()
        .map(|(name, role)| MyNamespace { name, role })
        .collect();
    let token = state
        .store
        .list_tokens(p.user_id)
        .await?
        .into_iter()
        .find(|t| t.id == p.token_id)
        .ok_or_else(|| ApiError::internal("token vanished"))?;
    Ok(Json(Me {
        user: p.user_name.clone(),
        is_admin: p.is_admin,
        namespaces,
        token: token.into(),
    }))
}

/// The caller's tokens.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "accounts",
    responses(
        (status = 200, description = "tokens", body = TokenList),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "the token lacks `manage-tokens`", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list_tokens(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<TokenList>> {
    require_token_scope(&auth.0, "list the tokens")?;
    let tokens = state.store.list_tokens(auth.0.user_id).await?;
    Ok(Json(TokenList {
        tokens: tokens.into_iter().map(TokenInfo::from).collect(),
    }))
}

/// Token management needs its own scope: a narrow token (say `yank` in one namespace) must
/// not see or revoke the user's other tokens.
fn require_token_scope(p: &crate::auth::Principal, what: &str) -> ApiResult<()> {
    if p.scopes.contains(&Scope::ManageTokens) || p.acts_as_admin() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            ErrorCode::ForbiddenScope,
            format!("the calling token lacks the `manage-tokens` scope, which it needs to {what}"),
        ))
    }
}

/// Creates a token with at most the scopes and namespaces of the calling token.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "accounts", request_body = CreateTokenRequest,
    responses(
        (status = 201, description = "token created", body = NewToken),
        (status = 400, description = "bad request", body = ErrorBody),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "more than the calling token may grant", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn create_token(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<CreateTokenRequest>,
) -> ApiResult<(StatusCode, Json<NewToken>)> {
    let p = &auth.0;
    require_token_scope(p, "create tokens")?;
    // No escalation: a token can only mint tokens narrower than itself.
    if !p.acts_as_admin() {
        for s in parse_scopes(&req.scopes)
            .map_err(|m| ApiError::bad_request(ErrorCode::InvalidScope, m))?
        {
            if !p.scopes.contains(&s) {
                return Err(ApiError::forbidden(
                    ErrorCode::ForbiddenScope,
                    format!(
                        "the calling token lacks `{}`, so it cannot grant it",
                        s.as_str()
                    ),
                ));
            }
        }
        for pat in &req.namespaces {
            let pat = pat.trim().to_ascii_lowercase();
            if !p.namespaces.iter().any(|mine| pattern_covers(mine, &pat)) {
                return Err(ApiError::forbidden(
                    ErrorCode::ForbiddenNamespace,
                    format!("the calling token does not cover namespace pattern `{pat}`"),
                ));
            }
        }
    }
    // Nor does it outlive the calling token (administrators' included: a stolen one-day
    // token must not turn into one that never expires).
    check_outlives(p.expires_at, req.expires_in_days)?;
    let t = issue(
        &state,
        &auth.actor(),
        p.user_id,
        p.is_admin,
        &req.name,
        &req.scopes,
        &req.namespaces,
        req.expires_in_days,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// Refuses a new token expiring after `days` (never, for `None`) when the calling token
/// expires at `parent` (ms since the epoch).
fn check_outlives(parent: Option<i64>, days: Option<u32>) -> ApiResult<()> {
    let Some(parent) = parent else {
        return Ok(());
    };
    let whole_days_left = (parent - now_ms()).max(0) / 86_400_000;
    let refused = match days {
        None => true,
        Some(d) => now_ms() + i64::from(d) * 86_400_000 > parent,
    };
    if refused {
        let hint = if whole_days_left >= 1 {
            format!("ask for expires_in_days of at most {whole_days_left}, or ")
        } else {
            String::new()
        };
        return Err(ApiError::forbidden(
            ErrorCode::ForbiddenExpiry,
            format!(
                "the calling token expires in {}; a token it creates cannot outlive it: \
                 {hint}create it with a token that lasts longer (`ofc login` with a password, \
                 or the web page's form with your password)",
                human_duration_ms(parent - now_ms())
            ),
        ));
    }
    Ok(())
}

/// `ms` as people say it: "3 days", "5 hours", "12 minutes" (rounded down; "under a minute").
fn human_duration_ms(ms: i64) -> String {
    let m = ms.max(0) / 60_000;
    let (n, unit) = if m >= 2 * 1440 {
        (m / 1440, "days")
    } else if m >= 120 {
        (m / 60, "hours")
    } else if m >= 1 {
        (m, "minutes")
    } else {
        return "under a minute".to_owned();
    };
    if n == 1 {
        format!("1 {}", unit.trim_end_matches('s'))
    } else {
        format!("{n} {unit}")
    }
}

/// Revokes one of the caller's tokens (administrators: any token).
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "token id")),
    responses(
        (status = 204, description = "revoked"),
        (status = 401, description = "no valid token", body = ErrorBody),
        (status = 403, description = "another token, and the calling one lacks `manage-tokens`", body = ErrorBody),
        (status = 404, description = "no such token of yours", body = ErrorBody),
    ), security(("bearer" = [])))]
pub async fn revoke_token(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    // A token may always revoke itself (`ofc logout --revoke`); others need the scope.
    if id != auth.0.token_id {
        require_token_scope(&auth.0, "revoke other tokens")?;
    }
    let owner = if auth.0.acts_as_admin() {
        None
    } else {
        Some(auth.0.user_id)
    };
    if state.store.revoke_token(&auth.actor(), owner, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            ErrorCode::TokenNotFound,
            format!("you have no token {id}"),
        ))
    }
}
