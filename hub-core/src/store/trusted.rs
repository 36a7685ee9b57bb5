//! Trusted publishing's tables (migration 0025): a namespace's trusted publishers, the ID
//! tokens already exchanged (each is exchanged once), and the tokens an exchange mints. The
//! rules are [`crate::trusted`]'s.

use super::repo::{Actor, Result, Store, StoreError, now_ms, unique_violation};
use super::rows::TokenRow;
use super::tx::audit;
use crate::auth::TrustedOrigin;

/// A trusted publisher as stored, with the name of the owner who registered it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TrustedPublisherRow {
    /// Id.
    pub id: i64,
    /// Namespace id.
    pub namespace_id: i64,
    /// Issuer URL (`iss`, exact).
    pub issuer: String,
    /// Expected `aud`.
    pub audience: String,
    /// Subject pattern.
    pub subject: String,
    /// The owner who registered it.
    pub created_by: i64,
    /// Their name.
    pub created_by_name: String,
    /// Unix ms.
    pub created_at: i64,
}

const COLUMNS: &str = "t.id, t.namespace_id, t.issuer, t.audience, t.subject, t.created_by, \
    u.name AS created_by_name, t.created_at";

/// What an exchange records: the ID token's replay key and expiry, and the token it mints.
#[derive(Debug)]
pub struct NewExchange<'a> {
    /// The trusted publisher that matched.
    pub publisher: &'a TrustedPublisherRow,
    /// SHA-256 (hex) of the issuer and `jti`, or of the whole ID token.
    pub replay_key: &'a str,
    /// The ID token's `exp` (Unix ms): the replay key is kept until then.
    pub id_token_expires_at: i64,
    /// The new hub token's label.
    pub name: &'a str,
    /// Its hash.
    pub token_hash: &'a str,
    /// Its one namespace.
    pub namespace: &'a str,
    /// Its expiry (Unix ms).
    pub expires_at: i64,
    /// Issuer and subject of the ID token.
    pub origin: &'a TrustedOrigin,
}

impl Store {
    /// Registers a trusted publisher of namespace `namespace_id`; a duplicate is a conflict.
    pub async fn add_trusted_publisher(
        &self,
        actor: &Actor,
        namespace_id: i64,
        namespace: &str,
        issuer: &str,
        audience: &str,
        subject: &str,
    ) -> Result<i64> {
        let now = now_ms();
        let user = actor
            .user_id
            .ok_or_else(|| StoreError::NotFound("a trusted publisher needs a user".into()))?;
        let mut tx = self.db.write().begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO trusted_publishers (namespace_id, issuer, audience, subject, \
             created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(namespace_id)
        .bind(issuer)
        .bind(audience)
        .bind(subject)
        .bind(user)
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| {
            if unique_violation(&e) {
                StoreError::Conflict(format!(
                    "namespace `{namespace}` already trusts issuer {issuer} with audience \
                     `{audience}` and subject `{subject}`"
                ))
            } else {
                e.into()
            }
        })?;
        let detail = format!("issuer={issuer} audience={audience} subject={subject}");
        audit(
            &mut tx,
            actor,
            "trusted_publisher.add",
            &format!("{namespace}:trusted:{id}"),
            Some(&detail),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    /// The trusted publishers of namespace `namespace_id`, oldest first.
    pub async fn trusted_publishers(&self, namespace_id: i64) -> Result<Vec<TrustedPublisherRow>> {
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM trusted_publishers t JOIN users u ON u.id = t.created_by \
             WHERE t.namespace_id = $1 ORDER BY t.id"
        ))
        .bind(namespace_id)
        .fetch_all(self.db.read())
        .await?)
    }

    /// Removes trusted publisher `id` of namespace `namespace_id` and revokes the tokens minted
    /// for it that are still live. False when there is no such publisher.
    pub async fn remove_trusted_publisher(
        &self,
        actor: &Actor,
        namespace_id: i64,
        namespace: &str,
        id: i64,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        let n = sqlx::query("DELETE FROM trusted_publishers WHERE id = $1 AND namespace_id = $2")
            .bind(id)
            .bind(namespace_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n == 0 {
            return Ok(false);
        }
        let revoked = sqlx::query(
            "UPDATE api_tokens SET revoked_at = $1 WHERE trusted_publisher_id = $2 \
             AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)",
        )
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        audit(
            &mut tx,
            actor,
            "trusted_publisher.remove",
            &format!("{namespace}:trusted:{id}"),
            Some(&format!("revoked_tokens={revoked}")),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Records an exchange in one transaction: forgets replay keys past their expiry, takes the
    /// ID token's replay key (`None` when it was taken before: a replay), and creates the
    /// publish-only token, audited as acting for the publisher's owner.
    pub async fn record_exchange(&self, x: &NewExchange<'_>) -> Result<Option<TokenRow>> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        sqlx::query("DELETE FROM oidc_exchanges WHERE expires_at < $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let taken = sqlx::query(
            "INSERT INTO oidc_exchanges (token_key, expires_at, exchanged_at) VALUES ($1, $2, $3)",
        )
        .bind(x.replay_key)
        .bind(x.id_token_expires_at)
        .bind(now)
        .execute(&mut *tx)
        .await;
        match taken {
            Ok(_) => {}
            Err(e) if unique_violation(&e) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let scopes = "publish-new,publish-update";
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO api_tokens (user_id, name, token_hash, scopes, namespaces, expires_at, \
             created_at, trusted_publisher_id, trusted_issuer, trusted_subject) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(x.publisher.created_by)
        .bind(x.name)
        .bind(x.token_hash)
        .bind(scopes)
        .bind(x.namespace)
        .bind(x.expires_at)
        .bind(now)
        .bind(x.publisher.id)
        .bind(&x.origin.issuer)
        .bind(&x.origin.subject)
        .fetch_one(&mut *tx)
        .await?;
        let actor = Actor {
            user_id: Some(x.publisher.created_by),
            user_name: x.publisher.created_by_name.clone(),
            token_id: Some(id),
        };
        let detail = format!(
            "trusted_publisher={} issuer={} subject={}",
            x.publisher.id, x.origin.issuer, x.origin.subject
        );
        audit(
            &mut tx,
            &actor,
            "trusted_publisher.exchange",
            &format!("token:{id}"),
            Some(&detail),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(Some(TokenRow {
            id,
            user_id: x.publisher.created_by,
            name: x.name.to_string(),
            scopes: scopes.to_string(),
            namespaces: x.namespace.to_string(),
            expires_at: Some(x.expires_at),
            created_at: now,
            revoked_at: None,
            last_used_at: None,
            trusted_issuer: Some(x.origin.issuer.clone()),
            trusted_subject: Some(x.origin.subject.clone()),
        }))
    }
}
