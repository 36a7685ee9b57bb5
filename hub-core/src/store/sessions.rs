//! Browser sessions of the web pages (only the SHA-256 of a session id is stored).

use super::repo::{Actor, Result, Store, now_ms};
use super::tx::audit;

/// A stored browser session, as the cookie's hash finds it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WebSession {
    /// The SHA-256 (hex) of the session's API token: the one the session acts through.
    pub token_hash: String,
    /// The session's API token id.
    pub token_id: i64,
    /// The CSRF token its forms carry.
    pub csrf: String,
    /// Unix ms.
    pub expires_at: i64,
}

impl Store {
    /// Stores a new session.
    pub async fn create_web_session(
        &self,
        session_hash: &str,
        token_id: i64,
        csrf: &str,
        expires_at: i64,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO web_sessions (session_hash, token_id, csrf, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(session_hash)
        .bind(token_id)
        .bind(csrf)
        .bind(now_ms())
        .bind(expires_at)
        .execute(self.db.write())
        .await?;
        Ok(())
    }

    /// The session with this hash, if stored and not expired.
    pub async fn web_session(&self, session_hash: &str) -> Result<Option<WebSession>> {
        Ok(sqlx::query_as(
            "SELECT t.token_hash, s.token_id, s.csrf, s.expires_at FROM web_sessions s \
             JOIN api_tokens t ON t.id = s.token_id \
             WHERE s.session_hash = $1 AND s.expires_at > $2",
        )
        .bind(session_hash)
        .bind(now_ms())
        .fetch_optional(self.db.read())
        .await?)
    }

    /// Ends all but the `keep` newest sessions of `user_id` and revokes their tokens, in one
    /// transaction (each revocation audited as `actor`'s); the token ids revoked.
    pub async fn trim_web_sessions(
        &self,
        actor: &Actor,
        user_id: i64,
        keep: u32,
    ) -> Result<Vec<i64>> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let ids: Vec<i64> = sqlx::query_scalar(
            "DELETE FROM web_sessions WHERE session_hash IN ( \
               SELECT s.session_hash FROM web_sessions s \
               JOIN api_tokens t ON t.id = s.token_id \
               WHERE t.user_id = $1 \
               ORDER BY s.created_at DESC, s.session_hash DESC \
               LIMIT 1000000 OFFSET $2) \
             RETURNING token_id",
        )
        .bind(user_id)
        .bind(i64::from(keep))
        .fetch_all(&mut *tx)
        .await?;
        for id in &ids {
            sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            )
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            let target = format!("token:{id}");
            audit(
                &mut tx,
                actor,
                "token.revoke",
                &target,
                Some("web session trimmed"),
                now,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(ids)
    }

    /// Deletes a session (and the expired ones); its token id if it was stored.
    pub async fn delete_web_session(&self, session_hash: &str) -> Result<Option<i64>> {
        let token_id: Option<i64> = sqlx::query_scalar(
            "DELETE FROM web_sessions WHERE session_hash = $1 RETURNING token_id",
        )
        .bind(session_hash)
        .fetch_optional(self.db.write())
        .await?;
        sqlx::query("DELETE FROM web_sessions WHERE expires_at <= $1")
            .bind(now_ms())
            .execute(self.db.write())
            .await?;
        Ok(token_id)
    }
}
