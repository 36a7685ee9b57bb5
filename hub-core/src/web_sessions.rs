//! Sessions of the hub's web pages. A session acts through an API token of its own, created at
//! log-in with the scopes `ofc login` gets (every scope but `admin`, every namespace) for
//! [`SESSION_DAYS`], so every page is decided by the API's rules; only the SHA-256 of the
//! session's secret (the browser's cookie) is stored. A user keeps at most
//! [`MAX_SESSIONS_PER_USER`]: a log-in past them ends the oldest and revokes their tokens, so a
//! script logging in forever cannot pile up tokens.

use crate::accounts::{self, actor, login_scopes, password_actor};
use crate::auth::{Principal, generate_token, hash_token};
use crate::error::CoreResult;
use crate::hub::Hub;
use crate::store::{User, now_ms};

/// How long a session (and its token) lasts, in days.
pub const SESSION_DAYS: u32 = 1;
/// Most sessions one user keeps: a log-in past it ends the oldest (and revokes its token).
pub const MAX_SESSIONS_PER_USER: u32 = 10;

/// A new random secret for a cookie or a form (32 bytes, URL-safe base64).
pub fn random_secret() -> String {
    generate_token("").expose().to_owned()
}

/// Starts a session for `user` (whose password was checked); its secret, for the cookie.
pub async fn start(hub: &Hub, user: &User) -> CoreResult<String> {
    let actor = password_actor(user);
    let token = accounts::issue(
        hub,
        &actor,
        user.id,
        user.is_admin,
        "web session",
        &login_scopes(),
        &["*".to_owned()],
        Some(SESSION_DAYS),
    )
    .await?;
    let id = random_secret();
    let expires_at = token
        .info
        .expires_at
        .unwrap_or_else(|| now_ms() + i64::from(SESSION_DAYS) * 86_400_000);
    hub.store
        .create_web_session(
            &hash_token(&id),
            token.info.id,
            &random_secret(),
            expires_at,
        )
        .await?;
    hub.store
        .trim_web_sessions(&actor, user.id, MAX_SESSIONS_PER_USER)
        .await?;
    Ok(id)
}

/// A live session: who acts, and the CSRF token its forms carry.
#[derive(Debug, Clone)]
pub struct LiveSession {
    /// The session token's principal.
    pub principal: Principal,
    /// The CSRF token of this session's forms.
    pub csrf: String,
    /// SHA-256 of the session's secret.
    pub hash: String,
}

/// The session whose secret is `id`, if it is stored, unexpired, and its token still usable
/// (not revoked or expired, the user not disabled).
pub async fn find(hub: &Hub, id: &str) -> CoreResult<Option<LiveSession>> {
    let hash = hash_token(id);
    let Some(stored) = hub.store.web_session(&hash).await? else {
        return Ok(None);
    };
    Ok(accounts::principal_for_hash(&hub.store, &stored.token_hash)
        .await?
        .ok()
        .map(|principal| LiveSession {
            principal,
            csrf: stored.csrf,
            hash,
        }))
}

/// Ends session `s`: deletes it and revokes its token.
pub async fn end(hub: &Hub, s: &LiveSession) -> CoreResult<()> {
    if let Some(token_id) = hub.store.delete_web_session(&s.hash).await? {
        hub.store
            .revoke_token(&actor(&s.principal), Some(s.principal.user_id), token_id)
            .await?;
    }
    Ok(())
}
