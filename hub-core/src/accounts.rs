//! Accounts: the one token check (a principal from a token, with the failure limiter), the
//! password log-in, and API tokens — issued, listed, revoked — with their rules: a token has at
//! least one scope and 1 to 50 namespace patterns, mints only tokens narrower than itself, and
//! none that outlives it.
//!
//! Token management is its own scope, `manage-tokens`: listing, creating and revoking other
//! tokens need it; any token may revoke itself (`ofc logout --revoke`). Log-in tokens and the
//! tokens `ofc-hub` creates for a new user get it by default; migration 0013 gave it to the
//! existing tokens that held every log-in scope, so narrow tokens do not gain it.

use std::net::IpAddr;

use index_schema::hub_api::{
    CreateTokenRequest, LoginRequest, Me, MyNamespace, NewToken, TokenInfo, TokenList,
};

use crate::auth::{
    FailureLimiter, Principal, Scope, TOKEN_PREFIX, TrustedOrigin, check_pattern,
    dummy_password_hash, generate_token, hash_token, parse_scopes, pattern_covers, verify_password,
};
use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::hub::Hub;
use crate::store::{Actor, Store, StoreError, TOKEN_USE_PRECISION_MS, TokenRow, User, now_ms};

/// Longest token lifetime a request may ask for.
const MAX_EXPIRY_DAYS: u32 = 3650;

/// The audit actor of a principal.
pub fn actor(p: &Principal) -> Actor {
    Actor {
        user_id: Some(p.user_id),
        user_name: p.user_name.clone(),
        token_id: Some(p.token_id),
    }
}

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

/// Why a token names no usable principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    /// No such token.
    Unknown,
    /// Revoked.
    Revoked,
    /// Past its expiry.
    Expired,
    /// Its user is disabled.
    UserDisabled,
}

impl TokenRefusal {
    /// The API error code and message.
    pub fn code_and_message(self) -> (ErrorCode, &'static str) {
        match self {
            TokenRefusal::Unknown => (ErrorCode::InvalidToken, "the API token is not valid"),
            TokenRefusal::Revoked => (ErrorCode::TokenRevoked, "the API token was revoked"),
            TokenRefusal::Expired => (ErrorCode::TokenExpired, "the API token has expired"),
            TokenRefusal::UserDisabled => (ErrorCode::UserDisabled, "the account is disabled"),
        }
    }
}

/// The principal of the API token whose hash is `hash` — the one place that decides whether a
/// token is usable (revocation, expiry, disabled user) and records its use (at most one write a
/// minute per token), for the JSON API, `/v2/` (Basic, Bearer and `/v2/token` bearers) and the
/// web pages' sessions.
pub async fn principal_for_hash(
    store: &Store,
    hash: &str,
) -> Result<Result<Principal, TokenRefusal>, StoreError> {
    let Some((t, user)) = store.token_by_hash(hash).await? else {
        return Ok(Err(TokenRefusal::Unknown));
    };
    let now = now_ms();
    if t.revoked_at.is_some() {
        return Ok(Err(TokenRefusal::Revoked));
    }
    if t.expires_at.is_some_and(|e| e <= now) {
        return Ok(Err(TokenRefusal::Expired));
    }
    if user.disabled {
        return Ok(Err(TokenRefusal::UserDisabled));
    }
    let scopes = parse_scopes(&split(&t.scopes))
        .map_err(|e| StoreError::Conflict(format!("stored token scopes: {e}")))?;
    // A write at most once a minute per token; the check on the row just read keeps every
    // other request a pure read.
    if t.last_used_at
        .is_none_or(|at| at <= now - TOKEN_USE_PRECISION_MS)
    {
        store.touch_token(t.id, now).await?;
    }
    Ok(Ok(Principal {
        user_id: user.id,
        user_name: user.name,
        is_admin: user.is_admin,
        token_id: t.id,
        scopes,
        namespaces: split(&t.namespaces),
        expires_at: t.expires_at,
        trusted: t
            .trusted_issuer
            .zip(t.trusted_subject)
            .map(|(issuer, subject)| TrustedOrigin { issuer, subject }),
    }))
}

/// The principal of API token `token` presented by a client at `ip`, with the limiter:
/// invalid tokens from an address are limited (429 once blocked); a valid token is never
/// refused by the limiter (it proves itself), so failures from a shared address cannot lock it
/// out.
pub async fn principal_for_token(
    hub: &Hub,
    ip: Option<IpAddr>,
    token: &str,
) -> CoreResult<Principal> {
    let ip_key = FailureLimiter::token_key(&FailureLimiter::ip_key(ip));
    let fail = async |code: ErrorCode, msg: &str| -> CoreError {
        hub.counters.auth_failure();
        match hub.limiter.blocked(&ip_key).await {
            Ok(Some(secs)) => return CoreError::too_many(secs),
            Ok(None) => {}
            Err(e) => return e,
        }
        if let Err(e) = hub.limiter.fail(&ip_key).await {
            return e;
        }
        CoreError::unauthenticated(code, msg.to_string())
    };
    if token.is_empty() || token.len() > 200 {
        return Err(fail(ErrorCode::InvalidToken, "the API token is malformed").await);
    }
    match principal_for_hash(&hub.store, &hash_token(token)).await? {
        Ok(p) => Ok(p),
        Err(r) => {
            let (code, msg) = r.code_and_message();
            Err(fail(code, msg).await)
        }
    }
}

/// The enabled user with this name and password, counting failures in the limiter (per client
/// address `ip`, and per user from that address) and refusing once it blocks: the API's
/// `login` and the web pages' log-in.
pub async fn check_password(
    hub: &Hub,
    ip: &str,
    username: &str,
    password: &str,
) -> CoreResult<User> {
    let user_name = username.trim().to_ascii_lowercase();
    let ip_key = FailureLimiter::login_ip_key(ip);
    let user_key = FailureLimiter::login_user_key(&user_name, ip);
    // Reserved before the slow hash, so concurrent guesses count while they are checked.
    let attempt = hub.limiter.reserve(&[&ip_key, &user_key]).await?;
    let user = if user_name.len() <= 64 {
        hub.store.user_by_name(&user_name).await?
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
                let _ = verify_password(&password, dummy_password_hash());
                false
            }
        }
    })
    .await
    .map_err(|e| CoreError::internal(format!("password check: {e}")))?;
    let Some(user) = user.filter(|_| ok) else {
        attempt.failed().await?;
        hub.counters.auth_failure();
        return Err(CoreError::unauthenticated(
            ErrorCode::InvalidCredentials,
            "wrong user name or password",
        ));
    };
    attempt.succeeded().await?;
    Ok(user)
}

/// Every scope a password log-in grants by default: all but `admin`.
pub fn login_scopes() -> Vec<String> {
    Scope::ALL
        .iter()
        .filter(|s| **s != Scope::Admin)
        .map(|s| s.as_str().to_string())
        .collect()
}

/// The audit actor of a user acting with a password (no token yet).
pub fn password_actor(user: &User) -> Actor {
    Actor {
        user_id: Some(user.id),
        user_name: user.name.clone(),
        token_id: None,
    }
}

/// Exchanges a user name and password (from a client at `ip`) for a new API token.
pub async fn login(hub: &Hub, ip: &str, req: LoginRequest) -> CoreResult<NewToken> {
    let user = check_password(hub, ip, &req.username, &req.password).await?;
    let scopes = req.scopes.unwrap_or_else(login_scopes);
    let namespaces = req.namespaces.unwrap_or_else(|| vec!["*".into()]);
    issue(
        hub,
        &password_actor(&user),
        user.id,
        user.is_admin,
        req.token_name.as_deref().unwrap_or("ofc login"),
        &scopes,
        &namespaces,
        req.expires_in_days,
    )
    .await
}

/// Creates a token for user `user_id` after checking what was asked: the name, the scopes
/// (`admin` for administrators only), the namespace patterns and the expiry.
#[allow(clippy::too_many_arguments)]
pub async fn issue(
    hub: &Hub,
    actor: &Actor,
    user_id: i64,
    user_is_admin: bool,
    name: &str,
    scopes: &[String],
    namespaces: &[String],
    expires_in_days: Option<u32>,
) -> CoreResult<NewToken> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(CoreError::invalid(
            ErrorCode::InvalidTokenName,
            "a token name is 1 to 100 printable characters",
        ));
    }
    let scopes =
        parse_scopes(scopes).map_err(|m| CoreError::invalid(ErrorCode::InvalidScope, m))?;
    if scopes.is_empty() {
        return Err(CoreError::invalid(
            ErrorCode::InvalidScope,
            "a token needs at least one scope",
        ));
    }
    if scopes.contains(&Scope::Admin) && !user_is_admin {
        return Err(CoreError::forbidden(
            ErrorCode::AdminOnly,
            "only hub administrators can have tokens with the `admin` scope",
        ));
    }
    if namespaces.is_empty() || namespaces.len() > 50 {
        return Err(CoreError::invalid(
            ErrorCode::InvalidNamespacePattern,
            "a token needs 1 to 50 namespace patterns",
        ));
    }
    let mut pats = Vec::new();
    for p in namespaces {
        let p = p.trim().to_ascii_lowercase();
        check_pattern(&p).map_err(|m| CoreError::invalid(ErrorCode::InvalidNamespacePattern, m))?;
        pats.push(p);
    }
    let expires_at = match expires_in_days {
        Some(d) if d == 0 || d > MAX_EXPIRY_DAYS => {
            return Err(CoreError::invalid(
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
    let row = hub
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

/// Token management needs its own scope: a narrow token (say `yank` in one namespace) must
/// not see or revoke the user's other tokens.
fn require_token_scope(p: &Principal, what: &str) -> CoreResult<()> {
    if p.scopes.contains(&Scope::ManageTokens) || p.acts_as_admin() {
        Ok(())
    } else {
        Err(CoreError::forbidden(
            ErrorCode::ForbiddenScope,
            format!("the calling token lacks the `manage-tokens` scope, which it needs to {what}"),
        ))
    }
}

/// Who the token belongs to, its namespaces and scopes.
pub async fn me(hub: &Hub, p: &Principal) -> CoreResult<Me> {
    let namespaces = hub
        .store
        .namespaces_of(p.user_id)
        .await?
        .into_iter()
        .map(|(name, role)| MyNamespace { name, role })
        .collect();
    let token = hub
        .store
        .list_tokens(p.user_id)
        .await?
        .into_iter()
        .find(|t| t.id == p.token_id)
        .ok_or_else(|| CoreError::internal("token vanished"))?;
    Ok(Me {
        user: p.user_name.clone(),
        is_admin: p.is_admin,
        namespaces,
        token: token.into(),
    })
}

/// The namespaces of user `user_id` and their role in each.
pub async fn memberships(hub: &Hub, user_id: i64) -> CoreResult<Vec<(String, String)>> {
    Ok(hub.store.namespaces_of(user_id).await?)
}

/// The caller's tokens.
pub async fn list_tokens(hub: &Hub, p: &Principal) -> CoreResult<TokenList> {
    require_token_scope(p, "list the tokens")?;
    let tokens = hub.store.list_tokens(p.user_id).await?;
    Ok(TokenList {
        tokens: tokens.into_iter().map(TokenInfo::from).collect(),
    })
}

/// Creates a token with at most the scopes and namespaces of the calling token `p`, and not
/// outliving it.
pub async fn create_token(
    hub: &Hub,
    p: &Principal,
    req: &CreateTokenRequest,
) -> CoreResult<NewToken> {
    require_token_scope(p, "create tokens")?;
    // No escalation: a token can only mint tokens narrower than itself.
    if !p.acts_as_admin() {
        for s in
            parse_scopes(&req.scopes).map_err(|m| CoreError::invalid(ErrorCode::InvalidScope, m))?
        {
            if !p.scopes.contains(&s) {
                return Err(CoreError::forbidden(
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
                return Err(CoreError::forbidden(
                    ErrorCode::ForbiddenNamespace,
                    format!("the calling token does not cover namespace pattern `{pat}`"),
                ));
            }
        }
    }
    // Nor does it outlive the calling token (administrators' included: a stolen one-day
    // token must not turn into one that never expires).
    check_outlives(p.expires_at, req.expires_in_days)?;
    issue(
        hub,
        &actor(p),
        p.user_id,
        p.is_admin,
        &req.name,
        &req.scopes,
        &req.namespaces,
        req.expires_in_days,
    )
    .await
}

/// Refuses a new token expiring after `days` (never, for `None`) when the calling token
/// expires at `parent` (ms since the epoch).
fn check_outlives(parent: Option<i64>, days: Option<u32>) -> CoreResult<()> {
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
        return Err(CoreError::forbidden(
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

/// Revokes token `id` of the caller (administrators: any token). A token may always revoke
/// itself (`ofc logout --revoke`); others need `manage-tokens`.
pub async fn revoke_token(hub: &Hub, p: &Principal, id: i64) -> CoreResult<()> {
    if id != p.token_id {
        require_token_scope(p, "revoke other tokens")?;
    }
    let owner = if p.acts_as_admin() {
        None
    } else {
        Some(p.user_id)
    };
    if hub.store.revoke_token(&actor(p), owner, id).await? {
        Ok(())
    } else {
        Err(CoreError::not_found(
            ErrorCode::TokenNotFound,
            format!("you have no token {id}"),
        ))
    }
}
