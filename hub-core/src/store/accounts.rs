//! Users and their API tokens.

use super::namespaces::insert_namespace;
use super::repo::{Actor, Result, Store, StoreError, conflict_on_unique, now_ms};
use super::rows::{TOKEN_COLUMNS, TOKEN_USE_PRECISION_MS, TokenRow, TokenUser, USER_COLUMNS, User};
use super::tx::audit;

impl Store {
    // ---- users ----

    /// Creates a user and, when `namespace` is true, a namespace of the same name they own.
    pub async fn create_user(
        &self,
        actor: &Actor,
        name: &str,
        password_hash: Option<&str>,
        is_admin: bool,
        namespace: bool,
    ) -> Result<User> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO users (name, password_hash, is_admin, disabled, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(name)
        .bind(password_hash)
        .bind(is_admin)
        .bind(false)
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict_on_unique(e, || format!("user `{name}` exists already")))?;
        audit(&mut tx, actor, "user.create", name, None, now).await?;
        if namespace {
            insert_namespace(&mut tx, actor, name, id, now).await?;
        }
        tx.commit().await?;
        Ok(User {
            id,
            name: name.to_string(),
            is_admin,
            disabled: false,
            created_at: now,
            password_hash: password_hash.map(str::to_string),
        })
    }

    /// A user by (lowercase) name.
    pub async fn user_by_name(&self, name: &str) -> Result<Option<User>> {
        Ok(
            sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE name = $1"))
                .bind(name)
                .fetch_optional(self.db.write())
                .await?,
        )
    }

    /// Every user, by name.
    pub async fn list_users(&self) -> Result<Vec<User>> {
        Ok(
            sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users ORDER BY name"))
                .fetch_all(self.db.read())
                .await?,
        )
    }

    /// Sets or clears a user's flags and password.
    pub async fn update_user(
        &self,
        actor: &Actor,
        name: &str,
        password_hash: Option<Option<&str>>,
        is_admin: Option<bool>,
        disabled: Option<bool>,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let id: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(id) = id else {
            return Err(StoreError::NotFound(format!("no user `{name}`")));
        };
        if let Some(p) = password_hash {
            sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2")
                .bind(p)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            audit(&mut tx, actor, "user.set_password", name, None, now).await?;
        }
        if let Some(a) = is_admin {
            sqlx::query("UPDATE users SET is_admin = $1 WHERE id = $2")
                .bind(a)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let detail = a.to_string();
            audit(&mut tx, actor, "user.set_admin", name, Some(&detail), now).await?;
        }
        if let Some(d) = disabled {
            sqlx::query("UPDATE users SET disabled = $1 WHERE id = $2")
                .bind(d)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let detail = d.to_string();
            audit(
                &mut tx,
                actor,
                "user.set_disabled",
                name,
                Some(&detail),
                now,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    // ---- tokens ----

    /// Stores a new token (its hash only).
    #[allow(clippy::too_many_arguments)]
    pub async fn create_token(
        &self,
        actor: &Actor,
        user_id: i64,
        name: &str,
        token_hash: &str,
        scopes: &str,
        namespaces: &str,
        expires_at: Option<i64>,
    ) -> Result<TokenRow> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO api_tokens (user_id, name, token_hash, scopes, namespaces, \
             expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(user_id)
        .bind(name)
        .bind(token_hash)
        .bind(scopes)
        .bind(namespaces)
        .bind(expires_at)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        let detail = format!("name={name} scopes={scopes} namespaces={namespaces}");
        let target = format!("token:{id}");
        audit(&mut tx, actor, "token.create", &target, Some(&detail), now).await?;
        tx.commit().await?;
        Ok(TokenRow {
            id,
            user_id,
            name: name.to_string(),
            scopes: scopes.to_string(),
            namespaces: namespaces.to_string(),
            expires_at,
            created_at: now,
            revoked_at: None,
            last_used_at: None,
            trusted_issuer: None,
            trusted_subject: None,
        })
    }

    /// The token with this hash and its user.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<(TokenRow, User)>> {
        let row: Option<TokenUser> = sqlx::query_as(
            "SELECT t.id, t.user_id, t.name, t.scopes, t.namespaces, t.expires_at, \
             t.created_at, t.revoked_at, t.last_used_at, t.trusted_issuer, t.trusted_subject, \
             u.name AS user_name, \
             CAST(u.is_admin AS INTEGER) AS is_admin, CAST(u.disabled AS INTEGER) AS disabled, \
             u.created_at AS user_created_at FROM api_tokens t JOIN users u ON u.id = t.user_id \
             WHERE t.token_hash = $1",
        )
        .bind(hash)
        .fetch_optional(self.db.read())
        .await?;
        Ok(row.map(|r| {
            let user = User {
                id: r.token.user_id,
                name: r.user_name,
                is_admin: r.is_admin,
                disabled: r.disabled,
                created_at: r.user_created_at,
                password_hash: None,
            };
            (r.token, user)
        }))
    }

    /// Records that a token was used at `now`, unless it was recorded less than
    /// [`TOKEN_USE_PRECISION_MS`] before. True when the row was written.
    pub async fn touch_token(&self, id: i64, now: i64) -> Result<bool> {
        let n = sqlx::query(
            "UPDATE api_tokens SET last_used_at = $1 \
             WHERE id = $2 AND (last_used_at IS NULL OR last_used_at <= $3)",
        )
        .bind(now)
        .bind(id)
        .bind(now - TOKEN_USE_PRECISION_MS)
        .execute(self.db.write())
        .await?
        .rows_affected();
        Ok(n > 0)
    }

    /// A user's tokens, newest first.
    pub async fn list_tokens(&self, user_id: i64) -> Result<Vec<TokenRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE user_id = $1 ORDER BY id DESC"
        ))
        .bind(user_id)
        .fetch_all(self.db.read())
        .await?)
    }

    /// Revokes a token; `user_id` restricts it to that user's tokens. False when not found.
    pub async fn revoke_token(
        &self,
        actor: &Actor,
        user_id: Option<i64>,
        token_id: i64,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let owner: Option<i64> = sqlx::query_scalar("SELECT user_id FROM api_tokens WHERE id = $1")
            .bind(token_id)
            .fetch_optional(&mut *tx)
            .await?;
        match (owner, user_id) {
            (None, _) => return Ok(false),
            (Some(o), Some(u)) if o != u => return Ok(false),
            _ => {}
        }
        sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(token_id)
            .execute(&mut *tx)
            .await?;
        let target = format!("token:{token_id}");
        audit(&mut tx, actor, "token.revoke", &target, None, now).await?;
        tx.commit().await?;
        Ok(true)
    }
}
