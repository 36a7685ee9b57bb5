//! The registry-API view: unsigned `remote` entries.

use super::repo::{Actor, Result, Store, StoreError, conflict_on_unique, now_ms};
use super::rows::{AgentRow, NewRegistryAgent};
use super::tx::{audit, outbox};

impl Store {
    // ---- registry API view ----

    /// Registers an unsigned registry entry (an agent with an endpoint and no versions).
    ///
    /// A registration holds its handle alone, hub-wide and in any letter case: it is refused
    /// ([`StoreError::Conflict`]) when its name exists or when any agent, registered or
    /// published, of any namespace, already uses the handle. The unique index
    /// `agents_registry_handle` (on `lower(handle)` of registrations) settles concurrent
    /// registrations: the loser's insert fails and is refused the same way.
    pub async fn register_agent(&self, actor: &Actor, a: &NewRegistryAgent) -> Result<()> {
        let now = now_ms();
        let handle = a.handle.to_ascii_lowercase();
        let mut tx = self.db.write().begin().await?;
        let holder: Option<String> = sqlx::query_scalar(
            "SELECT name FROM agents WHERE lower(handle) = $1 \
             ORDER BY (registry_endpoint IS NULL), created_at, id LIMIT 1",
        )
        .bind(&handle)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(holder) = holder {
            return Err(StoreError::Conflict(format!(
                "the handle `@{handle}` is taken by `{holder}`; a handle belongs to one agent \
                 on this hub"
            )));
        }
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM agents WHERE name = $1")
            .bind(&a.agent)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Err(StoreError::Conflict(format!(
                "agent `{}` exists already",
                a.agent
            )));
        }
        sqlx::query(
            "INSERT INTO agents (namespace_id, name, handle, registry_endpoint, \
             registry_metadata, registry_key, registry_token_hash, created_at, updated_at, \
             handle_since) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)",
        )
        .bind(a.namespace_id)
        .bind(&a.agent)
        .bind(&handle)
        .bind(&a.endpoint)
        .bind(&a.metadata)
        .bind(&a.public_key)
        .bind(&a.token_hash)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| {
            conflict_on_unique(e, || {
                format!(
                    "`{}` or the handle `@{handle}` was taken by a concurrent request",
                    a.agent
                )
            })
        })?;
        audit(
            &mut tx,
            actor,
            "registry.register",
            &a.agent,
            Some(&a.endpoint),
            now,
        )
        .await?;
        outbox(&mut tx, "registry_update", &a.agent, None, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Replaces the metadata of a registry entry.
    pub async fn update_registry_metadata(
        &self,
        actor: &Actor,
        agent: &AgentRow,
        metadata: &str,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.db.write().begin().await?;
        sqlx::query("UPDATE agents SET registry_metadata = $1, updated_at = $2 WHERE id = $3")
            .bind(metadata)
            .bind(now)
            .bind(agent.id)
            .execute(&mut *tx)
            .await?;
        audit(&mut tx, actor, "registry.update", &agent.name, None, now).await?;
        outbox(&mut tx, "registry_update", &agent.name, None, now).await?;
        tx.commit().await?;
        Ok(())
    }
}
